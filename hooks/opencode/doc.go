// Package opencode is git-lossless's adapter for opencode (tested against
// 1.18.33): everything the hook runtime (package hooks) needs to know of
// opencode, behind hooks.Harness, and the plugin that connects the two.
// It is listed in hooks/harnesses.
//
// opencode has no command hooks: it loads JavaScript plugins from
// <config dir>/plugin/*.js (~/.config/opencode, or .opencode at a
// project's top) and calls them in-process. Our plugin (plugin.js,
// embedded; install.go writes it with the hook program's absolute path)
// runs `<hook program> hook opencode EVENT` with one JSON payload on
// stdin, and reads one JSON reply from stdout:
//
//	plugin hook                          EVENT          reply used
//	tool.execute.before (edit, write,    pre-tool-use   {"deny": reason}: the plugin
//	  multiedit, apply_patch)                           throws Error(reason); opencode
//	                                                    hands the message to the model
//	tool.execute.after (read, edit,      post-tool-use  none
//	  write, multiedit, apply_patch,
//	  bash: its command and output are
//	  the Call's Shell)
//	experimental.chat.system.transform,  session-start  {"context": text}: pushed into
//	  first request after session.                      output.system of this and every
//	  compacted (source "compact")                      later request of the session
//	event session.idle                   session-end    none (sweeps the session)
//
// The payload (Payload) is ours, version 1:
//
//	v                   1
//	event               the plugin hook or bus event that fired
//	session             the root session's id: the writer is oc-<session>
//	agent               the child session's id when the call runs in one
//	                    (a task's subagent: parentID set), else ""
//	session_id          the session the call runs in; parent_id its parent
//	cwd, worktree       opencode's directory and worktree (absolute)
//	transcript          the root session's log; context_transcript the
//	                    log of the session the call runs in (see below)
//	tool, call_id       the tool and opencode's callID (the dedupe key)
//	args                the tool's args (filePath, oldString, content...)
//	output              post-tool-use: the tool's output text as the model
//	                    receives it
//	source              session-start: "compact"
//	model               post-tool-use: the model of the session's latest
//	                    assistant message (providerID/modelID), "" before
//	                    the plugin saw one; recorded on edits and writes
//
// Evidence: a read is recorded only when it is exact. opencode's read
// output is "<path>P</path>\n<type>file</type>\n<content>\n1: line\n...
// \n\n(End of file - total N lines)\n</content>" (or "(Showing lines A-B
// of N. Use offset=B+1 to continue.)"): numbered, long lines cut, and
// silent on a final newline. ReadEvidence compares the lines shown with
// the file on disk; when they are its lines (all: view full, content the
// file's bytes; A-B: view lines:A-B, those lines) it is evidence, else
// none. Edits and writes record the file from disk right after the call
// (a write's args.content when it has one). apply_patch, which opencode
// offers GPT models instead of edit and write, takes Codex's patch format
// (args.patchText), whose file headers patch.go reads: the guard decides every file
// whose content the patch replaces or removes, the recorder reads back
// every file it leaves written.
//
// Spans: opencode keeps sessions in SQLite and gives no transcript file,
// so the plugin keeps one for the sweep: a JSON line per user prompt
// (chat.message), finished assistant text (message.part.updated), tool
// call with its output (tool.execute.after), compaction summary and
// boundary (session.compacted, keyed by the compaction part's id), and
// each finished model turn's tokens (message.updated: ContextUsage), the
// assistant text and tool lines naming their model (providerID/modelID,
// from the assistant message's message.updated; an export's lines name
// it too), in
// $XDG_STATE_HOME/git-lossless/opencode/<root session>.jsonl (default
// ~/.local/state), a child session's in <root session>/<child>.jsonl
// (LogLine, transcript.go). It comes from the plugin's own hooks: no
// server call, no process, nothing blocks. Past sessions (before the
// plugin) come in through `opencode export <session> > FILE` and `git
// lossless import --harness opencode FILE` (export.go), whose keys are the
// log's.
//
// The plugin never breaks opencode for our failure: every hook catches
// everything, the hook program is killed after 10 s (30 s for what sweeps)
// and then counts as no reply, and our problems are one stderr line. The
// one deliberate block is the guard's deny.
//
// After a compaction opencode keeps only the summary; what a plugin adds
// at experimental.session.compacting reaches only the summariser. The
// working set goes into the system prompt instead, from the first request
// after session.compacted on, once computed per compaction (see
// hooks.ManifestWith).
//
// MCP: install registers `git-lossless-mcp mcp --harness opencode` (or
// `git-lossless mcp ...`, see settings.MCPProgram) in
// opencode.json's "mcp" object (type local); opencode names its tools
// git-lossless_<tool> (MCPToolName), and read_file and restore_context
// count as seen for the session's context.
package opencode
