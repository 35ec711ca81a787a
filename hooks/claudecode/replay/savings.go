package replay

import (
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"sort"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/git-lossless/git-lossless/gitstore"
)

// UnchangedNote is what the restore model sends instead of a re-read that
// arrives as the context holds it: one line naming the file (a real
// reference would name the version too; this one is not shorter than
// that).
func UnchangedNote(path string) string {
	return fmt.Sprintf("%s is unchanged since you last saw it in this context.", path)
}

// PackNote is what the packs model sends instead of a Read of a version
// the pack holds.
func PackNote(path string) string {
	return fmt.Sprintf("%s is in the pack above, unchanged.", path)
}

// diffContext is the unified diff's context lines, git's default.
const diffContext = 3

// unifiedDiff is the diff restore would send for a changed re-read: from
// the held version to the new text, as `git diff` prints it.
func unifiedDiff(path, old, new string) string {
	d, err := udiff.ToUnified("a/"+path, "b/"+path, old, udiff.Lines(old, new), diffContext)
	if err != nil {
		return new // no diff: the text itself is what would be sent
	}
	return d
}

// PackRead is one Read of a file version, as a pack planner sees it.
type PackRead struct {
	Context string // session/agent
	Path    string
	Blob    string // the version's git blob id
	Tokens  int64  // its text's tokens
}

// PackEntry is one file version a pack holds.
type PackEntry struct {
	Path   string
	Blob   string
	Tokens int64
}

// Pack is what a planner chose: versions served once per context from a
// prefix.
type Pack struct {
	Entries []PackEntry
	Tokens  int64 // the prefix's size: the sum of its entries' tokens
}

// PackPlanner chooses a pack from the reads of a corpus; ref is what a
// Read of a packed version costs instead of its text. (meter.BuildPack,
// built elsewhere, can be put behind this.)
type PackPlanner interface {
	Plan(reads []PackRead, ref func(path string) int64) Pack
}

// DefaultPackBudget is the default pack's size bound, in tokens.
const DefaultPackBudget = 20_000

// HotPack is the default planner: every version whose net gain on the
// corpus is positive — its reads' tokens minus the references that
// replace them, minus the pack sent once to every context that reads —
// in order of gain, while the pack stays within Budget tokens. It plans
// with hindsight on the corpus it is scored on.
type HotPack struct {
	Budget int64
}

// Plan implements PackPlanner.
func (h HotPack) Plan(reads []PackRead, ref func(path string) int64) Pack {
	type version struct {
		PackEntry
		gain int64
	}
	contexts := map[string]bool{}
	byVersion := map[[2]string]*version{}
	var order []*version
	for _, rd := range reads {
		contexts[rd.Context] = true
		k := [2]string{rd.Path, rd.Blob}
		v := byVersion[k]
		if v == nil {
			v = &version{PackEntry: PackEntry{Path: rd.Path, Blob: rd.Blob, Tokens: rd.Tokens}}
			byVersion[k] = v
			order = append(order, v)
		}
		v.gain += rd.Tokens - ref(rd.Path)
	}
	n := int64(len(contexts))
	for _, v := range order {
		v.gain -= n * v.Tokens
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].gain != order[j].gain {
			return order[i].gain > order[j].gain
		}
		if order[i].Path != order[j].Path {
			return order[i].Path < order[j].Path
		}
		return order[i].Blob < order[j].Blob
	})
	var p Pack
	for _, v := range order {
		if v.gain <= 0 {
			break
		}
		if p.Tokens+v.Tokens > h.Budget {
			continue
		}
		p.Entries = append(p.Entries, v.PackEntry)
		p.Tokens += v.Tokens
	}
	return p
}

// tally counts the tokens of every Read under each model (see the
// package doc) into the sessions' counts.
func (r *replayer) tally(tc *tokens.Counter, planner PackPlanner) error {
	// Archived texts: counted by blob, with the counter's cache.
	var evs []*gitstore.Event
	at := map[*gitstore.Event]int{}
	for _, rd := range r.reads {
		if rd.ev != nil {
			if _, ok := at[rd.ev]; !ok {
				at[rd.ev] = len(evs)
				evs = append(evs, rd.ev)
			}
		}
	}
	counted := tc.CountAll(r.ctx, evs)
	if err := r.ctx.Err(); err != nil {
		return err
	}
	// Texts that are not archived (diffs, notes, the texts of reads the
	// archive did not give back): the same counts as tokens.CountText,
	// with a memo of lines shared by all of them.
	tcount := tokens.NewTextCounter()
	memo := map[string]int64{}
	count := func(s string) (int64, error) {
		if n, ok := memo[s]; ok {
			return n, nil
		}
		n, err := tcount.Count(s)
		if err != nil {
			return 0, err
		}
		memo[s] = n
		return n, nil
	}
	var firstErr error
	ref := func(note string) int64 {
		n, err := count(note)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return n
	}
	tokens := make([]int64, len(r.reads))
	var packReads []PackRead
	for i, rd := range r.reads {
		var t int64
		var err error
		switch {
		case rd.ev != nil:
			if t = counted[at[rd.ev]]; t < 0 {
				return fmt.Errorf("count the tokens of archived blob %s: unreadable", rd.ev.Blob)
			}
		default:
			if t, err = count(rd.text); err != nil {
				return err
			}
		}
		tokens[i] = t
		if rd.kind != readStub {
			packReads = append(packReads, PackRead{Context: rd.context, Path: rd.path, Blob: rd.blob, Tokens: t})
		}
	}
	pack := planner.Plan(packReads, func(path string) int64 { return ref(PackNote(path)) })
	if firstErr != nil {
		return firstErr
	}
	packed := map[[2]string]bool{}
	for _, e := range pack.Entries {
		packed[[2]string{e.Path, e.Blob}] = true
	}
	r.rep.Pack = pack
	paidPack := map[string]bool{}
	for i, rd := range r.reads {
		c := &r.rep.Sessions[rd.sess].Counts
		t := tokens[i]
		c.Baseline += t
		switch rd.kind {
		case readStub:
			c.Restore += t
			c.Packs += t
			continue
		case readFirst:
			c.Restore += t
		case readUnchanged:
			c.Restore += ref(UnchangedNote(rd.path))
		case readChanged:
			d, err := count(rd.diff)
			if err != nil {
				return err
			}
			if d < t {
				c.DiffCheaper++
				c.Restore += d
			} else {
				c.Restore += t
			}
		}
		if len(pack.Entries) > 0 && !paidPack[rd.context] {
			paidPack[rd.context] = true
			c.Packs += pack.Tokens
		}
		if packed[[2]string{rd.path, rd.blob}] {
			c.Packs += ref(PackNote(rd.path))
		} else {
			c.Packs += t
		}
	}
	return firstErr
}
