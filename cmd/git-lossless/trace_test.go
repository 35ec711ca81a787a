package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/agenttracetest"
)

// fakeCommitChanges makes trace export see changes instead of the
// archive's, and records the range it was asked for. Not parallel: it
// swaps a package variable (restored at cleanup).
func fakeCommitChanges(t *testing.T, changes []blame.CommitChange) *[]string {
	t.Helper()
	var asked []string
	old := commitChanges
	commitChanges = func(_ context.Context, st *gitstore.Store, revRange string) ([]blame.CommitChange, error) {
		if st == nil {
			t.Error("no store passed")
		}
		asked = append(asked, revRange)
		return changes, nil
	}
	t.Cleanup(func() { commitChanges = old })
	return &asked
}

// TestTraceExportCLI: the default range is HEAD; stdout and -o FILE carry
// the same records, valid against the Agent Trace schema; FILE is 0600
// (also when it existed with another mode) and nothing goes to stdout
// then; bad invocations are usage errors (exit 2).
func TestTraceExportCLI(t *testing.T) {
	proxyTestEnv(t)
	repo := gitInitRepo(t)
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	asked := fakeCommitChanges(t, []blame.CommitChange{{
		Commit: strings.Repeat("c", 40), CommitTime: t0,
		Files: []blame.FileChange{{Path: "a.txt", Added: []blame.AddedLine{
			{N: 1, Text: "agent", Origin: &blame.Origin{Harness: "codex", Writer: "codex-s", Seq: 2, Session: "s", Model: "gpt-5", Op: "write", TS: t0, Path: "a.txt", Blob: "b", Line: 1}},
			{N: 2, Text: "person"},
		}}},
	}})

	code, stdout, stderr := runCLI(t, "-C", repo, "trace", "export")
	if code != 0 {
		t.Fatalf("trace export: exit %d: %s", code, stderr)
	}
	v := agenttracetest.Load(t)
	recs := v.ValidateLines(t, []byte(stdout))
	if len(recs) != 1 || recs[0]["vcs"].(map[string]any)["revision"] != strings.Repeat("c", 40) {
		t.Errorf("records: %s", stdout)
	}
	if !strings.Contains(stdout, `"url":"git-lossless:session/s","contributor":{"type":"ai","model_id":"openai/gpt-5"},"ranges":[{"start_line":1,"end_line":1,`) ||
		!strings.Contains(stdout, `{"contributor":{"type":"human"},"ranges":[{"start_line":2,"end_line":2,`) {
		t.Errorf("ranges not as given:\n%s", stdout)
	}

	out := filepath.Join(repo, "trace.jsonl")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout2, stderr := runCLI(t, "-C", repo, "trace", "export", "main..HEAD", "-o", "trace.jsonl", "--unrecorded", "unknown")
	if code != 0 || stdout2 != "" {
		t.Fatalf("trace export -o: exit %d, stdout %q: %s", code, stdout2, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", out, fi.Mode().Perm())
	}
	v.ValidateLines(t, b)
	noID := regexp.MustCompile(`"id":"[^"]*"`)
	if want := strings.Replace(stdout, `"type":"human"`, `"type":"unknown"`, 1); noID.ReplaceAllString(string(b), "") != noID.ReplaceAllString(want, "") {
		t.Errorf("-o FILE with --unrecorded unknown:\n%s\nwant the stdout records with unknown for human:\n%s", b, want)
	}
	if strings.Join(*asked, " ") != "HEAD main..HEAD" {
		t.Errorf("ranges asked for: %q, want HEAD then main..HEAD", *asked)
	}

	for _, args := range [][]string{
		{"trace"},
		{"trace", "import"},
		{"trace", "export", "a", "b"},
		{"trace", "export", "--unrecorded", "mixed"},
		{"trace", "export", "--bogus"},
	} {
		if code, _, stderr := runCLI(t, append([]string{"-C", repo}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
	if len(*asked) != 2 {
		t.Errorf("a usage error still read the archive: %q", *asked)
	}
}
