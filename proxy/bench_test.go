package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// BenchmarkForwardInProcess measures the proxy's own work for a request
// that fits (no network: the handler is called directly, the upstream is
// an in-process server answering a fixed body).
func BenchmarkForwardInProcess(b *testing.B) {
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer up.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.Backend, cfg.Window, cfg.LogPath = up.URL, &MemoryArchive{}, "openai", 1<<20, "-"
	p, err := New(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	c := stubbackend.NewConversation("m", "You are a coding agent.")
	for _, st := range stubbackend.AgentScript(30, 1) {
		c.ToolCall(st.CallID, "read_file", `{}`, st.Result)
	}
	body := c.Body(false)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "http://127.0.0.1:8786/v1/chat/completions", bytes.NewReader(body))
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkCompactReuse measures a compaction served from the memo: the
// common compacting request of a long session.
func BenchmarkCompactReuse(b *testing.B) {
	st := &stubbackend.Server{Kind: stubbackend.OpenAI}
	up, _ := st.Start()
	defer st.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.Backend, cfg.Window, cfg.LogPath = up, &MemoryArchive{}, "openai", 8192, "-"
	p, err := New(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	c := stubbackend.NewConversation("m", "You are a coding agent.")
	steps := stubbackend.AgentScript(60, 1)
	var body []byte
	for _, s := range steps[:40] {
		c.ToolCall(s.CallID, "read_file", `{}`, s.Result)
		c.Assistant("next")
	}
	c.ToolCall("x", "read_file", `{}`, "short")
	body = c.Body(false)
	send := func() int {
		req := httptest.NewRequest("POST", "http://127.0.0.1:8786/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set(SessionHeader, "bench")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		return w.Code
	}
	send() // summarises
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send()
	}
	b.StopTimer()
	b.ReportMetric(p.Stats().AddedMsCompP50, "added-ms-p50")
	if st := p.Stats(); st.SummariesReused < b.N {
		b.Fatalf("reused %d of %d", st.SummariesReused, b.N)
	}
}

// BenchmarkForwardJournal measures what full capture adds to a request
// that fits, against the same request with capture off (the handler is
// called directly, the upstream answers a fixed body, spans go to a
// MemoryArchive so that only the proxy's own work is timed; the journal's
// writer runs in the background as in production). resent: the same
// history again (nothing new to journal); new-message: every request's
// last message differs from the one before (one new message per turn, the
// common case); new-session: every request is a session the journal has
// not seen (every message new: the worst case). added-ms-p50 is the
// proxy's own measure of its added latency (Stats).
func BenchmarkForwardJournal(b *testing.B) {
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer up.Close()
	c := stubbackend.NewConversation("m", "You are a coding agent.")
	for _, st := range stubbackend.AgentScript(30, 1) {
		c.ToolCall(st.CallID, "read_file", `{}`, st.Result)
	}
	var bodies [2][]byte
	for k, last := range []string{"next, please (a)", "next, please (b)"} {
		ck := stubbackend.Conversation{Model: c.Model, Messages: slices.Clone(c.Messages)}
		ck.User(last)
		bodies[k] = ck.Body(false)
	}
	for _, mode := range []string{"off", "resent", "new-message", "new-session"} {
		b.Run(mode, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Upstream, cfg.Archive, cfg.Backend, cfg.Window, cfg.LogPath = up.URL, &MemoryArchive{}, "openai", 1<<20, "-"
			if mode != "off" {
				cfg.Capture = CaptureJournal
			}
			p, err := New(b.Context(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			b.SetBytes(int64(len(bodies[0])))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				body, session := bodies[0], "bench"
				switch mode {
				case "new-message":
					body = bodies[i%2]
				case "new-session":
					session = "bench-" + itoa(i)
				}
				req := httptest.NewRequest("POST", "http://127.0.0.1:8786/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set(SessionHeader, session)
				w := httptest.NewRecorder()
				p.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
			b.StopTimer()
			b.ReportMetric(p.Stats().AddedMsPlainP50, "added-ms-p50")
			if err := p.FlushJournal(context.Background()); err != nil {
				b.Fatal(err)
			}
			if js := p.Stats().Journal; mode != "off" && (js.Failed != 0 || js.Dropped != 0 || js.Messages == 0) {
				b.Fatalf("journal %+v", js)
			}
		})
	}
}

// BenchmarkStaleRecall measures a compacted request served from the memo
// whose last user message names a detail only the folded turns hold,
// with stale recall on and off: the difference is what recall adds
// (finding the words, matching the session's lines, quoting them).
func BenchmarkStaleRecall(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			st := &stubbackend.Server{Kind: stubbackend.OpenAI, Summary: forgetfulSummary}
			up, _ := st.Start()
			defer st.Close()
			cfg := DefaultConfig()
			cfg.Upstream, cfg.Archive, cfg.Backend, cfg.Window, cfg.LogPath = up, &MemoryArchive{}, "openai", 8192, "-"
			cfg.Recall = on
			p, err := New(b.Context(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			c := stubbackend.NewConversation("m", "You are a coding agent.")
			details := recallDetails(false)
			for i, s := range stubbackend.AgentScript(40, 1) {
				if d, ok := details[i+1]; ok {
					c.User(d)
				}
				c.ToolCall(s.CallID, "read_file", `{}`, s.Result)
				c.Assistant("next")
			}
			c.User(recallQuestions[36])
			body := c.Body(false)
			send := func() int {
				req := httptest.NewRequest("POST", "http://127.0.0.1:8786/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set(SessionHeader, "bench")
				w := httptest.NewRecorder()
				p.ServeHTTP(w, req)
				return w.Code
			}
			send() // summarises and indexes
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if code := send(); code != 200 {
					b.Fatal(code)
				}
			}
			b.StopTimer()
			st2 := p.Stats()
			b.ReportMetric(st2.AddedMsCompP50, "added-ms-p50")
			if on && st2.Recalls < b.N || !on && st2.Recalls != 0 {
				b.Fatalf("recall %v: %d recalls in %d requests", on, st2.Recalls, b.N+1)
			}
		})
	}
}
