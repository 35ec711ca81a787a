// Package hooks is git-lossless's Claude Code adapter: the hook entry
// point and its command line (`git lossless hook <event>`, and the same in
// cmd/git-lossless-hook), the sweep of transcripts (their format is
// package hooks/transcript), the import of a whole projects directory of
// past sessions through that same sweep (import.go), restore, and the
// facts handed back after a compaction. Install and uninstall (the settings editor and the MCP
// registration) are package hooks/settings; the doctor is hooks/doctor,
// kept out of this package because it links the MCP SDK, which every hook
// process would otherwise initialise. It may import gitstore, guard,
// seal, secrets, anchor (to open a store with the witness),
// internal/jsonscan, hooks/settings and hooks/transcript; everything it
// records goes through gitstore. What the hook program may not link is a
// rule of internal/layoutcheck.
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
//	op          source      content archived                      key
//	read        hook/sweep  the text the model was shown (raw, no  <tool_use_id>
//	                        line numbers); view full or lines:A-B
//	write       hook/sweep  the content written                   <tool_use_id>
//	edit        hook        the file's content from disk after    <tool_use_id>
//	                        the edit (what the model's edit
//	                        produced)
//	edit        sweep       originalFile with the edit applied,   <tool_use_id>
//	                        when the transcript holds it; no
//	                        content else
//	attach      sweep       a file Claude Code re-attached after  attach:<line uuid>
//	                        a compaction (a result, written by
//	                        the harness: it counts as seen)
//	restore     cli         content `git lossless restore`        restore:<nonce>:<n>
//	                        printed into a context (counts as
//	                        seen)
//	compact     sweep       none: a context's compact_boundary    compact:<line uuid>
//	                        line, the only compaction boundary
//	                        the guard knows (extra "trigger")
//	precompact  hook        none: PreCompact fired (extra         precompact:<unix ns>
//	                        "trigger"); for the record only, a
//	                        compaction can still fail
//	deny        hook        none: the guard denied an edit        none (extra
//	                        (extra "reason_kind")                 "tool_use_id")
//	span        sweep       one conversation span as JSON: user   span:<line uuid>[:<n>]
//	                        or assistant text, a tool call, a
//	                        tool result, a compaction summary
//	                        (extra "kind")
//
// A Read answered with file_unchanged (no content: the earlier read
// stands) is recorded by neither the hook nor the sweep, so the earlier
// read's hash stays the latest evidence and drift is still checked.
//
// A denial has no dedupe key: one hook run is one denial, no sweep
// re-creates it, and a key would make the store check it against every key
// the writer holds.
//
// Sweep evidence (read/write/edit/attach from a transcript) carries extra
// "epoch": the key of the last compact_boundary line of its context above
// it in the transcript. The guard orders such evidence against a
// compaction by it, transcript order; see package guard.
//
// Who sweeps: post-tool-use sweeps the context's own transcript in the
// same store call as its record (one append, one dedupe pass), keeping
// the unswept part short; pre-compact, session-start (compact, resume)
// and session-end sweep the session (main and subagent transcripts),
// subagent-stop the subagent's. pre-tool-use, the guard, writes nothing
// but the denial: it reads the unswept part of its context's transcript
// for boundaries and re-attached files (see contextEvidence).
//
// Paths are repository-relative inside the repository (absolute outside),
// as gitstore.Store.RelPath computes them, and spelled as the model named
// the file (the transcript's spelling, which the model will use again); a
// view other than "full" means the content is partial. When that path
// resolves through a symlink (of the file or of a directory above it) to
// another path, the event carries the resolved file as extra "real_path",
// in the same form ("real_path64", standard base64 of the raw bytes, when
// it is not valid UTF-8): evidence is keyed by the file, so a Read through
// a link vouches for an Edit of its target and the other way round (see
// realpath.go). A file that does not exist is resolved through its
// directory. Extra fields: "disk_blob" (on read/attach: the
// git blob id of the file on disk when the hook saw it, set only when the
// disk bytes equal what was shown up to line endings — for a partial
// view, the lines shown — so a file changed between the read and the hook
// is never vouched for; the guard still treats a partial view as
// unhashed), "kind" (spans),
// "trigger" (compact), "uuid" (the transcript line).
//
// Payloads: every member the hooks read as a string (session_id, cwd,
// transcript_path, agent_id, agent_transcript_path, tool_name,
// tool_use_id, hook_event_name, agent_type, source, trigger; of a file
// tool, tool_input.file_path or, for NotebookEdit, notebook_path; of a
// Write's result, tool_input.content; of a Read's, tool_response.type and
// tool_response.file.content) must be a string, and the objects they sit
// in objects. Null counts as absent, as Claude Code writes null for a
// member it has no value for; a member that is needed (session_id, the
// file tool's path, the Write's content, the Read's tool_response) must
// be there. A payload that breaks this is not guessed at, since an empty
// path, or the main context for a malformed agent_id, would check the
// wrong file or file evidence under the wrong context. The hook does
// nothing with it (the edit is not checked, the result not recorded),
// exits 0, and its one stderr line names the member and what it got (see
// FieldError).
//
// Whatever a hook prints that came from outside — paths, session and
// agent ids, tool names, errors that repeat them — is printable: quoted
// (guard.Printable, guard.ShellQuote) where our messages name it, and
// escaped on the stderr line whatever the message (see logLine).
//
// Timestamps: events from hooks carry the hook's time; events from a
// transcript carry the line's own timestamp (milliseconds; not in
// transcript order: a compaction's summary line is stamped before its
// boundary line, which it follows).
//
// Never is a disk snapshot recorded as something the model saw: content
// comes from the model's own tool results, from the harness's attachments,
// or, for hook edits, from disk right after the model's own edit.
//
// # After a compaction
//
// session-start (source compact) prints, within ManifestBudget characters,
// the session's facts read from its spans (facts.go: the first and the
// last three user requests, the files changed, tool errors not followed
// by a success of the same tool on the same target, how many encrypted
// spans it could not read, the recall command), then the context's
// working set, then how to get content back: the MCP tools
// (mcp__git-lossless__restore_context, read_file, search, read_span) when
// Claude Code starts our server for the session's directory, and `git
// lossless restore`. The facts never take more than half the budget.
//
// # The MCP server's registration
//
// install claude-code also registers `git-lossless mcp` as the MCP server
// "git-lossless" in the file and shape `claude mcp add --scope user|project`
// uses ($CLAUDE_CONFIG_DIR/.claude.json or ~/.claude.json, .mcp.json at
// the repository's top), uninstall removes it, and the doctor starts the
// registration Claude Code would start and lists its tools. Editing those
// files (settings.json and the MCP configs: splice, plan, diff, backup)
// is package hooks/settings; hooks reads registrations through it.
package hooks
