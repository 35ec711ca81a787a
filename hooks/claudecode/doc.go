// Package claudecode is git-lossless's Claude Code adapter: everything the
// hook runtime (package hooks) needs to know of Claude Code, behind
// hooks.Harness. It is listed in hooks/harnesses as the default harness:
// `git lossless hook EVENT` without a harness is Claude Code's, which is
// what the settings of every version of `git lossless install
// claude-code` say.
//
// It owns:
//
//   - the names: harness "claude-code" (Event.Harness), writers
//     cc-<session_id>, sweep cursors under cc-cursors;
//   - the hook payload Claude Code writes on stdin and its member rules
//     (payload.go: DecodePayload, FieldError), the event names it uses
//     (SessionStart, PreToolUse, PostToolUse, PreCompact, SubagentStop,
//     SessionEnd, and ours: session-start...), and its tool names: the
//     guard checks Edit, Write, MultiEdit and NotebookEdit, the recorder
//     Read, Write, Edit, MultiEdit and NotebookEdit (Bash calls are
//     decoded as shell calls and recorded by nobody yet);
//   - its output protocol: hookSpecificOutput with PreToolUse's
//     permissionDecision deny and SessionStart's additionalContext (exit 0
//     always: Claude Code reads exit 2 from PreToolUse as a block);
//   - its transcripts: ~/.claude/projects/<dir>/<session>.jsonl and
//     <session>/subagents/agent-<id>.jsonl (sessions.go), read by the
//     parser of package hooks/claudecode/cctranscript, which turns Claude
//     Code's lines into the runtime's items: a Read answered
//     file_unchanged yields no evidence (the earlier read stands), a
//     compact_boundary line is a context's compaction boundary, and a file
//     attachment after it is an "attach" (the file re-attached: seen);
//   - the install targets (install.go): the hooks in settings.json (user
//     or project scope) and the MCP server registered the way `claude mcp
//     add` stores it (hooks/settings edits both files; where they are, the
//     hooks' specs and Claude Code's MCP lookup are named here), and the
//     MCP tools' names as Claude Code shows them (mcp__git-lossless__...);
//   - the replay benchmark of Claude Code sessions (hooks/claudecode/replay).
//
// # Payloads
//
// Every member the hooks read as a string (session_id, cwd,
// transcript_path, agent_id, agent_transcript_path, tool_name,
// tool_use_id, hook_event_name, agent_type, source, trigger; of a file
// tool, tool_input.file_path or, for NotebookEdit, notebook_path; of a
// Write's result, tool_input.content; of a Read's, tool_response.type and
// tool_response.file.content) must be a string, and the objects they sit
// in objects. Null counts as absent, as Claude Code writes null for a
// member it has no value for; a member that is needed (session_id, the
// file tool's path, the Write's content, the Read's tool_response) must
// be there. A payload that breaks this is not guessed at: the hook does
// nothing with it (the edit is not checked, the result not recorded),
// exits 0, and its one stderr line names the member and what it got (see
// FieldError). A malformed file-tool part is the Call's ToolErr, so the
// guard switched off (LOSSLESS_GUARD=off) ignores it as before.
//
// What a Read result is: its tool_response {"type":"text","file":
// {"content","startLine","numLines","totalLines"}}; a view from a line
// past 1, or fewer lines than the total, is partial (lines:A-B); a result
// without text (image, pdf, notebook) is recorded without content, its
// type beside it; file_unchanged is no evidence. A Write's content is its
// tool_input.content; an edit's result holds none, so the runtime records
// the file as the edit left it on disk.
//
// # The MCP server's registration
//
// install claude-code also registers `git-lossless-mcp mcp` (or
// `git-lossless mcp`, see settings.MCPProgram) as the MCP server
// "git-lossless" in the file and shape `claude mcp add --scope user|project`
// uses ($CLAUDE_CONFIG_DIR/.claude.json or ~/.claude.json, .mcp.json at
// the repository's top), uninstall removes it, and the doctor starts the
// registration Claude Code would start and lists its tools. SessionStart
// names the tools (MCPTools) only when the registration Claude Code
// starts for the session's directory is ours.
//
// It may import the standard library, hooks, hooks/transcript,
// hooks/settings, hooks/claudecode/cctranscript, gitstore and
// internal/jsonscan: the hook program links it.
package claudecode
