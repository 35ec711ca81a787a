package blame

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
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
	// Model, when set, names the model behind a write where the archive
	// knows it.
	Model func(writer, session, agent string, ts time.Time, call string) string
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
	gl, err := runGitBlame(ctx, top, rev, path, opt)
	if err != nil {
		return nil, err
	}
	a := newArchive(st, opt.HarnessOf)
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
	a.index(paths)
	// One version read per (commit, path) that has a candidate line.
	type key struct{ commit, path string }
	groups := map[key][]int{}
	var order []key
	for i, l := range gl {
		if !a.hasCandidate([]byte(l.Text)) {
			continue
		}
		k := key{l.Commit, l.OrigPath}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		content, err := a.contentAt(ctx, top, k.commit, k.path)
		if err != nil {
			return nil, err
		}
		fc := a.h.version(content)
		idx := make([]int, len(groups[k]))
		var before time.Time
		for j, i := range groups[k] {
			l := &gl[i]
			at := l.OrigLine - 1
			if at < 0 || at >= len(fc.lines) || string(fc.lines[at]) != l.Text {
				return nil, fmt.Errorf("blame: git blame puts line %d of %s at line %d of %s in %s, which does not hold it", l.N, path, l.OrigLine, k.path, short(k.commit))
			}
			idx[j], before = at, l.commitTime
		}
		if k.commit == Uncommitted {
			before = time.Time{}
		}
		for j, c := range a.attribute(fc, idx, before, k.path) {
			if c != nil {
				gl[groups[k][j]].Origin = a.origin(c, opt)
			}
		}
	}
	out := make([]Line, len(gl))
	for i := range gl {
		out[i] = gl[i].Line
	}
	if opt.Requests {
		if err := fillRequests(ctx, st, out, opt.Identities); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// hasCandidate reports whether some archived write added a line with
// this text: only such lines need the version they were committed in.
func (a *archive) hasCandidate(text []byte) bool {
	for _, c := range a.byHash[a.h.line(text)] {
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
func (a *archive) attribute(fc *version, idx []int, before time.Time, path string) []*cand {
	out := make([]*cand, len(idx))
	var weak []int
	for j, i := range idx {
		var best *cand
		var bestRank [2]int64
		eligible := false
		// A line that is not distinctive is a strong match only where its
		// runs above and below are the same: byCtx lists those writes.
		// Whether any write at all added it before the commit is first's
		// answer (unless two texts share the hash: then the full pass).
		cands := a.byHash[fc.hash[i]]
		if f, ok := a.first[fc.hash[i]]; ok && !f.mixed && !distinctive(fc.lines[i]) {
			eligible = bytes.Equal(f.text, fc.lines[i]) && (before.IsZero() || !f.ts.After(before.Add(slack)))
			cands = a.byCtx[[3]uint64{fc.hash[i], fc.up[i], fc.down[i]}]
		}
		for k := range cands {
			c := &cands[k]
			l := &c.w.lines[c.i]
			if !bytes.Equal(l.text, fc.lines[i]) || !before.IsZero() && c.w.ev.TS.After(before.Add(slack)) {
				continue
			}
			eligible = true
			up, down := l.up == fc.up[i], l.down == fc.down[i]
			strong := up && down
			if distinctive(l.text) {
				strong = up || down || l.uniq && fc.count[fc.hash[i]] == 1
			}
			if !strong {
				continue
			}
			r := [2]int64{0, c.w.ev.TS.UnixNano()}
			if c.w.path == path {
				r[0] = 1
			}
			if best == nil || r[0] > bestRank[0] || r[0] == bestRank[0] && r[1] > bestRank[1] {
				best, bestRank = c, r
			}
		}
		out[j] = best
		if best == nil && eligible {
			weak = append(weak, j)
		}
	}
	if len(weak) == 0 {
		return out
	}
	aligned := map[*write][]int{}
	addedAt := map[*write]map[int]int{}
	for _, j := range weak {
		i := idx[j]
		for _, w := range a.latestCandidates(fc.lines[i], fc.hash[i], before, path) {
			al, ok := aligned[w]
			if !ok {
				if ph, err := a.hashesOf(w.ev.Blob); err == nil {
					al = align(ph, fc.hash)
				}
				aligned[w] = al
				at := map[int]int{}
				for k, l := range w.lines {
					at[l.m] = k
				}
				addedAt[w] = at
			}
			if al == nil || al[i] < 0 {
				continue
			}
			if k, ok := addedAt[w][al[i]]; ok {
				out[j] = &cand{w: w, i: k}
				break
			}
		}
	}
	return out
}

// alignWrites bounds the writes a line without a strong match is aligned
// with.
const alignWrites = 3

// latestCandidates are the writes of the same path, at or before the
// commit, that added a line with this text, the latest first. A write of
// another file is never aligned with: the two versions share their
// non-distinctive lines (braces, blank lines, "return x") by chance, and
// the diff matches a person's closing brace to the other file's brace an
// agent added (TestCommitsFixtureBookkeeping found a person's lines in
// one file credited to an agent's write of another).
func (a *archive) latestCandidates(text []byte, h uint64, before time.Time, path string) []*write {
	var ws []*write
	seen := map[*write]bool{}
	for _, c := range a.byHash[h] {
		if seen[c.w] || c.w.path != path || !bytes.Equal(c.w.lines[c.i].text, text) || !before.IsZero() && c.w.ev.TS.After(before.Add(slack)) {
			continue
		}
		seen[c.w] = true
		ws = append(ws, c.w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ev.TS.After(ws[j].ev.TS) })
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
	if opt.Model != nil {
		o.Model = opt.Model(e.Writer, e.Session, e.Agent, e.TS, e.Key)
	}
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
	return blobAt(a.st, commit, path)
}

// blobAt reads path in commit's tree from the repository's object store.
func blobAt(st *gitstore.Store, commit, path string) ([]byte, error) {
	typ, body, err := st.ReadObject(commit)
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
		typ, body, err := st.ReadObject(id)
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
	typ, body, err = st.ReadObject(id)
	if err != nil {
		return nil, fmt.Errorf("blame: %s:%s: %w", short(commit), path, err)
	}
	if typ != "blob" {
		return nil, fmt.Errorf("blame: %s:%s is a %s", short(commit), path, typ)
	}
	return body, nil
}
