package codex

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// TestImportSampleRollouts: the sample rollouts of Codex 0.169.0 (a read,
// patch and deny; a compaction; a subagent with its own rollout), laid
// out as $CODEX_HOME/sessions/YYYY/MM/DD, import into a temporary
// repository as spans and compaction boundaries under codex-<session>,
// the subagent's items as its own context; a second import adds nothing.
func TestImportSampleRollouts(t *testing.T) {
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "12", "05")
	if err := os.MkdirAll(day, 0o700); err != nil {
		t.Fatal(err)
	}
	samples, _ := filepath.Glob("testdata/codex-0.169.0/*/rollout-*.jsonl")
	if len(samples) < 4 {
		t.Fatalf("%d sample rollouts", len(samples))
	}
	for _, s := range samples {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(day, filepath.Base(s)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	open := func(string) (*gitstore.Store, error) { return gitstore.OpenDir(repo, gitstore.Options{}) }
	dirs, err := New().ImportDirs(repo, func(k string) string { return map[string]string{"CODEX_HOME": home}[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := hooks.Import(ctx, New(), dirs, hooks.ImportOptions{Open: open})
	if err != nil {
		t.Fatal(err)
	}
	if first.Sessions != 3 || first.Transcripts != len(samples) || first.Events == 0 || len(first.Failed) > 0 {
		t.Fatalf("first import: %+v", first)
	}
	st, _ := open("")
	evs, err := st.Events(ctx, gitstore.Query{})
	if err != nil {
		t.Fatal(err)
	}
	ops, agents := map[string]int{}, 0
	for _, e := range evs {
		ops[string(e.Op)]++
		if e.Harness != Name || e.Writer != Prefix+e.Session {
			t.Errorf("event %s: harness %q writer %q session %q", e.Op, e.Harness, e.Writer, e.Session)
		}
		if e.Agent != "" {
			agents++
		}
	}
	if ops["span"] == 0 || ops["compact"] != 1 || agents == 0 {
		t.Errorf("ops %v, %d events of a subagent", ops, agents)
	}
	second, err := hooks.Import(ctx, New(), dirs, hooks.ImportOptions{Open: open})
	if err != nil {
		t.Fatal(err)
	}
	if second.Events != 0 || second.UpToDate != second.Transcripts {
		t.Fatalf("second import added %d events: %+v", second.Events, second)
	}
}

// BenchmarkImport imports a 32 MiB rollout made of the sample lines (with
// a 64 KiB shell read each round) into a fresh repository, fsync on, as
// `git lossless import --harness codex` does: the target is at least
// 100 MB/s of rollout (issue 20).
func BenchmarkImport(b *testing.B) {
	data := cxBigRollout(b, 32<<20, true)
	home := b.TempDir()
	day := filepath.Join(home, "sessions", "2026", "12", "05")
	if err := os.MkdirAll(day, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(day, "rollout-2026-12-05T15-15-10-01a246c5-fd28-7dc3-8b0d-fc6cd99122b1.jsonl"), data, 0o600); err != nil {
		b.Fatal(err)
	}
	repo := filepath.Join(b.TempDir(), "repo")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		b.StopTimer()
		os.RemoveAll(repo)
		if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		b.StartTimer()
		s, err := hooks.Import(context.Background(), New(), []string{filepath.Join(home, "sessions")},
			hooks.ImportOptions{Open: func(string) (*gitstore.Store, error) { return gitstore.OpenDir(repo, gitstore.Options{}) }})
		if err != nil || s.Sessions != 1 || s.Events == 0 {
			b.Fatalf("%+v %v", s, err)
		}
	}
}
