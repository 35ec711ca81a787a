// Package transcript is the harness-neutral item model of a conversation
// transcript: what a line of any agent harness's transcript yields once
// its adapter has read it. It owns the items (Item: TextSpan, ToolUse,
// ToolResult, FileSeen, CompactBoundary, CompactSummary, each with the
// LineMeta of its line), a read's result (Line, Stats), the tool calls
// still waiting for their results across reads (PendingToolUse), and the
// span documents archived for them (SpanJSON, SpanKind, ContentText).
//
// Each harness's adapter reads its own format into these items (Claude
// Code's JSON lines: package hooks/claudecode/cctranscript); the runtime
// in package hooks sweeps them into the archive without knowing the
// format, and recall renders the span documents without knowing the
// harness. So the span document is one shape for every harness:
//
//	{"kind":"user"|"assistant"|"thinking","role":...,"text":...}
//	{"kind":"tool_use","role":"assistant","id":...,"tool":...,"input":{...}}
//	{"kind":"tool_result","role":"user","tool_use_id":...,"tool":...,"is_error":true,"content":...}
//	{"kind":"compact_summary","role":"user","text":...}
//
// It imports only the standard library and internal/jsonscan: the hooks
// (sweep, guard, restore, facts), the adapters, recall and the MCP server
// use it, not the other way round.
package transcript
