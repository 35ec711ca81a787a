package codex

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

const cxModel = "gpt-5.5" // every sample turn_context's model

// cxImportSamples imports every sample rollout into a new repository
// and returns its store.
func cxImportSamples(t *testing.T) *gitstore.Store {
	t.Helper()
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "12", "05")
	if err := os.MkdirAll(day, 0o700); err != nil {
		t.Fatal(err)
	}
	samples, _ := filepath.Glob(filepath.Join(cxSamples, "*", "rollout-*.jsonl"))
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
	if _, err := hooks.Import(context.Background(), New(), []string{filepath.Join(home, "sessions")}, hooks.ImportOptions{Open: open}); err != nil {
		t.Fatal(err)
	}
	st, err := open("")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestModelsSampleRollouts: imported, the sample rollouts' spans of what
// the model produced carry the model their turn_context names, and
// hooks.Models finds it for the apply_patch call of run1, for a time
// after the turn began in the main and in the subagent context, and
// nothing before the first model span or for an unknown context.
func TestModelsSampleRollouts(t *testing.T) {
	ctx := context.Background()
	st := cxImportSamples(t)
	idx, err := hooks.Models(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	run1 := Prefix + cxRun1
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	cases := []struct {
		name                         string
		writer, session, agent, call string
		ts                           time.Time
		want                         string
	}{
		{"run1 apply_patch call_2", run1, cxRun1, "", "call_2", time.Time{}, cxModel},
		{"run1 after the patch", run1, cxRun1, "", "", at("2026-12-05T15:15:15.100Z"), cxModel},
		{"run1 before the first call", run1, cxRun1, "", "", at("2026-12-05T15:15:11.500Z"), ""},
		{"subagent call_3", Prefix + cxParent, cxParent, cxChild, "call_3", time.Time{}, cxModel},
		{"subagent after its call", Prefix + cxParent, cxParent, cxChild, "", at("2026-12-05T14:16:46Z"), cxModel},
		{"compact session, after the second turn", Prefix + cxCompact, cxCompact, "", "", at("2026-12-05T14:16:57Z"), cxModel},
		{"unknown call", run1, cxRun1, "", "call_99", time.Time{}, ""},
		{"unknown agent", run1, cxRun1, "nobody", "", at("2026-12-05T15:15:15.100Z"), ""},
		{"unknown writer", Prefix + "nobody", cxRun1, "", "call_2", at("2026-12-05T15:15:15.100Z"), ""},
	}
	for _, c := range cases {
		if got := idx.At(c.writer, c.session, c.agent, c.ts, c.call); got != c.want {
			t.Errorf("%s: At = %q, want %q", c.name, got, c.want)
		}
	}
	// Spans of user text and tool results name no model.
	evs, err := st.Events(ctx, gitstore.Query{Session: cxRun1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		var kind string
		_ = json.Unmarshal(e.Extra["kind"], &kind)
		_, has := e.Extra["model"]
		if want := kind == "assistant" || kind == "thinking" || kind == "tool_use"; has != want {
			t.Errorf("%s %s span %s: model %s", e.Op, kind, e.Key, e.Extra["model"])
		}
		if has {
			n++
		}
	}
	if n < 4 {
		t.Errorf("%d spans with a model", n)
	}
}

// TestModelAcrossSweeps: a sweep that resumes after the turn_context
// (the rollout cut before call_2, then whole) still knows the turn's
// model: the cursor keeps it.
func TestModelAcrossSweeps(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile(cxRollout(t, cxRun1))
	if err != nil {
		t.Fatal(err)
	}
	const cut = 44760 // the start of the call_2 line
	if string(b[cut-1:cut+1]) != "\n{" {
		t.Fatalf("offset %d is not a line start", cut)
	}
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rollout := filepath.Join(t.TempDir(), "sessions", "2026", "12", "05", filepath.Base(cxRollout(t, cxRun1)))
	if err := os.MkdirAll(filepath.Dir(rollout), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rollout, b[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.SweepTranscript(ctx, st, New(), rollout, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := hooks.ReadCursor(ctx, st, New(), rollout); c == nil || c.Offset != cut || string(c.State) != `{"model":"gpt-5.5"}` {
		t.Fatalf("cursor after the first sweep: %+v", c)
	}
	if err := os.WriteFile(rollout, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := hooks.SweepTranscript(ctx, st, New(), rollout, hooks.SweepOptions{}); err != nil || s.Resets != 0 || s.Spans == 0 {
		t.Fatalf("second sweep: %+v %v", s, err)
	}
	idx, err := hooks.Models(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{"call_1", "call_2", "call_3"} {
		if got := idx.At(Prefix+cxRun1, cxRun1, "", time.Time{}, call); got != cxModel {
			t.Errorf("At(%s) = %q", call, got)
		}
	}
}

// TestModelAtHookTime: Codex's PostToolUse payload names the model; the
// hook records it on the edit it archives (not on reads), so the model
// behind a write is known before any sweep.
func TestModelAtHookTime(t *testing.T) {
	r := newRig(t)
	r.write("hello.txt", "hello world\n")
	r.bash("call_1", "cat hello.txt", "hello world\n")
	p := update("hello.txt", "hello world", "hello codex")
	if reason := r.patch("call_2", p); reason != "" {
		t.Fatalf("patch denied: %s", reason)
	}
	r.write("hello.txt", "hello codex\n")
	r.applied("call_2", p, "M hello.txt\n")
	var edit gitstore.Event
	for _, e := range r.events() {
		switch e.Op {
		case "edit":
			edit = e
			if string(e.Extra["model"]) != `"gpt-5.5"` {
				t.Errorf("edit: model %s", e.Extra["model"])
			}
		default:
			if e.Extra["model"] != nil {
				t.Errorf("%s names a model: %s", e.Op, e.Raw)
			}
		}
	}
	if edit.Key != "call_2" {
		t.Fatalf("no edit recorded (%+v)", edit)
	}
	st, err := gitstore.OpenDir(r.dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := hooks.Models(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := idx.At(edit.Writer, r.session, "", time.Time{}, "call_2"); got != "gpt-5.5" {
		t.Errorf("At(call_2) = %q", got)
	}
	if got := idx.At(edit.Writer, r.session, "", edit.TS, ""); got != "gpt-5.5" {
		t.Errorf("At(%s) = %q", edit.TS, got)
	}
	if got := idx.At(edit.Writer, r.session, "", edit.TS.Add(-time.Nanosecond), "call_1"); got != "" {
		t.Errorf("At(the read call_1, before the edit) = %q", got)
	}
}
