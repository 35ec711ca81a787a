package blame_test

import (
	"context"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/blamefixture"
)

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
