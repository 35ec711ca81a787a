package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// fakeHarness is a harness of the test's own making, unlike any real one:
// its payload is {"s","cwd","tool","id","files":[{"op","path","text"}]},
// its events "before"/"after", its deny "DENIED: reason". The runtime must
// record, guard and answer for it without knowing any of that.
type fakeHarness struct{ name, prefix string }

func (f fakeHarness) Name() string   { return f.name }
func (f fakeHarness) Prefix() string { return f.prefix }
func (f fakeHarness) Dialect() Dialect {
	return Dialect{ReadWith: "cat", FileTools: []string{"open"}}
}

func (f fakeHarness) Event(name string) HookEvent {
	return map[string]HookEvent{"before": PreToolUse, "after": PostToolUse}[name]
}

func (f fakeHarness) Decode(ev HookEvent, r io.Reader) (Call, error) {
	b, err := ReadPayload(r)
	if err != nil {
		return Call{}, err
	}
	var p struct {
		S, Cwd, Tool, ID string
		Files            []struct{ Op, Path, Text string }
		Sh               *struct{ Cmd, Out string }
	}
	if err := json.Unmarshal(b, &p); err != nil || p.S == "" {
		return Call{}, errors.New("not a fake payload")
	}
	c := Call{Event: ev, Session: p.S, Cwd: p.Cwd, Tool: p.Tool, CallID: p.ID}
	if p.Sh != nil {
		c.Shell = &Shell{Command: p.Sh.Cmd, Output: p.Sh.Out, HasOutput: true}
	}
	for _, f := range p.Files {
		op := FileOp{Op: gitstore.Op(f.Op), Path: f.Path}
		if f.Text != "" {
			op.Content, op.HasContent = []byte(f.Text), true
		}
		c.Files = append(c.Files, op)
	}
	return c, nil
}

func (f fakeHarness) Reply(c Call, r Reply) []byte {
	if r.Deny != "" {
		return []byte("DENIED: " + r.Deny + "\n")
	}
	return nil
}

func (fakeHarness) MCPTools(string, func(string) string) (func(string) string, error) {
	return nil, nil
}
func (fakeHarness) ReadTranscript(r io.Reader, at TranscriptPos) TranscriptReader {
	return emptyReader{at.Offset}
}
func (fakeHarness) Subagents(string) ([]string, error)                       { return nil, nil }
func (fakeHarness) SessionOf(p string) string                                { return filepath.Base(p) }
func (fakeHarness) SessionFile(p string) (string, bool)                      { return p, strings.HasSuffix(p, ".fake") }
func (fakeHarness) TranscriptCwd(string, int64) (string, error)              { return "", nil }
func (fakeHarness) ImportDirs(string, func(string) string) ([]string, error) { return nil, nil }
func (fakeHarness) Sessions(context.Context, string, string, func(string) string) (SessionFound, error) {
	return SessionFound{}, errors.New("none")
}
func (fakeHarness) ContextUsage(string) (ContextUsage, error) { return ContextUsage{}, nil }
func (fakeHarness) Install(context.Context, InstallOptions) (Install, error) {
	return Install{}, errors.New("nothing to install")
}

type emptyReader struct{ off int64 }

func (e emptyReader) Next() (*transcript.Line, error)      { return nil, io.EOF }
func (e emptyReader) Offset() int64                        { return e.off }
func (e emptyReader) Pending() []transcript.PendingToolUse { return nil }
func (e emptyReader) Stats() transcript.Stats              { return transcript.Stats{} }

// TestRuntimeDrivesAnyHarness: the runtime records a read of a harness it
// knows nothing of under that harness's writer and name, denies an edit
// of an unseen file in that harness's words and output protocol, allows
// the edit of the file read, and routes `hook [HARNESS] EVENT`.
func TestRuntimeDrivesAnyHarness(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	seen, unseen := filepath.Join(dir, "seen.txt"), filepath.Join(dir, "unseen.txt")
	for _, p := range []string{seen, unseen} {
		if err := os.WriteFile(p, []byte("text of "+filepath.Base(p)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := fakeHarness{"other-harness", "o-"}
	h := fakeHarness{"test-harness", "t-"}
	hs := []Harness{other, h}
	clock := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	run := func(args []string, payload map[string]any) (string, string) {
		t.Helper()
		b, _ := json.Marshal(payload)
		var out, errb bytes.Buffer
		clock = clock.Add(time.Second)
		if code := RunArgs(context.Background(), hs, args, Env{Stdin: bytes.NewReader(b), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Now: func() time.Time { return clock }}); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		return out.String(), errb.String()
	}
	call := func(op, path, text string) map[string]any {
		return map[string]any{"s": "s1", "cwd": dir, "tool": "open", "id": "c-" + filepath.Base(path),
			"files": []map[string]any{{"op": op, "path": path, "text": text}}}
	}

	if out, errs := run([]string{"test-harness", "after"}, call("read", seen, "text of seen.txt\n")); out != "" || errs != "" {
		t.Fatalf("after: stdout %q stderr %q", out, errs)
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Writers: []string{"t-s1"}})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events of t-s1: %v %v", evs, err)
	}
	if e := evs[0]; e.Harness != "test-harness" || e.Op != "read" || e.Tool != "open" || e.Key != "c-seen.txt" || e.Path != "seen.txt" ||
		e.Blob != gitstore.BlobID([]byte("text of seen.txt\n")) || !bytes.Contains(e.Raw, []byte(`"harness":"test-harness"`)) {
		t.Fatalf("event %s", e.Raw)
	}

	out, errs := run([]string{"test-harness", "before"}, call("edit", unseen, ""))
	if !strings.HasPrefix(out, "DENIED: git-lossless guard: edit of "+unseen+" denied.") || !strings.Contains(out, "Read "+unseen+" again with cat (or run `git lossless restore --session s1 --files") || errs != "" {
		t.Fatalf("before on an unseen file: stdout %q stderr %q", out, errs)
	}
	if out, errs := run([]string{"test-harness", "before"}, call("edit", seen, "")); out != "" || errs != "" {
		t.Fatalf("before on the file read: stdout %q stderr %q", out, errs)
	}
	// The same call without a harness is the first harness's: its
	// writer, not this one's, and no read in it vouches for the file.
	if out, _ := run([]string{"before"}, call("edit", seen, "")); !strings.HasPrefix(out, "DENIED: ") {
		t.Fatalf("the default harness's context allowed an edit nobody read there: %q", out)
	}
	if evs, _ := st.Events(context.Background(), gitstore.Query{Writers: []string{"o-s1"}, Op: "deny"}); len(evs) != 1 || evs[0].Harness != "other-harness" {
		t.Fatalf("the default harness's denial: %v", evs)
	}
	if _, errs := run([]string{"no-such-harness", "before"}, call("edit", seen, "")); strings.Count(errs, "\n") != 1 || !strings.Contains(errs, `unknown harness "no-such-harness" (known: other-harness, test-harness)`) {
		t.Fatalf("unknown harness: %q", errs)
	}
}

func TestOfWriterAndFind(t *testing.T) {
	hs := []Harness{fakeHarness{"a", "a-"}, fakeHarness{"ab", "a-b-"}, fakeHarness{"c", "c-"}}
	for writer, want := range map[string]string{"a-x": "a", "a-b-x": "ab", "c-1": "c", "c-": "", "proxy-1234abcd-host": "", "cli": ""} {
		h, ok := OfWriter(hs, writer)
		got := ""
		if ok {
			got = h.Name()
		}
		if got != want {
			t.Errorf("OfWriter(%q) = %q, want %q", writer, got, want)
		}
	}
	if h, ok := Find(hs, "c"); !ok || h.Prefix() != "c-" {
		t.Errorf("Find(c) = %v %v", h, ok)
	}
	if _, ok := Find(hs, "d"); ok {
		t.Error("Find(d) found a harness")
	}
	if w := Writer(hs[1], "sess/1"); w != gitstore.WriterName("a-b-", "sess/1") {
		t.Errorf("Writer = %q", w)
	}
}
