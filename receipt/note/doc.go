// Package note is the receipt's pure part: which events belong to a
// commit (the membership rule), the statuses that rule gives each changed
// path, and the note's text format, its rendering and its parsing. It
// does no I/O: Compute turns an Input (the commit, its changed paths, the
// candidate events, and callbacks for the tree, the deny list and token
// counts) into a Receipt; Marshal and Parse convert it to and from the
// canonical text; PathEvidence and ReadEvidence are the rule run backwards,
// for a verifier holding the events a receipt names. Building from a
// repository, signing, storing as git notes and verifying are package
// receipt, which imports this one. This documentation is the format's
// specification; the worked example below is checked byte for byte by
// receipt's Example (TestDocWorkedExample).
//
// It may import the standard library and gitstore, for the event and
// writer types (gitstore.Event, gitstore.WriterInfo) it reads; nothing
// that reads or writes a repository, a key or a file.
//
// The name: the format's unit is the git note one commit carries, and a
// package named for it reads as note.Parse, note.Receipt, as age's
// internal/format or x/mod's sumdb/note name theirs.
//
// # Which events belong to a commit (rule v1)
//
// Let C be the commit, P its first parent (none for a root commit), T(x) a
// commit's committer time in Unix seconds, and sec(e) an event's time
// truncated to whole seconds (git records no finer time).
//
//   - The changed paths are the paths whose entry differs between P's tree
//     and C's tree (name, mode or object; a root commit: every path of C).
//   - The window is [T(P), T(C)], both ends included; a root commit's
//     window has no start.
//   - A context is one model context: the events of one session (the
//     event's "session") and one agent within it ("agent", empty for the
//     main agent). Events without a session form one context per agent id.
//   - A context touched the commit when it has a file event — op read,
//     write, edit, attach, restore or deny — on a changed path with sec(e)
//     in the window.
//   - The events belonging to the commit are every event of the contexts
//     that touched it with sec(e) <= T(C), whatever its path or op, from
//     any writer of the repository's archive, including events before the
//     window: an agent that read a file yesterday and edited it today
//     brought yesterday's view with it.
//
// Events recorded after the receipt was issued, or timed after T(C), are
// not part of it; a commit whose committer date was set by hand (or by a
// rebase) gets the window that date gives.
//
// # Path statuses
//
// For every changed path, in path order, the receipt gives the change
// against P (A added, M modified, D deleted), the mode and blob in C, a
// status, and the event the status rests on. The statuses follow one rule:
// unseen means no agent context touched the path at all; every other
// status says how what the agents last had of the path compares with what
// was committed.
//
// Among the belonging file events on the path (a touch: op read, write,
// edit, attach, restore or deny), an event names a version when its op is
// read, write, edit, attach or restore and it has a blob; its version is
// that blob or, for a read, the "disk_blob" recorded beside it (Claude Code
// shows CRLF files with LF). A whole version is one that was not a partial
// view ("lines:A-B"). The decisive version is the last whole version or,
// when there is none, the last partial view that names a version.
//
//   - excluded: the path is on the deny list (the store's, when the receipt
//     is built) or one of its events is excluded. The access is recorded
//     and shown; no blob id of the path is named, not even the committed
//     one. Evidence: the last file event on the path, if any.
//   - unseen: no belonging file event on the path. Evidence "-".
//   - changed-after: an agent touched the path, but what they last had is
//     not what was committed: the commit deletes the path, or the decisive
//     version differs from the committed blob, or no touch named a version
//     at all (a denied edit, an edit or read recorded without content).
//     Someone, or something outside the agents' tools, changed it after
//     them. Evidence: the decisive version, else the last touch.
//   - written: the decisive version is the committed blob, it is a whole
//     version, and some belonging write or edit produced exactly that
//     blob. Evidence: the last such write or edit.
//   - seen: the decisive version is the committed blob, but no model wrote
//     it: a context saw exactly what was committed — in whole, or, when
//     the evidence is a partial view, in part (the coverage notes say so).
//     Evidence: the decisive version.
//
// A partial view names the committed blob when the archive holds the
// whole file under it (or a "disk_blob" beside it). Claude Code's hooks
// archive only the lines shown, with the "disk_blob" of the file they were
// cut from when the disk still held those lines at the hook; a partial
// view swept from a transcript has none, so a path its agents saw only in
// part through the sweep is changed-after unless they also saw it whole.
//
// # Contexts, read sets, spans, tokens
//
// Contexts are numbered c1, c2, ... in the order of their first belonging
// event; each line gives the session ("-" when none), the agent ("main" for
// the main context), how many events belong, the times of the first and
// last, and, when it is known, the agent harness the context's events came
// from: each event's "harness" field, else the harness its writer's prefix
// names (cc-<session>: claude-code; see gitstore.HarnessOf), several
// comma-separated in byte order should its events name more than one. The
// harness is left out when no event's is known (a proxy's or the CLI's
// events), and in receipts issued before it was added: those parse and
// verify as they did. The read set has one line per context, path and version the
// context saw or wrote (op read, write, edit, attach, restore with a blob,
// or an excluded access), sorted by context, then path, then first sight:
//
//   - excluded: the access was deny-listed; no blob;
//   - partial: every event of this version was a partial view;
//   - outside: the path is outside the repository (absolute);
//   - absent: the path is not in C's tree;
//   - current: the version is the one in C's tree;
//   - stale: it differs from C's tree and is the context's last whole
//     version of the path — the context's latest view of the file is not
//     what was committed (an edit made from a stale read shows here);
//   - superseded: it differs from C's tree and the context later had
//     another whole version (it moved on: it edited the file or read it
//     again).
//
// with the ops that put it there, the view, and the context's last event
// with that version. File events that carry no text (images, notebooks)
// are counted in a note, not listed.
//
// Spans are the context's conversation spans (op "span", written by the
// transcript sweep), listed by event reference. Tokens are counted with
// the o200k_base tokenizer (github.com/tiktoken-go/tokenizer, vocabulary
// compiled in, no network): "files" sums, over the context's read-set
// lines that are not excluded, the tokens of the version as shown (the
// lines of a partial view; see ModelText), "spans" the tokens of its span
// texts. Tool results in spans repeat file contents, so the two are given
// apart, never added.
//
// # Writers and seal heads
//
// Events are referenced as wN#SEQ: entry SEQ of writer N of the writer
// lines (writers sorted by name). Each writer line gives the seq range of
// its belonging events and the writer's head (seq and seal, package seal)
// when the receipt was built: the chain the receipt rests on. receipt.Verify asks
// the chain to still hold that seal at that seq.
//
// # Coverage
//
// Two coverage lines count the statuses, contexts, belonging events and
// the sources that recorded them (hook, sweep, cli, ...). Note lines then
// state, in sentences, what could and could not be observed: the agents'
// recorded tool calls and swept spans are; edits made outside the agents'
// file tools (shell commands, editors, git) are not, and show only as
// changed-after or unseen; deny-listed content is withheld; partial views
// are not compared in the read set; paths touched without any recorded
// version are changed-after; contexts without swept transcripts have no
// spans.
//
// # Text format, version 1
//
// A receipt body is UTF-8 text of lines, each ending in "\n", at most
// MaxSize bytes, no line longer than MaxLine. Fields are separated by one
// space. The first line is the version; the others are, in this order:
//
//	git-lossless receipt v1
//	commit HEX40
//	tree HEX40
//	parent HEX40                                   zero or more, in the commit's order
//	committed UNIX                                 T(C)
//	window UNIX|- UNIX                             T(P) ("-" for a root commit), T(C)
//	carried HEX40 window UNIX|- UNIX               zero or more, sorted by commit (see Carried receipts)
//	issued YYYY-MM-DDTHH:MM:SSZ                    when it was built, UTC
//	tokenizer o200k_base
//	path A|M|D STATUS MODE|- BLOB|- REF|- PATH     one per changed path, sorted by path bytes
//	context cN session STR agent STR|main events N first TIME last TIME [harness NAMES]
//	read cN STATE OPS BLOB|- VIEW REF PATH         OPS: sorted, comma-separated
//	spans cN COUNT REFS|-                          one per context
//	tokens cN files N spans N                      one per context
//	tokens total files N spans N
//	writer wN NAME entries A-B head SEQ SEAL64     one per writer, sorted by name
//	coverage paths N written N seen N changed-after N unseen N excluded N
//	coverage contexts N events N sources LIST|-    LIST: sorted, comma-separated
//	note TEXT                                      zero or more sentences
//
// REF is wN#SEQ, with SEQ inside the entries range of writer N; REFS is a
// comma-separated list of REF or wN#A-B runs (maximal, sorted by writer
// then seq), at most MaxRefs references in all. VIEW is "full" or "lines:A-B".
// Integers are decimal without sign or leading zeros. A STR or PATH field
// is written as "-" when empty; as itself when it is made only of the
// bytes 0x21-0x7E other than '"' and '\' (and is neither "-" nor
// "main"); otherwise in Go's strconv.Quote form (double-quoted, Go
// escapes, invalid UTF-8 bytes as \x escapes), so every byte string
// round-trips. No line
// starts with '-' or ends in white space, so clear-signing never
// dash-escapes or strips anything.
//
// Parse accepts exactly this canonical form: it re-encodes what it read
// and rejects the text unless the bytes are identical, so one receipt has
// one text and a changed byte is never silently normalised away. It also
// rejects counts that disagree with the lines they count, references to
// unlisted writers or contexts, and unknown versions.
//
// # Worked example
//
// One session's main agent read README.md and src/app.go, edited
// src/app.go and read .env (deny-listed); its subagent read lines 3-4 of
// src/util.go and line 3 of src/app.go. Then a human changed README.md
// again, added docs/notes.md, and committed everything with .env. The
// receipt body (Example builds it):
//
//	git-lossless receipt v1
//	commit 5c8e0d2a9f7b4e1c3a6d8f0b2e4c6a8d0f1b3e5a
//	tree 9e1d4c7b2a5f8e3d6c9b0a1f4e7d2c5b8a3f6e9d
//	parent 1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d
//	committed 1767323400
//	window 1767319200 1767323400
//	issued 2026-01-02T03:12:00Z
//	tokenizer o200k_base
//	path A excluded 100644 - w1#6 .env
//	path M changed-after 100644 0c41cb6f34c3a680d4be32f1c9194919f591fe90 w1#3 README.md
//	path A unseen 100644 b2169e83fab09d2f0a9dbf136d3d86cbe24d39d7 - docs/notes.md
//	path M written 100644 a1c67c5be597dfeabda4e519437b67e2855354b7 w1#5 src/app.go
//	context c1 session 0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b agent main events 6 first 2026-01-02T03:00:05Z last 2026-01-02T03:00:40Z
//	context c2 session 0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b agent a4b9c2d1e0f3 events 2 first 2026-01-02T03:00:50Z last 2026-01-02T03:00:55Z
//	read c1 excluded read - full w1#6 .env
//	read c1 stale read 9a182c8e1e73fc26ca92b7e71a042dfc705cac55 full w1#3 README.md
//	read c1 superseded read 38dd16da61accb1a8de6ac8709d2e65ef4a51a4a full w1#4 src/app.go
//	read c1 current edit a1c67c5be597dfeabda4e519437b67e2855354b7 full w1#5 src/app.go
//	read c2 partial read f543bd3809a8fbd2d7463c74ef96f1e5d8be11ae lines:3-3 w1#8 src/app.go
//	read c2 partial read f45496b32df80d70fa19389de8e55e5dca388fbb lines:3-4 w1#7 src/util.go
//	spans c1 2 w1#1-2
//	spans c2 0 -
//	tokens c1 files 27 spans 19
//	tokens c2 files 35 spans 0
//	tokens total files 62 spans 19
//	writer w1 cc-0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b entries 1-8 head 9 43ad41f2c0abb366f5d50e44fa933bc6b679e1278d190ec0094a8dcaeed9c06a
//	coverage paths 4 written 1 seen 0 changed-after 1 unseen 1 excluded 1
//	coverage contexts 2 events 8 sources hook,sweep
//	note Observed: what 2 agent contexts read, edited and wrote through recorded tool calls, and the conversation spans of those whose transcripts were swept.
//	note Not observed: changes made outside the agents' file tools (shell commands, editors, git itself); they show only as changed-after or unseen.
//	note Withheld: the content of deny-listed paths; their access is recorded, their content is in no object and no blob id is named.
//	note Partial: some versions were shown only in part (view lines:A-B); the read set does not compare them with the tree, a path the agents saw only in part is seen only if the archived version is the committed blob, and their tokens count the lines shown.
//	note No conversation spans are archived for 1 context: no transcript of theirs was swept before the commit.
//	note Events recorded after this receipt was issued, or timed after the commit, are not part of it.
//
// .env is excluded (no blob named); README.md is changed-after (the agent's
// last view, w1#3, is not what was committed, and its read-set line is
// stale); docs/notes.md is unseen; src/app.go is written (w1#5 edited it
// to exactly the committed blob; the version read before, w1#4, is
// superseded). The subagent c2 touched src/app.go only partially.
//
// The receipt of the worked example issued where cc- names Claude Code's
// writers (what `git lossless receipt` passes as Input.HarnessOf) differs
// only in its two context lines, which name the harness:
//
//	context c1 session 0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b agent main events 6 first 2026-01-02T03:00:05Z last 2026-01-02T03:00:40Z harness claude-code
//	context c2 session 0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b agent a4b9c2d1e0f3 events 2 first 2026-01-02T03:00:50Z last 2026-01-02T03:00:55Z harness claude-code
//
// Verification checks the names against the events it reads: a
// referenced event (read-set evidence, a span) that names its harness must
// name one its context lists. A context that names none, and an event that
// names none (its harness is its writer's, whose name the receipt signs),
// are not compared.
//
// # Carried receipts
//
// A receipt carried through a history rewrite (amend, rebase, squash,
// cherry-pick, a host's squash merge) is built for the new commit C like
// any other — its commit, tree, parents, committer time and changed paths
// are C's — and lists, in "carried" lines sorted by commit id, each source
// commit S it replaces with the window S's receipt had. Its window is then
// not [T(P), T(C)] but the union of the sources' windows: the earliest
// start ("-" when a source's had none) and the latest end; that end, not
// T(C), bounds the belonging events. A rewrite's committer dates say when
// history was rewritten, not when the agents worked, so C's own window
// would hold none of the work it carries. A squash's receipt covers the
// paths C changes, the union of its sources'. A source's window may end
// before it starts (a parent committed after its child, as an amended
// parent is); it is kept as it was. Verification checks the receipt
// against C as usual and, for each source whose receipt is still on the
// same notes ref, that the carried window is that receipt's; a source
// whose receipt (or commit) is gone is reported, and its window stands as
// a signed claim.
//
// # Versions
//
// v1 is the first format. Within v1, the optional "harness NAMES" at the
// end of a context line was added: a parser that predates it rejects a
// receipt that has one, and accepts every receipt without one, as before.
// The "carried" lines were added the same way: receipts without them are
// unchanged, and a parser that predates them rejects a carried receipt.
// A later version changes the first line; this
// package rejects versions it does not know rather than guess.
package note
