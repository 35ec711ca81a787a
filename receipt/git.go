package receipt

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// ObjectReader reads git objects by id (gitstore.Objects does).
type ObjectReader interface {
	ReadObject(ctx context.Context, id string) (typ string, body []byte, err error)
}

// CommitInfo is the part of a commit a receipt names.
type CommitInfo struct {
	ID        string
	Tree      string
	Parents   []string
	Committed int64 // committer time, Unix seconds
}

// ReadCommit reads and parses a commit.
func ReadCommit(ctx context.Context, or ObjectReader, id string) (CommitInfo, error) {
	typ, body, err := or.ReadObject(ctx, id)
	if err != nil {
		return CommitInfo{}, err
	}
	if typ != "commit" {
		return CommitInfo{}, fmt.Errorf("%s is a %s, not a commit", id, typ)
	}
	return parseCommit(id, body)
}

func parseCommit(id string, body []byte) (CommitInfo, error) {
	gc, err := gitobj.ParseCommit(body)
	if err != nil {
		return CommitInfo{ID: id}, fmt.Errorf("commit %s: %w", id, err)
	}
	if !gc.HasTime || gc.Time < 0 {
		return CommitInfo{ID: id}, fmt.Errorf("commit %s: no tree or committer time", id)
	}
	return CommitInfo{ID: id, Tree: gc.Tree, Parents: gc.Parents, Committed: gc.Time}, nil
}

// treeEnt is a tree entry as the receipt code reads it, parsed by
// gitobj.ParseTree.
type treeEnt struct {
	mode, name, id string
}

func (t treeEnt) isTree() bool { return t.mode == "40000" }

// treeCache reads and parses trees once.
type treeCache struct {
	or ObjectReader
	mu sync.Mutex
	m  map[string][]treeEnt
}

func newTreeCache(or ObjectReader) *treeCache { return &treeCache{or: or, m: map[string][]treeEnt{}} }

func (tc *treeCache) read(ctx context.Context, id string) ([]treeEnt, error) {
	tc.mu.Lock()
	ents, ok := tc.m[id]
	tc.mu.Unlock()
	if ok {
		return ents, nil
	}
	typ, body, err := tc.or.ReadObject(ctx, id)
	if err != nil {
		return nil, err
	}
	if typ != "tree" {
		return nil, fmt.Errorf("%s is a %s, not a tree", id, typ)
	}
	parsed, err := gitobj.ParseTree(body)
	if err != nil {
		return nil, fmt.Errorf("tree %s is malformed", id)
	}
	ents = make([]treeEnt, len(parsed))
	for i, e := range parsed {
		ents[i] = treeEnt{mode: e.Mode, name: e.Name, id: e.ID}
	}
	tc.mu.Lock()
	tc.m[id] = ents
	tc.mu.Unlock()
	return ents, nil
}

// lookup returns the entry at a slash-separated path in tree.
func (tc *treeCache) lookup(ctx context.Context, tree, p string) (treeEnt, bool, error) {
	cur := tree
	parts := strings.Split(p, "/")
	for i, name := range parts {
		ents, err := tc.read(ctx, cur)
		if err != nil {
			return treeEnt{}, false, err
		}
		var found *treeEnt
		for j := range ents {
			if ents[j].name == name {
				found = &ents[j]
				break
			}
		}
		if found == nil {
			return treeEnt{}, false, nil
		}
		if i == len(parts)-1 {
			if found.isTree() {
				return treeEnt{}, false, nil
			}
			return *found, true, nil
		}
		if !found.isTree() {
			return treeEnt{}, false, nil
		}
		cur = found.id
	}
	return treeEnt{}, false, nil
}

// normMode writes a tree entry mode as the receipt does (git writes
// "40000" for trees; blobs are 100644, 100755, 120000, submodules 160000).
func normMode(m string) string {
	if len(m) == 5 {
		return "0" + m
	}
	return m
}

// DiffTrees lists the paths that differ between two trees (old "" = the
// empty tree), recursing only into subtrees whose ids differ. Mode changes
// count as modifications; a path that turns from a file into a directory
// (or back) appears as deleted and added.
func DiffTrees(ctx context.Context, or ObjectReader, oldTree, newTree string) ([]Change, error) {
	return diffTrees(ctx, newTreeCache(or), oldTree, newTree)
}

func diffTrees(ctx context.Context, tc *treeCache, oldTree, newTree string) ([]Change, error) {
	var out []Change
	var walk func(a, b, prefix string) error
	walk = func(a, b, prefix string) error {
		if a == b {
			return nil
		}
		var ea, eb []treeEnt
		var err error
		if a != "" {
			if ea, err = tc.read(ctx, a); err != nil {
				return err
			}
		}
		if b != "" {
			if eb, err = tc.read(ctx, b); err != nil {
				return err
			}
		}
		type pair struct{ a, b *treeEnt }
		m := map[string]*pair{}
		var names []string
		for i := range ea {
			e := &ea[i]
			k := e.name
			if e.isTree() {
				k += "/"
			}
			m[k] = &pair{a: e}
			names = append(names, k)
		}
		for i := range eb {
			e := &eb[i]
			k := e.name
			if e.isTree() {
				k += "/"
			}
			if p := m[k]; p != nil {
				p.b = e
			} else {
				m[k] = &pair{b: e}
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			p := m[k]
			if strings.HasSuffix(k, "/") {
				var ta, tb string
				if p.a != nil {
					ta = p.a.id
				}
				if p.b != nil {
					tb = p.b.id
				}
				if err := walk(ta, tb, prefix+strings.TrimSuffix(k, "/")+"/"); err != nil {
					return err
				}
				continue
			}
			full := prefix + k
			switch {
			case p.a == nil:
				out = append(out, Change{Path: full, Change: Added, Mode: normMode(p.b.mode), Blob: p.b.id})
			case p.b == nil:
				out = append(out, Change{Path: full, Change: Deleted})
			case p.a.id != p.b.id || p.a.mode != p.b.mode:
				out = append(out, Change{Path: full, Change: Modified, Mode: normMode(p.b.mode), Blob: p.b.id})
			}
		}
		return nil
	}
	if err := walk(oldTree, newTree, ""); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ErrNoRevision is wrapped when a revision names no commit.
var ErrNoRevision = gitobj.ErrNoRevision

// ResolveRev turns a revision (HEAD, a branch, HEAD~2, a short id...) of
// the repository at dir into a commit id (gitobj.ResolveRev).
func ResolveRev(ctx context.Context, dir, rev string) (string, error) {
	return gitobj.ResolveRev(ctx, dir, rev)
}
