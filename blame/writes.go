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

// writeOps are the ops by which a model produced a version of a file (the
// ops that pin a version a context saw or produced are
// gitstore.Op.IsFileVersion's).
var writeOps = map[gitstore.Op]bool{gitstore.OpWrite: true, gitstore.OpEdit: true}

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
	// byCtx finds, for a line that is not distinctive, the writes that
	// added it with the same runs above and below: its strong matches,
	// without a pass over every write that added a brace (Commits over a
	// long history otherwise spends its time there).
	byCtx map[ctxKey][]cand
	// byPathHash finds the writes of a path that added a line with a
	// given text: only writes of the path git names for a line are its
	// candidates.
	byPathHash map[pathHash][]cand
	// first is, per line hash, the earliest time a write added a line of
	// that text; mixed marks a hash two different texts share.
	first   map[pathHash]firstAdd
	indexed map[string]bool
	// recent keeps the last versions cut (recentVersions of them): a
	// write's version before is usually the version the write before it
	// produced, and a commit's version is often the one an agent's write
	// produced, so each blob is read and cut about once while memory
	// stays bounded.
	recent map[string]*version
	order  []string // recent's blobs, oldest first
	// hashes keeps the line hashes of blobs read (up to maxHashed), all
	// a version before a write and a version aligned with need.
	hashes map[string][]uint64
	mu     sync.Mutex // guards recent, order and hashes: groups run in parallel
	loaded map[string]bool
	cache  *addedCache
}

type pathHash struct {
	path string
	h    uint64
}

type ctxKey struct {
	path        string
	h, up, down uint64
}

type firstAdd struct {
	text  []byte
	ts    time.Time
	mixed bool
}

// recentVersions bounds the versions kept cut.
const recentVersions = 128

type cand struct {
	w *write
	i int // index into w.lines
}

func newArchive(ctx context.Context, st *gitstore.Store, harnessOf func(string) string) *archive {
	dir, _ := st.StateDir(ctx, "blame") // read-only: no cache
	return &archive{cache: openCache(dir), st: st, h: newHasher(), harnessOf: harnessOf, byPath: map[string][]*write{},
		byCtx: map[ctxKey][]cand{}, byPathHash: map[pathHash][]cand{}, first: map[pathHash]firstAdd{}, indexed: map[string]bool{},
		loaded: map[string]bool{}, recent: map[string]*version{}, hashes: map[string][]uint64{}}
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
	if len(todo) == 0 && paths != nil {
		return nil
	}
	// Many files: one pass over every event, sifted here, costs less
	// than a needle per file. paths nil: every file.
	var want map[string]bool
	sel := todo
	if paths == nil {
		sel = nil
	} else if len(todo) > maxNeedles {
		want = map[string]bool{}
		for _, p := range todo {
			want[p] = true
		}
		sel = nil
	}
	evs, err := hooks.FileEvents(ctx, a.st, sel)
	if err != nil {
		return fmt.Errorf("blame: %w", err)
	}
	// A pruned version (git lossless prune) is gone on purpose: its
	// write adds nothing, cached or not.
	prunes, err := a.st.Select(ctx, gitstore.Selection{Any: [][]byte{gitstore.OpPrune.Needle()}})
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
func (a *archive) versionOf(ctx context.Context, blob string) (*version, error) {
	a.mu.Lock()
	if v, ok := a.recent[blob]; ok {
		a.mu.Unlock()
		return v, nil
	}
	a.mu.Unlock()
	typ, body, err := a.st.Objects().ReadObject(ctx, blob)
	if err != nil {
		return nil, fmt.Errorf("blame: reading version %s: %w", blob, err)
	}
	if typ != "blob" {
		return nil, fmt.Errorf("blame: version %s is a %s, not a blob", blob, typ)
	}
	v := a.h.version(body)
	a.mu.Lock()
	if len(a.hashes) < maxHashed {
		a.hashes[blob] = v.hash
	}
	if len(a.order) == recentVersions {
		delete(a.recent, a.order[0])
		a.order = append(a.order[:0], a.order[1:]...)
	}
	a.recent[blob] = v
	a.order = append(a.order, blob)
	a.mu.Unlock()
	return v, nil
}

// hashesOf is the line hashes of a blob, read once (up to maxHashed
// blobs are kept).
func (a *archive) hashesOf(ctx context.Context, blob string) ([]uint64, error) {
	a.mu.Lock()
	h, ok := a.hashes[blob]
	a.mu.Unlock()
	if ok {
		return h, nil
	}
	typ, body, err := a.st.Objects().ReadObject(ctx, blob)
	if err != nil {
		return nil, fmt.Errorf("blame: reading version %s: %w", blob, err)
	}
	if typ != "blob" {
		return nil, fmt.Errorf("blame: version %s is a %s, not a blob", blob, typ)
	}
	lines := splitLines(body)
	h = make([]uint64, len(lines))
	for i, l := range lines {
		h[i] = a.h.line(l)
	}
	a.mu.Lock()
	if len(a.hashes) < maxHashed {
		a.hashes[blob] = h
	}
	a.mu.Unlock()
	return h, nil
}

// maxHashed bounds the blobs whose line hashes are kept (a 5,000-line
// version is 40 KB of hashes).
const maxHashed = 4096

// index computes the added lines of every write of the files and enters
// them in byPathHash. A write whose versions are gone from the object store
// (pruned) adds nothing.
func (a *archive) index(ctx context.Context, paths []string) {
	for _, p := range paths {
		if a.indexed[p] {
			continue
		}
		a.indexed[p] = true
		for _, w := range a.byPath[p] {
			a.addedOf(ctx, w)
			for i, l := range w.lines {
				c := cand{w, i}
				ph := pathHash{w.path, l.h}
				a.byPathHash[ph] = append(a.byPathHash[ph], c)
				if !distinctive(l.text) {
					k := ctxKey{w.path, l.h, l.up, l.down}
					a.byCtx[k] = append(a.byCtx[k], c)
				}
				f, ok := a.first[ph]
				switch {
				case !ok:
					a.first[ph] = firstAdd{text: l.text, ts: w.ev.TS}
				case !bytes.Equal(f.text, l.text):
					f.mixed = true
					a.first[ph] = f
				case w.ev.TS.Before(f.ts):
					f.ts = w.ev.TS
					a.first[ph] = f
				}
			}
		}
	}
}

func (a *archive) addedOf(ctx context.Context, w *write) {
	if w.done {
		return
	}
	w.done = true
	if lines, ok := a.cache.get(w); ok {
		w.lines = lines
		return
	}
	post, err := a.versionOf(ctx, w.ev.Blob)
	if err != nil {
		return // pruned or unreadable: adds nothing, and is not cached
	}
	var preHash []uint64
	if w.pre != "" {
		h, err := a.hashesOf(ctx, w.pre)
		if err != nil {
			return
		}
		preHash = h
	}
	defer a.cache.put(w)
	for _, m := range added(preHash, post.hash) {
		w.lines = append(w.lines, addedLine{m: m, text: append([]byte(nil), post.lines[m]...), h: post.hash[m],
			up: post.upAt(m), down: post.downAt(m), uniq: post.countOf(post.hash[m]) == 1})
	}
}
