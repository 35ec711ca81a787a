package mcp

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
)

// TestSearchHarness: the search, digests and file_history tools name each
// hit's harness (the event's field, else the one Config.HarnessOf gives
// its writer, else none) and the harness argument keeps one harness's.
func TestSearchHarness(t *testing.T) {
	f := newFixture(t) // a Claude Code session whose events carry no harness field
	span := func(session, text string) gitstore.Record {
		return gitstore.Record{Event: gitstore.Event{TS: time.Date(2026, 12, 1, 9, 1, 0, 0, time.UTC), Op: "span", Source: "sweep", Session: session,
			Harness: "codex", Extra: map[string]json.RawMessage{"kind": json.RawMessage(`"user_prompt"`)}},
			Content: []byte(`{"kind":"user_prompt","role":"user","text":"` + text + `"}`), HasContent: true}
	}
	if _, err := f.st.Append(context.Background(), "codex-c0dex", []gitstore.Record{span("c0dex", "make compaction faster in codex")}); err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Store: f.st, Harness: claudecode.New(), Version: "test", HarnessOf: func(w string) string {
		if strings.HasPrefix(w, "cc-") {
			return "claude-code"
		}
		return ""
	}})
	ct, stt := sdk.NewInMemoryTransports()
	if _, err := srv.SDK().Connect(context.Background(), stt, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	f.cs = cs

	out, bad := f.call("search", map[string]any{"query": "compaction"})
	if bad || !regexp.MustCompile(`(?m)^cc-\S+#\d+  \S+ \S+  \S+  user_prompt  harness claude-code$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^codex-c0dex#1  \S+ \S+  c0dex  user_prompt  harness codex$`).MatchString(out) {
		t.Errorf("search does not name both harnesses:\n%s", out)
	}
	out, bad = f.call("search", map[string]any{"query": "compaction", "harness": "codex"})
	if bad || !strings.Contains(out, "1 of 1 hits") || !strings.Contains(out, "codex-c0dex#1") {
		t.Errorf("search harness codex:\n%s", out)
	}
	out, bad = f.call("search", map[string]any{"query": "compaction", "harness": "claude-code"})
	if bad || strings.Contains(out, "codex-c0dex") || !strings.Contains(out, "cc-"+f.session) {
		t.Errorf("search harness claude-code:\n%s", out)
	}
	out, bad = f.call("read_span", map[string]any{"id": "codex-c0dex#1"})
	if bad || !strings.Contains(out, "harness codex") {
		t.Errorf("read_span:\n%s", out)
	}
	out, bad = f.call("digests", map[string]any{"harness": "codex"})
	if bad || !strings.Contains(out, "1 digests:") || !strings.Contains(out, "harness codex") {
		t.Errorf("digests harness codex:\n%s", out)
	}
	out, bad = f.call("file_history", map[string]any{"path": "main.go"})
	if bad || !strings.Contains(out, "harness claude-code") {
		t.Errorf("file_history:\n%s", out)
	}
	out, bad = f.call("file_history", map[string]any{"path": "main.go", "harness": "codex"})
	if bad || !strings.Contains(out, "no archived version") {
		t.Errorf("file_history harness codex:\n%s", out)
	}
}
