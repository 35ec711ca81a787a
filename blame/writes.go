package blame

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// versionOps are the ops whose event pins a whole version of a file that
// a context saw or produced; writeOps those by which a model produced it.
var (
	versionOps = map[string]bool{"read": true, "write": true, "edit": true, "attach": true, "restore": true}
	writeOps   = map[string]bool{"write": true, "edit": true}
)

// maxNeedles is the most files whose events are selected by searching
// for each one's path.
const maxNeedles = 64

// write is one archived agent write of a file, and the lines it added.
type write struct {
	ev   gitstore.Event
	path string // repository-relative file
	pre  string // blob of the version before it ("" when the archive knows none)
	// lines are the lines of the written version it added, computed on
	// first use (see archive.addedOf).
	done  bool
	lines []addedLine
}

type addedLine struct {
	m           int // index in the written version
	text        []byte
	h, up, down uint64
	uniq        bool // the line occurs once in the written version
}

// archive is the agent writes of a set of files, and the versions read to
// decide what each added. Blob contents are read once and kept as cut
// versions while the blame runs.
type archive struct {
	st        *gitstore.Store
	h         hasher
	harnessOf func(string) string
	byPath    map[string][]*write
	// byHash finds the writes that added a line with a given text.
	byHash  map[uint64][]cand
	indexed map[string]bool
	// recent keeps the last versions cut: a write's version before is
	// usually the version the write before it produced, so writes taken
	// in time order read each blob once while memory stays small.
	recent [4]struct {
		blob string
		v    *version
	}
	next   int
	mu     sync.Mutex // guards recent and hashed: groups run in parallel
	hashed map[string][]uint64
	loaded map[string]bool
	cache  *addedCache
}

type cand struct {
	w *write
	i int // index into w.lines
}

func newArchive(st *gitstore.Store, harnessOf func(string) string) *archive {
	dir, _ := st.StateDir("blame") // read-only: no cache
	return &archive{cache: openCache(dir), st: st, h: newHasher(), harnessOf: harnessOf, byPath: map[string][]*write{},
		byHash: map[uint64][]cand{}, hashed: map[string][]uint64{}, indexed: map[string]bool{}, loaded: map[string]bool{}}
}

// load reads the archived events about the given files (repository-relative
// paths not loaded before) and indexes their writes by the lines they added.
func (a *archive) load(ctx context.Context, paths []string) error {
	var todo []string
	for _, p := range paths {
		if !a.loaded[p] {
			a.loaded[p] = true
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	// Many files: one pass over every event, sifted here, costs less
	// than a needle per file.
	var want map[string]bool
	sel := todo
	if len(todo) > maxNeedles {
		want = map[string]bool{}
		for _, p := range todo {
			want[p] = true
		}
		sel = nil
	}
	evs, err := hooks.FileEvents(ctx, a.st, sel, versionOps)
	if err != nil {
		return fmt.Errorf("blame: %w", err)
	}
	// A pruned version (git lossless prune) is gone on purpose: its
	// write adds nothing, cached or not.
	prunes, err := a.st.Select(ctx, gitstore.Selection{Any: [][]byte{[]byte(`"op":"prune"`)}})
	if err != nil {
		return fmt.Errorf("blame: prune records: %w", err)
	}
	pruned := map[string]bool{}
	for i := range prunes {
		for _, b := range gitstore.PrunedBlobs(&prunes[i]) {
			pruned[b] = true
		}
	}
	// Per file, every whole version in time order; the version before a
	// write is the latest one archived before it (any context, any op):
	// the guard lets a model edit only a file whose current version its
	// context holds, so that is the file the write changed.
	type seen struct {
		ts   time.Time
		blob string
		w    *write
	}
	per := map[string][]seen{}
	for _, e := range evs {
		if e.Excluded || e.Blob == "" || (e.View != "" && e.View != "full") || pruned[e.Blob] {
			continue
		}
		p := hooks.RealPath(e)
		if want != nil && !want[p] && !want[e.RawPath()] {
			continue
		}
		s := seen{ts: e.TS, blob: e.Blob}
		if writeOps[e.Op] {
			s.w = &write{ev: e, path: p}
		}
		per[p] = append(per[p], s)
	}
	for p, ss := range per {
		// Stable: within one writer, seq order breaks timestamp ties.
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].ts.Before(ss[j].ts) })
		prev := ""
		for _, s := range ss {
			if s.w != nil {
				s.w.pre = prev
				a.byPath[p] = append(a.byPath[p], s.w)
			}
			prev = s.blob
		}
	}
	return nil
}

// versionOf reads and cuts a blob.
func (a *archive) versionOf(blob string) (*version, error) {
	a.mu.Lock()
	for _, r := range a.recent {
		if r.blob == blob && r.v != nil {
			a.mu.Unlock()
			return r.v, nil
		}
	}
	a.mu.Unlock()
	typ, body, err := a.st.ReadObject(blob)
	if err != nil {
		return nil, fmt.Errorf("blame: reading version %s: %w", blob, err)
	}
	if typ != "blob" {
		return nil, fmt.Errorf("blame: version %s is a %s, not a blob", blob, typ)
	}
	v := a.h.version(body)
	a.mu.Lock()
	a.recent[a.next].blob, a.recent[a.next].v = blob, v
	a.next = (a.next + 1) % len(a.recent)
	a.mu.Unlock()
	return v, nil
}

// hashesOf is a blob's line hashes, for aligning: kept for the whole
// blame (a few writes are the latest candidates of many commits), up to
// maxHashed versions.
func (a *archive) hashesOf(blob string) ([]uint64, error) {
	a.mu.Lock()
	h, ok := a.hashed[blob]
	a.mu.Unlock()
	if ok {
		return h, nil
	}
	typ, body, err := a.st.ReadObject(blob)
	if err != nil {
		return nil, fmt.Errorf("blame: reading version %s: %w", blob, err)
	}
	if typ != "blob" {
		return nil, fmt.Errorf("blame: version %s is a %s, not a blob", blob, typ)
	}
	h = make([]uint64, 0, bytes.Count(body, []byte{'\n'})+1)
	for _, l := range splitLines(body) {
		h = append(h, a.h.line(l))
	}
	a.mu.Lock()
	if len(a.hashed) < maxHashed {
		a.hashed[blob] = h
	}
	a.mu.Unlock()
	return h, nil
}

// maxHashed bounds the versions hashesOf keeps (a 5,000-line version is
// 40 KB of hashes).
const maxHashed = 1024

// index computes the added lines of every write of the files and enters
// them in byHash. A write whose versions are gone from the object store
// (pruned) adds nothing.
func (a *archive) index(paths []string) {
	for _, p := range paths {
		if a.indexed[p] {
			continue
		}
		a.indexed[p] = true
		for _, w := range a.byPath[p] {
			a.addedOf(w)
			for i, l := range w.lines {
				a.byHash[l.h] = append(a.byHash[l.h], cand{w, i})
			}
		}
	}
}

func (a *archive) addedOf(w *write) {
	if w.done {
		return
	}
	w.done = true
	if lines, ok := a.cache.get(w); ok {
		w.lines = lines
		return
	}
	post, err := a.versionOf(w.ev.Blob)
	if err != nil {
		return // pruned or unreadable: adds nothing, and is not cached
	}
	var preHash []uint64
	if w.pre != "" {
		pv, err := a.versionOf(w.pre)
		if err != nil {
			return
		}
		preHash = pv.hash
	}
	defer a.cache.put(w)
	for _, m := range added(preHash, post.hash) {
		w.lines = append(w.lines, addedLine{m: m, text: append([]byte(nil), post.lines[m]...), h: post.hash[m],
			up: post.upAt(m), down: post.downAt(m), uniq: post.countOf(post.hash[m]) == 1})
	}
}
