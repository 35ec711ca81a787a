package recall

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
)

// result is a tool_result span of call id (tool, error or not).
func (a *archive) result(session, id, tool, content string, isError bool) gitstore.Record {
	doc := map[string]any{"kind": "tool_result", "role": "user", "tool_use_id": id, "tool": tool, "content": content}
	if isError {
		doc["is_error"] = true
	}
	return a.spanDoc(session, "tool_result", doc)
}

// call is a tool_use span: call id of tool with input.
func (a *archive) call(session, id, tool string, input map[string]any) gitstore.Record {
	return a.spanDoc(session, "tool_use", map[string]any{"kind": "tool_use", "role": "assistant", "id": id, "tool": tool, "input": input})
}

// proxyDocSpan is a proxy span record of session holding messages (index
// -> message), a summary and pins.
func (a *archive) proxyDocSpan(session, id string, msgs map[int]any, summary string, pins []string) gitstore.Record {
	ts := a.next()
	var ms []any
	for i := range 10 {
		if m, ok := msgs[i]; ok {
			ms = append(ms, map[string]any{"index": i, "message": m})
		}
	}
	doc := map[string]any{"format": "git-lossless proxy span v1", "id": id, "kind": "summary", "session": session, "model": "m1",
		"route": "anthropic", "ts": ts, "window": 8192, "messages": ms, "summary": summary, "pins": pins}
	content, _ := json.Marshal(doc)
	return gitstore.Record{Event: gitstore.Event{TS: ts, Session: session, Source: "proxy", Op: "span",
		Extra: map[string]json.RawMessage{"span": jsonStr(id), "kind": jsonStr("summary")}},
		Content: content, HasContent: true, Encrypt: true}
}

func handoff(t testing.TB, ix *Index, q HandoffQuery) *Handoff {
	t.Helper()
	h, err := ix.Handoff(context.Background(), q)
	if err != nil {
		t.Fatalf("handoff %+v: %v", q, err)
	}
	return h
}

func texts(ss []Said) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Text)
	}
	return out
}

// TestHandoffHarnessAndProxy: a harness session made of hand-made spans
// and file versions, and a proxy session, in one archive. Each hand-off
// has the rules' goal, latest request, pins (keep phrases, Must Keep
// bullets, the proxy's pins; each once), decisions, files and open
// errors; every id it names reads with Span; the default session is the
// newest; an unknown one is ErrNoSession.
func TestHandoffHarnessAndProxy(t *testing.T) {
	a := newArchive(t)
	// The session's files live in the archive's work tree.
	if err := os.MkdirAll(filepath.Join(a.dir, "pkg", "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	edited := []byte("package a // seeded\n")
	if err := os.WriteFile(filepath.Join(a.dir, "pkg", "a", "a.go"), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.dir, "README.md"), []byte("# now changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const s = "s1"
	sub := a.span(s, "user", "SUBTASK look at pkg/a")
	sub.Agent = "a1"
	subSaid := a.span(s, "assistant", "The subagent concluded nothing.")
	subSaid.Agent = "a1"
	subRead := a.call(s, "c9", "Bash", map[string]any{"command": "go vet ./..."})
	subRead.Agent = "a1"
	editCall := a.call(s, "c3", "Edit", map[string]any{"file_path": "/abs/pkg/a/a.go", "old_string": "x", "new_string": "y"})
	editCall.SetPath("pkg/a/a.go")
	a.add("cc-s1",
		a.span(s, "user", "Fix the flaky test in pkg/a. Don't forget: CI runs on Go 1.26. Thanks"),
		a.span(s, "assistant", "I will look at pkg/a first."),
		a.call(s, "c1", "Bash", map[string]any{"command": "go test ./pkg/a"}),
		a.result(s, "c1", "Bash", "FAIL pkg/a\nexit status 1", true),
		a.call(s, "c2", "Bash", map[string]any{"command": "go vet ./..."}),
		a.result(s, "c2", "Bash", "vet: a.go:3: unreachable code", true),
		sub, subSaid,
		editCall, a.result(s, "c3", "Edit", "ok", false),
		a.file(s, "edit", "pkg/a/a.go", []byte("package a // first\n")),
		a.file(s, "edit", "pkg/a/a.go", edited),
		a.file(s, "read", "README.md", []byte("# readme\n")),
		a.call(s, "c4", "Bash", map[string]any{"command": "go test ./pkg/a"}),
		a.result(s, "c4", "Bash", "ok pkg/a", false),
		a.call(s, "c5", "Bash", map[string]any{"command": "go vet ./..."}),
		a.result(s, "c5", "Bash", "vet: a.go:3: still unreachable", true),
		a.call(s, "c6", "Grep", map[string]any{"pattern": "seed"}),
		a.result(s, "c6", "Grep", "no matches", true),
		a.span(s, "compact_summary", "We fixed the test.\n## Must Keep\n- Use table tests\n- CI runs on Go 1.26.\n"),
		a.span(s, "user", "<command-name>/compact</command-name>"),
		a.span(s, "user", "now also update the docs"),
		a.span(s, "assistant", "Done! The test is fixed by seeding the RNG. Next I would update docs. And more."),
		a.span(s, "thinking", "private musing"),
	)
	// A call without a result (the subagent's, last) neither opens nor
	// closes anything: only results count.
	a.add("cc-s1", subRead)

	// A proxy session: two spans; the second repeats message 3.
	user1 := map[string]any{"role": "user", "content": "Build the parser. Remember this: tokens are UTF-8. Go."}
	asst1 := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": "I'll write a lexer. It comes first."},
		map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{"command": "make"}}}}
	res1 := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": "make: *** [all] Error 2"}}}
	a.add("proxy-w", a.proxyDocSpan("p1", "sp-aaaaaaaaaaaaaaaa", map[int]any{1: user1, 2: asst1, 3: res1},
		"S1 body", []string{"Remember this: tokens are UTF-8.", "lexer first"}))
	a.add("proxy-w", a.proxyDocSpan("p1", "sp-bbbbbbbbbbbbbbbb", map[int]any{
		3: map[string]any{"role": "user", "content": "a resent copy of message 3"},
		4: map[string]any{"role": "assistant", "content": "Fixed the Makefile. Running again."},
		5: map[string]any{"role": "user", "content": "now write tests"}},
		"S2 body", []string{"Remember this: tokens are UTF-8.", "lexer first", "parser in pkg/p"}))

	ix := a.open(Options{HarnessOf: func(w string) string {
		if strings.HasPrefix(w, "cc-") {
			return "claude-code"
		}
		return ""
	}})
	h := handoff(t, ix, HandoffQuery{Session: s})
	if h.Goal == nil || h.Goal.Text != "Fix the flaky test in pkg/a. Don't forget: CI runs on Go 1.26. Thanks" ||
		h.Latest == nil || h.Latest.Text != "now also update the docs" || h.Harness != "claude-code" || h.Proxy {
		t.Errorf("goal %+v latest %+v harness %q", h.Goal, h.Latest, h.Harness)
	}
	if got, want := texts(h.Pins), []string{"Don't forget: CI runs on Go 1.26.", "Use table tests", "CI runs on Go 1.26."}; !slices.Equal(got, want) {
		t.Errorf("pins %q, want %q", got, want)
	}
	if got, want := texts(h.Decisions), []string{"I will look at pkg/a first.", "Done! The test is fixed by seeding the RNG."}; !slices.Equal(got, want) {
		t.Errorf("decisions %q, want %q", got, want)
	}
	if h.Summary == nil || h.Summary.Text != "We fixed the test." {
		t.Errorf("summary %+v", h.Summary)
	}
	var files []string
	for _, f := range append(slices.Clone(h.Edited), h.Read...) {
		files = append(files, f.Path+":"+string(f.Op)+":"+f.State)
	}
	if want := []string{"pkg/a/a.go:edit:current", "README.md:read:changed"}; !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	if len(h.Edited) == 1 && h.Edited[0].Versions != 2 {
		t.Errorf("edited %+v", h.Edited)
	}
	var errs []string
	for _, e := range h.Errors {
		errs = append(errs, e.Tool+" "+e.Target+" "+e.Text+" "+string(rune('0'+e.Failures)))
	}
	if want := []string{"Bash go vet ./... vet: a.go:3: still unreachable 2", `Grep {"pattern":"seed"} no matches 1`}; !slices.Equal(errs, want) {
		t.Errorf("open errors %q, want %q", errs, want)
	}
	if len(h.Rest) != 3 || len(h.Ranges) != 1 || h.Ranges[0].Writer != "cc-s1" || h.Locked != 0 {
		t.Errorf("rest %v ranges %+v locked %d", h.Rest, h.Ranges, h.Locked)
	}
	ids := []string{h.Goal.ID, h.Latest.ID, h.Summary.ID}
	for _, x := range append(append(slices.Clone(h.Pins), h.Decisions...), Said{ID: h.Errors[0].ID}, Said{ID: h.Errors[0].Call}) {
		ids = append(ids, x.ID)
	}
	for _, f := range append(slices.Clone(h.Edited), h.Read...) {
		ids = append(ids, f.ID)
	}
	for _, d := range h.Rest {
		ids = append(ids, d.ID)
	}
	for _, id := range ids {
		if sp, err := ix.Span(context.Background(), id); err != nil || sp.Session != s || sp.Locked {
			t.Errorf("span %s: %v %+v", id, err, sp)
		}
	}
	if sp, _ := ix.Span(context.Background(), h.Errors[0].ID); sp == nil || !strings.Contains(strings.Join(sp.Lines, "\n"), "still unreachable") {
		t.Errorf("the open error's span is not its result: %+v", sp)
	}

	// The proxy session, the newest: the default.
	p := handoff(t, ix, HandoffQuery{})
	if p.Session != "p1" || !p.Proxy || p.Harness != "" || p.Spans != 2 {
		t.Fatalf("default session %q proxy %v harness %q spans %d", p.Session, p.Proxy, p.Harness, p.Spans)
	}
	if p.Goal == nil || p.Goal.ID != "sp-aaaaaaaaaaaaaaaa" || p.Goal.Text != "Build the parser. Remember this: tokens are UTF-8. Go." ||
		p.Latest == nil || p.Latest.ID != "sp-bbbbbbbbbbbbbbbb" || p.Latest.Text != "now write tests" {
		t.Errorf("proxy goal %+v latest %+v", p.Goal, p.Latest)
	}
	if got, want := texts(p.Pins), []string{"Remember this: tokens are UTF-8.", "lexer first", "parser in pkg/p"}; !slices.Equal(got, want) {
		t.Errorf("proxy pins %q, want %q", got, want)
	}
	if got, want := texts(p.Decisions), []string{"I'll write a lexer. It comes first.", "Fixed the Makefile. Running again."}; !slices.Equal(got, want) {
		t.Errorf("proxy decisions %q, want %q", got, want)
	}
	if len(p.Errors) != 1 || p.Errors[0].Target != "make" || p.Errors[0].ID != "sp-aaaaaaaaaaaaaaaa" || p.Errors[0].Call != "sp-aaaaaaaaaaaaaaaa" {
		t.Errorf("proxy errors %+v", p.Errors)
	}
	if len(p.Edited)+len(p.Read) != 0 || p.Summary == nil || p.Summary.Text != "S2 body" || len(p.Rest) != 2 {
		t.Errorf("proxy files %v %v summary %+v rest %v", p.Edited, p.Read, p.Summary, p.Rest)
	}
	if sp, err := ix.Span(context.Background(), p.Goal.ID); err != nil || !strings.Contains(strings.Join(sp.Lines, "\n"), "Build the parser") {
		t.Errorf("proxy goal span: %v %+v", err, sp)
	}

	if _, err := ix.Handoff(context.Background(), HandoffQuery{Session: "nope"}); !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown session: %v", err)
	}
	var b strings.Builder
	if err := h.WriteText(&b); err != nil || !strings.Contains(b.String(), "Bash `go vet ./...`: 2 failures: vet: a.go:3: still unreachable") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
}

// TestHandoffLocked: encrypted spans without an identity are counted as
// locked, and the goal and decisions that are such spans are reported by
// id, locked, without text; with the identity they read.
func TestHandoffLocked(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	a := newArchive(t, "lossless.encrypt", "true", "lossless.recipient", id.Recipient().String())
	a.add("cc-enc",
		a.span("enc", "user", "port the ledger to Go. Remember this: amounts are cents."),
		a.call("enc", "c1", "Bash", map[string]any{"command": "go build"}),
		a.result("enc", "c1", "Bash", "undefined: Ledger", true),
		a.span("enc", "assistant", "Ported the ledger."),
	)
	h := handoff(t, a.open(), HandoffQuery{})
	if h.Session != "enc" || h.Locked != 4 || h.Goal == nil || !h.Goal.Locked || h.Goal.Text != "" ||
		len(h.Decisions) != 1 || !h.Decisions[0].Locked || len(h.Pins) != 0 || len(h.Errors) != 0 {
		t.Errorf("locked: %+v", h)
	}
	var b strings.Builder
	if err := h.WriteText(&b); err != nil || !strings.Contains(b.String(), "[locked: encrypted") || strings.Contains(b.String(), "ledger") {
		t.Errorf("locked text: %v\n%s", err, b.String())
	}
	o := handoff(t, a.open(Options{Identities: []age.Identity{id}}), HandoffQuery{Session: "enc"})
	if o.Locked != 0 || o.Goal == nil || !strings.HasPrefix(o.Goal.Text, "port the ledger") || len(o.Pins) != 1 ||
		len(o.Errors) != 1 || o.Errors[0].Target != "go build" || len(o.Decisions) != 1 || o.Decisions[0].Text != "Ported the ledger." {
		t.Errorf("opened: %+v", o)
	}
}
