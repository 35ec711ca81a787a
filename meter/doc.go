// Package meter says where the read tokens went: metering (Meter, `git
// lossless meter`) and the pack built on the same evidence (BuildPack,
// `git lossless pack`). It owns the definitions below — what a read, a
// context, a re-read, a changed re-read and a saving are — and the pack's
// text. It may import gitstore (every event and blob comes through it),
// receipt (exact o200k counts, cached by blob and kind as receipts cache
// them), guard (printable paths), secrets (a file holding a credential
// stays out of the pack), internal/jsonscan (to decode the few
// fields of an event line it needs, see decoder) and the standard
// library; it must not import hooks or cmd, and nothing under
// internal/testkit.
//
// # Definitions
//
// A read is an event by which a model was shown a file's content: op
// "read" (a Read tool result, or the MCP read_file tool), "attach" (a file
// Claude Code re-attached after a compaction) and "restore" (content `git
// lossless restore` printed into a context). Restore counts: its content
// went into the context and cost tokens like any read, and a restore of
// content the context still had is as wasteful as a re-read of it. Edits
// and writes are not reads (the model produced that content; Claude Code
// does not show it back).
//
// A context is one model context: (session, agent) within the writer
// that holds the session (refs/lossless/cc-<session>; agent empty for the
// main context). Events are taken in archive order — Seq within the
// writer — which is the order they happened in for hook evidence and
// transcript order for swept evidence; timestamps are not used for
// ordering because swept lines carry their transcript time and hook
// events the hook's.
//
// A re-read is a read of a path this context had read before (a read of
// any view: a full read after a partial one is a re-read). It arrived
// changed when its blob differs from the blob of the context's previous
// read of that path: another version of the file, or another part of it
// (a partial view archives only the lines shown, so lines 1-50 after a
// full read is "changed" — which only ever understates the savings). It
// arrived unchanged when the blob is the same.
//
// A compaction (op "compact" of the context) empties the context: an
// unchanged re-read after a compaction since the previous read was needed,
// not wasted. The saving is therefore:
//
//	saved tokens = the o200k tokens of every re-read that arrived
//	               unchanged with no compaction of its context between the
//	               previous read of the path and it
//
// — content the model already held, byte for byte. The archive knows
// that: restore (or a read answered from the archive) could have replied
// "unchanged since your read" instead, at the cost of one line, which is
// not subtracted. Changed re-reads are not counted as saveable (a diff
// often exceeds the content). Reads whose content the archive does not
// hold (denied by the deny list: excluded; or pruned since) are counted
// as reads but their tokens are unknown ("uncounted"); excluded reads are
// not compared (there is no blob to compare).
//
// Tokens are the exact o200k_base count of what the model was shown
// (tokens.ModelText over the archived bytes: a partial view counts the
// lines shown), counted by tokens.Counter, whose cache under the
// repository's git dir receipts share: a warm run counts nothing.
//
// A time window (Options.Since) selects which reads are counted; whether
// a read is a re-read is decided on the context's whole history, so
// narrowing the window never turns a re-read into a first read.
//
// # Grouping
//
// Figures are given in total and grouped by file (the path as recorded:
// repository-relative inside the work tree, absolute outside), by session
// (events without a session — an MCP read outside any session — group by
// their writer), by agent (each context: the session and "main" or the
// subagent's id, since agent ids alone would merge every main context) and
// by repository: the event's repo field, the work tree the event was
// recorded in. A repository's archive normally holds one (several after
// moving the clone, or through linked worktrees sharing the archive); the
// embedded archive, used outside any repository, holds the directories it
// was recorded for, and events recorded without one group as "-".
//
// # The pack
//
// A pack is one text of the files agents read most across sessions, for
// an agent type's system prompt: a fleet of agents fanned out over one
// repository then starts with the hot files in a prefix the provider
// caches, instead of each reading them again.
//
// What goes in, and why the text is shaped as it is:
//
//   - Files are ranked by reads (read, attach, restore events of every
//     session) over the window, ties by path in byte order; each is taken
//     in rank order when its section fits in what is left of the budget,
//     else it is over budget and the next one is tried.
//   - The window ends at the newest read in the archive, not at the
//     clock (PackOptions.Now overrides it): the same archive gives the
//     same pack whenever it is built.
//   - Content is the working tree's, now (not the archived version: the
//     agents will work on the disk's). Files that are gone, denied by the
//     archive's deny list, binary (a NUL byte or invalid UTF-8), outside
//     the work tree, or holding a credential package secrets finds (the
//     pack is pasted into prompts; see ReasonSecret) are left out, with
//     that reason.
//   - The text holds only what the model uses: a fixed header naming the
//     window and the budget, then each chosen file in path order (not rank
//     order) with its git blob id. Read counts, times and "changed since
//     the last read" are in the JSON only: they change with every session
//     and would change the bytes — and so the system prompt and its cache
//     — without changing what the model learns. In path order, two files
//     trading ranks change nothing either.
//   - Budget counts the whole text in exact o200k tokens. Each section
//     starts with "=" right after an empty line, where o200k_base's
//     pre-tokenizer always starts a new piece (see receipt's nextChunk),
//     so the text's tokens are the header's plus each section's; the
//     total is still recounted over the finished text.
//
// Nothing in the text depends on map order, the clock, the archive's
// packing or the process: identical archive events and working tree give
// identical bytes, and `git gc` changes neither.
package meter
