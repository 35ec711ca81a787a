package blame_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/blamedata"
	"github.com/git-lossless/git-lossless/internal/testkit/blamefixture"
)

func openFixture(tb testing.TB, p blamedata.Params) (*blamedata.Fixture, *gitstore.Store) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "repo")
	f, err := blamedata.Build(context.Background(), dir, p)
	if err != nil {
		tb.Fatal(err)
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		tb.Fatal(err)
	}
	return f, st
}

// BenchmarkFile blames the fixture: a file near 5,000 lines whose
// history holds 2,000 agent writes. `git lossless bench blame` measures
// the same beside git blame as processes.
func BenchmarkFile(b *testing.B) {
	if os.Getenv("BLAME_BENCH_SMALL") != "" {
		b.Skip()
	}
	f, st := openFixture(b, blamedata.Default)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := blame.File(context.Background(), st, "HEAD", f.File, blame.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFixtureDistinctiveLinesExact: on a generated history (a person and
// two agent contexts, random edits, person edits between commits) every
// distinctive line's origin is the one the generator's bookkeeping gives;
// lines that are not (braces, blank lines) may differ only as FORMAT.md
// says, and are counted.
func TestFixtureDistinctiveLinesExact(t *testing.T) {
	f, st := openFixture(t, blamedata.Params{Lines: 400, Writes: 300, PerCommit: 3, Seed: 5})
	lines, err := blame.File(context.Background(), st, "HEAD", f.File, blame.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(f.Owners) {
		t.Fatalf("%d lines, the fixture has %d", len(lines), len(f.Owners))
	}
	agent, trivial := 0, 0
	for i, l := range lines {
		got := ""
		if l.Origin != nil {
			got = l.Origin.Writer
			agent++
		}
		if got == f.Owners[i] {
			continue
		}
		if strings.ContainsAny(l.Text, "abcdefghijklmnopqrstuvwxyz") {
			t.Errorf("line %d %q: origin %q, want %q", i+1, l.Text, got, f.Owners[i])
		} else {
			trivial++
		}
	}
	if agent < len(lines)/4 {
		t.Fatalf("only %d of %d lines by agents: the fixture does not exercise blame", agent, len(lines))
	}
	if trivial > len(lines)/20 {
		t.Errorf("%d braces and blank lines differ from the bookkeeping (more than 5%%)", trivial)
	}
	t.Logf("%d lines, %d by agents, %d braces or blank lines differ", len(lines), agent, trivial)
}

// commitsFixture builds the blame fixture of n commits and opens it.
func commitsFixture(tb testing.TB, n int) (*gitstore.Store, blamefixture.Built) {
	tb.Helper()
	bt, err := blamefixture.Fixture{Commits: n, Files: 40}.Build(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	st, err := gitstore.OpenDir(bt.Dir, gitstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return st, bt
}

// TestCommitsFixtureBookkeeping: on the fixture's history, Commits finds
// per commit the agent lines and rewritten lines the generator made.
func TestCommitsFixtureBookkeeping(t *testing.T) {
	st, bt := commitsFixture(t, 200)
	cs, err := blame.Commits(context.Background(), st, "HEAD", blame.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(bt.PerCommit) {
		t.Fatalf("%d commits, the fixture made %d", len(cs), len(bt.PerCommit))
	}
	bad := 0
	for i, c := range cs {
		agent, rewritten := 0, 0
		for _, f := range c.Files {
			rewritten += f.Rewritten
			for _, l := range f.Added {
				if l.Origin != nil {
					agent++
				}
			}
		}
		if w := bt.PerCommit[i]; agent != w.Agent || rewritten != w.Rewritten {
			bad++
			if bad <= 10 {
				t.Errorf("commit %d (%s): agent %d rewritten %d, the fixture made %d and %d", i+1, c.Summary, agent, rewritten, w.Agent, w.Rewritten)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d commits differ", bad, len(cs))
	}
}

// BenchmarkCommits1000: Commits over the 1,000 commits of the fixture
// (about half with archived agent writes).
func BenchmarkCommits1000(b *testing.B) {
	st, _ := commitsFixture(b, 1000)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := blame.Commits(ctx, st, "HEAD", blame.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
