package claudecode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// TestModelsSampleSession sweeps the real 2.1.328 session, whose
// assistant lines name message.model "claude-opus-5-5": the spans the
// model produced carry it (and a tool call's its id), the others do
// not, and hooks.Models finds it for an edit's call, for a time in the
// main and the subagent context, and nothing for a context or a time
// the archive has no model for.
func TestModelsSampleSession(t *testing.T) {
	const model = "claude-opus-5-5"
	ctx := context.Background()
	repo := swGitInit(t)
	main := swCopySample(t, repo)
	st := swOpen(t, repo)
	if _, err := hooks.SweepSession(ctx, st, New(), main, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	writer := Prefix + trSampleSession
	withModel := map[string]int{}
	var edit gitstore.Event
	for _, e := range swEvents(t, st, gitstore.Query{Session: trSampleSession}) {
		kind, m := swExtra(e, "kind"), swExtra(e, "model")
		switch {
		case e.Op == "span" && (kind == "assistant" || kind == "thinking" || kind == "tool_use"):
			if m != model {
				t.Errorf("%s span %s: model %q", kind, e.Key, m)
			}
			if call := swExtra(e, "tool_use_id"); (kind == "tool_use") != (call != "") {
				t.Errorf("%s span %s: tool_use_id %q", kind, e.Key, call)
			}
			withModel[kind]++
		case m != "" || e.Extra["tool_use_id"] != nil:
			t.Errorf("%s %s %s names a model: %s", e.Op, kind, e.Key, e.Raw)
		}
		if e.Op == "edit" && e.Key == "toolu_main_2_5" {
			edit = e
		}
	}
	if withModel["assistant"] == 0 || withModel["tool_use"] < 7 {
		t.Fatalf("spans with a model: %v", withModel)
	}
	if edit.Key == "" {
		t.Fatal("no evidence of the edit toolu_main_2_5")
	}

	idx, err := hooks.Models(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// By the call alone (no model at or before the zero time).
	if got := idx.At(writer, trSampleSession, "", time.Time{}, "toolu_main_2_5"); got != model {
		t.Errorf("At(call toolu_main_2_5) = %q", got)
	}
	if got := idx.At(writer, trSampleSession, "", time.Time{}, "toolu_main_2_5:1"); got != model {
		t.Errorf("At(key toolu_main_2_5:1) = %q", got)
	}
	// By the time of the edit's evidence.
	if got := idx.At(writer, trSampleSession, "", edit.TS, ""); got != model {
		t.Errorf("At(%s) = %q", edit.TS, got)
	}
	sub := time.Date(2026, 12, 2, 16, 24, 1, 200e6, time.UTC) // after the subagent's first call
	if got := idx.At(writer, trSampleSession, trSampleAgent, sub, ""); got != model {
		t.Errorf("At(subagent, %s) = %q", sub, got)
	}
	first := time.Date(2026, 12, 2, 16, 24, 0, 869e6, time.UTC) // the first assistant line
	for _, c := range []struct {
		name                         string
		writer, session, agent, call string
		ts                           time.Time
	}{
		{"before the first assistant line", writer, trSampleSession, "", "", first.Add(-time.Millisecond)},
		{"another writer", Prefix + "nobody", trSampleSession, "", "toolu_main_2_5", edit.TS},
		{"another agent", writer, trSampleSession, "agent-x", "", edit.TS},
		{"another session", writer, "other", "", "", edit.TS},
		{"an unknown call", writer, trSampleSession, "", "toolu_nope", time.Time{}},
	} {
		if got := idx.At(c.writer, c.session, c.agent, c.ts, c.call); got != "" {
			t.Errorf("%s: At = %q, want none", c.name, got)
		}
	}
	if got := idx.At(writer, trSampleSession, "", first, ""); got != model {
		t.Errorf("At(the first assistant line) = %q", got)
	}

	// One writer named: the same answers.
	one, err := hooks.Models(ctx, st, []string{writer})
	if err != nil || one.At(writer, trSampleSession, "", time.Time{}, "toolu_main_2_5") != model {
		t.Errorf("Models([%s]): %v", writer, err)
	}
}

// TestModelSynthetic: an assistant message Claude Code made up itself
// ("<synthetic>") names no model; a real one does, on every item.
func TestModelSynthetic(t *testing.T) {
	lines := strings.Join([]string{
		trLine("assistant", "u1", `"message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error"}]}`),
		trLine("assistant", "u2", `"message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/a"}}],"model":"claude-x"}`),
		trLine("user", "u3", `"message":{"role":"user","content":"go on"}`),
	}, "\n") + "\n"
	got, _ := trParseAll(t, strings.NewReader(lines))
	var models []string
	for _, l := range got {
		for _, it := range l.Items {
			models = append(models, transcript.SpanKind(it)+"="+it.Meta().Model)
		}
	}
	if s := strings.Join(models, ","); s != "assistant=,assistant=claude-x,tool_use=claude-x,user=" {
		t.Fatalf("models %s", s)
	}
}
