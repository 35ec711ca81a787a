package gemini_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/gemini"
)

// TestModelsSampleChats sweeps the sample chats, whose gemini messages
// name their model (gemini-2.5-flash in the main chats, gemini-2.5-pro
// in the subagent's): the spans of what the model produced carry it,
// and hooks.Models finds it for a replace call, for a time in the main
// and in the subagent context, and nothing before the first model
// message or for an unknown context.
func TestModelsSampleChats(t *testing.T) {
	const (
		flash   = "gemini-2.5-flash"
		pro     = "gemini-2.5-pro"
		run1    = "bc53530f-3b83-48a7-aa7c-3e22ac0b6e48"
		parent  = "cc106cda-29a0-4431-b783-fe844bfef7e2"
		child   = "6fdbd512-609c-493b-aadc-22b51e047dc6"
		replace = "replace__replace_1796480315202_0"
	)
	ctx := context.Background()
	repo := newRepo(t)
	home := copyHome(t, repo)
	chats := filepath.Join(home, ".gemini", "tmp", "ws", "chats")
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, main := range []string{"session-2026-12-05T14-18-bc53530f.jsonl", "session-2026-12-05T15-14-cc106cda.jsonl"} {
		if _, err := hooks.SweepSession(ctx, st, gemini.New(), filepath.Join(chats, main), hooks.SweepOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := hooks.Models(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	w1, wp := gemini.Prefix+run1, gemini.Prefix+parent
	cases := []struct {
		name                         string
		writer, session, agent, call string
		ts                           time.Time
		want                         string
	}{
		{"replace call", w1, run1, "", replace, time.Time{}, flash},
		{"after the replace", w1, run1, "", "", at("2026-12-05T14:18:36Z"), flash},
		{"before the first model message", w1, run1, "", "", at("2026-12-05T14:18:30Z"), ""},
		{"subagent read_file call", wp, parent, child, child + "#0-0", time.Time{}, pro},
		{"subagent after its call", wp, parent, child, "", at("2026-12-05T15:14:36Z"), pro},
		{"parent meanwhile", wp, parent, "", "", at("2026-12-05T15:14:36Z"), flash},
		{"unknown call", w1, run1, "", "replace__nope", time.Time{}, ""},
		{"unknown agent", w1, run1, child, "", at("2026-12-05T14:18:36Z"), ""},
		{"unknown writer", gemini.Prefix + "nobody", run1, "", replace, at("2026-12-05T14:18:36Z"), ""},
	}
	for _, c := range cases {
		if got := idx.At(c.writer, c.session, c.agent, c.ts, c.call); got != c.want {
			t.Errorf("%s: At = %q, want %q", c.name, got, c.want)
		}
	}
	evs, err := st.Events(ctx, gitstore.Query{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		var kind string
		_ = json.Unmarshal(e.Extra["kind"], &kind)
		_, has := e.Extra["model"]
		if want := e.Op == "span" && (kind == "assistant" || kind == "thinking" || kind == "tool_use"); has != want {
			t.Errorf("%s %s %s: model %s", e.Op, kind, e.Key, e.Extra["model"])
		}
		if has {
			n++
		}
	}
	if n < 6 {
		t.Errorf("%d spans with a model", n)
	}
}
