// Package hooks is git-lossless's harness-neutral hook runtime: what
// happens when an agent harness (Claude Code, Codex CLI, Gemini CLI,
// opencode...) calls the hook program, whatever the harness. It owns the
// hook entry point and its command line (`git lossless hook [HARNESS]
// EVENT`, and the same in cmd/git-lossless-hook: Run, RunArgs,
// Invocation), the record of what a tool call put into a context, the
// guard's decision on an edit (through package guard), the sweep of
// transcripts with its cursors (sweep.go), the import of past sessions
// through that same sweep (import.go), restore and the working-set
// manifest (restore.go), the facts handed back after a compaction
// (facts.go), and the resolution of paths through symlinks (realpath.go).
//
// What it does not know is any harness: its payloads, transcript format,
// tool names, event names, output protocol, settings files and where it
// keeps its sessions. Those are an adapter's, a package beside this one
// that implements Harness (hooks/claudecode is Claude Code's), and the
// runtime only ever drives the adapter through that interface: Decode
// turns a hook call's stdin into a neutral Call, Reply renders the
// runtime's answer (a deny the model reads, context handed back after a
// compaction), ReadTranscript reads the harness's transcripts into the
// items of package hooks/transcript, and the rest locates sessions and
// install targets. Adapters import this package, never the other way
// round, and the hook program links every adapter: an adapter must stay
// as small in what it links as the runtime (see internal/layoutcheck).
//
// It may import gitstore, guard, seal, secrets, anchor (to open a store
// with the witness), internal/jsonscan, hooks/settings (the install
// targets' plans) and hooks/transcript; everything it records goes
// through gitstore.
//
// # Adding a harness
//
// One new package and one line:
//
//  1. Write package hooks/<name> (say hooks/codex) with a type that
//     implements Harness: its Name ("codex": what its events record and
//     what install, uninstall and hook take), its writer Prefix
//     ("codex-"), its Dialect, Event (its event names to the runtime's
//     HookEvent), Decode (its payload to a Call: session, agent, cwd,
//     transcripts, tool, call id, the files a call will change or read,
//     shell command and output), Reply (its deny and its added context),
//     MCPTools, ReadTranscript (its transcript format to
//     hooks/transcript items, from an offset), Subagents, SessionOf,
//     SessionFile, TranscriptCwd, ImportDirs, Sessions, ContextUsage and
//     Install (its hook and MCP registration files, as settings.Plan
//     targets). Test it against the real CLI driven by a scripted model,
//     as hooks/claudecode does. Implement Sampler too (its payloads of
//     an edit and of a read), so that `git lossless bench hooks`
//     measures its hooks beside Claude Code's. Optionally it implements
//     DoctorChecker (its lines in `git lossless doctor`: hooks/codex
//     checks that Codex trusts its hooks).
//  2. Add its constructor to the list in hooks/harnesses (All). Nothing
//     registers itself: no init(), no global state.
//
// The hook command line then takes it (`git lossless hook codex
// pre-tool-use`, which its install writes into the harness's settings),
// and so do install, uninstall, import, sweep, restore and mcp
// (--harness); events carry its name and writers its prefix, so log,
// recall, the MCP server, meter, pack and receipts tell its sessions
// apart and filter by it (gitstore.HarnessOf, with the mapping
// harnesses.WriterHarness hands them: none of them imports an adapter).
//
// # What is recorded, and how it is named
//
// One writer per session of a harness: refs/lossless/<prefix><session>
// (Writer: gitstore.WriterName(h.Prefix(), session); cc-<session_id> for
// Claude Code). The main agent and every subagent of the session append
// to it; processes of one session run concurrently and serialise through
// the writer's ref lock.
//
// Every event carries harness (the adapter's Name: gitstore.Event.Harness),
// session (the session id), agent (the subagent's id; empty for the main
// context), sidechain (true in a subagent), tool (the tool's name as the
// harness names it) and a dedupe key, so that the same evidence arriving
// from a hook and later from a sweep is stored once:
//
//	op          source      content archived                      key
//	read        hook/sweep  the text the model was shown (raw, no  <call id>
//	                        line numbers); view full or lines:A-B
//	write       hook/sweep  the content written                   <call id>
//	edit        hook        the file's content from disk after    <call id>[:<n>]
//	                        the edit (what the model's edit
//	                        produced)
//	edit        sweep       the file as the edit left it, when    <call id>
//	                        the transcript holds it; no content
//	                        else
//	delete      hook        none: the call removed the file (a    <call id>[:<n>]
//	                        Codex patch's Delete or a Move's
//	                        source); not evidence of anything
//	attach      sweep       a file the harness re-attached after  attach:<line id>
//	                        a compaction (a result, written by
//	                        the harness: it counts as seen)
//	restore     cli, mcp    content `git lossless restore` (or    restore:<nonce>:<n>
//	                        the MCP server) printed into a
//	                        context (counts as seen)
//	compact     sweep       none: a context's compaction          compact:<line id>
//	                        boundary as its transcript records
//	                        it, the only boundary the guard
//	                        knows (extra "trigger")
//	precompact  hook        none: a compaction was asked for      precompact:<unix ns>
//	                        (extra "trigger"); for the record
//	                        only, a compaction can still fail
//	handback    hook        none: the working set was handed      handback:<boundary
//	                        back after a compaction no hook saw   key>
//	                        (Call.HandBack; extra "boundary")
//	deny        hook        none: the guard denied an edit        none (extra
//	                        (extra "reason_kind")                 "tool_use_id")
//	span        sweep       one conversation span as JSON (the    span:<line id>[:<n>]
//	                        neutral shape of hooks/transcript):
//	                        user or assistant text, a tool call,
//	                        a tool result, a compaction summary
//	                        (extra "kind")
//
// A shell call (Call.Shell) is a read when package hooks/shellread
// recognises its command as printing one named file (its doc,
// hooks/shellread/doc.go, lists the forms: cat, sed -n, nl -ba, head,
// tail, under bash -lc or after one cd DIR &&) and the output the model
// received (Shell.Shown says how the harness altered it) is exactly what
// that command prints of the file on disk when the hook runs: op read,
// view full or lines:A-B, key the call id, extra "via":"shell" (and
// "trimmed": blank edge lines dropped by the harness), resolved against
// Shell.Dir (else the payload's cwd). A deny-listed file named by such a
// command is recorded as accessed without content and never read; the
// adapter's transcript reader names the file on the call's spans so that
// the deny list withholds them too. Anything else (pipes, globs, several
// files, output that does not match) records nothing: the call is only a
// span. Only the hook records shell reads; a sweep or an import has no
// disk to prove them against.
//
// A read the harness answered without content because the earlier read
// stands (FileOp.Unchanged) is recorded by neither the hook nor the
// sweep, so the earlier read's hash stays the latest evidence and drift is
// still checked.
//
// A denial has no dedupe key: one hook run is one denial, no sweep
// re-creates it, and a key would make the store check it against every key
// the writer holds.
//
// Sweep evidence (read/write/edit/attach from a transcript) carries extra
// "epoch": the key of the last compaction boundary of its context above
// it in the transcript. The guard orders such evidence against a
// compaction by it, transcript order; see package guard.
//
// Who sweeps: post-tool-use sweeps the context's own transcript in the
// same store call as its record (one append, one dedupe pass), keeping
// the unswept part short; pre-compact, session-start (compact, resume),
// before-agent and session-end sweep the session (main and subagent
// transcripts), subagent-stop the subagent's. pre-tool-use, the guard, writes nothing
// but the denial: it reads the unswept part of its context's transcript
// for boundaries and re-attached files (see contextEvidence). Only a
// drift denial searches further: every writer, for another context's
// edit or write of the file after this context saw it (changedBy), so the
// reason can name the agent working beside it; the allow path never does.
//
// Presence (`git lossless who`, the MCP tool who) judges every context's
// hold on a file with the same guard.Decide over the same archived
// evidence and boundaries (archivedEvidence's rules, for all contexts in
// one pass), so it and the guard agree on the archive.
//
// Paths are repository-relative inside the repository (absolute outside),
// as gitstore.Store.RelPath computes them, and spelled as the model named
// the file (the transcript's spelling, which the model will use again); a
// view other than "full" means the content is partial. When that path
// resolves through a symlink (of the file or of a directory above it) to
// another path, the event carries the resolved file as extra "real_path",
// in the same form ("real_path64", standard base64 of the raw bytes, when
// it is not valid UTF-8): evidence is keyed by the file, so a read through
// a link vouches for an edit of its target and the other way round (see
// realpath.go). A file that does not exist is resolved through its
// directory. Extra fields: "disk_blob" (on read/attach: the
// git blob id of the file on disk when the hook saw it, set only when the
// disk bytes equal what was shown up to line endings — for a partial
// view, the lines shown — so a file changed between the read and the hook
// is never vouched for; the guard still treats a partial view as
// unhashed), "kind" (spans), "model" (spans of what the model produced
// — assistant text, thinking, tool calls — when the transcript names
// the model, a tool call's span with "tool_use_id", its call id; a
// hook's write and edit when the payload names it, Call.Model; see
// Models), "trigger" (compact), "uuid" (the transcript line).
//
// Events of no harness: the proxy's spans, `git lossless record`, and the
// MCP server's read_file outside any session (writer mcp-<clone>) carry no
// harness. What the MCP server and `git lossless restore` record into a
// session carries that session's harness: it is evidence of its context.
//
// Payloads are the adapter's to check (hooks/claudecode says which
// members Claude Code's must hold): a payload that cannot be used is not
// guessed at, since an empty path, or the main context for a malformed
// agent id, would check the wrong file or file evidence under the wrong
// context. The hook does nothing with it (the edit is not checked, the
// result not recorded), exits 0, and its one stderr line says what is
// wrong.
//
// Whatever a hook prints that came from outside — paths, session and
// agent ids, tool names, errors that repeat them — is printable: quoted
// (guard.Printable, guard.ShellQuote) where our messages name it, and
// escaped on the stderr line whatever the message (see LogLine).
//
// Timestamps: events from hooks carry the hook's time; events from a
// transcript carry the line's own timestamp.
//
// Never is a disk snapshot recorded as something the model saw: content
// comes from the model's own tool results, from the harness's attachments,
// or, for hook edits and writes without content, from disk right after
// the model's own call.
//
// # After a compaction
//
// session-start (source compact) prints, within ManifestBudget characters,
// the session's facts read from its spans (facts.go: the first and the
// last three user requests, the files changed, tool errors not followed
// by a success of the same tool on the same target, how many encrypted
// spans it could not read, the recall command), then the context's
// working set, then how to get content back: the MCP tools (restore_context,
// read_file, search, read_span, under the names the harness gives them)
// when the harness starts our server for the session's directory
// (Harness.MCPTools), reading the file again (Dialect.ReadWith), and `git
// lossless restore`. The facts never take more than half the budget. The
// harness's Reply puts the text where the model reads it.
package hooks
