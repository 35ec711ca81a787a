package hooks

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// TestModelsAt: the index's rules on hand-made events. A context whose
// model changes mid-session answers by time (the latest at or before,
// ties in archive order); a call is found by its span's tool_use_id or
// its evidence key, with or without a hook's :<n>, first in the asking
// context; lines whose "model" is not a top-level string are no model;
// a writer named alone is the only one read; a nil index knows nothing.
func TestModelsAt(t *testing.T) {
	repo, _ := filepath.EvalSymlinks(t.TempDir())
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	q := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	span := func(ts time.Time, agent, key, kind, model, call string) gitstore.Record {
		x := map[string]json.RawMessage{"kind": q(kind)}
		if model != "" {
			x["model"] = q(model)
		}
		if call != "" {
			x["tool_use_id"] = q(call)
		}
		return gitstore.Record{Event: gitstore.Event{TS: ts, Session: "s1", Agent: agent, Sidechain: agent != "", Source: "sweep", Op: "span", Key: key, Extra: x},
			Content: []byte(`{}`), HasContent: true}
	}
	recs := []gitstore.Record{
		span(sec(1), "", "span:u1", "user", "", ""),
		span(sec(2), "", "span:a1", "assistant", "model-a", ""),
		span(sec(3), "", "span:a2", "tool_use", "model-a", "call_1"),
		span(sec(5), "", "span:a3", "tool_use", "model-b", "call_2"), // the user switched models
		span(sec(5), "", "span:a4", "assistant", "model-c", ""),      // same time, later in the archive
		span(sec(6), "sub", "span:s1", "tool_use", "model-sub", "call_1"),
		// Not a model: nested, or not a string.
		{Event: gitstore.Event{TS: sec(7), Session: "s1", Source: "sweep", Op: "span", Key: "span:n1",
			Extra: map[string]json.RawMessage{"kind": q("assistant"), "usage": json.RawMessage(`{"model":"nested"}`)}}, Content: []byte(`{}`), HasContent: true},
		{Event: gitstore.Event{TS: sec(8), Session: "s1", Source: "sweep", Op: "span", Key: "span:n2",
			Extra: map[string]json.RawMessage{"kind": q("assistant"), "model": json.RawMessage(`42`)}}, Content: []byte(`{}`), HasContent: true},
		// A hook's edit naming its model, keyed by its call.
		{Event: gitstore.Event{TS: sec(9), Session: "s1", Source: "hook", Op: "edit", Key: "call_3:1", Extra: map[string]json.RawMessage{"model": q("model-d")}},
			Content: []byte("x\n"), HasContent: true},
	}
	if _, err := st.Append(ctx, "cx-s1", recs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, "cx-s2", []gitstore.Record{span(sec(1), "", "span:o1", "tool_use", "model-other", "call_1")}); err != nil {
		t.Fatal(err)
	}
	idx, err := Models(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		agent, call string
		ts          time.Time
		want        string
	}{
		{"", "", sec(1), ""},
		{"", "", sec(2), "model-a"},
		{"", "", sec(4), "model-a"},
		{"", "", sec(5), "model-c"},
		{"", "", sec(8), "model-c"},            // the nested and the numeric model are none
		{"", "", sec(9), "model-d"},            // the hook's edit
		{"", "call_1", sec(0), "model-a"},      // the main context's call_1
		{"sub", "call_1", sec(0), "model-sub"}, // the subagent's own
		{"", "call_2", sec(9), "model-b"},      // the call wins over the time
		{"", "call_3", sec(0), "model-d"},      // a call's key without :<n>
		{"", "call_3:1", sec(0), "model-d"},    // and with
		{"other", "call_2", sec(0), "model-b"}, // a call no context of that name made: any context's
		{"", "call_9", sec(3), "model-a"},      // an unknown call: by time
		{"sub", "", sec(5), ""},
		{"sub", "", sec(6), "model-sub"},
	} {
		if got := idx.At("cx-s1", "s1", c.agent, c.ts, c.call); got != c.want {
			t.Errorf("At(%q, %s, %q) = %q, want %q", c.agent, c.ts.Format("05"), c.call, got, c.want)
		}
	}
	if got := idx.At("cx-s2", "s1", "", sec(0), "call_1"); got != "model-other" {
		t.Errorf("At(cx-s2, call_1) = %q", got)
	}
	one, err := Models(ctx, st, []string{"cx-s2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := one.At("cx-s1", "s1", "", sec(9), "call_1"); got != "" {
		t.Errorf("index of cx-s2 answers for cx-s1: %q", got)
	}
	if _, err := Models(ctx, st, []string{"cx-nobody"}); err == nil {
		t.Error("Models of a writer that does not exist: no error")
	}
	var none *ModelIndex
	if got := none.At("cx-s1", "s1", "", sec(9), "call_1"); got != "" {
		t.Errorf("nil index: %q", got)
	}

	// The one-pass reading of plain lines indexes what decoding them
	// does.
	evs, err := st.Events(ctx, gitstore.Query{})
	if err != nil {
		t.Fatal(err)
	}
	newIndex := func() *ModelIndex {
		return &ModelIndex{calls: map[callRef]string{}, spans: map[ctxKey][]modelSpan{}, names: map[string]string{}}
	}
	fast, slow, plain := newIndex(), newIndex(), 0
	for _, e := range evs {
		if fast.addPlain(e.Writer, e.Raw) {
			plain++
		} else {
			fast.add(e.Writer, e.Op, e.Key, e.Session, e.Agent, e.TS, e.ExtraString("model"), e.ExtraString("tool_use_id"))
		}
		slow.add(e.Writer, e.Op, e.Key, e.Session, e.Agent, e.TS, e.ExtraString("model"), e.ExtraString("tool_use_id"))
	}
	if plain < 7 || plain == len(evs) {
		t.Errorf("%d of %d lines read in one pass", plain, len(evs))
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("one-pass index %+v\ndecoded index %+v", fast, slow)
	}
}

// BenchmarkModels indexes an archive of 8 sessions of 4096 spans each,
// a third of them naming their model (assistant text and tool calls),
// as blame does once per run.
func BenchmarkModels(b *testing.B) {
	repo := filepath.Join(b.TempDir(), "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	lines := 0
	for w := range 8 {
		var recs []gitstore.Record
		for i := range 4096 {
			x := map[string]json.RawMessage{"kind": json.RawMessage(`"user"`), "uuid": json.RawMessage(`"u-` + strconv.Itoa(i) + `"`)}
			if i%3 == 1 {
				x["kind"], x["model"] = json.RawMessage(`"tool_use"`), json.RawMessage(`"claude-opus-5-5"`)
				x["tool_use_id"] = json.RawMessage(`"toolu_` + strconv.Itoa(i) + `"`)
			}
			recs = append(recs, gitstore.Record{Event: gitstore.Event{TS: t0.Add(time.Duration(i) * time.Second), Session: "s" + strconv.Itoa(w),
				Source: "sweep", Op: "span", Key: "span:u-" + strconv.Itoa(i), Harness: "claude-code", Extra: x},
				Content: []byte(`{"kind":"user","role":"user","text":"` + strconv.Itoa(i) + `"}`), HasContent: true})
		}
		if _, err := st.Import(ctx, "cc-s"+strconv.Itoa(w), recs, 0); err != nil {
			b.Fatal(err)
		}
		lines += len(recs)
	}
	b.ReportMetric(float64(lines), "lines")
	for b.Loop() {
		idx, err := Models(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		if idx.At("cc-s3", "s3", "", t0, "toolu_4") != "claude-opus-5-5" {
			b.Fatal("no model for toolu_4")
		}
	}
}
