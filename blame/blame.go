package blame

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// Options tune a blame.
type Options struct {
	// Moves and Copies are git blame's -M and -C: a line moved within the
	// file, or moved or copied from another file changed in the same
	// commit, is followed to where it came from, and so is its origin.
	Moves, Copies bool
	// Start and End (from 1; 0: the file's end) blame lines Start..End only.
	Start, End int
	// Requests fills Origin.Request (one more read of each context's
	// spans).
	Requests bool
	// HarnessOf names the harness of a writer whose events predate the
	// harness field (gitstore.HarnessOf).
	HarnessOf func(writer string) string
	// Identities open encrypted spans (requests, calls).
	Identities []age.Identity
}

// File blames path (repository-relative, slash-separated) at rev (""
// blames the working tree, uncommitted changes included): for each line,
// the commit git blame names and the archived agent write the line came
// from (see FORMAT.md for the rule).
func File(ctx context.Context, st *gitstore.Store, rev, path string, opt Options) ([]Line, error) {
	top := st.Location().WorkTree
	if top == "" {
		return nil, fmt.Errorf("blame: the archive of a bare repository has no work tree to blame")
	}
	if strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("blame: %q is not a revision", rev)
	}
	gl, err := runGitBlame(ctx, top, rev, path, opt)
	if err != nil {
		return nil, err
	}
	a := newArchive(ctx, st, opt.HarnessOf)
	paths := []string{path}
	seenPath := map[string]bool{path: true}
	for _, l := range gl {
		if !seenPath[l.OrigPath] {
			seenPath[l.OrigPath] = true
			paths = append(paths, l.OrigPath)
		}
	}
	if err := a.load(ctx, paths); err != nil {
		return nil, err
	}
	a.index(ctx, paths)
	a.cache.flush()
	// A line is first matched in the blamed version itself (git blame's
	// output holds it whole when no range is asked for); only lines
	// without a strong match there need the version of the commit git
	// names: one read per (commit, path).
	var fv *version
	if opt.Start == 0 {
		var b bytes.Buffer
		for _, l := range gl {
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
		fv = a.h.version(b.Bytes())
	}
	type key struct{ commit, path string }
	groups := map[key][]int{}
	var order []key
	beforeOf := func(l *gitLine) time.Time {
		if l.Commit == Uncommitted {
			return time.Time{}
		}
		return l.commitTime
	}
	var rest []int
	for i := range gl {
		l := &gl[i]
		if !a.hasCandidate(l.OrigPath, []byte(l.Text)) {
			continue
		}
		if fv != nil {
			if c, _ := a.strong(fv, i, beforeOf(l), l.OrigPath); c != nil {
				l.Origin = a.origin(c, opt)
				continue
			}
		}
		rest = append(rest, i)
	}
	var local []int
	for _, i := range rest {
		l := &gl[i]
		if fv != nil {
			if c := a.anchored(fv, i, beforeOf(l), l.OrigPath, func(j int) *Origin { return gl[j].Origin }); c != nil {
				l.Origin = a.origin(c, opt)
				continue
			}
			if sameRuns(gl, fv, i) {
				local = append(local, i)
				continue
			}
		}
		k := key{l.Commit, l.OrigPath}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	// A line whose context runs in the blamed version came whole from
	// the line's own commit has the same runs there: rules 1 and 2 said
	// no already, and rule 3 aligns with the blamed version instead of
	// reading the commit's.
	if len(local) > 0 {
		al := a.newAligner(fv)
		for _, i := range local {
			if c := al.match(ctx, i, beforeOf(&gl[i]), gl[i].OrigPath); c != nil {
				gl[i].Origin = a.origin(c, opt)
			}
		}
	}
	// Oldest commit first: a pack stores a file's versions as chains of
	// deltas, and the reader's base cache then serves each from the one
	// before instead of replaying its chain.
	sort.SliceStable(order, func(i, j int) bool {
		return gl[groups[order[i]][0]].commitTime.Before(gl[groups[order[j]][0]].commitTime)
	})
	// The groups are independent (each sets the origins of its own
	// lines): they run on every core, as reading and cutting versions is
	// most of a blame's own time.
	err = parallel(ctx, len(order), func(g int) error {
		k := order[g]
		content, err := a.contentAt(ctx, top, k.commit, k.path)
		if err != nil {
			return err
		}
		fc := a.h.version(content)
		idx := make([]int, len(groups[k]))
		var before time.Time
		for j, i := range groups[k] {
			l := &gl[i]
			at := l.OrigLine - 1
			if at < 0 || at >= len(fc.lines) || string(fc.lines[at]) != l.Text {
				return fmt.Errorf("blame: git blame puts line %d of %s at line %d of %s in %s, which does not hold it", l.N, path, l.OrigLine, k.path, short(k.commit))
			}
			idx[j], before = at, l.commitTime
		}
		if k.commit == Uncommitted {
			before = time.Time{}
		}
		for j, c := range a.attribute(ctx, fc, idx, before, k.path) {
			if c != nil {
				gl[groups[k][j]].Origin = a.origin(c, opt)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Line, len(gl))
	for i := range gl {
		out[i] = gl[i].Line
		out[i].Headers = gl[i].headers
	}
	origins := make([]*Origin, 0, len(out))
	for i := range out {
		origins = append(origins, out[i].Origin)
	}
	if err := fillModels(ctx, st, origins); err != nil {
		return nil, err
	}
	if opt.Requests {
		if err := fillRequests(ctx, st, out, opt.Identities); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sameRuns reports whether the lines of line i's context runs in the
// blamed version came from the same commit and path as line i, in the
// same order and without gaps: then the commit's version holds the same
// runs around the line.
func sameRuns(gl []gitLine, fv *version, i int) bool {
	same := func(step int) bool {
		for j, n := i+step, 0; j >= 0 && j < len(gl); j, n = j+step, n+1 {
			if gl[j].Commit != gl[i].Commit || gl[j].OrigPath != gl[i].OrigPath || gl[j].OrigLine-gl[i].OrigLine != j-i {
				return false
			}
			if distinctive(fv.lines[j]) || n+1 == maxRun {
				return true
			}
		}
		// The blamed version's edge: the commit's version must end
		// there too, which its line numbers cannot tell.
		return false
	}
	return same(-1) && same(1)
}

// fillModels names the model behind each origin where the archive knows
// it (hooks.Models: the model on the write's call, else the context's
// latest before it): one read of the writing writers' model lines.
func fillModels(ctx context.Context, st *gitstore.Store, origins []*Origin) error {
	var writers []string
	seen := map[string]bool{}
	for _, o := range origins {
		if o != nil && !seen[o.Writer] {
			seen[o.Writer] = true
			writers = append(writers, o.Writer)
		}
	}
	if len(writers) == 0 {
		return nil
	}
	idx, err := hooks.Models(ctx, st, writers)
	if err != nil {
		return fmt.Errorf("blame: models: %w", err)
	}
	for _, o := range origins {
		if o != nil {
			o.Model = idx.At(o.Writer, o.Session, o.Agent, o.TS, o.Call)
		}
	}
	return nil
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines and returns
// the first error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					errs[w] = err
					next.Store(int64(n))
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// hasCandidate reports whether some archived write of path added a line
// with this text: only such lines need the version they were committed in.
func (a *archive) hasCandidate(path string, text []byte) bool {
	for _, c := range a.byPathHash[pathHash{path, a.h.line(text)}] {
		if bytes.Equal(c.w.lines[c.i].text, text) {
			return true
		}
	}
	return false
}

// slack is how far past a commit's time (whole seconds in git) a write
// may be and still be in it.
const slack = time.Second

// attribute finds, for the lines at indexes idx of version fc (committed
// at before; zero: not committed), the writes they came from (nil: none).
// The rule (FORMAT.md, "Matching a line"):
//
//  1. A candidate is a write at or before the commit that added a line
//     with the same text.
//  2. It is a strong match when the line's context is the same in both
//     versions: a distinctive line whose run above or below is the same,
//     or that occurs once in each; a line that is not distinctive (a
//     brace, a blank line) whose runs above and below are both the same.
//     The strong match of the same path, then the latest write, wins.
//  3. A line left without a strong match, with candidates, is looked up
//     by aligning: the versions of its latest candidate writes of the
//     same path (up to alignWrites) are each diffed with fc, and the
//     first whose added line the diff matches it to wins.
func (a *archive) attribute(ctx context.Context, fc *version, idx []int, before time.Time, path string) []*cand {
	out := make([]*cand, len(idx))
	var weak []int
	for j, i := range idx {
		best, eligible := a.strong(fc, i, before, path)
		out[j] = best
		if best == nil && eligible {
			weak = append(weak, j)
		}
	}
	if len(weak) == 0 {
		return out
	}
	al := a.newAligner(fc)
	for _, j := range weak {
		out[j] = al.match(ctx, idx[j], before, path)
	}
	return out
}

// aligner runs rule 3 against one version, each candidate write's
// version diffed with it once.
type aligner struct {
	a       *archive
	fc      *version
	aligned map[*write][]int
	addedAt map[*write]map[int]int
	strongs map[strongKey]*write // strong match of a line of fc (nil: none), memoised
}

type strongKey struct {
	j      int
	before time.Time
	path   string
}

func (a *archive) newAligner(fc *version) *aligner {
	return &aligner{a: a, fc: fc, aligned: map[*write][]int{}, addedAt: map[*write]map[int]int{}, strongs: map[strongKey]*write{}}
}

func (al *aligner) match(ctx context.Context, i int, before time.Time, path string) *cand {
	strongAt := func(j int) *write {
		k := strongKey{j, before, path}
		w, ok := al.strongs[k]
		if !ok {
			if c, _ := al.a.strong(al.fc, j, before, path); c != nil {
				w = c.w
			}
			al.strongs[k] = w
		}
		return w
	}
	for _, w := range al.a.latestCandidates(al.fc, i, before, path, strongAt) {
		m, ok := al.aligned[w]
		if !ok {
			if h, err := al.a.hashesOf(ctx, w.ev.Blob); err == nil {
				m = align(h, al.fc.hash)
			}
			al.aligned[w] = m
			at := map[int]int{}
			for k, l := range w.lines {
				at[l.m] = k
			}
			al.addedAt[w] = at
		}
		if m == nil || m[i] < 0 {
			continue
		}
		if k, ok := al.addedAt[w][m[i]]; ok {
			return &cand{w: w, i: k}
		}
	}
	return nil
}

// strong is rule 2 for the line at index i of fc: the best strong match,
// and whether the line has any candidate at all.
func (a *archive) strong(fc *version, i int, before time.Time, path string) (best *cand, eligible bool) {
	// Only writes of the path git names for the line are candidates: a
	// line moved or copied from another file is followed where git blame
	// -M -C follows it (it then names that file), and not otherwise.
	ph := pathHash{path, fc.hash[i]}
	cands := a.byPathHash[ph]
	// A line that is not distinctive is a strong match only where its
	// runs above and below are the same: byCtx lists those writes, and
	// whether any write at all added it before the commit is first's
	// answer (unless two texts share the hash: then the full pass).
	if f, ok := a.first[ph]; ok && !f.mixed && !fc.dist(i) {
		eligible = bytes.Equal(f.text, fc.lines[i]) && (before.IsZero() || !f.ts.After(before.Add(slack)))
		cands = a.byCtx[ctxKey{path, fc.hash[i], fc.upAt(i), fc.downAt(i)}]
	}
	var bestTS int64
	for k := range cands {
		c := &cands[k]
		l := &c.w.lines[c.i]
		if !bytes.Equal(l.text, fc.lines[i]) || !before.IsZero() && c.w.ev.TS.After(before.Add(slack)) {
			continue
		}
		eligible = true
		up, down := l.up == fc.upAt(i), l.down == fc.downAt(i)
		ok := up && down
		if distinctive(l.text) {
			ok = up || down || l.uniq && fc.countOf(fc.hash[i]) == 1
		}
		if !ok {
			continue
		}
		if ts := c.w.ev.TS.UnixNano(); best == nil || ts > bestTS {
			best, bestTS = c, ts
		}
	}
	return best, eligible
}

// anchored matches a line that is not distinctive (a brace, a blank line)
// by one side: its run above (or below) is the same as the candidate's,
// and the distinctive line that run ends on is itself this write's line
// (originOf gives the origins found so far). A closing brace after the
// agent's last line, or a blank line after its block, is the agent's even
// when what follows it changed.
func (a *archive) anchored(fc *version, i int, before time.Time, path string, originOf func(int) *Origin) *cand {
	if distinctive(fc.lines[i]) {
		return nil
	}
	anchor := func(step int) int {
		for j, n := i+step, 0; j >= 0 && j < len(fc.lines) && n < maxRun; j, n = j+step, n+1 {
			if distinctive(fc.lines[j]) {
				return j
			}
		}
		return -1
	}
	above, below := anchor(-1), anchor(1)
	cands := a.byPathHash[pathHash{path, fc.hash[i]}]
	for k := range cands {
		c := &cands[k]
		l := &c.w.lines[c.i]
		if !bytes.Equal(l.text, fc.lines[i]) || !before.IsZero() && c.w.ev.TS.After(before.Add(slack)) {
			continue
		}
		same := func(j int) bool {
			o := originOf(j)
			return o != nil && o.Writer == c.w.ev.Writer && o.Seq == c.w.ev.Seq
		}
		if l.up == fc.upAt(i) && above >= 0 && same(above) || l.down == fc.downAt(i) && below >= 0 && same(below) {
			return c
		}
	}
	return nil
}

// alignWrites bounds the writes a line without a strong match is aligned
// with.
const alignWrites = 3

// latestCandidates are the writes of the same path, at or before the
// commit, that added a line with this text and surround the line at index
// i of fc: first those whose added line has the same context on one side,
// then those with a strong match within maxRun lines; the latest first
// within each. A write of another file is never aligned with: the two
// versions share their non-distinctive lines (braces, blank lines,
// "return x") by chance, and the diff would match a person's closing brace
// to the other file's brace an agent added (TestCommitsFixtureBookkeeping
// found a person's lines in one file credited to an agent's write of
// another).
func (a *archive) latestCandidates(fc *version, i int, before time.Time, path string, strongAt func(j int) *write) []*write {
	var ws []*write
	side := map[*write]bool{}
	for _, c := range a.byPathHash[pathHash{path, fc.hash[i]}] {
		l := &c.w.lines[c.i]
		if !bytes.Equal(l.text, fc.lines[i]) || !before.IsZero() && c.w.ev.TS.After(before.Add(slack)) {
			continue
		}
		one := l.up == fc.upAt(i) || l.down == fc.downAt(i)
		if s, seen := side[c.w]; seen {
			side[c.w] = s || one
			continue
		}
		side[c.w] = one
		ws = append(ws, c.w)
	}
	// Only a write whose lines surround this one is aligned with: one
	// side of its context the same, or a strong match within maxRun
	// lines. A blank line or brace is a block's; aligning it with every
	// write that ever added one would cost a diff per write for nothing.
	near := map[*write]bool{}
	needNear := false
	for _, w := range ws {
		needNear = needNear || !side[w]
	}
	for j := max(0, i-maxRun); needNear && j < min(len(fc.lines), i+maxRun+1); j++ {
		if j != i && fc.dist(j) {
			if w := strongAt(j); w != nil {
				near[w] = true
			}
		}
	}
	keep := ws[:0]
	for _, w := range ws {
		if side[w] || near[w] {
			keep = append(keep, w)
		}
	}
	ws = keep
	sort.Slice(ws, func(i, j int) bool {
		if side[ws[i]] != side[ws[j]] {
			return side[ws[i]]
		}
		return ws[i].ev.TS.After(ws[j].ev.TS)
	})
	if len(ws) > alignWrites {
		ws = ws[:alignWrites]
	}
	return ws
}

func (a *archive) origin(c *cand, opt Options) *Origin {
	e := c.w.ev
	o := &Origin{Harness: gitstore.HarnessOf(e.Harness, e.Writer, opt.HarnessOf), Writer: e.Writer, Seq: e.Seq,
		Session: e.Session, Agent: e.Agent, Op: e.Op, Tool: e.Tool, Call: e.Key, TS: e.TS.UTC(),
		Path: c.w.path, Blob: e.Blob, Line: c.w.lines[c.i].m + 1}
	return o
}

// contentAt is path's content in commit (the working tree for the
// uncommitted pseudo-commit).
func (a *archive) contentAt(ctx context.Context, top, commit, path string) ([]byte, error) {
	if commit == Uncommitted {
		b, err := os.ReadFile(filepath.Join(top, filepath.FromSlash(path)))
		if err != nil {
			return nil, fmt.Errorf("blame: %w", err)
		}
		return b, nil
	}
	return blobAt(ctx, a.st, commit, path)
}

// blobAt reads path in commit's tree from the repository's object store.
func blobAt(ctx context.Context, st *gitstore.Store, commit, path string) ([]byte, error) {
	typ, body, err := st.Objects().ReadObject(ctx, commit)
	if err != nil {
		return nil, fmt.Errorf("blame: commit %s: %w", short(commit), err)
	}
	if typ != "commit" {
		return nil, fmt.Errorf("blame: %s is a %s, not a commit", short(commit), typ)
	}
	c, err := gitobj.ParseCommit(body)
	if err != nil {
		return nil, fmt.Errorf("blame: commit %s: %w", short(commit), err)
	}
	id := c.Tree
	parts := strings.Split(path, "/")
	for n, part := range parts {
		typ, body, err := st.Objects().ReadObject(ctx, id)
		if err != nil || typ != "tree" {
			return nil, fmt.Errorf("blame: %s:%s: tree %s unreadable", short(commit), path, short(id))
		}
		ents, err := gitobj.ParseTree(body)
		if err != nil {
			return nil, fmt.Errorf("blame: %s:%s: %w", short(commit), path, err)
		}
		found := false
		for _, e := range ents {
			if e.Name == part {
				if (n < len(parts)-1) != e.IsTree() {
					return nil, fmt.Errorf("blame: %s:%s: %s is not a %s", short(commit), path, part, map[bool]string{true: "directory", false: "file"}[n < len(parts)-1])
				}
				id, found = e.ID, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("blame: %s has no %s", short(commit), path)
		}
	}
	typ, body, err = st.Objects().ReadObject(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("blame: %s:%s: %w", short(commit), path, err)
	}
	if typ != "blob" {
		return nil, fmt.Errorf("blame: %s:%s is a %s", short(commit), path, typ)
	}
	return body, nil
}
