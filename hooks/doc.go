// Package hooks is git-lossless's Claude Code adapter: the hook entry
// point (`git lossless hook <event>`), the transcript parser and sweep, and
// install/uninstall/doctor. Everything it records goes through gitstore.
//
// # What is recorded, and how it is named
//
// One writer per Claude Code session: refs/lossless/cc-<session_id>
// (gitstore.WriterName("cc-", sessionID)). The main agent and every
// subagent of the session append to it; processes of one session run
// concurrently and serialise through the writer's ref lock.
//
// Every event carries session (the session id), agent (the subagent's
// agent_id; empty for the main context), sidechain (true in a subagent),
// tool (the Claude Code tool name) and a dedupe key, so that the same
// evidence arriving from a hook and later from a sweep is stored once:
//
//	op       source      content archived                         key
//	read     hook/sweep  the text the model was shown (raw, no     <tool_use_id>
//	                     line numbers); view full or lines:A-B
//	write    hook/sweep  the content written                      <tool_use_id>
//	edit     hook        the file's content from disk after the   <tool_use_id>
//	                     edit (what the model's edit produced)
//	edit     sweep       originalFile with the edit applied, when  <tool_use_id>
//	                     the transcript holds it; no content else
//	attach   sweep       a file Claude Code re-attached after a    attach:<line uuid>
//	                     compaction (a result, written by the
//	                     harness: it counts as seen)
//	restore  cli         content `git lossless restore` printed    restore:<nonce>
//	                     into a context (counts as seen)
//	compact  hook/sweep  none: a compaction boundary of a context  compact:<line uuid>
//	                     (pre-compact hook: precompact:<ts>)
//	span     sweep       one conversation span as JSON: user or    span:<line uuid>[:<n>]
//	                     assistant text, a tool call, a tool
//	                     result, a compaction summary (extra
//	                     field "kind")
//
// Paths are repository-relative inside the repository (absolute outside),
// as gitstore.Store.RelPath computes them; a view other than "full" means
// the content is partial. Extra fields: "disk_blob" (on read/attach: the
// git blob id of the file on disk when the hook saw it, set only when the
// disk bytes equal what was shown up to line endings, so a file changed
// between the read and the hook is never vouched for), "kind" (spans),
// "trigger" (compact), "uuid" (the transcript line).
//
// Timestamps: events from hooks carry the hook's time; events from a
// transcript carry the line's own timestamp, so that ordering against
// compaction boundaries (also transcript lines) is the transcript's order.
//
// Never is a disk snapshot recorded as something the model saw: content
// comes from the model's own tool results, from the harness's attachments,
// or, for hook edits, from disk right after the model's own edit.
package hooks
