// Package cctranscript reads Claude Code's transcript format: the JSON
// lines Claude Code appends to ~/.claude/projects/<dir>/<session>.jsonl
// (and <session>/subagents/agent-<id>.jsonl for each subagent) while a
// session runs. It turns a line into the harness-neutral items of package
// hooks/transcript: it owns the parser that reads them from an offset (and
// pairs each tool result with its call, across reads), and the edit
// replay that turns a Read, Write or Edit result into the file version
// that entered the context. It imports only the standard library,
// hooks/transcript and internal/jsonscan: the Claude Code adapter
// (hooks/claudecode: its sweeps, guard and import) and its replay
// benchmark use it, not the other way round.
//
// A transcript is JSON lines, appended while we read it, with lines from a
// few bytes to tens of megabytes and a set of line types that grows release
// by release. The parser reads complete lines only (a trailing line without
// its '\n' is left for the next read), holds one line at a time, and looks
// at a line's fields with jsonscan instead of decoding it: most bytes of a
// real transcript are in lines it skips (api-request-shape,
// api-request-blob, prompt_snapshot attachments...), which it recognises
// from their first fields without scanning the rest. Values it keeps (tool
// inputs, results, texts) are copied out of the line as raw JSON and
// decoded only when needed.
//
// What a line yields:
//
//   - assistant: a TextSpan per text block (kind "assistant") and per
//     thinking block with text (kind "thinking"), a ToolUse per tool_use.
//   - user: a CompactSummary when isCompactSummary; else a TextSpan per
//     text (kind "user"), and per tool_result a ToolResult plus, for file
//     tools (Read, Write, Edit, MultiEdit, NotebookEdit), the FileSeen
//     evidence derived from it (see deriveFileSeen). A Read answered
//     file_unchanged (no content: the earlier read stands) yields none.
//   - attachment of type "file" (re-attached after a compaction): a
//     FileSeen with op "attach"; every other attachment is skipped.
//   - system with subtype "compact_boundary": a CompactBoundary.
//   - anything else (api-request*, prompt_snapshot, queue-operation,
//     unknown types): skipped. Image and document blocks yield nothing.
//
// A tool_result is paired with its tool_use by id, also across parses:
// calls still waiting for a result are kept (Pending/SetPending).
package cctranscript
