package gitstore

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/seal"
)

// The model vector: a tool call's span as a transcript sweep archives it
// when the transcript names the model (Claude Code's message.model):
// extra "model" and "tool_use_id" beside "kind" and "uuid", sorted among
// the known keys. Plain git shows which model made the call, and the
// call id evidence is keyed by, without opening the (maybe encrypted)
// content.

const modelWriter = "cc-sess-1"

func buildModelRepo(t *testing.T) (dir string, st *Store, res AppendResult) {
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
	ts, _ := time.Parse(time.RFC3339, "2026-01-02T03:04:06Z")
	e := Event{TS: ts, Session: "sess-1", Repo: goldenRepoTag, Source: "sweep", Op: "span", Tool: "Edit", Key: "span:u-02",
		Harness: "claude-code", Extra: map[string]json.RawMessage{
			"kind":        json.RawMessage(`"tool_use"`),
			"model":       json.RawMessage(`"claude-opus-5-5"`),
			"tool_use_id": json.RawMessage(`"toolu_02"`),
			"uuid":        json.RawMessage(`"u-02"`),
		}}
	e.SetPath("hello.txt")
	content := []byte(`{"kind":"tool_use","role":"assistant","id":"toolu_02","tool":"Edit","input":{"file_path":"/home/dev/proj/hello.txt","old_string":"hello","new_string":"hi"}}`)
	res, err = st.Append(context.Background(), modelWriter, []Record{{Event: e, Content: content, HasContent: true}})
	if err != nil {
		t.Fatal(err)
	}
	return wt, st, res
}

// TestFormatModelVector: the store writes the documented line, `git
// cat-file` shows the model and the call id in it, the chain verifies,
// and the line parses back (both parsers) and re-encodes to the same
// bytes.
func TestFormatModelVector(t *testing.T) {
	dir, st, res := buildModelRepo(t)
	got := goldenGit(t, dir, nil, "cat-file", "-p", res.Commit+":events.jsonl")
	if *updateFormat {
		formatWriteVector(t, "model.jsonl", got)
	} else if want := formatVector(t, "model.jsonl"); !bytes.Equal(got, want) {
		t.Errorf("vector model.jsonl differs from what the code writes:\n--- testdata/format/model.jsonl\n%s--- code\n%s", want, got)
	}
	if !bytes.Contains(got, []byte(`"model":"claude-opus-5-5"`)) || !bytes.Contains(got, []byte(`"tool_use_id":"toolu_02"`)) {
		t.Fatalf("git cat-file shows no model or call: %s", got)
	}
	rep, err := st.Verify(context.Background(), modelWriter, seal.Options{})
	if err != nil || !rep.OK() || rep.Entries != 1 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	line := bytes.TrimSuffix(got, []byte("\n"))
	for name, parse := range map[string]func([]byte) (Event, error){"ParseEvent": ParseEvent, "parseEventJSON": parseEventJSON} {
		e, err := parse(line)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(e.Extra["model"]) != `"claude-opus-5-5"` || string(e.Extra["tool_use_id"]) != `"toolu_02"` || len(e.Extra) != 4 {
			t.Fatalf("%s: extra %q", name, e.Extra)
		}
		e.Raw = nil
		if re, err := e.Canonical(); err != nil || !bytes.Equal(re, line) {
			t.Fatalf("%s round trip: %s (%v), stored %s", name, re, err, line)
		}
	}
}
