package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

const (
	sampleSession = "9e33e208-2b1c-4064-b54f-efdf0f79781b"
	sampleAgent   = "ab8f45f825081b44d"
	sampleDir     = "../../../testdata/claude-code-2.1.328/transcripts/-home-dev-project"
)

// gitInit makes a repository with the real git CLI.
func gitInit(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git(t, dir, "init", "-q", "-b", "main", repo)
	// No secrets are in the sample; redaction off keeps the test from
	// creating a local identity under the real home.
	git(t, repo, "config", "lossless.redact", "off")
	return repo
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// copySample copies the 2.1.328 session (main and subagent transcripts)
// into a projects directory of its own, the recorded project directory
// /home/dev/project rewritten to root, and returns that directory.
func copySample(t testing.TB, root string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "projects", "-p")
	testkit.CopySample(t, dst, root, "")
	return dst
}

func open(t testing.TB, repo string) *gitstore.Store {
	t.Helper()
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// archivedSample sweeps the sample into a new repository (loose objects
// when loose is set) and returns the repository, the projects directory
// and its sessions.
func archivedSample(t *testing.T, loose bool) (string, string, []Session) {
	t.Helper()
	repo := gitInit(t)
	dir := copySample(t, repo)
	sessions, err := FindSessions([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || sessions[0].ID != sampleSession || len(sessions[0].Transcripts) != 2 {
		t.Fatalf("sessions %+v", sessions)
	}
	opt := hooks.SweepOptions{}
	if loose {
		opt.ImportMin = 1 << 30 // Append: one loose object per blob
	}
	if _, err := Archive(context.Background(), open(t, repo), sessions, opt); err != nil {
		t.Fatal(err)
	}
	return repo, dir, sessions
}

// TestReplaySampleLossless: the real 2.1.328 session, swept as the hooks
// sweep it, is given back by the archive byte for byte at every file
// operation; the counts say what was compared, and the reused id of the
// sample's post-resume Edit is reported, not passed over.
func TestReplaySampleLossless(t *testing.T) {
	ctx := context.Background()
	repo, _, sessions := archivedSample(t, false)
	st := open(t, repo)
	rep, err := Replay(ctx, st, sessions, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Lossless() || len(rep.Divergences) != 0 {
		t.Fatalf("divergences: %v", rep.Divergences)
	}
	c := rep.Total
	// Ten operations: reads of hello.txt, main.go (line 2) and, in the
	// subagent, main.go; the edits of hello.txt and main.go; the write of
	// notes.md; three re-attachments; the post-resume edit under the
	// first Read's id.
	if c.Transcripts != 2 || c.Lines != 123 || c.Ops != 10 || c.Compared != 9 || c.ReusedKeys != 1 ||
		c.ShownCompared != 3 || c.Compactions != 1 || c.Withheld != 0 || c.Unverifiable != 0 {
		t.Fatalf("counts %+v", c)
	}
	if c.Reads != 3 || c.ReReads != 0 || c.UnchangedByCC != 0 {
		t.Fatalf("reads %+v", c)
	}
	// No re-read: restore and packs send what re-reading sends, and the
	// baseline is the three texts counted independently.
	var want int64
	for _, s := range []string{"hello world\n", "", "package main\n\nfunc main() {}\n"} {
		n, err := tokens.CountText(s)
		if err != nil {
			t.Fatal(err)
		}
		want += n
	}
	if c.Baseline != want || c.Restore != want || c.Packs != want || c.RestoreSavings() != 0 || len(rep.Pack.Entries) != 0 {
		t.Fatalf("tokens %+v, want baseline %d", c, want)
	}
	// The bytes compared are git's: the real git CLI gives the same.
	evs, err := st.Events(ctx, gitstore.Query{Key: "toolu_sub_0_11"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%v %v", evs, err)
	}
	if out := git(t, repo, "cat-file", "-p", evs[0].Blob); out != "package main\n\nfunc main() {}\n" {
		t.Fatalf("git cat-file: %q", out)
	}
	// Replaying again finds the same (the archive is not changed by it).
	again, err := Replay(ctx, st, sessions, Options{})
	if err != nil || again.Total != c {
		t.Fatalf("second replay %+v %v", again.Total, err)
	}
	// The sweep cursors name the session: the default input.
	found, err := ArchivedSessions(ctx, st)
	if err != nil || len(found) != 1 || found[0].Main != sessions[0].Main || len(found[0].Transcripts) != 2 {
		t.Fatalf("archived sessions %+v %v", found, err)
	}
}

// TestReplayTamperedBlob replaces the loose object of an archived Read's
// blob with another valid object's bytes under the same name: the replay
// fails, naming the session, the transcript line and the path; the real
// git CLI sees the same damage.
func TestReplayTamperedBlob(t *testing.T) {
	ctx := context.Background()
	repo, _, sessions := archivedSample(t, true)
	st := open(t, repo)
	read, err := st.Events(ctx, gitstore.Query{Key: "toolu_main_0_1"})
	if err != nil || len(read) != 1 || read[0].Op != "read" {
		t.Fatalf("%v %v", read, err)
	}
	write, err := st.Events(ctx, gitstore.Query{Key: "toolu_main_3_7"})
	if err != nil || len(write) != 1 || write[0].Op != "write" {
		t.Fatalf("%v %v", write, err)
	}
	obj := func(id string) string { return filepath.Join(repo, ".git", "objects", id[:2], id[2:]) }
	other, err := os.ReadFile(obj(write[0].Blob))
	if err != nil {
		t.Fatal(err)
	}
	target := obj(read[0].Blob)
	if err := os.Chmod(target, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, other, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", repo, "cat-file", "-p", read[0].Blob).CombinedOutput(); err == nil && string(out) == "hello world\n" {
		t.Fatal("the tamper did not take: git still reads the original")
	}

	rep, err := Replay(ctx, open(t, repo), sessions, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lossless() || rep.Total.Divergences != 1 || len(rep.Divergences) != 1 {
		t.Fatalf("want one divergence: %+v %v", rep.Total, rep.Divergences)
	}
	d := rep.Divergences[0]
	if d.Session != sampleSession || d.Transcript != sessions[0].Main || d.Line != 22 ||
		d.Path != filepath.Join(repo, "hello.txt") || d.Key != "toolu_main_0_1" || !strings.Contains(d.Reason, read[0].Blob) {
		t.Fatalf("divergence %+v", d)
	}
	if s := d.String(); !strings.Contains(s, "line 22") || !strings.Contains(s, "hello.txt") || !strings.Contains(s, sampleSession) {
		t.Fatalf("divergence text %q", s)
	}
}

// TestReplayTamperedTranscript: the transcript's Read text differs from
// what was archived (same length, so the sweep sees nothing new): the
// replay fails at that line, naming the path.
func TestReplayTamperedTranscript(t *testing.T) {
	ctx := context.Background()
	repo, _, sessions := archivedSample(t, false)
	main := sessions[0].Main
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if !bytes.Contains(lines[21], []byte(`"toolu_main_0_1"`)) || bytes.Count(lines[21], []byte("hello world")) != 2 {
		t.Fatalf("line 22 is not the Read's result: %s", lines[21])
	}
	lines[21] = bytes.ReplaceAll(lines[21], []byte("hello world"), []byte("hello WORLD"))
	if err := os.WriteFile(main, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	st := open(t, repo)
	if _, err := Archive(ctx, st, sessions, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(ctx, st, sessions, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lossless() || len(rep.Divergences) != 1 {
		t.Fatalf("want one divergence: %v", rep.Divergences)
	}
	if d := rep.Divergences[0]; d.Line != 22 || d.Path != filepath.Join(repo, "hello.txt") || !strings.Contains(d.Reason, "differs") {
		t.Fatalf("divergence %+v", d)
	}
}

func synthetic(root, sid string, files int) Synthetic {
	s := Synthetic{Root: root, SessionID: sid, Rounds: 4}
	for i := range files {
		s.Files = append(s.Files, SyntheticFile{
			Path:    filepath.Join("src", "file"+string(rune('a'+i))+".go"),
			Content: strings.Repeat("func f"+string(rune('a'+i))+"() int { return 42 } // the answer\n", 30+i),
		})
	}
	return s
}

func count(t *testing.T, s string) int64 {
	t.Helper()
	n, err := tokens.CountText(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReplayFloorAndCeiling: the synthetic floor (every file read once)
// saves exactly nothing, the ceiling (an edit loop) saves, and both
// figures equal an independent count of what each model sends.
func TestReplayFloorAndCeiling(t *testing.T) {
	ctx := context.Background()
	repo := gitInit(t)
	dir := t.TempDir()

	floor, err := ReplaySynthetic(ctx, open(t, repo), dir, synthetic(repo, "floor-session", 3), WriteReadOnce, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := floor.Total
	var want int64
	for _, file := range synthetic(repo, "", 3).Files {
		want += count(t, file.Content)
	}
	if !floor.Lossless() || f.Reads != 3 || f.ReReads != 0 || f.Compared != 3 || f.Baseline != want ||
		f.Restore != f.Baseline || f.Packs != f.Baseline || f.RestoreSavings() != 0 || f.PackSavings() != 0 {
		t.Fatalf("floor %+v %v, want baseline %d", f, floor.Divergences, want)
	}

	s := synthetic(repo, "ceiling-session", 1)
	ceil, err := ReplaySynthetic(ctx, open(t, repo), dir, s, WriteEditLoop, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := ceil.Total
	// Independently: the versions the loop reads, and what each model
	// sends for them.
	content := s.Files[0].Content + loopMarker + "0\n"
	var baseline int64
	for i := range s.Rounds + 1 {
		v := strings.Replace(content, loopMarker+"0\n", loopMarker+string(rune('0'+i))+"\n", 1)
		baseline += count(t, v)
	}
	path := filepath.ToSlash(s.Files[0].Path)
	restore := count(t, content) + int64(s.Rounds)*count(t, UnchangedNote(path))
	if !ceil.Lossless() || c.Reads != s.Rounds+1 || c.ReReads != s.Rounds || c.ReReadsUnchanged != s.Rounds ||
		c.Compared != 2*s.Rounds+1 || c.Baseline != baseline || c.Restore != restore {
		t.Fatalf("ceiling %+v %v, want baseline %d restore %d", c, ceil.Divergences, baseline, restore)
	}
	if c.RestoreSavings() <= 0.5 {
		t.Fatalf("ceiling savings %.3f", c.RestoreSavings())
	}
	// Every version is read once: a pack cannot gain.
	if c.Packs != c.Baseline || len(ceil.Pack.Entries) != 0 {
		t.Fatalf("ceiling packs %+v %+v", c, ceil.Pack)
	}
}

// TestHotPack: a version read by every context is packed when that pays,
// and the packs figure is the pack once per context plus references.
func TestHotPack(t *testing.T) {
	ref := func(string) int64 { return 5 }
	reads := []PackRead{
		{"s/a", "x.go", "b1", 1000}, {"s/a", "x.go", "b1", 1000}, {"s/b", "x.go", "b1", 1000}, {"s/b", "x.go", "b1", 1000},
		{"s/a", "y.go", "b2", 400}, // read once: never pays
	}
	p := HotPack{Budget: DefaultPackBudget}.Plan(reads, ref)
	if len(p.Entries) != 1 || p.Entries[0].Path != "x.go" || p.Tokens != 1000 {
		t.Fatalf("pack %+v", p)
	}
	if p := (HotPack{Budget: 999}).Plan(reads, ref); len(p.Entries) != 0 {
		t.Fatalf("over budget: %+v", p)
	}
}

// TestFindSessions: a projects directory, a main transcript and a
// subagent's transcript all name the same session; a subagent without
// its main transcript is an error.
func TestFindSessions(t *testing.T) {
	dir := copySample(t, "/home/dev/project")
	main := filepath.Join(dir, sampleSession+".jsonl")
	sub := filepath.Join(dir, sampleSession, "subagents", "agent-"+sampleAgent+".jsonl")
	for _, args := range [][]string{{filepath.Dir(dir)}, {dir}, {main}, {sub}, {main, sub, dir}} {
		ss, err := FindSessions(args)
		if err != nil || len(ss) != 1 || ss[0].Main != main || len(ss[0].Transcripts) != 2 || ss[0].Transcripts[1] != sub {
			t.Fatalf("%v: %+v %v", args, ss, err)
		}
	}
	if err := os.Remove(main); err != nil {
		t.Fatal(err)
	}
	if _, err := FindSessions([]string{sub}); err == nil {
		t.Fatal("a subagent without its session was accepted")
	}
	if _, err := FindSessions([]string{filepath.Join(dir, "nope.jsonl")}); err == nil {
		t.Fatal("a missing transcript was accepted")
	}
}

// TestReplayFileUnchanged: a Read Claude Code answered file_unchanged
// (no file text: the earlier result stands) is no file operation; it
// costs its short answer under every model, counted independently here.
func TestReplayFileUnchanged(t *testing.T) {
	ctx := context.Background()
	repo := gitInit(t)
	dir := copySample(t, repo)
	main := filepath.Join(dir, sampleSession+".jsonl")
	const stub = "File unchanged since last read. The content from the earlier Read tool_result in this conversation is still current."
	hello := filepath.Join(repo, "hello.txt")
	lines := []map[string]any{
		{"type": "assistant", "uuid": "aaaaaaaa-0000-4000-8000-000000000001", "sessionId": sampleSession, "cwd": repo,
			"timestamp": "2026-12-02T16:40:00.000Z", "message": map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": "toolu_unchanged", "name": "Read", "input": map[string]any{"file_path": hello}}}}},
		{"type": "user", "uuid": "aaaaaaaa-0000-4000-8000-000000000002", "sessionId": sampleSession, "cwd": repo,
			"timestamp": "2026-12-02T16:40:01.000Z", "message": map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_unchanged", "content": stub}}},
			"toolUseResult": map[string]any{"type": "file_unchanged", "file": map[string]any{"filePath": hello}}},
	}
	f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sessions, err := FindSessions([]string{main})
	if err != nil {
		t.Fatal(err)
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
	want := count(t, "hello world\n") + count(t, "") + count(t, "package main\n\nfunc main() {}\n") + count(t, stub)
	if !rep.Lossless() || c.Ops != 10 || c.Reads != 3 || c.UnchangedByCC != 1 || c.Baseline != want || c.Restore != want || c.Packs != want {
		t.Fatalf("counts %+v %v, want baseline %d", c, rep.Divergences, want)
	}
}

// TestReplayChangedReRead: a file read, changed behind the model's back
// and read again: re-reading sends both texts, restore the first text
// and then the cheaper of the diff and the new text (here the diff, the
// change being one line of a long file), counted independently.
func TestReplayChangedReRead(t *testing.T) {
	ctx := context.Background()
	repo := gitInit(t)
	dir := t.TempDir()
	v1 := strings.Repeat("func answer() int { return 42 } // the answer to everything\n", 60)
	v2 := strings.Replace(v1, "return 42", "return 43", 1)
	write := func(w io.Writer, s Synthetic) error {
		g := newSynth(w, s)
		g.prompt("Read it twice.")
		g.read(SyntheticFile{Path: "a.go", Content: v1})
		g.read(SyntheticFile{Path: "a.go", Content: v2})
		return g.finish()
	}
	rep, err := ReplaySynthetic(ctx, open(t, repo), dir, Synthetic{Root: repo, SessionID: "changed"}, write, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Total
	diff := unifiedDiff("a.go", v1, v2)
	if !strings.Contains(diff, "-func answer() int { return 42 }") || !strings.Contains(diff, "+func answer() int { return 43 }") {
		t.Fatalf("diff:\n%s", diff)
	}
	if !rep.Lossless() || c.Reads != 2 || c.ReReads != 1 || c.ReReadsUnchanged != 0 || c.DiffCheaper != 1 ||
		c.Baseline != count(t, v1)+count(t, v2) || c.Restore != count(t, v1)+count(t, diff) {
		t.Fatalf("counts %+v %v", c, rep.Divergences)
	}
}
