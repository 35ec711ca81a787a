package blame_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
)

func owners(t *testing.T, r *repo, rev, path string) []string {
	t.Helper()
	lines, err := blame.File(context.Background(), r.st, rev, path, blame.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if l.Origin != nil {
			out[i] = l.Origin.Writer
		}
	}
	return out
}

// TestBlameReaddedAndPruned: a line a person deletes and types again
// identically keeps its agent origin; once the write is pruned, its lines
// are nobody's the archive knows.
func TestBlameReaddedAndPruned(t *testing.T) {
	r := newRepo(t)
	base := doc{}.insert(0, "", "package p", "", "func keep() {}")
	r.writeFile("p.go", base.bytes())
	r.commit("Pat", "start")
	next := base.insert(2, alpha.writer, "// agentLine explains the agent's helper.", "func agentLine() int { return 42 }")
	r.event(alpha, "read", "Read", "", "p.go", base.bytes())
	r.event(alpha, "edit", "Edit", "toolu_a", "p.go", next.bytes())
	r.writeFile("p.go", next.bytes())
	r.commit("Pat", "agent")
	r.writeFile("p.go", base.bytes())
	r.commit("Pat", "person deletes")
	r.writeFile("p.go", next.bytes())
	r.commit("Pat", "person types it again")
	got := owners(t, r, "HEAD", "p.go")
	want := []string{"", "", alpha.writer, alpha.writer, ""}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %q, want %q", i+1, got[i], want[i])
		}
	}

	res, err := r.st.Prune(context.Background(), alpha.writer, func(e *gitstore.Event) bool { return e.Op == "edit" }, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	r.git("reflog", "expire", "--expire=now", "--all")
	r.git("gc", "-q", "--prune=now")
	for i, o := range owners(t, r, "HEAD", "p.go") {
		if o != "" {
			t.Errorf("after prune, line %d is %q's", i+1, o)
		}
	}
}

// TestBlameCacheIsOnlyACache: a damaged, truncated or foreign cache file,
// a cache that cannot be written, and two blames at once all give the
// answer a blame without any cache gives.
func TestBlameCacheIsOnlyACache(t *testing.T) {
	r := newRepo(t)
	work, _ := script(t, r)
	want := make([]string, len(work))
	for i, l := range work {
		want[i] = l.owner
	}
	same := func(what string) {
		t.Helper()
		got := owners(t, r, "", "calc.go")
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: line %d is %q's, want %q", what, i+1, got[i], want[i])
			}
		}
	}
	cache := filepath.Join(r.dir, ".git", "lossless", "blame", "added")
	same("no cache")
	full, err := os.ReadFile(cache)
	if err != nil || len(full) < 100 {
		t.Fatalf("no cache written: %v", err)
	}
	same("warm cache")
	for name, b := range map[string][]byte{
		"truncated":  full[:len(full)/2],
		"bit flip":   append(append(append([]byte{}, full[:len(full)-40]...), full[len(full)-40]^0xff), full[len(full)-39:]...),
		"foreign":    []byte("some other program's file\n"),
		"empty":      nil,
		"huge count": append([]byte("git-lossless blame added lines v1 (distinctive>=4, run<=8)\n"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
	} {
		if err := os.WriteFile(cache, b, 0o600); err != nil {
			t.Fatal(err)
		}
		same(name)
	}
	// A cache that cannot be written: a directory in its place.
	os.Remove(cache)
	os.Mkdir(cache, 0o700)
	same("unwritable cache")
	os.Remove(cache)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); same("concurrent") }()
	}
	wg.Wait()
	same("after concurrent writers")
}

// TestBlameOddNames: a file whose name git quotes in its porcelain
// (spaces, quotes, a tab, bytes outside ASCII) is blamed and attributed
// like any other; a revision that looks like an option is refused.
func TestBlameOddNames(t *testing.T) {
	r := newRepo(t)
	name := "dir é/we \"ird\"\tname.go"
	base := doc{}.insert(0, "", "package p")
	r.writeFile(name, base.bytes())
	r.commit("Pat", "start")
	next := base.insert(1, alpha.writer, "func OddlyNamedFile() int { return 7 }")
	r.event(alpha, "read", "Read", "", name, base.bytes())
	r.event(alpha, "edit", "Edit", "toolu_o", name, next.bytes())
	r.writeFile(name, next.bytes())
	r.commit("Pat", "agent")
	got := owners(t, r, "HEAD", name)
	if len(got) != 2 || got[0] != "" || got[1] != alpha.writer {
		t.Fatalf("owners %q", got)
	}
	lines, err := blame.File(context.Background(), r.st, "HEAD", name, blame.Options{})
	if err != nil || lines[1].OrigPath != name {
		t.Fatalf("orig path %q (%v)", lines[1].OrigPath, err)
	}
	if _, err := blame.File(context.Background(), r.st, "--output=/tmp/x", name, blame.Options{}); err == nil {
		t.Fatal("a revision starting with - was passed to git")
	}
}
