package blame_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
)

// originsOf is each line's text and origin (writer and seq, or "human"):
// what must not change when history is rewritten.
func originsOf(t *testing.T, r *repo, rev, path string) []string {
	t.Helper()
	lines, err := blame.File(context.Background(), r.st, rev, path, blame.Options{})
	if err != nil {
		t.Fatalf("blame %s %s: %v", rev, path, err)
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		o := "human"
		if l.Origin != nil {
			o = fmt.Sprintf("%s#%d", l.Origin.Writer, l.Origin.Seq)
		}
		out[i] = o + "\t" + l.Text
	}
	return out
}

func sameOrigins(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: line %d is %q, was %q", what, i+1, got[i], want[i])
		}
	}
}

// seqEditor writes a GIT_SEQUENCE_EDITOR script that replaces the todo
// list with todo.
func seqEditor(t *testing.T, todo string) string {
	t.Helper()
	dir := t.TempDir()
	list := filepath.Join(dir, "todo")
	if err := os.WriteFile(list, []byte(todo), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "edit.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat '"+list+"' >\"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestBlameSurvivesRewrites: after commit --amend, an interactive rebase
// that reorders, squashes, fixes up and edits, a cherry-pick onto another
// branch, git merge --squash and filter-branch, every line keeps its
// origin: it is found by content, not by commit id.
func TestBlameSurvivesRewrites(t *testing.T) {
	r := newRepo(t)
	_, _ = script(t, r)
	r.commit("Pat", "neg")
	// Independent commits that a rebase can reorder: an agent's new file
	// and a person's notes.
	u := doc{}.insert(0, alpha.writer, "package calc", "", "// Square returns a*a.", "func Square(a int) int { return a * a }")
	r.event(alpha, "write", "Write", "toolu_9", "util.go", u.bytes())
	r.writeFile("util.go", u.bytes())
	r.commit("Pat", "util")
	r.writeFile("NOTES.md", []byte("# notes\nwritten by hand\n"))
	r.commit("Pat", "notes")
	r.writeFile("NOTES.md", []byte("# notes\nwritten by hand\nmore notes\n"))
	r.commit("Pat", "more notes")

	want := originsOf(t, r, "HEAD", "calc.go")
	wantU := originsOf(t, r, "HEAD", "util.go")
	agent := 0
	for _, o := range append(append([]string{}, want...), wantU...) {
		if !strings.HasPrefix(o, "human") {
			agent++
		}
	}
	if agent < 20 {
		t.Fatalf("only %d agent lines: the history does not exercise blame", agent)
	}
	check := func(what, rev string) {
		t.Helper()
		sameOrigins(t, what+" calc.go", originsOf(t, r, rev, "calc.go"), want)
		sameOrigins(t, what+" util.go", originsOf(t, r, rev, "util.go"), wantU)
	}

	// amend
	r.git("commit", "-q", "--amend", "-m", "more notes, amended")
	check("amend", "HEAD")

	// rebase -i over the last four commits: reorder (notes before util),
	// squash "more notes" into "notes", and fixup "neg" into nothing
	// before it — keep neg first, then edit util.
	ids := strings.Fields(r.git("rev-list", "--reverse", "HEAD~4..HEAD"))
	neg, util, notes, more := ids[0], ids[1], ids[2], ids[3]
	todo := fmt.Sprintf("pick %s neg\npick %s notes\nsquash %s more\nedit %s util\n", neg, notes, more, util)
	if out, err := r.gitEnv([]string{"GIT_SEQUENCE_EDITOR=" + seqEditor(t, todo), "GIT_EDITOR=true"}, "rebase", "-i", "HEAD~4"); err != nil {
		t.Fatalf("rebase: %v\n%s", err, out)
	}
	r.writeFile("CHANGELOG", []byte("edited during the rebase\n"))
	r.git("add", "CHANGELOG")
	r.git("commit", "-q", "--amend", "-m", "util, edited")
	if out, err := r.gitEnv([]string{"GIT_EDITOR=true"}, "rebase", "--continue"); err != nil {
		t.Fatalf("rebase --continue: %v\n%s", err, out)
	}
	if n := r.git("rev-list", "--count", "HEAD~3..HEAD"); n != "3" {
		t.Fatalf("after the rebase %s commits", n)
	}
	check("rebase -i", "HEAD")

	// A fixup: the last two commits become one.
	todo = fmt.Sprintf("pick %s a\nfixup %s b\n", r.git("rev-parse", "HEAD~1"), r.git("rev-parse", "HEAD"))
	if out, err := r.gitEnv([]string{"GIT_SEQUENCE_EDITOR=" + seqEditor(t, todo), "GIT_EDITOR=true"}, "rebase", "-i", "HEAD~2"); err != nil {
		t.Fatalf("rebase fixup: %v\n%s", err, out)
	}
	check("fixup", "HEAD")

	// cherry-pick the agent's util commit onto a branch from the start.
	utilNow := r.git("log", "--format=%H", "-1", "--", "util.go")
	root := r.git("rev-list", "--max-parents=0", "HEAD")
	r.git("checkout", "-q", "-b", "picked", root)
	r.git("cherry-pick", utilNow)
	sameOrigins(t, "cherry-pick util.go", originsOf(t, r, "HEAD", "util.go"), wantU)

	// merge --squash of everything onto a branch from the start.
	r.git("checkout", "-q", "-b", "squashed", root)
	r.git("merge", "--squash", "main")
	r.git("commit", "-q", "-m", "everything, squashed")
	check("merge --squash", "HEAD")

	// filter-branch rewrites every commit of main.
	r.git("checkout", "-q", "main")
	if out, err := r.gitEnv([]string{"FILTER_BRANCH_SQUELCH_WARNING=1"}, "filter-branch", "-f", "--msg-filter", "sed s/^/rewritten:\\ /", "HEAD"); err != nil {
		t.Fatalf("filter-branch: %v\n%s", err, out)
	}
	if !strings.HasPrefix(r.git("log", "-1", "--format=%s"), "rewritten: ") {
		t.Fatal("filter-branch rewrote nothing")
	}
	check("filter-branch", "HEAD")
}
