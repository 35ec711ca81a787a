package gitstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/seal"
)

// The harness vector: one event as the Claude Code adapter's hook records
// a Read (writer cc-<session>, "harness":"claude-code"), written by the
// store into a fresh repository and printed by `git cat-file`. It shows
// that the field sorts among the known keys like any other, and that plain
// git is enough to tell which harness an event came from.

const harnessWriter = "cc-sess-1"

func buildHarnessRepo(t *testing.T) (dir string, st *Store, res AppendResult) {
	t.Helper()
	goldenEnv(t)
	dir = t.TempDir()
	goldenGit(t, dir, nil, "init", "-q")
	wt, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	off := false
	gd := filepath.Join(wt, ".git")
	commitTime, _ := time.Parse(time.RFC3339, "2026-01-02T03:04:09Z")
	st, err = Open(Location{GitDir: gd, CommonDir: gd, WorkTree: wt}, Options{Fsync: &off, Now: func() time.Time { return commitTime }})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := time.Parse(time.RFC3339, "2026-01-02T03:04:05Z")
	e := Event{TS: ts, Session: "sess-1", Repo: goldenRepoTag, Source: "hook", Op: "read", Tool: "Read", Key: "toolu_01",
		View: "full", Harness: "claude-code"}
	e.SetPath("hello.txt")
	res, err = st.Append(context.Background(), harnessWriter, []Record{{Event: e, Content: []byte("hello\n"), HasContent: true}})
	if err != nil {
		t.Fatal(err)
	}
	return wt, st, res
}

// TestFormatHarnessVector: the store writes the documented line, `git
// cat-file` shows "harness":"claude-code" in it, the chain verifies, and
// the line parses back to Event.Harness and re-encodes to the same bytes.
func TestFormatHarnessVector(t *testing.T) {
	dir, st, res := buildHarnessRepo(t)
	got := goldenGit(t, dir, nil, "cat-file", "-p", res.Commit+":events.jsonl")
	if *updateFormat {
		formatWriteVector(t, "harness.jsonl", got)
	} else if want := formatVector(t, "harness.jsonl"); !bytes.Equal(got, want) {
		t.Errorf("vector harness.jsonl differs from what the code writes:\n--- testdata/format/harness.jsonl\n%s--- code\n%s", want, got)
	}
	if !bytes.Contains(got, []byte(`"harness":"claude-code"`)) {
		t.Fatalf("git cat-file shows no harness: %s", got)
	}
	rep, err := st.Verify(context.Background(), harnessWriter, seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 1 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	line := bytes.TrimSuffix(got, []byte("\n"))
	e, err := ParseEvent(line)
	if err != nil {
		t.Fatal(err)
	}
	if e.Harness != "claude-code" || len(e.Extra) != 0 {
		t.Fatalf("parsed harness %q, extra %q", e.Harness, e.Extra)
	}
	e.Raw = nil
	if re, err := e.Canonical(); err != nil || !bytes.Equal(re, line) {
		t.Fatalf("round trip: %s (%v), stored %s", re, err, line)
	}
	// The encoding/json path (a line the fast parser declines) agrees.
	slow, err := parseEventJSON(line)
	if err != nil || slow.Harness != "claude-code" || len(slow.Extra) != 0 {
		t.Fatalf("parseEventJSON: harness %q extra %q err %v", slow.Harness, slow.Extra, err)
	}
}

// TestHarnessFieldOmittedWhenEmpty: an event of no harness (the golden
// vectors, every archive written before the field) has no harness key.
func TestHarnessFieldOmittedWhenEmpty(t *testing.T) {
	for _, name := range []string{"golden-1.jsonl", "golden-2.jsonl", "prune.jsonl"} {
		b, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(`"harness"`)) {
			t.Errorf("%s holds a harness key", name)
		}
	}
	e := Event{Source: "proxy", Op: "span"}
	line, err := e.Canonical()
	if err != nil || bytes.Contains(line, []byte("harness")) {
		t.Fatalf("canonical %s %v", line, err)
	}
}
