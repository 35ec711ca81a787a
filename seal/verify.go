package seal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// Kind names what a verifier found wrong with an entry. The names are part
// of the CLI's output and of `verify --json`.
type Kind string

const (
	// ContentChanged: the blob exists but its bytes no longer hash to the
	// sha256 the entry recorded.
	ContentChanged Kind = "content-changed"
	// BlobMissing: the entry names a blob that is not in the repository (or
	// not in its batch's tree), and no prune record explains it.
	BlobMissing Kind = "blob-missing"
	// EntryEdited: an entry's bytes no longer hash to the seal its successor
	// (or its batch commit) recorded.
	EntryEdited Kind = "entry-edited"
	// EntryReordered: entries are out of sequence.
	EntryReordered Kind = "entry-reordered"
	// ChainForked: the chain disagrees with a checkpoint seen earlier (a
	// sibling history, a rollback, or a rewrite past the witness).
	ChainForked Kind = "chain-forked"
	// AnchorMismatch: the chain does not extend a head anchored on a
	// remote (a signed checkpoint, package anchor): history rewritten on
	// this machine after it was anchored.
	AnchorMismatch Kind = "anchor-mismatch"
	// Unsealed: a batch or entry carries no seal at all (written by
	// something other than git-lossless, or a format this version cannot
	// read).
	Unsealed Kind = "unsealed"
	// WitnessDamaged: this clone's memory of the writer's heads (its
	// witness or anchored heads) holds a line that does not parse: the
	// comparison with what was seen before cannot be trusted, which is a
	// failure in itself (a damaged memory read as "nothing seen" would let
	// a rolled-back chain verify).
	WitnessDamaged Kind = "witness-damaged"
	// Pruned: the blob is gone and a prune record says it was removed on
	// purpose. Expected, not a failure.
	Pruned Kind = "pruned"
)

// ErrSeenDamaged is wrapped by Source.Checkpoints when the memory of
// heads seen before is damaged; Checkpoints then returns what it could
// read with it, and Verify reports a WitnessDamaged break.
var ErrSeenDamaged = errors.New("witness damaged")

// ErrMissing is wrapped by Source.Content when a blob does not exist.
var ErrMissing = errors.New("object missing")

// ErrCorrupt is wrapped by Source.Content when a blob exists but cannot be
// read back (a damaged object file): its content has changed.
var ErrCorrupt = errors.New("object corrupt")

// Batch is one commit of a writer's log as read from storage.
type Batch struct {
	Commit string
	// Seq and Seal are the commit's trailers: the seq and seal of its last
	// entry. Zero/empty when the commit carries none.
	Seq  int64
	Seal string
	// Lines are the stored event lines, without newlines.
	Lines [][]byte
	// Blobs holds the blob ids the batch's tree references.
	Blobs map[string]bool
	// Err is set when the commit could not be read as a batch at all.
	Err error
}

// Source is what a chain is verified against: the batches of one writer,
// the content of blobs, and the checkpoints seen before.
type Source interface {
	// Batches returns the writer's batches, oldest first. A batch that
	// cannot be read is returned with Err set, and the batches before it
	// are returned too whenever they can be reached (a commit whose tree
	// or events.jsonl is damaged still names its parent): Verify counts
	// and checks them, and names the damaged batch's first entry as the
	// break, which it can only number from the entries before it.
	Batches(ctx context.Context, writer string) ([]Batch, error)
	// Content returns a blob's bytes, or an error wrapping ErrMissing.
	// Verify calls it from several goroutines at once.
	Content(ctx context.Context, blob string) ([]byte, error)
	// Checkpoints returns the heads of this writer seen earlier.
	Checkpoints(ctx context.Context, writer string) ([]Checkpoint, error)
}

// Break is the first problem found in a writer's chain.
type Break struct {
	Kind   Kind   `json:"kind"`
	Seq    int64  `json:"seq,omitempty"`
	Commit string `json:"commit,omitempty"`
	Blob   string `json:"blob,omitempty"`
	Detail string `json:"detail"`
}

// Report is the result of verifying one writer.
type Report struct {
	Writer  string `json:"writer"`
	Entries int64  `json:"entries"`
	Batches int    `json:"batches"`
	Head    string `json:"head,omitempty"` // seal of the last entry
	Commit  string `json:"commit,omitempty"`
	Blobs   int    `json:"blobs_checked"`
	// Pruned lists entries whose content was removed by a prune record.
	Pruned []Break `json:"pruned,omitempty"`
	Break  *Break  `json:"break,omitempty"`
}

// OK reports whether the writer verified without a break.
func (r *Report) OK() bool { return r.Break == nil }

// entry is the part of a line the verifier reads.
type entry struct {
	Seq      *int64 `json:"seq"`
	Prev     string `json:"prev"`
	Blob     string `json:"blob"`
	SHA256   string `json:"sha256"`
	Excluded bool   `json:"excluded"`
	Op       string `json:"op"`
	Pruned   []struct {
		Blob   string `json:"blob"`
		SHA256 string `json:"sha256"`
	} `json:"pruned"`
}

// Options tunes verification.
type Options struct {
	// SkipContent skips reading blobs (structure and chain only).
	SkipContent bool
}

// Verify walks one writer's chain and reports the first break: sequence,
// links and batch trailers first, then every referenced blob's presence and
// sha256, then the checkpoints. The earliest break (lowest seq) wins.
func Verify(ctx context.Context, src Source, writer string, opt Options) (*Report, error) {
	rep := &Report{Writer: writer}
	batches, err := src.Batches(ctx, writer)
	if err != nil {
		return nil, fmt.Errorf("read writer %s: %w", writer, err)
	}
	rep.Batches = len(batches)
	if len(batches) > 0 {
		rep.Commit = batches[len(batches)-1].Commit
	}

	type ref struct {
		seq    int64
		commit string
		blob   string
		sha256 string
		inTree bool
	}
	var (
		prev    = Genesis(writer)
		seq     int64
		seals   [][32]byte
		refs    []ref
		pruned  = map[string]bool{}
		first   *Break
		setFrom = func(b Break) {
			if first == nil || b.Seq < first.Seq {
				bb := b
				first = &bb
			}
		}
	)
structure:
	for bi, b := range batches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Entries are numbered by the chain: seq is the last entry read,
		// so seq+1 is the first entry of this batch.
		if b.Err != nil {
			setFrom(Break{Kind: Unsealed, Seq: seq + 1, Commit: b.Commit, Detail: unreadableDetail(b, seq, batches[bi+1:])})
			break
		}
		if b.Seq == 0 && b.Seal == "" {
			// No trailer at all: not a git-lossless batch, nothing in it
			// is sealed.
			setFrom(Break{Kind: Unsealed, Seq: seq + 1, Commit: b.Commit, Detail: "batch commit carries no seal"})
			break
		}
		if len(b.Lines) == 0 {
			setFrom(Break{Kind: EntryEdited, Seq: seq + 1, Commit: b.Commit,
				Detail: fmt.Sprintf("batch commit seals entry %d but holds no entries: entry %d on were removed", b.Seq, seq+1)})
			break
		}
		batchFirst := seq + 1
		for i, line := range b.Lines {
			n := seq + 1 // the entry this line must be
			var e entry
			if err := decodeEntry(line, &e); err != nil {
				setFrom(Break{Kind: EntryEdited, Seq: n, Commit: b.Commit, Detail: fmt.Sprintf("entry %d is not valid JSON: %v", n, err)})
				break structure
			}
			if e.Seq == nil || e.Prev == "" {
				setFrom(Break{Kind: Unsealed, Seq: n, Commit: b.Commit, Detail: fmt.Sprintf("entry %d has no seq/prev", n)})
				break structure
			}
			if *e.Seq != n {
				setFrom(seqBreak(n, *e.Seq, b.Commit, batches[bi:], i))
				break structure
			}
			if e.Prev != prev {
				// Line n names another prev than line n-1 hashes to: one
				// of the two changed. Line n is intact when what follows
				// it (the next line's prev, or the batch's seal) still
				// names its hash; then line n-1 changed. Else line n did
				// (its prev, at least).
				setFrom(prevBreak(n, e.Prev, prev, b, i))
				break structure
			}
			seq++
			sum := sha256.Sum256(line)
			seals = append(seals, sum)
			prev = hex.EncodeToString(sum[:])
			for _, p := range e.Pruned {
				pruned[p.Blob] = true
			}
			if e.Blob != "" && !e.Excluded {
				refs = append(refs, ref{seq: seq, commit: b.Commit, blob: e.Blob, sha256: e.SHA256, inTree: b.Blobs[e.Blob]})
			}
		}
		if br, ok := trailerBreak(b, batchFirst, seq, prev, seals); !ok {
			setFrom(br)
			break
		}
	}
	rep.Entries = seq
	if seq > 0 {
		rep.Head = prev
	}

	if !opt.SkipContent {
		// Read and hash the blobs on every core first (inflating packed
		// blobs is most of verify's time), then judge them in order below
		// exactly as if each were read when its entry came up.
		var todo []blobCheck
		idx := map[string]int{}
		for _, r := range refs {
			if first != nil && r.seq >= first.Seq {
				break
			}
			if !r.inTree {
				if pruned[r.blob] {
					continue
				}
				break
			}
			key := r.blob + " " + r.sha256
			if _, ok := idx[key]; !ok {
				idx[key] = len(todo)
				todo = append(todo, blobCheck{blob: r.blob, sha256: r.sha256})
			}
		}
		checkBlobs(ctx, src, todo)
		checked := map[string]string{} // blob -> "" ok, or kind
		for _, r := range refs {
			if first != nil && r.seq >= first.Seq {
				break
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if !r.inTree {
				if pruned[r.blob] {
					rep.Pruned = append(rep.Pruned, Break{Kind: Pruned, Seq: r.seq, Commit: r.commit, Blob: r.blob, Detail: "removed by a prune record"})
					continue
				}
				setFrom(Break{Kind: BlobMissing, Seq: r.seq, Commit: r.commit, Blob: r.blob, Detail: "blob is not in its batch's tree"})
				break
			}
			key := r.blob + " " + r.sha256
			res, seen := checked[key]
			if !seen {
				c := &todo[idx[key]]
				if c.err != nil {
					return nil, fmt.Errorf("read blob %s: %w", r.blob, c.err)
				}
				if c.read {
					rep.Blobs++
				}
				res = c.res
				checked[key] = res
			}
			switch res {
			case "":
			case string(BlobMissing):
				if pruned[r.blob] {
					rep.Pruned = append(rep.Pruned, Break{Kind: Pruned, Seq: r.seq, Commit: r.commit, Blob: r.blob, Detail: "removed by a prune record"})
					continue
				}
				setFrom(Break{Kind: BlobMissing, Seq: r.seq, Commit: r.commit, Blob: r.blob, Detail: "blob is not in the repository"})
			default:
				setFrom(Break{Kind: ContentChanged, Seq: r.seq, Commit: r.commit, Blob: r.blob, Detail: "blob content does not hash to the recorded sha256"})
			}
			if res != "" && first != nil {
				break
			}
		}
	}

	cps, err := src.Checkpoints(ctx, writer)
	if err != nil && !errors.Is(err, ErrSeenDamaged) {
		return nil, fmt.Errorf("read checkpoints of %s: %w", writer, err)
	}
	damaged := err
	for _, cp := range cps {
		if cp.Seq <= 0 {
			continue
		}
		kind, seen := ChainForked, "was seen before"
		if cp.Anchor != "" {
			kind, seen = AnchorMismatch, "was anchored ("+cp.Anchor+")"
		}
		if cp.Seq > int64(len(seals)) {
			if first == nil { // a shorter chain because of an earlier break is that break
				setFrom(Break{Kind: kind, Seq: int64(len(seals)) + 1,
					Detail: fmt.Sprintf("chain ends at entry %d but entry %d (%.12s) %s: rolled back or replaced", len(seals), cp.Seq, cp.Seal, seen)})
			}
			continue
		}
		if hex.EncodeToString(seals[cp.Seq-1][:]) != cp.Seal {
			setFrom(Break{Kind: kind, Seq: cp.Seq,
				Detail: fmt.Sprintf("entry %d hashes to %.12s but %.12s %s: the ref points at another history", cp.Seq, hex.EncodeToString(seals[cp.Seq-1][:]), cp.Seal, seen)})
		}
	}
	if damaged != nil {
		if first == nil {
			first = &Break{Kind: WitnessDamaged, Detail: damaged.Error()}
		} else {
			first.Detail += "; and " + damaged.Error()
		}
	}
	rep.Break = first
	return rep, nil
}

// seqBreak is the break for a line at position i of batches[0] that
// carries seq found where entry want belongs. Entries 1..want-1 were
// read in order, so the two directions mean different things:
//
//   - found < want: the number is already used, so this line is a copy of
//     an earlier entry or an inserted one renumbered to fit. No order of
//     the original entries produces it (in a permutation the first entry
//     out of place always carries a higher number), so it is an edit of
//     the chain (FORMAT.md section 9: "an edited, inserted or removed
//     line"), even when entry want itself follows.
//   - found > want: if entry want comes later (in this batch or a later
//     one) the entries are out of order ("swapped lines or batches");
//     if it never does, it was removed or this line was renumbered.
func seqBreak(want, found int64, commit string, batches []Batch, i int) Break {
	if found < want {
		return Break{Kind: EntryEdited, Seq: want, Commit: commit,
			Detail: fmt.Sprintf("expected entry %d, found %d again: an inserted or copied line", want, found)}
	}
	if laterSeq(want, batches, i) {
		return Break{Kind: EntryReordered, Seq: want, Commit: commit,
			Detail: fmt.Sprintf("expected entry %d, found %d; entry %d comes later", want, found, want)}
	}
	return Break{Kind: EntryEdited, Seq: want, Commit: commit,
		Detail: fmt.Sprintf("expected entry %d, found %d, and no entry %d follows: removed, or renumbered", want, found, want)}
}

// laterSeq reports whether a line carrying seq want follows line i of
// batches[0], in that batch or a later one. The search stops at the
// first unreadable batch: nothing after it can be placed in the chain.
func laterSeq(want int64, batches []Batch, i int) bool {
	for bi, b := range batches {
		if b.Err != nil {
			return false
		}
		lines := b.Lines
		if bi == 0 {
			lines = lines[i+1:]
		}
		for _, l := range lines {
			var e entry
			if decodeEntry(l, &e) == nil && e.Seq != nil && *e.Seq == want {
				return true
			}
		}
	}
	return false
}

// prevBreak is the break for entry n (line i of b) whose prev is not the
// hash of entry n-1 (have).
func prevBreak(n int64, named, have string, b Batch, i int) Break {
	h := Hash(b.Lines[i])
	intact := false
	if i+1 < len(b.Lines) {
		var next entry
		intact = decodeEntry(b.Lines[i+1], &next) == nil && next.Prev == h
	} else {
		intact = b.Seal == h
	}
	if intact && n > 1 {
		return Break{Kind: EntryEdited, Seq: n - 1, Commit: b.Commit,
			Detail: fmt.Sprintf("entry %d hashes to %.12s, but entry %d (itself intact) names prev %.12s", n-1, have, n, named)}
	}
	if n == 1 {
		return Break{Kind: EntryEdited, Seq: 1, Commit: b.Commit,
			Detail: fmt.Sprintf("entry 1 names prev %.12s, not this writer's genesis %.12s", named, have)}
	}
	return Break{Kind: EntryEdited, Seq: n, Commit: b.Commit,
		Detail: fmt.Sprintf("entry %d names prev %.12s, but entry %d hashes to %.12s, and entry %d no longer hashes to what follows it", n, named, n-1, have, n)}
}

// trailerBreak checks a batch's Lossless-Seq and Lossless-Seal against
// its entries, first..last (last hashing to seal; seals holds every
// entry's seal so far). ok is true when they agree. A disagreement names
// the batch's last entry, unless the trailer shows where entries were
// removed (it seals a later entry) or added (it seals an earlier one).
func trailerBreak(b Batch, first, last int64, seal string, seals [][32]byte) (br Break, ok bool) {
	br = Break{Kind: EntryEdited, Seq: last, Commit: b.Commit}
	switch {
	case b.Seq == last && b.Seal == seal:
		return br, true
	case b.Seq == 0 || b.Seal == "":
		br.Kind = Unsealed
		br.Detail = fmt.Sprintf("batch commit's seal trailer is incomplete (Lossless-Seq %d, Lossless-Seal %q): entries %d-%d are not sealed", b.Seq, b.Seal, first, last)
	case b.Seal == seal:
		br.Detail = fmt.Sprintf("batch commit seals entry %d with the seal of entry %d, its last: Lossless-Seq changed", b.Seq, last)
	case b.Seq > last:
		br.Seq = last + 1
		br.Detail = fmt.Sprintf("batch commit seals entry %d as %.12s, but its entries end at %d: entries %d-%d were removed", b.Seq, b.Seal, last, last+1, b.Seq)
	case b.Seq < last && b.Seq >= first && hex.EncodeToString(seals[b.Seq-1][:]) == b.Seal:
		br.Seq = b.Seq + 1
		br.Detail = fmt.Sprintf("batch commit seals entry %d, but entries %d-%d follow it in the batch: added after it was sealed", b.Seq, b.Seq+1, last)
	default:
		br.Detail = fmt.Sprintf("batch commit seals entry %d as %.12s, entries end at %d hashing to %.12s", b.Seq, b.Seal, last, seal)
	}
	return br, false
}

// unreadableDetail says which entries an unreadable batch hides: from
// the entry after seq to its trailer's seq when its commit could be read,
// else to the entry before the next readable batch's first.
func unreadableDetail(b Batch, seq int64, after []Batch) string {
	last := b.Seq
	if last <= seq {
		last = 0
		for _, a := range after {
			if a.Err != nil || len(a.Lines) == 0 {
				break
			}
			var e entry
			if decodeEntry(a.Lines[0], &e) == nil && e.Seq != nil && *e.Seq > seq+1 {
				last = *e.Seq - 1
			}
			break
		}
	}
	if last > seq {
		return fmt.Sprintf("%v: entries %d-%d cannot be read", b.Err, seq+1, last)
	}
	return fmt.Sprintf("%v: entries from %d on cannot be read", b.Err, seq+1)
}

// blobCheck is one blob to read and hash, and what came of it.
type blobCheck struct {
	blob, sha256 string
	res          string // "" ok, or a Kind
	read         bool   // the content was read (counted in Report.Blobs)
	err          error  // a failure to read other than missing or corrupt
}

// checkBlobs reads and hashes the blobs of todo, on as many goroutines as
// there are cores (Source.Content must allow concurrent calls).
func checkBlobs(ctx context.Context, src Source, todo []blobCheck) {
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				c := &todo[i]
				if err := ctx.Err(); err != nil {
					c.err = err
					continue
				}
				data, err := src.Content(ctx, c.blob)
				switch {
				case errors.Is(err, ErrMissing):
					c.res = string(BlobMissing)
				case errors.Is(err, ErrCorrupt):
					c.res = string(ContentChanged)
				case err != nil:
					c.err = err
				default:
					c.read = true
					sum := sha256.Sum256(data)
					if hex.EncodeToString(sum[:]) != c.sha256 || gitobj.BlobID(data) != c.blob {
						c.res = string(ContentChanged)
					}
				}
			}
		}()
	}
	wg.Wait()
}
