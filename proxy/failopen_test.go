package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/seal"
)

// overBudget is a conversation well over an 8,192-token budget.
func overBudget(turns int) []byte { return overBudgetBody(turns, false) }

func overBudgetBody(turns int, stream bool) []byte {
	c := stubbackend.NewConversation("stub-model", "sys")
	for i := 1; i <= turns; i++ {
		c.User(stubbackend.DemoTurn(i))
		c.Assistant("ok")
	}
	c.User("go on")
	return c.Body(stream)
}

// anthropicOverBudget is an Anthropic Messages request well over an
// 8,192-token budget.
func anthropicOverBudget(turns int, stream bool) []byte {
	var msgs []any
	for i := 1; i <= turns; i++ {
		msgs = append(msgs,
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": stubbackend.DemoTurn(i)}}},
			map[string]any{"role": "assistant", "content": "ok"})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "go on"})
	b, err := json.Marshal(map[string]any{"model": "stub-model", "max_tokens": 512, "system": "sys", "messages": msgs, "stream": stream})
	if err != nil {
		panic(err)
	}
	return b
}

// awaitSummaries waits until the stub has recorded n summary calls (a
// call the proxy gave up on is recorded when the stub answers it).
func awaitSummaries(t *testing.T, st *stubbackend.Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := st.Await(ctx, func(rs []*stubbackend.Request) bool {
		k := 0
		for _, r := range rs {
			if r.Summary {
				k++
			}
		}
		return k >= n
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkLogAgrees checks that the savings log says what the stats say:
// requests, summary calls (failed ones included) and fail-opens.
func checkLogAgrees(t *testing.T, p *Proxy, logPath string) Report {
	t.Helper()
	rep, err := Savings(context.Background(), nil, logPath, time.Time{}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	fo := 0
	for _, n := range rep.FailOpen {
		fo += n
	}
	stFo := 0
	for _, n := range st.FailOpen {
		stFo += n
	}
	if rep.Requests != st.Requests || rep.SummaryCalls != st.SummaryCalls || fo != stFo || rep.Compacted != st.Compacted {
		t.Errorf("savings log and stats disagree: log %d requests, %d summary calls, %v fail-open, %d compacted; stats %d, %d, %v, %d",
			rep.Requests, rep.SummaryCalls, rep.FailOpen, rep.Compacted, st.Requests, st.SummaryCalls, st.FailOpen, st.Compacted)
	}
	return rep
}

// Every failure path sends the client's exact bytes upstream, on both
// routes, streamed or not.
func TestFailOpen(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		kind   string // stub kind (default llama.cpp)
		path   string // default /v1/chat/completions
		stub   func(*stubbackend.Server)
		cfg    func(*Config)
		body   []byte
		calls  int // summary calls expected
	}{
		{name: "summary error", reason: "summary-error", stub: func(s *stubbackend.Server) { s.SummaryStatus = 500 }, calls: 2},
		{name: "summary error, streamed", reason: "summary-error", stub: func(s *stubbackend.Server) { s.SummaryStatus = 500 }, calls: 2, body: overBudgetBody(9, true)},
		{name: "summary error, anthropic", reason: "summary-error", kind: stubbackend.Anthropic, path: "/v1/messages",
			stub: func(s *stubbackend.Server) { s.SummaryStatus = 500 }, calls: 2, body: anthropicOverBudget(9, false)},
		{name: "summary too short, anthropic streamed", reason: "summary-short", kind: stubbackend.Anthropic, path: "/v1/messages",
			stub: func(s *stubbackend.Server) { s.Summary = func(*stubbackend.Request, string) string { return "Fine." } }, calls: 2, body: anthropicOverBudget(9, true)},
		{name: "summary empty", reason: "summary-empty", stub: func(s *stubbackend.Server) {
			s.Summary = func(*stubbackend.Request, string) string { return "  " }
		}, calls: 2},
		{name: "summary only reasoning", reason: "summary-empty", stub: func(s *stubbackend.Server) {
			s.Summary = func(*stubbackend.Request, string) string { return "<think>long thoughts about the transcript</think>" }
		}, calls: 2},
		{name: "summary too short", reason: "summary-short", stub: func(s *stubbackend.Server) {
			s.Summary = func(*stubbackend.Request, string) string { return "Fine." }
		}, calls: 2},
		{name: "summary timeout", reason: "summary-timeout", stub: func(s *stubbackend.Server) { s.SummaryDelay = 300 * time.Millisecond },
			cfg: func(c *Config) { c.SummaryTimeout = 50 * time.Millisecond }, calls: 1},
		{name: "span write", reason: "span-write", cfg: func(c *Config) { c.Archive = &MemoryArchive{Fail: errors.New("disk full")} }, calls: 1},
		{name: "span write, anthropic streamed", reason: "span-write", kind: stubbackend.Anthropic, path: "/v1/messages",
			cfg: func(c *Config) { c.Archive = &MemoryArchive{Fail: errors.New("disk full")} }, calls: 2, body: anthropicOverBudget(9, true)}, // chunked
		{name: "system messages alone too large", reason: "too-large", body: func() []byte {
			c := stubbackend.NewConversation("stub-model", "rules:\n"+stubbackend.Code(5, 40000))
			c.User("hi")
			return c.Body(false)
		}()},
		{name: "message not an object with a role", reason: "unparsable", body: []byte(`{"model":"m","messages":[{"content":"` + strings.Repeat("x ", 40000) + `"}]}`)},
		{name: "body over max-body", reason: "body-too-large", cfg: func(c *Config) { c.MaxBody = 1024 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.kind
			if kind == "" {
				kind = stubbackend.LlamaCpp
			}
			path := tc.path
			if path == "" {
				path = "/v1/chat/completions"
			}
			st := &stubbackend.Server{Kind: kind, Window: 0} // accepts anything
			if tc.stub != nil {
				tc.stub(st)
			}
			logPath := filepath.Join(t.TempDir(), LogFile)
			s := newStack(t, st, func(c *Config) {
				c.Window = 8192
				c.LogPath = logPath
				if tc.cfg != nil {
					tc.cfg(c)
				}
			})
			body := tc.body
			if body == nil {
				body = overBudget(9)
			}
			code, resp := s.post(path, body)
			if code != 200 {
				t.Fatalf("HTTP %d %s", code, resp)
			}
			if got := s.lastChat().Body; !bytes.Equal(got, body) {
				t.Fatalf("the backend did not get the client's exact bytes (%d vs %d bytes)", len(got), len(body))
			}
			if bytes.Contains(body, []byte(`"stream":true`)) && !bytes.Contains(resp, []byte("data: ")) {
				t.Errorf("a streamed request was not answered with a stream: %.200s", resp)
			}
			st2 := s.p.Stats()
			if st2.FailOpen[tc.reason] != 1 || st2.Compacted != 0 {
				t.Fatalf("fail-open %v, compacted %d; want %s", st2.FailOpen, st2.Compacted, tc.reason)
			}
			awaitSummaries(t, s.st, tc.calls)
			if n := len(s.st.Summaries()); n != tc.calls {
				t.Errorf("%d summary calls, want %d", n, tc.calls)
			}
			if len(s.arch.Spans()) != 0 {
				t.Errorf("spans archived for a request that went up uncompacted")
			}
			rep := checkLogAgrees(t, s.p, logPath)
			if rep.FailOpen[tc.reason] != 1 || rep.SummaryCalls != tc.calls {
				t.Errorf("savings log: fail-open %v, %d summary calls; want %s, %d", rep.FailOpen, rep.SummaryCalls, tc.reason, tc.calls)
			}
			// Nothing half-done stays behind: the next attempt starts clean.
			s.p.sessions.mu.Lock()
			for _, ss := range s.p.sessions.m {
				if ss.memo != nil {
					t.Errorf("memo kept after a failed compaction")
				}
			}
			s.p.sessions.mu.Unlock()
		})
	}
}

// A panic anywhere on the request path fails open: before the answer has
// started, the client's exact bytes go upstream; after, the client keeps
// its answer and the proxy keeps serving.
func TestFailOpenOnPanic(t *testing.T) {
	boom := func() { panic("boom") }
	cases := []struct {
		name      string
		set       func(*hooks)
		reason    string
		compacted bool // the panic comes after the compacted request went up
	}{
		{"plan (window, detection, counting)", func(h *hooks) { h.plan = boom }, "internal", false},
		{"compaction", func(h *hooks) { h.compact = boom }, "internal", false},
		{"send", func(h *hooks) { h.send = boom }, "internal", false},
		{"finish (after the answer)", func(h *hooks) { h.finish = boom }, "internal-after-answer", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp}, func(c *Config) { c.Window = 8192 })
			tc.set(&s.p.hooks)
			body := overBudget(9)
			code, resp := s.post("/v1/chat/completions", body)
			if code != 200 || !bytes.Contains(resp, []byte(`"content":"ok, turn `)) {
				t.Fatalf("HTTP %d %.200s", code, resp)
			}
			chats := s.st.Chat()
			if len(chats) != 1 || bytes.Equal(chats[0].Body, body) == tc.compacted {
				t.Fatalf("the backend got %d chat requests; the client's exact bytes: %v", len(chats), len(chats) > 0 && bytes.Equal(chats[0].Body, body))
			}
			if n := s.p.Stats().FailOpen[tc.reason]; n != 1 {
				t.Fatalf("fail-open %v, want %s", s.p.Stats().FailOpen, tc.reason)
			}
			// The proxy still serves, and compacts once the fault is gone.
			s.p.hooks = hooks{}
			if code, _ := s.post("/v1/chat/completions", overBudget(10)); code != 200 || !isCompacted(s.lastChat().Body) {
				t.Fatalf("after the panic: HTTP %d, compacted %v", code, isCompacted(s.lastChat().Body))
			}
		})
	}
}

// A backend that states no window: the first request goes up as sent and
// is rejected; when the compaction for the retry fails, the client gets
// the backend's own error, and nothing else was sent upstream.
func TestFailOpenOnOverflowRetry(t *testing.T) {
	cases := []struct {
		name   string
		stub   func(*stubbackend.Server)
		hooks  func(*hooks)
		reason string
		calls  int
	}{
		{"summary error", func(s *stubbackend.Server) { s.SummaryStatus = 500 }, nil, "summary-error", 2},
		{"panic", nil, func(h *hooks) { h.compact = func() { panic("boom") } }, "internal", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &stubbackend.Server{Kind: stubbackend.OpenAI, Window: 8192}
			if tc.stub != nil {
				tc.stub(st)
			}
			logPath := filepath.Join(t.TempDir(), LogFile)
			s := newStack(t, st, func(c *Config) { c.Backend, c.LogPath = "openai", logPath })
			if tc.hooks != nil {
				tc.hooks(&s.p.hooks)
			}
			body := overBudget(10)
			code, resp := s.post("/v1/chat/completions", body)
			chats := s.st.Chat()
			if len(chats) != 1 || !bytes.Equal(chats[0].Body, body) {
				t.Fatalf("%d chat requests upstream; want only the client's bytes", len(chats))
			}
			direct, err := http.Post(strings.TrimSuffix(s.p.up.base.String(), "/")+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := io.ReadAll(direct.Body)
			direct.Body.Close()
			if code != 400 || !bytes.Equal(resp, want) {
				t.Fatalf("HTTP %d %s; want the backend's own error %s", code, resp, want)
			}
			stats := s.p.Stats()
			if stats.OverflowErrors != 1 || stats.OverflowRetries != 0 || stats.FailOpen[tc.reason] != 1 || stats.Compacted != 0 {
				t.Fatalf("stats %+v", stats)
			}
			if n := len(s.st.Summaries()); n != tc.calls || stats.SummaryCalls != tc.calls {
				t.Errorf("%d summary calls (stats %d), want %d", n, stats.SummaryCalls, tc.calls)
			}
			checkLogAgrees(t, s.p, logPath)
		})
	}
}

// A span the real git archive cannot write (the writer's ref is locked by
// another live process) fails open; once the lock is gone the proxy
// compacts and archives again.
func TestFailOpenSpanWriteGitStore(t *testing.T) {
	dir, _ := bareRepo(t, "")
	store, err := gitstore.Open(gitstore.Location{GitDir: dir, CommonDir: dir}, gitstore.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(dir, "refs", "lossless", "proxy-test.lock")
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		t.Fatal(err)
	}
	// The lock names this (live) process: it is not stale, nobody may
	// remove it.
	if err := os.WriteFile(lockPath, []byte("lossless-pid "+itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "lossless", "proxy", LogFile)
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp}, func(c *Config) {
		c.Archive, c.Store, c.Writer, c.LogPath, c.Window = nil, store, "proxy-test", logPath, 8192
	})
	body := overBudget(9)
	if code, resp := s.post("/v1/chat/completions", body); code != 200 {
		t.Fatalf("HTTP %d %s", code, resp)
	}
	if !bytes.Equal(s.lastChat().Body, body) {
		t.Fatal("the backend did not get the client's exact bytes")
	}
	if fo := s.p.Stats().FailOpen; fo["span-write"] != 1 {
		t.Fatalf("fail-open %v", fo)
	}
	ctx := context.Background()
	if evs, err := store.Events(ctx, gitstore.Query{Op: "span", Source: "proxy"}); err != nil || len(evs) != 0 {
		t.Fatalf("%d spans stored while the ref was locked (%v)", len(evs), err)
	}
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	if code, _ := s.post("/v1/chat/completions", overBudget(10)); code != 200 || !isCompacted(s.lastChat().Body) {
		t.Fatalf("after the lock was released: HTTP %d, compacted %v", code, isCompacted(s.lastChat().Body))
	}
	evs, err := store.Events(ctx, gitstore.Query{Op: "span", Source: "proxy"})
	if err != nil || len(evs) != 1 || !bytes.Contains(s.lastChat().Body, []byte(SpanIDOf(&evs[0]))) {
		t.Fatalf("span events %d (%v)", len(evs), err)
	}
	if rep, err := store.Verify(ctx, "proxy-test", seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	checkLogAgrees(t, s.p, logPath)
}

// Error answers of any size reach the client whole: the proxy reads the
// first MiB to tell an overflow apart and relays the rest unread.
func TestLargeErrorBodyRelayedWhole(t *testing.T) {
	big := append([]byte(`{"error":{"message":"upstream trouble","detail":"`), bytes.Repeat([]byte("0123456789abcdef"), 3<<16)...)
	big = append(big, `"}}`...)
	for _, tc := range []struct {
		name   string
		status int
		length bool
	}{{"400 with length", 400, true}, {"500 chunked", 500, false}, {"422 with length", 422, true}} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				if tc.length {
					w.Header().Set("Content-Length", itoa(len(big)))
				}
				w.WriteHeader(tc.status)
				w.Write(big)
			}))
			defer up.Close()
			cfg := DefaultConfig()
			cfg.Upstream, cfg.Archive, cfg.Backend, cfg.Window, cfg.LogPath = up.URL, &MemoryArchive{}, "openai", 8192, "-"
			p, err := New(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tc.status || !bytes.Equal(got, big) {
				t.Fatalf("HTTP %d, %d of %d bytes (%v)", resp.StatusCode, len(got), len(big), err)
			}
		})
	}
}

// Hostile bodies pass through untouched and never break the proxy.
func TestHostileBodies(t *testing.T) {
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.OpenAI}, func(c *Config) { c.Window = 8192 })
	big := make([]byte, 0, 50<<20+100)
	big = append(big, `{"model":"m","messages":[{"role":"user","content":"`...)
	big = append(big, bytes.Repeat([]byte("all work and no play "), (50<<20)/21)...)
	big = append(big, `"}]}`...)
	bodies := map[string][]byte{
		"empty array":        []byte(`[]`),
		"null":               []byte(`null`),
		"bad json":           []byte(`{"model":"m","messages":[{"role":"user","content":"unterminated`),
		"empty":              {},
		"messages string":    []byte(`{"model":"m","messages":"hello"}`),
		"messages numbers":   []byte(`{"model":"m","messages":[1,2,3]}`),
		"no messages":        []byte(`{"model":"m"}`),
		"nested garbage":     []byte(`{"model":"m","messages":[{"role":"user","content":[[[[{"a":"}"}]]]]}], "x": }`),
		"deep nesting":       append(append([]byte(`{"messages":`), bytes.Repeat([]byte("["), 100000)...), bytes.Repeat([]byte("]"), 100000)...),
		"50 MB (over limit)": big,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			s.st.Reset()
			code, _ := s.post("/v1/chat/completions", body)
			reqs := s.st.Requests()
			var got []byte
			for _, r := range reqs {
				if r.Path == "/v1/chat/completions" {
					got = r.Body
				}
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("backend got %d bytes, client sent %d", len(got), len(body))
			}
			if code == 0 || code == http.StatusBadGateway {
				t.Fatalf("HTTP %d", code)
			}
		})
	}
	// The proxy still works afterwards.
	if code, _ := s.post("/v1/chat/completions", []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)); code != 200 {
		t.Fatalf("after hostile bodies: HTTP %d", code)
	}
}

func TestUpstreamDown(t *testing.T) {
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.OpenAI}, func(c *Config) { c.Window = 8192 })
	s.st.Close()
	code, body := s.post("/v1/chat/completions", []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if code != http.StatusBadGateway || !bytes.Contains(body, []byte("unreachable")) {
		t.Fatalf("HTTP %d %s", code, body)
	}
	code, body = s.post("/v1/messages", []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	if code != http.StatusBadGateway || !bytes.Contains(body, []byte(`"type":"error"`)) {
		t.Fatalf("anthropic: HTTP %d %s", code, body)
	}
}
