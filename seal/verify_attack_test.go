package seal_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/seal"
)

// verify must name the entry that broke, not the first entry of its batch
// (or entry 1): archives are built by the real store (three batches of
// three events, entries 1-3, 4-6, 7-9), damaged with C git plumbing only,
// and verify's report must name the exact entry and kind.

type vaRepo struct {
	t       *testing.T
	dir     string
	st      *gitstore.Store
	commits []string // the writer's batch commits, oldest first
}

const vaWriter = "w"

func vaNew(t *testing.T) *vaRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	r := &vaRepo{t: t, dir: t.TempDir()}
	r.git(nil, "init", "-q", r.dir)
	st, err := gitstore.OpenDir(r.dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	for b := range 3 {
		var recs []gitstore.Record
		for i := range 3 {
			n := b*3 + i + 1
			rec := gitstore.Record{Event: gitstore.Event{Op: "read", Source: "cli", View: "full"},
				Content: fmt.Appendf(nil, "content of entry %d\n", n), HasContent: true}
			rec.SetPath(fmt.Sprintf("f%d.txt", n))
			recs = append(recs, rec)
		}
		if _, err := st.Append(context.Background(), vaWriter, recs); err != nil {
			t.Fatal(err)
		}
	}
	r.commits = strings.Fields(r.git(nil, "rev-list", "--reverse", "refs/lossless/"+vaWriter))
	if len(r.commits) != 3 {
		t.Fatalf("%d batch commits, want 3", len(r.commits))
	}
	if rep := r.verify(); !rep.OK() || rep.Entries != 9 {
		t.Fatalf("fresh archive: %+v", rep)
	}
	return r
}

func (r *vaRepo) git(stdin []byte, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost")
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func (r *vaRepo) verify() *seal.Report {
	r.t.Helper()
	rep, err := r.st.Verify(context.Background(), vaWriter, seal.Options{})
	if err != nil {
		r.t.Fatalf("verify: %v", err)
	}
	return rep
}

func (r *vaRepo) lines(c string) []string {
	return strings.Split(strings.TrimSuffix(r.git(nil, "show", c+":events.jsonl"), "\n"), "\n")
}

func (r *vaRepo) message(c string) string {
	_, msg, _ := strings.Cut(r.git(nil, "cat-file", "commit", c), "\n\n")
	return msg
}

// commit writes a commit of tree on parent with msg.
func (r *vaRepo) commit(tree, parent, msg string) string {
	args := []string{"commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return strings.TrimSpace(r.git([]byte(msg), append(args, "-F", "-")...))
}

// treeWith is c's tree with events.jsonl replaced by lines.
func (r *vaRepo) treeWith(c string, lines []string) string {
	body := ""
	if len(lines) > 0 {
		body = strings.Join(lines, "\n") + "\n"
	}
	ev := strings.TrimSpace(r.git([]byte(body), "hash-object", "-w", "--stdin"))
	var tree strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(r.git(nil, "ls-tree", c), "\n"), "\n") {
		if strings.HasSuffix(l, "\tevents.jsonl") {
			fmt.Fprintf(&tree, "100644 blob %s\tevents.jsonl\n", ev)
		} else {
			tree.WriteString(l + "\n")
		}
	}
	return strings.TrimSpace(r.git([]byte(tree.String()), "mktree"))
}

// replace puts a rewritten batch k (tree, message) in the history and
// re-parents the batches after it, then moves the ref.
func (r *vaRepo) replace(k int, tree, msg string) {
	parent := ""
	if k > 0 {
		parent = r.commits[k-1]
	}
	c := r.commit(tree, parent, msg)
	for _, later := range r.commits[k+1:] {
		c = r.commit(strings.TrimSpace(r.git(nil, "rev-parse", later+"^{tree}")), c, r.message(later))
	}
	r.git(nil, "update-ref", "refs/lossless/"+vaWriter, c)
}

func (r *vaRepo) removeObject(id string) {
	r.t.Helper()
	if err := os.Remove(filepath.Join(r.dir, ".git", "objects", id[:2], id[2:])); err != nil {
		r.t.Fatal(err)
	}
}

func TestVerifyNamesTheBrokenEntry(t *testing.T) {
	type corruption struct {
		name string
		// do damages batch k (0-based) of r.
		do   func(r *vaRepo, k int)
		kind seal.Kind
		// at is the broken entry's position in the batch (1-3).
		at int
	}
	withLines := func(edit func([]string) []string) func(*vaRepo, int) {
		return func(r *vaRepo, k int) {
			c := r.commits[k]
			r.replace(k, r.treeWith(c, edit(r.lines(c))), r.message(c))
		}
	}
	withMessage := func(edit func(string) string) func(*vaRepo, int) {
		return func(r *vaRepo, k int) {
			c := r.commits[k]
			msg := r.message(c)
			changed := edit(msg)
			if changed == msg {
				t.Fatalf("setup: message unchanged:\n%s", msg)
			}
			r.replace(k, strings.TrimSpace(r.git(nil, "rev-parse", c+"^{tree}")), changed)
		}
	}
	swapField := func(line, field, to string) string {
		i := strings.Index(line, `"`+field+`":`)
		if i < 0 {
			t.Fatalf("setup: no %s in %s", field, line)
		}
		j := i + len(field) + 3
		end := j + strings.IndexAny(line[j:], `,}`)
		return line[:j] + to + line[end:]
	}
	otherSeal := strings.Repeat("ab", 32)
	cases := []corruption{
		{"edited middle line", withLines(func(l []string) []string {
			l[1] = strings.Replace(l[1], `"op":"read"`, `"op":"edit"`, 1)
			return l
		}), seal.EntryEdited, 2},
		{"edited prev of the middle line", withLines(func(l []string) []string {
			l[1] = swapField(l[1], "prev", `"`+otherSeal+`"`)
			return l
		}), seal.EntryEdited, 2},
		{"edited seq of the middle line", withLines(func(l []string) []string {
			l[1] = swapField(l[1], "seq", "77")
			return l
		}), seal.EntryEdited, 2},
		{"edited first line", withLines(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"op":"read"`, `"op":"edit"`, 1)
			return l
		}), seal.EntryEdited, 1},
		{"edited last line", withLines(func(l []string) []string {
			l[2] = strings.Replace(l[2], `"op":"read"`, `"op":"edit"`, 1)
			return l
		}), seal.EntryEdited, 3},
		{"edited prev of the last line", withLines(func(l []string) []string {
			l[2] = swapField(l[2], "prev", `"`+otherSeal+`"`)
			return l
		}), seal.EntryEdited, 3},
		{"middle line not JSON", withLines(func(l []string) []string {
			l[1] = l[1][:len(l[1])-1]
			return l
		}), seal.EntryEdited, 2},
		{"lines 2 and 3 swapped", withLines(func(l []string) []string {
			l[1], l[2] = l[2], l[1]
			return l
		}), seal.EntryReordered, 2},
		{"lines 1 and 2 swapped", withLines(func(l []string) []string {
			l[0], l[1] = l[1], l[0]
			return l
		}), seal.EntryReordered, 1},
		{"middle line removed", withLines(func(l []string) []string {
			return []string{l[0], l[2]}
		}), seal.EntryEdited, 2},
		{"first line removed", withLines(func(l []string) []string {
			return l[1:]
		}), seal.EntryEdited, 1},
		{"last line removed", withLines(func(l []string) []string {
			return l[:2]
		}), seal.EntryEdited, 3},
		{"line 1 inserted again after itself", withLines(func(l []string) []string {
			return []string{l[0], l[0], l[1], l[2]}
		}), seal.EntryEdited, 2},
		{"Lossless-Seal changed", withMessage(func(m string) string {
			i := strings.Index(m, "Lossless-Seal: ")
			return m[:i] + "Lossless-Seal: " + otherSeal + "\n"
		}), seal.EntryEdited, 3},
		{"Lossless-Seq changed", withMessage(func(m string) string {
			return strings.Replace(m, "Lossless-Seq: ", "Lossless-Seq: 1", 1)
		}), seal.EntryEdited, 3},
		{"Lossless-Seq not a number", withMessage(func(m string) string {
			return strings.Replace(m, "Lossless-Seq: ", "Lossless-Seq: x", 1)
		}), seal.Unsealed, 3},
		{"Lossless-Seal missing", withMessage(func(m string) string {
			return m[:strings.Index(m, "Lossless-Seal: ")]
		}), seal.Unsealed, 3},
		{"tree unreadable", func(r *vaRepo, k int) {
			r.removeObject(strings.TrimSpace(r.git(nil, "rev-parse", r.commits[k]+"^{tree}")))
		}, seal.Unsealed, 1},
		{"events.jsonl unreadable", func(r *vaRepo, k int) {
			r.removeObject(strings.TrimSpace(r.git(nil, "rev-parse", r.commits[k]+":events.jsonl")))
		}, seal.Unsealed, 1},
		{"blobs tree unreadable", func(r *vaRepo, k int) {
			r.removeObject(strings.TrimSpace(r.git(nil, "rev-parse", r.commits[k]+":blobs")))
		}, seal.Unsealed, 1},
	}
	for _, c := range cases {
		for k := range 3 {
			t.Run(fmt.Sprintf("%s/batch %d", c.name, k+1), func(t *testing.T) {
				r := vaNew(t)
				c.do(r, k)
				rep := r.verify()
				want := int64(k*3 + c.at)
				if rep.OK() {
					t.Fatalf("verify OK after %s; want %s at entry %d", c.name, c.kind, want)
				}
				if rep.Break.Kind != c.kind || rep.Break.Seq != want {
					t.Errorf("verify: %s at entry %d (%s); want %s at entry %d", rep.Break.Kind, rep.Break.Seq, rep.Break.Detail, c.kind, want)
				}
				// Everything before the break was read and sealed.
				if rep.Entries < want-1 {
					t.Errorf("verify read %d entries before the break at %d", rep.Entries, want)
				}
			})
		}
	}
}

// A missing batch commit hides every entry below it: verify cannot read
// entries 1-6, and says so at entry 1, naming where the readable chain
// resumes.
func TestVerifyMissingCommit(t *testing.T) {
	r := vaNew(t)
	r.removeObject(r.commits[1])
	rep := r.verify()
	if rep.OK() || rep.Break.Kind != seal.Unsealed || rep.Break.Seq != 1 || !strings.Contains(rep.Break.Detail, "entries 1-6") {
		t.Fatalf("verify: %+v", rep.Break)
	}
}
