// Package replay measures the archive against the transcripts it was
// made from: `git lossless bench replay`. It owns the replay of Claude
// Code sessions (a main transcript and its subagents') against the
// archive, the two figures the first tool this project replaces
// published — losslessness and savings — and the synthetic floor and
// ceiling printed beside them. It may import gitstore, hooks (to sweep a
// session before replaying it), hooks/transcript, receipt (the o200k
// counts), internal/jsonscan and go-udiff; nothing imports it but
// cmd/git-lossless.
//
// # Losslessness: what is compared
//
// A session is walked line by line with the transcript parser, each
// context (the main agent, each subagent) on its own. The operations are
// the file evidence the parser derives (hooks/doc.go's table): a Read
// result, a Write, an Edit or MultiEdit whose resulting file the
// transcript holds, and a file re-attached after a compaction. For each
// one, the archive event with the same dedupe key (tool_use_id, or
// attach:<line uuid>) is looked up in the session's writer
// (cc-<session>) and must be the same operation (op, context, path as the
// store records it, view); its blob is read back through gitstore and
// must equal, byte for byte, the text the transcript shows:
//
//   - Read: the file text the result carried (toolUseResult.file.content,
//     or the numbered result text without its numbers when there is no
//     toolUseResult, as in subagent transcripts); and, when the result
//     text the model was shown is numbered, that text with the numbers
//     taken off must be the archived bytes again, numbered from the
//     view's first line. Both the raw and the shown text are held to the
//     archive, so neither a parser nor a rendering can hide a difference;
//   - Write: the content written; Edit and MultiEdit: originalFile with
//     the edit applied (checked against the structuredPatch), that is the
//     file as the model's edit left it in its context; attach: the
//     re-attached content.
//
// The model's view of a context is, per path, the latest of these texts
// since the context's last compaction (a compact_boundary empties it, the
// attachments that follow refill it). After every operation that view is
// reconstructed from the archive — each path's entry is the blob of the
// archive event of the operation that set it — and compared with the
// transcript's. Only the operation's own path changes between two
// operations, on both sides, so comparing that entry after each
// operation compares the whole view after each operation: the replay
// does exactly that, and never re-reads a blob it has already matched
// against identical bytes.
//
// One divergence fails the run; it names the session, the transcript, the
// line (1-based) and the path. A missing event, another operation under
// the key, a blob that cannot be read (a damaged or replaced object) and
// different bytes are divergences. Counted apart, never as a pass:
//
//   - withheld: the deny list kept the content out by design (the event
//     is there, excluded, without a blob);
//   - unverifiable: an Edit whose resulting file the transcript does not
//     hold (NotebookEdit; an Edit without originalFile): the event must
//     be there, there is nothing to compare its content with;
//   - reused keys: the transcript reuses a tool_use_id for another
//     operation (Claude Code's ids are random; the scripted model of the
//     2.1.328 sample numbers its calls per process). The archive keeps the
//     first operation under the key; the later one cannot be told apart
//     by key and is reported, not compared.
//
// # Savings: what "sent" means
//
// savings = 1 − sent/baseline, in o200k tokens (receipt's counter, the
// real tokenizer; archived contents are counted by blob, with its cache).
// Only Read results are charged: writes and edits are the model's own
// text, re-attachments are sent by the harness whatever the strategy.
//
//   - baseline: the model simply re-reads. Each Read costs the file text
//     it was shown (without the line-number column, which every route
//     would add alike); a Read Claude Code itself answered file_unchanged
//     costs that short answer, on every side.
//   - restore: the context's held version of the path (the latest text it
//     was shown, written or edited since its last compaction) is used. A
//     re-read of the same view that arrives unchanged costs a one-line
//     reference (UnchangedNote); one that arrives changed costs the
//     cheaper of a unified diff against the held version and the new
//     text; a first read (or the first after a compaction) costs the
//     text.
//   - packs: a pack (PackPlanner) holds file versions served once per
//     context from a prefix; a Read of a packed version costs the
//     reference, any other Read its text, and every context that reads a
//     file is sent the pack once. The default planner (HotPack) picks the
//     versions with the largest net gain on the replayed corpus itself,
//     with hindsight: it is an upper bound for a pack built from this
//     history, and prompt caching is not modelled.
//
// # Floor and ceiling
//
// WriteReadOnce (every file read once: savings exactly 0) and
// WriteEditLoop (one file read, then edited and re-read N times) write
// Claude Code 2.1.328-shaped transcripts that are swept and replayed by
// the same code as real ones, so the floor and the ceiling are measured,
// not assumed.
package replay
