package receipt_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/receipt"
)

// carryFixture is 100 agent commits with receipts and their rewrite (a
// rebase that rewords every message: same trees, new commits), with the
// post-rewrite input git gives for it.
func carryFixture(tb testing.TB, dir string) (*testRepo, string) {
	tb.Helper()
	r := &testRepo{t: tb, dir: dir}
	r.git("init", "-q", "-b", "main")
	r.open()
	k := theKey(tb)
	base := time.Now().UTC().Truncate(time.Second).Add(-48 * time.Hour)
	r.write("README", "root\n")
	root := r.commitAt("root", base)
	var olds []string
	for i := 1; i <= 100; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		name := fmt.Sprintf("f%03d.txt", i)
		body := strings.Repeat(fmt.Sprintf("line %d of %s\n", i, name), 20)
		r.record(fmt.Sprintf("cc-s%03d", i), rec{at: at, session: fmt.Sprintf("s%03d", i), op: "write", path: name, content: body})
		r.write(name, body)
		c := r.commitAt("commit "+name, at.Add(10*time.Second))
		rc, err := receipt.Build(context.Background(), r.st, c, receipt.Options{NoTokens: true})
		if err != nil {
			tb.Fatal(err)
		}
		if _, _, err := receipt.Save(context.Background(), r.st, rc, k); err != nil {
			tb.Fatal(err)
		}
		olds = append(olds, c)
	}
	// The rewrite: the same trees under new messages.
	var in strings.Builder
	parent := root
	for _, o := range olds {
		tree := r.git("rev-parse", o+"^{tree}")
		cmd := exec.Command("git", "commit-tree", tree, "-p", parent, "-m", "reworded "+o[:8])
		cmd.Dir = r.dir
		cmd.Env = gitEnv()
		out, err := cmd.Output()
		if err != nil {
			tb.Fatal(err)
		}
		parent = strings.TrimSpace(string(out))
		fmt.Fprintf(&in, "%s %s\n", o, parent)
	}
	r.git("update-ref", "refs/heads/main", parent)
	return r, in.String()
}

// BenchmarkCarry100: the post-rewrite work for a rebase of 100 commits
// with receipts (target: ≤ 1 s for the whole hook process), in process:
// parse git's input, rebuild, sign and store 100 carried receipts (with
// token counts, as the hook does).
func BenchmarkCarry100(b *testing.B) {
	r, input := carryFixture(b, b.TempDir())
	k := theKey(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		rws, err := receipt.ParseRewritten(strings.NewReader(input))
		if err != nil {
			b.Fatal(err)
		}
		res, err := receipt.CarryAll(ctx, r.st, rws, k, receipt.Options{}, true)
		if err != nil || len(res) != 100 || res[99].Status != receipt.CarryDone {
			b.Fatalf("%v %d", err, len(res))
		}
	}
}

// TestWriteCarryBenchRepo writes the benchmark's repository, its signing
// key and its post-rewrite input under LOSSLESS_CARRY_BENCH_DIR, for
// timing the whole `receipt carry --rewritten` process from outside.
func TestWriteCarryBenchRepo(t *testing.T) {
	dir := os.Getenv("LOSSLESS_CARRY_BENCH_DIR")
	if dir == "" {
		t.Skip("set LOSSLESS_CARRY_BENCH_DIR to write the carry benchmark's repository")
	}
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	r, input := carryFixture(t, repo)
	key := filepath.Join(dir, "key.asc")
	if err := theKey(t).WriteFile(key, true); err != nil {
		t.Fatal(err)
	}
	r.git("config", "lossless.signingKey", key)
	if err := os.WriteFile(filepath.Join(dir, "input"), []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count([]byte(input), []byte("\n")); n != 100 {
		t.Fatalf("%d input lines", n)
	}
}
