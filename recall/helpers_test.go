package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

// archive is a real git repository in a temporary directory with a store
// over it, and helpers to append spans and file versions to it.
type archive struct {
	t   testing.TB
	dir string
	st  *gitstore.Store
	mu  sync.Mutex // guards ts: tests append from several goroutines
	ts  time.Time
	// warnings the store and the index gave
	warns []string
}

// newArchive creates a repository (redaction off unless config says
// otherwise: the tests plant secrets and check that recall, not the
// writer, keeps them out of sight) and opens a store on it. config is
// applied with git config before the store is opened.
func newArchive(t testing.TB, config ...string) *archive {
	t.Helper()
	dir := t.TempDir()
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(t.TempDir(), "identity.age"))
		tt.Setenv("LOSSLESS_ANCHOR_KEY_FILE", filepath.Join(t.TempDir(), "anchor-key"))
	}
	testkit.Git(t, dir, nil, "init", "-q")
	testkit.Git(t, dir, nil, "config", "lossless.redact", "off")
	for i := 0; i+1 < len(config); i += 2 {
		testkit.Git(t, dir, nil, "config", config[i], config[i+1])
	}
	a := &archive{t: t, dir: dir, ts: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	a.reopenStore()
	return a
}

func (a *archive) reopenStore() {
	a.t.Helper()
	st, err := gitstore.OpenDir(a.dir, gitstore.Options{Warn: func(s string) { a.warns = append(a.warns, s) }})
	if err != nil {
		a.t.Fatal(err)
	}
	a.st = st
}

// next returns a timestamp a second after the previous one.
func (a *archive) next() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ts = a.ts.Add(time.Second)
	return a.ts
}

// span is a Claude Code span record: kind as the sweep stores it (user,
// assistant, thinking, tool_use, tool_result, compact_summary).
func (a *archive) span(session, kind, text string) gitstore.Record {
	role := "assistant"
	if kind == "user" || kind == "tool_result" || kind == "compact_summary" {
		role = "user"
	}
	doc := map[string]any{"kind": kind, "role": role}
	switch kind {
	case "tool_result":
		doc["tool_use_id"] = "toolu_x"
		doc["content"] = text
	default:
		doc["text"] = text
	}
	return a.spanDoc(session, kind, doc)
}

func (a *archive) spanDoc(session, kind string, doc map[string]any) gitstore.Record {
	content, err := json.Marshal(doc)
	if err != nil {
		a.t.Fatal(err)
	}
	ts := a.next()
	r := gitstore.Record{Event: gitstore.Event{TS: ts, Session: session, Source: "sweep", Op: "span",
		Key: fmt.Sprintf("span:%d", ts.UnixNano()), Extra: map[string]json.RawMessage{"kind": jsonStr(kind)}},
		Content: content, HasContent: true, Encrypt: true}
	if t, ok := doc["tool"].(string); ok {
		r.Tool = t
	}
	return r
}

// toolUse is a tool_use span of tool with input.
func (a *archive) toolUse(session, tool string, input map[string]any) gitstore.Record {
	return a.spanDoc(session, "tool_use", map[string]any{"kind": "tool_use", "role": "assistant", "id": "toolu_1", "tool": tool, "input": input})
}

// file is a file version event of path with content.
func (a *archive) file(session, op, path string, content []byte) gitstore.Record {
	ts := a.next()
	r := gitstore.Record{Event: gitstore.Event{TS: ts, Session: session, Source: "hook", Op: gitstore.Op(op), View: "full", Tool: "Read",
		Key: fmt.Sprintf("file:%d", ts.UnixNano())}, Content: content, HasContent: true}
	r.SetPath(path)
	return r
}

// proxySpan is a proxy span record with a summary and one message.
func (a *archive) proxySpan(session, id, message, summary string) gitstore.Record {
	ts := a.next()
	doc := map[string]any{
		"format": "git-lossless proxy span v1", "id": id, "kind": "summary", "session": session, "model": "m1",
		"route": "openai", "ts": ts, "window": 8192, "tokens_before": 9000, "tokens_after": 5000, "count_source": "est",
		"messages": []any{map[string]any{"index": 3, "message": map[string]any{"role": "user", "content": message}}},
		"summary":  summary, "pins": []string{"pinned fact one"},
	}
	content, _ := json.Marshal(doc)
	return gitstore.Record{Event: gitstore.Event{TS: ts, Session: session, Source: "proxy", Op: "span",
		Extra: map[string]json.RawMessage{"span": jsonStr(id), "kind": jsonStr("summary")}},
		Content: content, HasContent: true, Encrypt: true}
}

func jsonStr(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// add appends recs as one batch of writer.
func (a *archive) add(writer string, recs ...gitstore.Record) gitstore.AppendResult {
	a.t.Helper()
	res, err := a.st.Append(context.Background(), writer, recs)
	if err != nil {
		a.t.Fatal(err)
	}
	return res
}

// open opens the recall index.
func (a *archive) open(opt ...Options) *Index {
	a.t.Helper()
	var o Options
	if len(opt) > 0 {
		o = opt[0]
	}
	if o.Warn == nil {
		o.Warn = func(s string) { a.warns = append(a.warns, s) }
	}
	ix, err := Open(context.Background(), a.st, o)
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { ix.Close() })
	return ix
}

// indexDir is the recall index's directory.
func (a *archive) indexDir(ctx context.Context) string {
	d, err := a.st.StateDir(ctx, "recall")
	if err != nil {
		a.t.Fatal(err)
	}
	return d
}

// fillerWords make spans that none of the tests' planted words appear in.
var fillerWords = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu river mountain
forest ocean desert valley meadow canyon glacier island harbor bridge tower castle garden orchard
vineyard market station library museum theater stadium airport railway highway tunnel`)

// filler returns a sentence of n words from rng.
func filler(rng *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fillerWords[rng.IntN(len(fillerWords))]
	}
	return strings.Join(w, " ")
}

// search runs a query and fails the test on error.
func search(t testing.TB, ix *Index, q Query) Results {
	t.Helper()
	res, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return res
}

// segmentFiles lists the index's segment files.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "seg-*.rcl"))
	return m
}

func readAll(t testing.TB, dir string) []byte {
	t.Helper()
	var out []byte
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			out = append(out, b...)
		}
	}
	return out
}
