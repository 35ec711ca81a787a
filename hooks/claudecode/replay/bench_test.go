package replay

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
)

// generated writes a transcriptgen session of about size bytes (main and
// subagent transcripts) under dir and returns its main transcript.
func generated(tb testing.TB, dir, root string, seed int64, size int) string {
	tb.Helper()
	sid := "replay-bench-" + string(rune('a'+seed))
	main := filepath.Join(dir, sid+".jsonl")
	subDir := filepath.Join(dir, sid, "subagents")
	if err := os.MkdirAll(subDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	mf, err := os.Create(main)
	if err != nil {
		tb.Fatal(err)
	}
	sf, err := os.Create(filepath.Join(subDir, "agent-"+transcriptgen.SubagentID(seed)+".jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	err = transcriptgen.GenerateWith(mf, transcriptgen.Options{Seed: seed, TargetBytes: size, Root: root, SessionID: sid, Subagent: sf})
	mf.Close()
	sf.Close()
	if err != nil {
		tb.Fatal(err)
	}
	return main
}

// TestReplayGenerated: a generated session of realistic shape (reads full
// and partial, edits, multi-edits, writes, a subagent, compactions with
// re-attachments) is lossless through sweep and replay.
func TestReplayGenerated(t *testing.T) {
	ctx := context.Background()
	repo := gitInit(t)
	dir := t.TempDir()
	generated(t, dir, repo, 3, 600<<10)
	generated(t, dir, repo, 4, 600<<10)
	sessions, err := FindSessions([]string{dir})
	if err != nil || len(sessions) != 2 {
		t.Fatalf("%v %v", sessions, err)
	}
	st := open(t, repo)
	if _, err := Archive(ctx, st, sessions, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(ctx, st, sessions, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Total
	if !rep.Lossless() {
		t.Fatalf("divergences (%d): %v", c.Divergences, rep.Divergences[:min(5, len(rep.Divergences))])
	}
	if c.Transcripts != 4 || c.Ops < 30 || c.Compared+c.Withheld+c.Unverifiable+c.ReusedKeys != c.Ops || c.Compared < c.Ops/2 ||
		c.Reads < 10 || c.ShownCompared == 0 || c.Compactions == 0 || c.Baseline <= 0 {
		t.Fatalf("counts %+v", c)
	}
	var sum Counts
	for i, sr := range rep.Sessions {
		if sr.Session.Main != sessions[i].Main || sr.Transcripts != 2 {
			t.Fatalf("session %d: %+v", i, sr)
		}
		sum.add(sr.Counts)
	}
	if sum != c {
		t.Fatalf("sessions sum to %+v, total %+v", sum, c)
	}
}

// BenchmarkReplay replays two archived generated sessions of about 4 MB
// each (main and subagent transcripts); MB/s is of transcript. The target is
// 50 MB/s (`git lossless bench replay` prints it beside the figure).
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	repo := gitInit(b)
	dir := b.TempDir()
	generated(b, dir, repo, 1, 4<<20)
	generated(b, dir, repo, 2, 4<<20)
	sessions, err := FindSessions([]string{dir})
	if err != nil {
		b.Fatal(err)
	}
	st := open(b, repo)
	if _, err := Archive(ctx, st, sessions, hooks.SweepOptions{}); err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, s := range sessions {
		for _, p := range s.Transcripts {
			fi, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			size += fi.Size()
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		rep, err := Replay(ctx, st, sessions, Options{})
		if err != nil || !rep.Lossless() {
			b.Fatalf("%v %v", err, rep.Divergences)
		}
	}
}
