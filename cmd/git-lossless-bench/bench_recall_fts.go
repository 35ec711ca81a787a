package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // SQLite, FTS5 included, compiled to Go: the pure-Go peer

	"github.com/git-lossless/git-lossless/recall"
)

// The pure-Go peer of `bench recall`: SQLite FTS5 in this process through
// modernc.org/sqlite (SQLite's C translated to Go: no cgo, no binary to
// install), the one way a Go program could ship FTS5 without cgo. It
// loads the same span texts as the sqlite3 peer, answers the same query
// set in a warm process as ours does (snippets of the first page
// included), and its bm25() order is set beside ours on the queries both
// engines answer: what issue 23 asks before our own engine may stay. It
// lives in this program only: git-lossless does not link it
// (internal/layoutcheck).

// recallRankQueries are the queries whose rankings are compared: the
// words, stems, paths and names of recallQueries (FTS5 answers those; it
// finds nothing for a fragment inside a word or a typo, and its prefix
// query is not our fragment), and a few more words and phrases of the
// generated corpus.
var recallRankQueries = append(slices.DeleteFunc(slices.Clone(recallQueries), func(q recallQuery) bool {
	switch q.text {
	case "ile_12.g", "ndex", "stor", "sesion", "archve":
		return true
	}
	return false
}), []recallQuery{
	{"archive", `"archive"`},
	{"session context", `"session" OR "context"`},
	{"test build check", `"test" OR "build" OR "check"`},
	{"commit batch event", `"commit" OR "batch" OR "event"`},
	{"plan step report", `"plan" OR "step" OR "report"`},
}...)

// rankDepth is how deep both rankings are read to find the ties at the
// tenth place.
const rankDepth = 200

// ftsGo is the database of the pure-Go peer.
type ftsGo struct {
	db   *sql.DB
	path string
}

// loadFTSGo creates an FTS5 table of texts in a new database at path, in
// one transaction, and returns it with the time the load took.
func loadFTSGo(ctx context.Context, path string, texts [][2]string) (*ftsGo, time.Duration, error) {
	for _, p := range []string{path, path + "-journal", path + "-wal"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return nil, 0, err
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	f := &ftsGo{db: db, path: path}
	t0 := time.Now()
	if err := f.load(ctx, texts); err != nil {
		db.Close()
		return nil, 0, err
	}
	return f, time.Since(t0), nil
}

func (f *ftsGo) load(ctx context.Context, texts [][2]string) error {
	if _, err := f.db.ExecContext(ctx, "CREATE VIRTUAL TABLE spans USING fts5(id UNINDEXED, body, tokenize='porter unicode61')"); err != nil {
		return fmt.Errorf("create the FTS5 table: %w", err)
	}
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, "INSERT INTO spans VALUES(?, ?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, t := range texts {
		if _, err := ins.ExecContext(ctx, t[0], t[1]); err != nil {
			return fmt.Errorf("insert %s: %w", t[0], err)
		}
	}
	return tx.Commit()
}

func (f *ftsGo) close() { f.db.Close() }

// page runs a query as the warm bench does (ids and snippets of the
// first ten hits).
func (f *ftsGo) page(ctx context.Context, fts string) (int, error) {
	rows, err := f.db.QueryContext(ctx, "SELECT id, snippet(spans, 1, '[', ']', '…', 12) FROM spans WHERE spans MATCH ? ORDER BY rank LIMIT 10", fts)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, snip string
		if err := rows.Scan(&id, &snip); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// scored is one hit of a ranking, best first; higher scores are better
// (FTS5's bm25() is negated).
type scored struct {
	id    string
	score float64
}

func (f *ftsGo) ranking(ctx context.Context, fts string, depth int) ([]scored, error) {
	rows, err := f.db.QueryContext(ctx, "SELECT id, bm25(spans) FROM spans WHERE spans MATCH ? ORDER BY rank LIMIT ?", fts, depth)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []scored
	for rows.Next() {
		var s scored
		if err := rows.Scan(&s.id, &s.score); err != nil {
			return nil, err
		}
		s.score = -s.score
		out = append(out, s)
	}
	return out, rows.Err()
}

// agreement compares two rankings at the tenth place: how many of the
// first ten they share, and the same counting the hits tied with the
// tenth (a tie is cut by each engine's own rule: ours the newer span,
// FTS5 the lower rowid), capped at ten; and whether the first hits agree,
// plainly and counting the hits tied with the first.
type agreement struct {
	overlap, overlapTies int
	top, topTies         bool
}

func compareRankings(a, b []scored) agreement {
	var g agreement
	a10, b10 := a[:min(10, len(a))], b[:min(10, len(b))]
	for _, x := range a10 {
		if slices.ContainsFunc(b10, func(y scored) bool { return y.id == x.id }) {
			g.overlap++
		}
	}
	ta, tb := tiedAt(a, 10), tiedAt(b, 10)
	for id := range ta {
		if tb[id] {
			g.overlapTies++
		}
	}
	g.overlapTies = min(10, max(g.overlapTies, g.overlap))
	if len(a) > 0 && len(b) > 0 {
		g.top = a[0].id == b[0].id
		fa, fb := tiedAt(a, 1), tiedAt(b, 1)
		for id := range fa {
			if fb[id] {
				g.topTies = true
			}
		}
	}
	return g
}

// tiedAt returns the ids of the first n hits of r and of those tied with
// the n-th (scores equal to one part in a million).
func tiedAt(r []scored, n int) map[string]bool {
	out := map[string]bool{}
	if len(r) == 0 {
		return out
	}
	cut := r[min(n, len(r))-1].score
	for i, s := range r {
		if i >= n && math.Abs(s.score-cut) > 1e-6*math.Abs(cut) {
			break
		}
		out[s.id] = true
	}
	return out
}

// benchGoPeer: the pure-Go FTS5 peer beside ours: load, warm search, and
// the rankings of recallRankQueries.
func (b *recallBench) benchGoPeer(ctx context.Context) error {
	if b.texts == nil {
		t0 := time.Now()
		if err := b.peerTexts(ctx); err != nil {
			return err
		}
		b.textTime = time.Since(t0)
	}
	peer, load, err := loadFTSGo(ctx, filepath.Join(b.root, "peer-go.sqlite"), b.texts)
	if err != nil {
		return fmt.Errorf("modernc.org/sqlite: %w", err)
	}
	defer peer.close()
	fi, err := os.Stat(peer.path)
	if err != nil {
		return err
	}
	b.logf("pure-Go FTS5: loaded in %s, %.1f MB", ms(load), mb(int(fi.Size())))
	b.rows = append(b.rows, row{
		what:   fmt.Sprintf("index build, in process, %d spans: our reindex (median of 3) / FTS5 load", b.spans),
		ours:   fmt.Sprintf("%s, index %.1f MB", ms(b.reindex), mb(int(b.disk))),
		peer:   fmt.Sprintf("modernc.org/sqlite: %s (%.1fx), db %.1f MB (%.1fx)", ms(load), load.Seconds()/b.reindex.Seconds(), mb(int(fi.Size())), float64(fi.Size())/float64(max(1, b.disk))),
		target: "-",
	})
	b.notes = append(b.notes, fmt.Sprintf("FTS5 load: the texts handed to it ready (taking them out of the archive, as our reindex does, took %s more here)", ms(b.textTime)))

	// Warm search: the same rounds of the same set, first round unmeasured.
	var lat samples
	for r := range b.o.rounds + 1 {
		for _, q := range recallQueries {
			t0 := time.Now()
			if _, err := peer.page(ctx, q.fts); err != nil {
				return fmt.Errorf("modernc.org/sqlite %q: %w", q.fts, err)
			}
			if r > 0 {
				lat = append(lat, time.Since(t0))
			}
		}
	}
	b.rows = append(b.rows, row{
		what:   fmt.Sprintf("search, warm process, %d queries x %d, beside FTS5 in process", len(recallQueries), b.o.rounds),
		ours:   b.warm.String(),
		peer:   fmt.Sprintf("modernc.org/sqlite: %s (p50 %.1fx, p95 %.1fx)", lat, ratio(lat.pct(50), b.warm.pct(50)), ratio(lat.pct(95), b.warm.pct(95))),
		target: "-",
	})
	b.logf("pure-Go FTS5: warm search %s", lat)

	// Rankings.
	ix, err := recall.Open(ctx, b.st, recall.Options{})
	if err != nil {
		return err
	}
	defer ix.Close()
	var sum agreement
	var per, onlyOurs []string
	n := 0
	for _, q := range recallRankQueries {
		res, err := ix.Search(ctx, recall.Query{Text: q.text, Limit: rankDepth})
		if err != nil {
			return err
		}
		ours := make([]scored, 0, len(res.Hits))
		for _, h := range res.Hits {
			ours = append(ours, scored{h.ID, h.Score})
		}
		theirs, err := peer.ranking(ctx, q.fts, rankDepth)
		if err != nil {
			return fmt.Errorf("modernc.org/sqlite %q: %w", q.fts, err)
		}
		if len(theirs) == 0 {
			// Nothing to compare with: said below.
			if len(ours) > 0 {
				onlyOurs = append(onlyOurs, q.text)
			}
			continue
		}
		g := compareRankings(ours, theirs)
		n++
		sum.overlap += g.overlap
		sum.overlapTies += g.overlapTies
		per = append(per, fmt.Sprintf("%s %d/%d%s", q.text, g.overlap, g.overlapTies, map[bool]string{true: "", false: " (top differs)"}[g.topTies]))
		if g.top {
			b.rankTop++
		}
		if g.topTies {
			b.rankTopTies++
		}
	}
	if n == 0 {
		return fmt.Errorf("no ranking query found anything")
	}
	b.rows = append(b.rows, row{
		what: fmt.Sprintf("ranking beside FTS5 bm25(), %d word queries: top 10 shared, first hit the same", n),
		ours: fmt.Sprintf("%.1f of 10 (%.1f counting ties at the 10th); first hit %d of %d (%d counting ties)",
			float64(sum.overlap)/float64(n), float64(sum.overlapTies)/float64(n), b.rankTop, n, b.rankTopTies),
		peer: "-", target: "-",
	})
	b.notes = append(b.notes, "ranking, per query (top 10 shared / counting ties): "+strings.Join(per, "; "))
	if len(onlyOurs) > 0 {
		b.notes = append(b.notes, fmt.Sprintf("ranking: FTS5 finds nothing for %s, which ours answers (a camelCase name by its parts): left out of the figures above", strings.Join(onlyOurs, ", ")))
	}
	b.logf("pure-Go FTS5: ranking %s", strings.Join(per, "; "))
	return nil
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return math.Inf(1)
	}
	return float64(a) / float64(b)
}
