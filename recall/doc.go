// Package recall finds what coding agents saw and said: a ranked search
// over the archive's conversation spans and file versions, an overview of
// its sessions, any span as text, and a file's history. It reads the
// archive through package gitstore only, and keeps a derived index under
// gitstore.Store.StateDir("recall") (FORMAT.md specifies its bytes) that
// can be deleted at any time.
//
// # API
//
//	ix, err := recall.Open(ctx, st, recall.Options{Identities: ids, Warn: warn})
//	res, err := ix.Search(ctx, recall.Query{Text: "compacting transcr", Limit: 10})
//	more, err := ix.Search(ctx, recall.Query{Text: "compacting transcr", Limit: 10, Cursor: res.Next})
//	ds, err := ix.Digests(ctx, recall.DigestQuery{Session: s, Since: t})
//	sp, err := ix.Span(ctx, "cc-1234#42")          // or a proxy span's "sp-..." id
//	vs, err := ix.FileHistory(ctx, "hooks/sweep.go", "")
//	h, err := ix.Handoff(ctx, recall.HandoffQuery{Session: s}) // "" : the newest session
//	safe := recall.Mask(text)
//	err = recall.Reindex(ctx, st)
//
// Handoff sums a session up for the agent that takes its work over (goal,
// pinned facts, latest statements, files, open errors, span ids; the
// rules are in handoff.go); KeepSentences and MustKeep are the pin rules
// it shares with the proxy.
//
// Open brings the index up to date and returns a snapshot of it (Stats
// says what it read and did); Search, Digests, Span and FileHistory read
// that snapshot and are safe for concurrent use. Open again to see events
// archived since: that costs a few milliseconds when little is new.
//
// # What is indexed
//
// A document is an event that is a span (op "span" with content: the
// spans a harness's sweep archives, in the neutral shape of package
// hooks/transcript, whose extra field "kind" is reported as user_prompt,
// assistant_text, thinking, tool_use, tool_result or compact_summary —
// the sweep stores "user" and "assistant" for the first two — and proxy
// spans, kind "proxy"), or a file version (op read, edit, write, attach,
// restore: kind "file"). A span is indexed by its text — every JSON string
// value of its document but those that name rather than say (kind, role,
// ids, the proxy's bookkeeping, base64 payloads) — plus its tool name and
// path; a file version by its path alone (its content is the repository's
// business). Content a prune record removed is not indexed.
//
// Text is split into tokens (runs of letters and digits, joined by single
// '_', '.' or '-': "sweep.go", "tool_use"; '/' separates, so a path falls
// into its components). A token's terms are its lower-cased form, stemmed
// by Porter's algorithm when it is a plain word ("compacting",
// "compaction" -> "compact"), and, for a compound (joiners or camelCase),
// the whole compound unstemmed plus each part as a plain word. A stemmed
// word that its stem changes is also indexed as itself (FORMAT.md, Terms),
// so that the word asked for can outrank the other forms of its stem.
//
// Secrets never reach the index: every span is scanned (package secrets)
// and the tokens of a finding are not indexed, whatever the archive holds
// (redaction may be off, or the archive older than the scanner's rules).
// A query token that is a secret is dropped for the same reason. Snippets
// are masked before they are cut, because a window could cut a secret in
// two and half a key is still a leak; Span returns the text as archived
// (placeholders included: revealing them is the caller's business, with
// gitstore.Crypt.Reveal), and Mask is for its callers.
//
// # Ranking
//
// BM25 (k1 1.2, b 0.75) over the terms, summed over the query's tokens
// (any token may match; documents matching more, and rarer, tokens rank
// higher). A word is matched by its stem, and a document that holds only
// other forms of that stem ("compaction" for "compacting") scores 0.8 of
// what it would with the word itself: at equal occurrences and length
// the exact word outranks its stem (more occurrences of another form can
// still outweigh it, as BM25 weighs them). A token that is not a term is
// looked up as a fragment: the terms that contain it (three bytes or
// more: "transcr" in "transcript", "eep.g" in "sweep.go"), found through
// a trigram index of the term dictionary, score half an exact match; one
// that matches nothing is looked up as a typo, the terms one edit away
// (substitution, insertion, deletion, transposition; tokens of four bytes
// or more), at 0.3. So an exact match outranks a stem, a stem a
// fragment, a fragment a typo (the looser kinds are looked for only when
// the tighter find nothing). A compound that matches nothing in any of
// these ways is searched by its parts. Ties go to the newer document.
// Pages are cut by an opaque cursor bound to the query.
//
// # Encrypted spans
//
// Spans stored as age ciphertext ("enc":"age") are indexed on disk by
// their metadata only (tool, path) and reported Locked. Given identities,
// Open decrypts them in memory and indexes their plaintext in an
// in-memory segment that is never written; nothing derived from a
// plaintext — no term, no snippet, no first words — reaches the disk.
// That costs a decryption per encrypted span at every Open.
//
// # Lines in memory
//
// LineIndex applies the same analysis to lines rather than documents,
// in memory only: Add(ref, text) indexes each line of text under ref
// (secrets' tokens left out), and Match returns the lines a text's
// distinctive words name (identifiers, path components, numbers,
// uncommon words; by stem, whole compound, or as a fragment of four
// bytes or more through a trigram index of its terms), best first. The
// compacting proxy keeps one per session for its stale recall (package
// proxy); nothing of it is written, so it may hold decrypted text.
//
//	lx := recall.NewLineIndex(0)
//	lx.Add("sp-...", text)
//	ms := lx.Match(recall.LineQuery{Text: question, Max: 3, Absent: absent})
//
// # The index
//
// The index is a set of immutable segment files and a manifest naming
// them and, for each writer, the head (commit, seq) it covers. Open lists
// the writers' heads (gitstore.Store.Writers) and compares them with the
// manifest: a writer whose head moved is read from where the index left
// it (its new batches, commit by commit, or in bulk past 64 batches), a
// writer whose indexed commit is no longer in its history (a prune or a
// redaction rewrote it) is read whole into a new epoch, which makes its
// older documents dead without touching the segments that hold them, and
// a writer whose ref is gone dies with its epoch. What was read is
// written as one new, small segment, and segments are merged size-tiered
// (while the newest holds at least half of what the one before holds;
// segments mostly dead are rewritten alone), so there are O(log n) of
// them and merges drop dead documents. Then the manifest is replaced by
// rename.
//
// Updates take an flock on the index's lock file (as gitstore's own index
// does), so that two processes, or two Opens in one process, never write
// at once; the second waits, then finds the work done. Readers take no
// lock: segment files are written under a temporary name and renamed, and
// never modified, so a reader sees an old manifest's segments or a new
// one's (a segment a merge removed stays readable through a mapping made
// before; one that vanished before it was mapped makes the reader read
// the manifest again).
//
// A missing, foreign or damaged index is rebuilt; an index that cannot
// be written (no state dir, a full disk, the lock held for 30 seconds) is
// updated in memory for this Index, with a warning. Opening a segment
// reads its footer, writer table and page checksums only: readers map the
// file and binary-search the dictionary, and each 4 KiB page is checked
// against its CRC the first time it is read. A damaged page's segment is
// left out of the results, with a warning, and its manifest removed so
// that the next Open rebuilds the index. The index is a cache: files are
// not fsynced; a torn file fails its checksums.
//
// The only errors the index gives are the archive's own (its refs cannot
// be listed) and the context's.
package recall
