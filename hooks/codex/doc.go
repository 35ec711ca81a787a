// Package codex is the Codex CLI layer of the hook runtime: it reads what
// Codex (checked against 0.169.0) gives a recorder, and nothing else. It
// decodes the JSON Codex writes on a hook's stdin and renders what a hook
// prints back, parses and applies apply_patch input exactly as Codex does,
// reads rollout files into the harness-neutral items of hooks/transcript,
// and finds the rollouts of past sessions for import. The parsers import
// the standard library, internal/jsonscan and hooks/transcript only; the
// runtime in package hooks decides what to record, guard and restore.
//
// Harness (harness.go, adapter_sessions.go, install.go, toml.go,
// doctor.go) is the adapter the runtime drives (hooks.Harness): name
// "codex", writers codex-<session_id>. What it records, guards and hands
// back, and how install trusts the hooks in config.toml, is
// docs/harnesses/codex.md.
//
// # What Codex gives
//
// Hooks (hooks.json, the Claude Code schema): thirteen events (Events).
// Every payload has session_id, transcript_path (the rollout), cwd,
// hook_event_name and model; a turn's events add turn_id. There is no
// read tool: the model reads with shell calls, which reach hooks as tool
// "Bash" with tool_input.command; PostToolUse's tool_response is the
// command's output as the model received it, unwrapped. apply_patch is
// tool "apply_patch" with the patch in tool_input.command, and its
// tool_response is framed ("Exit code: 0\nWall time: ...\nOutput:\n...").
// A subagent's hooks carry the parent's session_id, its own agent_id
// (its thread id) and its own rollout as transcript_path; SubagentStop
// names the child's rollout in agent_transcript_path. A PreToolUse hook
// denies with DenyOutput (a reason is required), and a SessionStart hook
// hands context back with SessionStartOutput (Codex injects it as a
// developer message; after a compaction SessionStart fires with source
// "compact").
//
// Rollouts: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl
// (CODEX_HOME defaults to ~/.codex), one JSON object a line,
// {"timestamp","ordinal","type","payload"}, appended while the session
// runs. The first line is the session_meta (thread id, root session id,
// parent thread of a subagent, cwd, cli_version, and tens of kilobytes
// of base instructions).
//
// # What a rollout line yields (Reader)
//
//   - response_item message, role user: a TextSpan "user" per text block
//     whose provenance is "user". Codex writes its own context as user
//     messages too (<environment_context>, AGENTS.md, skills, subagent
//     notifications): their provenance is "harness" or "tool", and they
//     are skipped; a rollout without provenance metadata (older
//     releases) has them told apart by their opening tag.
//   - message, role assistant: a TextSpan "assistant" per output text.
//   - message, role developer or system: skipped (Codex's instructions,
//     permissions, and the additionalContext our own hook injected).
//   - reasoning: a TextSpan "thinking" per summary text and per reasoning
//     text (nothing when only encrypted content is there).
//   - function_call, custom_tool_call, local_shell_call: a ToolUse (Input
//     is the decoded arguments object, the custom tool's input string,
//     or the shell action) and Line.Call, classified: a shell call
//     (exec_command, shell_command, shell, local_shell) with its command
//     line and workdir; apply_patch with its patch; a shell command that
//     is an apply_patch heredoc, which Codex applies as a patch, as both.
//   - function_call_output, custom_tool_call_output: a ToolResult paired
//     with its call by call_id, also across reads (Pending/SetPending, as
//     hooks/transcript's Parser), and Line.Call with the output split
//     from Codex's framing (ParseExecOutput: the exact framing is
//     documented on ExecOutput). Whether a shell call read a file is not
//     decided here: the runtime hands Call.Command and Call.Output.Output
//     to hooks/shellread. Whether a patch applied: Call.PatchApplied.
//   - compacted: a CompactBoundary and a CompactSummary holding its
//     message (the summary the new context starts from). The replacement
//     history after the message is not read.
//   - session_meta: Line.Meta, and the reader's session (LineMeta's
//     SessionID is the root session, Agent the thread id of a subagent's
//     rollout, as the hooks' agent_id; Cwd and Model follow
//     turn_context: a turn's items carry the model its turn_context
//     names, which a sweep keeps in the cursor's state so that one
//     resuming mid-turn still knows it).
//   - event_msg item_completed of a FileChange: Line.FileChange (paths,
//     kinds, unified diffs and status of what an apply_patch did), for a
//     recorder's cross-check; every other event_msg, world_state,
//     turn_context, token_usage_record and unknown types: skipped,
//     mostly from their first members without scanning the rest.
//
// Lines are read whole or not at all: a last line without its '\n' is
// left for the next read, and Offset is where to resume.
//
// # Keys
//
// Rollout lines have no uuid. A span item's key is
// span:<thread>:<offset>, with :<block> appended when its line yields
// several spans (a message with several text blocks, a reasoning with
// several summaries), and a compaction's boundary is
// compact:<thread>:<offset>; <thread> is the rollout's thread id (its
// session_meta id, which is also the uuid its file name ends with) and
// <offset> the line's byte offset in the file. Rollouts are only ever
// appended to, so a line keeps its offset: the same line read again, by
// a later sweep or by an import of the same file, gets the same key, and
// two lines never share one (the thread makes keys distinct across
// files, subagents included). The line's "ordinal" is not used: it is
// not known to be unique when Codex resumes a thread into the same file.
// Evidence a runtime derives from a call (a shell read, a patch) is keyed
// by its call_id, which the hooks see as tool_use_id: a hook and a sweep
// recording the same call meet on it.
//
// # apply_patch
//
// ParsePatch, Hunk, Chunk and ApplyUpdate reproduce Codex 0.169.0's
// parser and its line-ending-preserving applier. testdata holds vectors
// generated by running Codex's own apply_patch (gen_patch_vectors.go),
// named corner cases and generated ones alike; the tests require the
// same outcome, byte for byte, for every one. Patch.Changes and
// Patch.NeedsSeen say what the guard must check (an add over an existing
// file and a move onto one overwrite it, so they count as updates).
// After Codex applied a patch, Patch.Final names the files to read back
// from disk and those removed. A sweep that has no disk to read replays
// the patch on the last archived versions with Patch.ApplyExact (which
// refuses a chunk found only by Codex's lenient passes) and records the
// result only when the call succeeded (Call.PatchApplied) and, where the
// rollout has the FileChange event, CheckUnifiedDiff agrees with the
// diff Codex computed from the real content.
//
// # Limits
//
//   - Code mode (gpt-6*, gpt-5.6-* slugs: every tool behind one JS "exec"
//     tool) and MCP tool calls are read as ordinary calls; nothing inside
//     them is classified.
//   - web_search_call, tool_search and image items yield nothing.
//   - A truncated exec output (Total output lines: ...) is flagged, and
//     can only match a file's bytes by accident of its content.
//   - A patch that fails in Codex may have applied its first hunks on
//     disk; Apply reports only the failure.
//   - ShellPatch recognises the heredoc forms Codex documents; Codex uses
//     a bash parser and may accept a few more spellings.
package codex
