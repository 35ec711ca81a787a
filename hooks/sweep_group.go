package hooks

import (
	"context"
	"fmt"

	"github.com/git-lossless/git-lossless/gitstore"
)

// sweepGroup stores the sweeps of several transcripts together: an
// import sweeps a session's main transcript and its subagents' into one
// group, so that the session's writer gets one pack (one Store.Import)
// instead of one per transcript, or, for the small subagent transcripts,
// a loose object per record. Every content is handed to the group's
// Prepack as it is parsed, so compression runs beside the parsing.
//
// A transcript's cursor is written only after the group stored its
// records (pendingCursor): the rule of every sweep, that a cursor never
// gets ahead of the archive, holds for the group as a whole. The group
// stores what it holds when it reaches maxBytes, and when flush is called
// at the end.
type sweepGroup struct {
	st       *gitstore.Store
	opt      SweepOptions
	maxBytes int64
	order    []string
	recs     map[string][]gitstore.Record
	bytes    int64
	pre      *gitstore.Prepack
	saves    []pendingCursor
	// Appended and Deduped count what the group's store calls did.
	Appended, Deduped int
}

// pendingCursor is a cursor to write once the records before it are
// stored.
type pendingCursor struct {
	file, abs string
	cur       *Cursor
}

func newSweepGroup(st *gitstore.Store, opt SweepOptions) *sweepGroup {
	g := &sweepGroup{st: st, opt: opt, maxBytes: opt.MaxBatchBytes, recs: map[string][]gitstore.Record{}}
	if g.maxBytes <= 0 {
		g.maxBytes = 64 << 20
	}
	return g
}

// prepack is the Prepack contents go to until the next store.
func (g *sweepGroup) prepack() *gitstore.Prepack {
	if g.pre == nil {
		g.pre = gitstore.NewPrepack()
	}
	return g.pre
}

// take moves a transcript's gathered records into the group.
func (g *sweepGroup) take(b *sweepBatch) {
	for _, w := range b.order {
		if _, ok := g.recs[w]; !ok {
			g.order = append(g.order, w)
		}
		if len(g.recs[w]) == 0 {
			g.recs[w] = b.recs[w] // the batch's slice as it is: no copy
		} else {
			g.recs[w] = append(g.recs[w], b.recs[w]...)
		}
		delete(b.recs, w)
	}
	b.order = b.order[:0]
	g.bytes += b.bytes
	b.bytes = 0
}

// full reports whether the group holds enough to be stored now.
func (g *sweepGroup) full() bool { return g.bytes >= g.maxBytes }

// flush stores what the group holds, one Import per writer, then writes
// the cursors of the transcripts it came from.
func (g *sweepGroup) flush(ctx context.Context) error {
	for _, w := range g.order {
		recs := g.recs[w]
		if len(recs) == 0 {
			continue
		}
		res, err := g.st.ImportWith(ctx, w, recs, gitstore.ImportOptions{BatchSize: g.opt.BatchSize, Prepack: g.pre})
		if err != nil {
			return fmt.Errorf("store %d records of %s: %w", len(recs), w, err)
		}
		g.Appended += len(res.Events)
		g.Deduped += res.Deduped
		delete(g.recs, w)
	}
	g.order, g.bytes = g.order[:0], 0
	g.close()
	for _, pc := range g.saves {
		if err := writeCursor(pc.file, pc.cur); err != nil {
			return fmt.Errorf("sweep %s: save cursor: %w", pc.abs, err)
		}
	}
	g.saves = g.saves[:0]
	return nil
}

// close drops the group's Prepack (what it still holds is not stored).
func (g *sweepGroup) close() {
	if g.pre != nil {
		g.pre.Close()
		g.pre = nil
	}
}
