package receipt

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"

	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Rewrite is one rewritten commit and the commits it replaces.
type Rewrite struct {
	New  string
	Olds []string
	How  string // "post-rewrite", "patch-id" or "squash"
}

// ParseRewritten reads what git gives the post-rewrite hook on stdin:
// lines "OLD NEW [EXTRA]". A squash or fixup maps several old commits to
// one new one; they are grouped, in the order the new commits first appear.
func ParseRewritten(r io.Reader) ([]Rewrite, error) {
	var out []Rewrite
	at := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 || !isHexID(f[0]) || !isHexID(f[1]) {
			return nil, fmt.Errorf("post-rewrite input: %q is not OLD NEW", sc.Text())
		}
		i, ok := at[f[1]]
		if !ok {
			i = len(out)
			at[f[1]] = i
			out = append(out, Rewrite{New: f[1], How: "post-rewrite"})
		}
		out[i].Olds = append(out[i].Olds, f[0])
	}
	return out, sc.Err()
}

func isHexID(s string) bool { return (len(s) == 40 || len(s) == 64) && isLowerHex(s) }

// MatchRange matches the commits of newRev's side of a rewrite (git
// rev-list oldRev..newRev) to the commits of oldRev's side (newRev..oldRev)
// that have receipts, for a rewrite git ran no hook for (a host's squash or
// rebase merge, filter-branch). The rule, in order:
//
//  1. patch id: a new commit whose `git patch-id --stable` equals an old
//     commit's replaces it (a rebase, a cherry-pick, a rebase merge);
//  2. squash: a new commit whose change against its first parent is
//     exactly the net change of a run of consecutive old commits (old
//     side in topological order, oldest first) — the same paths, each
//     with the same resulting mode and blob, or deleted in both — replaces
//     the whole run (`git merge --squash`, a host's squash merge). A
//     squash whose result differs (a conflict resolved, an edit made
//     while squashing) is not matched.
//
// Only old commits with a receipt are matched; new commits that have a
// receipt of their own are left alone. It returns the matches and the old
// commits with receipts that nothing matched.
func MatchRange(ctx context.Context, st *gitstore.Store, dir, oldRev, newRev string) ([]Rewrite, []string, error) {
	newSide, err := revList(ctx, dir, oldRev+".."+newRev)
	if err != nil {
		return nil, nil, err
	}
	oldSide, err := revList(ctx, dir, newRev+".."+oldRev)
	if err != nil {
		return nil, nil, err
	}
	withReceipt := map[string]bool{}
	var oldWith []string
	for _, c := range oldSide {
		ok, err := HasReceipt(ctx, st, c)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			withReceipt[c] = true
			oldWith = append(oldWith, c)
		}
	}
	if len(oldWith) == 0 {
		return nil, nil, nil
	}
	var newBare []string
	for _, c := range newSide {
		ok, err := HasReceipt(ctx, st, c)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			newBare = append(newBare, c)
		}
	}
	pidOld, err := patchIDs(ctx, dir, oldSide)
	if err != nil {
		return nil, nil, err
	}
	pidNew, err := patchIDs(ctx, dir, newBare)
	if err != nil {
		return nil, nil, err
	}
	byPID := map[string]string{}
	for _, c := range oldSide {
		if p := pidOld[c]; p != "" && withReceipt[c] {
			if _, dup := byPID[p]; !dup {
				byPID[p] = c
			}
		}
	}
	used := map[string]bool{}
	var out []Rewrite
	var rest []string
	for _, c := range newBare {
		if o, ok := byPID[pidNew[c]]; ok && pidNew[c] != "" && !used[o] {
			used[o] = true
			out = append(out, Rewrite{New: c, Olds: []string{o}, How: "patch-id"})
			continue
		}
		rest = append(rest, c)
	}
	// Squash: runs of consecutive old commits (oldest first).
	tc := newTreeCache(st.Objects())
	for _, c := range rest {
		want, err := commitChange(ctx, tc, c)
		if err != nil {
			return nil, nil, err
		}
		if want == "" {
			continue
		}
		var found []string
	search:
		for i := range oldSide {
			ci, err := ReadCommit(ctx, st.Objects(), oldSide[i])
			if err != nil || len(ci.Parents) == 0 {
				continue
			}
			base, err := ReadCommit(ctx, st.Objects(), ci.Parents[0])
			if err != nil {
				continue
			}
			for j := i; j < len(oldSide); j++ {
				cj, err := ReadCommit(ctx, st.Objects(), oldSide[j])
				if err != nil {
					break
				}
				if j > i && (len(cj.Parents) == 0 || cj.Parents[0] != oldSide[j-1]) {
					break // not a run
				}
				got, err := changeKey(ctx, tc, base.Tree, cj.Tree)
				if err != nil {
					return nil, nil, err
				}
				if got == want {
					for _, o := range oldSide[i : j+1] {
						if withReceipt[o] && !used[o] {
							found = append(found, o)
						}
					}
					break search
				}
			}
		}
		if len(found) > 0 {
			for _, o := range found {
				used[o] = true
			}
			out = append(out, Rewrite{New: c, Olds: found, How: "squash"})
		}
	}
	var unmatched []string
	for _, o := range oldWith {
		if !used[o] {
			unmatched = append(unmatched, o)
		}
	}
	return out, unmatched, nil
}

// commitChange is the change key of a commit against its first parent.
func commitChange(ctx context.Context, tc *treeCache, id string) (string, error) {
	c, err := ReadCommit(ctx, tc.or, id)
	if err != nil {
		return "", err
	}
	var base string
	if len(c.Parents) > 0 {
		p, err := ReadCommit(ctx, tc.or, c.Parents[0])
		if err != nil {
			return "", err
		}
		base = p.Tree
	}
	return changeKey(ctx, tc, base, c.Tree)
}

// changeKey writes a tree diff as one comparable string: each changed
// path with its resulting mode and blob, or "D".
func changeKey(ctx context.Context, tc *treeCache, a, b string) (string, error) {
	ch, err := diffTrees(ctx, tc, a, b)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, c := range ch {
		if c.Change == Deleted {
			fmt.Fprintf(&sb, "%s\x00D\n", c.Path)
		} else {
			fmt.Fprintf(&sb, "%s\x00%s %s\n", c.Path, c.Mode, c.Blob)
		}
	}
	return sb.String(), nil
}

// revList lists a range oldest first (topological order, no merges).
func revList(ctx context.Context, dir, rng string) ([]string, error) {
	out, err := gitOut(ctx, dir, nil, "rev-list", "--reverse", "--topo-order", "--no-merges", rng, "--")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// patchIDs returns `git patch-id --stable` of each commit (none for an
// empty change).
func patchIDs(ctx context.Context, dir string, commits []string) (map[string]string, error) {
	out := map[string]string{}
	if len(commits) == 0 {
		return out, nil
	}
	diff, err := gitOut(ctx, dir, []byte(strings.Join(commits, "\n")+"\n"), "diff-tree", "--stdin", "-p", "--root", "--no-renames", "--full-index")
	if err != nil {
		return nil, err
	}
	ids, err := gitOut(ctx, dir, diff, "patch-id", "--stable")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(string(ids), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			out[f[1]] = f[0]
		}
	}
	return out, nil
}

func gitOut(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
