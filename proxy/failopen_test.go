package proxy

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/proxy/stub"
)

// overBudget is a conversation well over an 8,192-token budget.
func overBudget(turns int) []byte {
	c := stub.NewConversation("stub-model", "sys")
	for i := 1; i <= turns; i++ {
		c.User(stub.DemoTurn(i))
		c.Assistant("ok")
	}
	c.User("go on")
	return c.Body(false)
}

// Every failure path sends the client's exact bytes upstream.
func TestFailOpen(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		stub   func(*stub.Server)
		cfg    func(*Config)
		body   []byte
		calls  int // summary calls expected
	}{
		{name: "summary error", reason: "summary-error", stub: func(s *stub.Server) { s.SummaryStatus = 500 }, calls: 2},
		{name: "summary empty", reason: "summary-empty", stub: func(s *stub.Server) {
			s.Summary = func(*stub.Request, string) string { return "  " }
		}, calls: 2},
		{name: "summary only reasoning", reason: "summary-empty", stub: func(s *stub.Server) {
			s.Summary = func(*stub.Request, string) string { return "<think>long thoughts about the transcript</think>" }
		}, calls: 2},
		{name: "summary too short", reason: "summary-short", stub: func(s *stub.Server) {
			s.Summary = func(*stub.Request, string) string { return "Fine." }
		}, calls: 2},
		{name: "summary timeout", reason: "summary-timeout", stub: func(s *stub.Server) { s.SummaryDelay = 300 * time.Millisecond },
			cfg: func(c *Config) { c.SummaryTimeout = 50 * time.Millisecond }, calls: 1},
		{name: "span write", reason: "span-write", cfg: func(c *Config) { c.Archive = &MemoryArchive{Fail: errors.New("disk full")} }, calls: 1},
		{name: "system messages alone too large", reason: "too-large", body: func() []byte {
			c := stub.NewConversation("stub-model", "rules:\n"+stub.Code(5, 40000))
			c.User("hi")
			return c.Body(false)
		}()},
		{name: "message not an object with a role", reason: "unparsable", body: []byte(`{"model":"m","messages":[{"content":"` + strings.Repeat("x ", 40000) + `"}]}`)},
		{name: "body over max-body", reason: "body-too-large", cfg: func(c *Config) { c.MaxBody = 1024 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &stub.Server{Kind: stub.LlamaCpp, Window: 0} // accepts anything
			if tc.stub != nil {
				tc.stub(st)
			}
			s := newStack(t, st, func(c *Config) {
				c.Window = 8192
				if tc.cfg != nil {
					tc.cfg(c)
				}
			})
			body := tc.body
			if body == nil {
				body = overBudget(9)
			}
			code, resp := s.post("/v1/chat/completions", body)
			if code != 200 {
				t.Fatalf("HTTP %d %s", code, resp)
			}
			if got := s.lastChat().Body; !bytes.Equal(got, body) {
				t.Fatalf("the backend did not get the client's exact bytes (%d vs %d bytes)", len(got), len(body))
			}
			st2 := s.p.Stats()
			if st2.FailOpen[tc.reason] != 1 || st2.Compacted != 0 {
				t.Fatalf("fail-open %v, compacted %d; want %s", st2.FailOpen, st2.Compacted, tc.reason)
			}
			deadline := time.Now().Add(2 * time.Second)
			for len(s.st.Summaries()) < tc.calls && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // a timed-out call is recorded when the stub answers
			}
			if n := len(s.st.Summaries()); n != tc.calls {
				t.Errorf("%d summary calls, want %d", n, tc.calls)
			}
			if len(s.arch.Spans()) != 0 {
				t.Errorf("spans archived for a request that went up uncompacted")
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

func TestFailOpenOnPanic(t *testing.T) {
	testHookCompact = func(*compaction) { panic("boom") }
	defer func() { testHookCompact = nil }()
	s := newStack(t, &stub.Server{Kind: stub.LlamaCpp}, func(c *Config) { c.Window = 8192 })
	body := overBudget(9)
	if code, _ := s.post("/v1/chat/completions", body); code != 200 {
		t.Fatal(code)
	}
	if !bytes.Equal(s.lastChat().Body, body) || s.p.Stats().FailOpen["internal"] != 1 {
		t.Fatalf("panic did not fail open: %v", s.p.Stats().FailOpen)
	}
}

// Hostile bodies pass through untouched and never break the proxy.
func TestHostileBodies(t *testing.T) {
	s := newStack(t, &stub.Server{Kind: stub.OpenAI}, func(c *Config) { c.Window = 8192 })
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
	s := newStack(t, &stub.Server{Kind: stub.OpenAI}, func(c *Config) { c.Window = 8192 })
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
