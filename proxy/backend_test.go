package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// Each backend: which window is used and how tokens are counted.
func TestWindowAndCountSource(t *testing.T) {
	cases := []struct {
		name       string
		stub       *stubbackend.Server
		window     int // configured
		wantWindow int
		wantSrc    string // window source
		wantCount  string // count source with usage off
		probe      string // a route the proxy must have called
	}{
		{"llama.cpp", &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}, 0, 8192, "llama.cpp /props", sourceExact, "/tokenize"},
		{"vLLM", &stubbackend.Server{Kind: stubbackend.VLLM, Window: 16384}, 0, 16384, "vLLM /v1/models", sourceExact, "/tokenize"},
		{"ollama loaded", &stubbackend.Server{Kind: stubbackend.Ollama, Window: 8192, OllamaLoaded: true}, 0, 8192, "ollama /api/ps", sourceEstimate, "/api/ps"},
		{"ollama num_ctx", &stubbackend.Server{Kind: stubbackend.Ollama, Window: 8192, OllamaNumCtx: 12288}, 0, 12288, "ollama /api/show num_ctx", sourceEstimate, "/api/show"},
		{"ollama default", &stubbackend.Server{Kind: stubbackend.Ollama, Window: 8192}, 0, 4096, "ollama default", sourceEstimate, "/api/show"},
		{"ollama default does not lower a configured window", &stubbackend.Server{Kind: stubbackend.Ollama, Window: 8192}, 16384, 16384, "configured", sourceEstimate, "/api/show"},
		{"generic configured", &stubbackend.Server{Kind: stubbackend.OpenAI}, 16384, 16384, "configured", sourceEstimate, ""},
		{"reported lowers configured", &stubbackend.Server{Kind: stubbackend.VLLM, Window: 8192}, 32768, 8192, "vLLM /v1/models", sourceExact, ""},
		{"reported never raises configured", &stubbackend.Server{Kind: stubbackend.VLLM, Window: 32768}, 8192, 8192, "configured", sourceExact, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.stub
			st.NoUsage = true
			s := newStack(t, st, func(c *Config) { c.Window = tc.window })
			// About 60% of the window: big enough to be counted exactly.
			c := stubbackend.NewConversation("stub-model", "sys")
			c.User(stubbackend.Code(1, tc.wantWindow*4*6/10))
			if code, b := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
				t.Fatalf("HTTP %d %s", code, b)
			}
			u, ok := s.p.Usage("")
			if !ok {
				t.Fatal("no usage")
			}
			if u.Window != tc.wantWindow || u.WindowSource != tc.wantSrc || u.CountSource != tc.wantCount {
				t.Fatalf("window %d (%s), count %s; want %d (%s), %s", u.Window, u.WindowSource, u.CountSource, tc.wantWindow, tc.wantSrc, tc.wantCount)
			}
			if tc.probe != "" {
				found := false
				for _, r := range s.st.Requests() {
					found = found || r.Path == tc.probe
				}
				if !found {
					t.Errorf("the proxy never called %s", tc.probe)
				}
			}
		})
	}
}

// The estimate calibrates itself from reported usage.
func TestCalibrationFromUsage(t *testing.T) {
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.OpenAI}, func(c *Config) { c.Window = 32768 })
	c := stubbackend.NewConversation("stub-model", "sys")
	for i := 1; i <= 3; i++ {
		c.User(stubbackend.DemoTurn(i))
		s.post("/v1/chat/completions", c.Body(false))
		c.Assistant("ok")
	}
	ms := s.p.model("stub-model")
	ratio, n := ms.calibration()
	if n != 3 {
		t.Fatalf("%d calibration samples", n)
	}
	c.User("one more")
	body := c.Body(false)
	req := parseRequest(body, openAI)
	est := ms.estimate(req.totalChars(), 1)
	truth := stubbackend.Tokens(stubbackend.Template("", messagesOf(t, body)))
	if d := float64(est-truth) / float64(truth); d < -0.05 || d > 0.08 {
		t.Fatalf("calibrated estimate %d vs %d (ratio %.3f)", est, truth, ratio)
	}
	u, _ := s.p.Usage("")
	if u.CountSource != sourceReported {
		t.Errorf("count source %s after a response with usage", u.CountSource)
	}
}

// Ollama cuts the front of an over-long prompt without an error; the
// proxy notices from the usage, lowers the window, and compacts next time.
func TestOllamaSilentTruncation(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.Ollama, Window: 4096} // runtime window; not loaded, no num_ctx
	s := newStack(t, st, func(c *Config) { c.Window = 16384 })
	c := stubbackend.NewConversation("stub-model", "sys")
	for i := 1; i <= 3; i++ {
		c.User(fmt.Sprintf("question %d about this code:\n%s", i, stubbackend.Code(uint64(i), 2500)))
		if code, _ := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
			t.Fatal(code)
		}
		c.Assistant("short answer")
	}
	c.User(stubbackend.Code(7, 36000)) // about 10,000 tokens with the history: over 4,096, under 16,384
	if code, _ := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
		t.Fatal(code)
	}
	if !s.lastChat().Truncated {
		t.Fatal("the stub did not truncate: test setup")
	}
	stats := s.p.Stats()
	if stats.Truncations != 1 {
		t.Fatalf("truncations %d", stats.Truncations)
	}
	found := false
	for _, e := range s.p.events.since(0) {
		found = found || e.Kind == "truncation"
	}
	if !found {
		t.Error("no truncation event")
	}
	u, _ := s.p.Usage("")
	if u.Window != 4096 || u.WindowSource != "truncation" || u.Truncations != 1 {
		t.Fatalf("usage after truncation %+v", u)
	}
	// The next turn fits: the proxy compacts (spilling the oversized
	// message) instead of letting Ollama cut it.
	c.Assistant("ok")
	c.User("and?")
	if code, _ := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
		t.Fatal(code)
	}
	if r := s.lastChat(); r.Truncated || r.Prompt > 4096 {
		t.Fatalf("still truncated: %d tokens", r.Prompt)
	}
}

// A backend that reports no window: the first overflow error teaches it,
// and the request is compacted and retried once.
func TestOverflowErrorRetry(t *testing.T) {
	for _, kind := range []string{stubbackend.OpenAI, stubbackend.VLLM, stubbackend.LlamaCpp} {
		t.Run(kind, func(t *testing.T) {
			st := &stubbackend.Server{Kind: kind, Window: 8192}
			s := newStack(t, st, func(c *Config) { c.Backend = "openai" }) // no detection, no exact count
			code, b := s.post("/v1/chat/completions", overBudget(10))
			if code != 200 {
				t.Fatalf("HTTP %d %s", code, b)
			}
			stats := s.p.Stats()
			if stats.OverflowErrors != 1 || stats.OverflowRetries != 1 || stats.Compacted != 1 {
				t.Fatalf("stats %+v", stats)
			}
			u, _ := s.p.Usage("")
			if u.Window != 8192 || u.WindowSource != "overflow error" {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}

func TestParseOverflow(t *testing.T) {
	cases := []struct {
		body           string
		window, prompt int
	}{
		{`{"error":{"code":400,"message":"request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":13392,"n_ctx":8192}}`, 8192, 13392},
		{`{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4500 in the messages, 500 in the completion).","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 4096, 4500},
		{`{"object":"error","message":"The input (9000 tokens) is longer than the model's context length (8192 tokens).","type":"BadRequestError","code":400}`, 8192, 9000},
		{`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, 200000, 210000},
		{`{"error":{"code":"context_length_exceeded","message":"too long"}}`, 0, 0},
	}
	for _, c := range cases {
		ov, ok := parseOverflow(400, []byte(c.body))
		if !ok || ov.window != c.window || ov.prompt != c.prompt {
			t.Errorf("%.60s: %+v %v", c.body, ov, ok)
		}
	}
	for _, body := range []string{`{"error":{"message":"invalid api key"}}`, `{"error":"model not found"}`} {
		if _, ok := parseOverflow(400, []byte(body)); ok {
			t.Errorf("%s taken for an overflow", body)
		}
	}
	if _, ok := parseOverflow(401, []byte(cases[0].body)); ok {
		t.Error("a 401 taken for an overflow")
	}
}

// Streamed answers reach the client byte for byte, and usage is learned
// from the stream.
func TestStreamByteEquality(t *testing.T) {
	for _, kind := range []string{stubbackend.LlamaCpp, stubbackend.VLLM, stubbackend.Anthropic} {
		t.Run(kind, func(t *testing.T) {
			st := &stubbackend.Server{Kind: kind, Window: 8192}
			s := newStack(t, st, nil)
			path := "/v1/chat/completions"
			body := []byte(`{"model":"stub-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there, stream me something"}]}`)
			if kind == stubbackend.Anthropic {
				path = "/v1/messages"
				body = []byte(`{"model":"stub-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello there, stream me something"}]}`)
			}
			direct := func() []byte {
				resp, err := http.Post(strings.TrimSuffix(s.p.up.base.String(), "/")+path, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return b
			}()
			code, via := s.post(path, body)
			if code != 200 || !bytes.Equal(via, direct) || !bytes.Contains(via, []byte("data: ")) {
				t.Fatalf("HTTP %d; stream through the proxy differs from direct:\n%s\n---\n%s", code, via, direct)
			}
			u, ok := s.p.Usage("")
			want := s.lastChat().Prompt
			if !ok || u.Used != want || u.CountSource != sourceReported {
				t.Fatalf("usage from the stream: %+v, want %d reported", u, want)
			}
		})
	}
}

// The proxy flushes each chunk as it arrives: the upstream does not send
// its second chunk until the client has seen the first.
func TestStreamFlushesPerChunk(t *testing.T) {
	seen := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			return // the client never saw chunk one: the proxy buffered
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.Backend, cfg.Window = up.URL, &MemoryArchive{}, "openai", 8192
	p, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	if !bytes.Contains(buf[:n], []byte("one")) {
		t.Fatalf("first read %q", buf[:n])
	}
	close(seen)
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(rest, []byte("[DONE]")) {
		t.Fatalf("rest %q", rest)
	}
}

// Other routes pass through unchanged: method, path, query, headers, body.
func TestPassthrough(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(r.Context())
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(201)
		w.Write([]byte(`{"done":true}` + "\n"))
	}))
	defer up.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive = up.URL, &MemoryArchive{}
	p, _ := New(t.Context(), cfg)
	srv := httptest.NewServer(p)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/api/chat?x=1&y=%20", strings.NewReader(`{"model":"llama3","messages":[]}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("X-Custom", "v")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("X-Upstream") != "yes" || string(body) != `{"done":true}`+"\n" {
		t.Fatalf("response %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if got.URL.RequestURI() != "/api/chat?x=1&y=%20" || got.Header.Get("Authorization") != "Bearer k" || got.Header.Get("X-Custom") != "v" || string(gotBody) != `{"model":"llama3","messages":[]}` {
		t.Fatalf("upstream saw %s %v %q", got.URL, got.Header, gotBody)
	}
	if got.Header.Get("X-Forwarded-For") != "" || got.Header.Get("User-Agent") != "Go-http-client/1.1" {
		t.Errorf("headers added or changed: %v", got.Header)
	}
}

// The Anthropic route: tool_use / tool_result pairs stay together,
// turns alternate, the system field is untouched.
func TestAnthropicRoute(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.Anthropic, Window: 16384}
	s := newStack(t, st, func(c *Config) { c.Window = 16384 })
	system := `[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}]`
	var msgs []any
	msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Refactor the writer. Remember this: keep the format."}}})
	for i, step := range stubbackend.AgentScript(30, 5) {
		id := fmt.Sprintf("toolu_%02d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "Reading " + step.Path},
				map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": step.Path}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": id, "content": step.Result, "cache_control": map[string]any{"type": "ephemeral"}},
			}},
		)
		// Claude Code moves its cache markers: drop the older one.
		if i > 0 {
			prev := msgs[len(msgs)-3].(map[string]any)["content"].([]any)[0].(map[string]any)
			delete(prev, "cache_control")
		}
		body, _ := json.Marshal(map[string]any{"model": "stub-model", "max_tokens": 2048, "system": json.RawMessage(system), "messages": msgs, "stream": i%2 == 0})
		code, b := s.post("/v1/messages?beta=true", body, "X-Api-Key", "sk-ant-test", "Anthropic-Version", "2023-06-01")
		if code != 200 {
			t.Fatalf("step %d: HTTP %d %s", i, code, b)
		}
		r := s.lastChat()
		var fwd struct {
			System   json.RawMessage `json:"system"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(r.Body, &fwd)
		if string(fwd.System) != system {
			t.Fatalf("system changed: %s", fwd.System)
		}
		if fwd.Messages[0].Role != "user" {
			t.Fatalf("first message %s", fwd.Messages[0].Role)
		}
		var prevUses map[string]bool
		for j, m := range fwd.Messages {
			if j > 0 && m.Role == fwd.Messages[j-1].Role {
				t.Fatalf("step %d: roles do not alternate at %d", i, j)
			}
			var blocks []map[string]any
			json.Unmarshal(m.Content, &blocks)
			uses := map[string]bool{}
			for _, bl := range blocks {
				switch bl["type"] {
				case "tool_use":
					uses[bl["id"].(string)] = true
				case "tool_result":
					if !prevUses[bl["tool_use_id"].(string)] {
						t.Fatalf("step %d: tool_result %s without its tool_use in the message before", i, bl["tool_use_id"])
					}
				}
			}
			prevUses = uses
		}
	}
	stats := s.p.Stats()
	if stats.Compacted == 0 || stats.SummariesReused == 0 {
		t.Fatalf("stats %+v", stats)
	}
	for _, r := range s.st.Summaries() {
		if r.Header.Get("X-Api-Key") != "sk-ant-test" || r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Path != "/v1/messages" {
			t.Fatalf("summary call %s headers %v", r.Path, r.Header)
		}
	}
	// The moving cache markers did not defeat the memo: summaries are
	// extended, not redone.
	if len(s.st.Summaries()) > stats.Compacted/2+1 {
		t.Errorf("%d summary calls for %d compactions", len(s.st.Summaries()), stats.Compacted)
	}
}

// Small requests, whose estimate is dominated by JSON overhead, are never
// taken for truncations; a window inferred from a truncation is dropped
// when the backend later reads more than it.
func TestNoFalseTruncation(t *testing.T) {
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.OpenAI}, func(c *Config) { c.Window = 32768 })
	for i := 0; i < 30; i++ {
		c := stubbackend.NewConversation("stub-model", "sys")
		c.User(fmt.Sprintf("hi %d", i))
		if code, _ := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
			t.Fatal(code)
		}
	}
	// Big requests of mixed density.
	for i := 0; i < 6; i++ {
		c := stubbackend.NewConversation("stub-model", "sys")
		if i%2 == 0 {
			c.User(stubbackend.Code(uint64(i), 20000))
		} else {
			c.User(strings.Repeat("plain english words in a row, ", 700))
		}
		s.post("/v1/chat/completions", c.Body(false))
	}
	if st := s.p.Stats(); st.Truncations != 0 {
		t.Fatalf("%d false truncations", st.Truncations)
	}
	// An inferred window is dropped when the backend reads more than it
	// (here: a request that went up uncompacted) or when it expires.
	ms := s.p.model("stub-model")
	ms.learn(2000, "truncation")
	if ms.unlearnTruncation(1500) || !ms.unlearnTruncation(2500) {
		t.Fatal("unlearn")
	}
	ms.learn(2000, "truncation")
	if w, _ := ms.window(32768); w != 2000 {
		t.Fatalf("window %d", w)
	}
	ms.mu.Lock()
	ms.learnedAt = time.Now().Add(-truncationTTL - time.Minute)
	ms.mu.Unlock()
	if w, src := ms.window(32768); w != 32768 || src != "configured" {
		t.Fatalf("window %d (%s) after the inferred one expired", w, src)
	}
	// A window stated by an overflow error does not expire.
	ms.learn(16000, "overflow error")
	ms.mu.Lock()
	ms.learnedAt = time.Now().Add(-truncationTTL - time.Minute)
	ms.mu.Unlock()
	if w, _ := ms.window(32768); w != 16000 {
		t.Fatalf("stated window %d", w)
	}
}

// A backend behind an authenticating gateway answers nothing without the
// client's key: detection, window and tokenizer calls carry it, so the
// proxy still counts exactly and knows the window.
func TestProbesCarryCredentials(t *testing.T) {
	cases := []struct {
		name      string
		stub      *stubbackend.Server
		wantSrc   string
		wantCount string
		routes    []string // routes the proxy must have called with the key
	}{
		{"llama.cpp", &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}, "llama.cpp /props", sourceExact, []string{"/props", "/apply-template", "/tokenize"}},
		{"vLLM", &stubbackend.Server{Kind: stubbackend.VLLM, Window: 8192}, "vLLM /v1/models", sourceExact, []string{"/v1/models", "/tokenize"}},
		{"ollama", &stubbackend.Server{Kind: stubbackend.Ollama, Window: 8192, OllamaNumCtx: 8192}, "ollama /api/show num_ctx", sourceEstimate, []string{"/api/version", "/api/ps", "/api/show"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.stub
			st.Auth, st.NoUsage = "sk-gateway-key", true
			s := newStack(t, st, nil)
			c := stubbackend.NewConversation("stub-model", "sys")
			c.User(stubbackend.Code(1, 8192*4*6/10))
			if code, b := s.post("/v1/chat/completions", c.Body(false), "Authorization", "Bearer sk-gateway-key"); code != 200 {
				t.Fatalf("HTTP %d %s", code, b)
			}
			u, ok := s.p.Usage("")
			if !ok || u.Window != 8192 || u.WindowSource != tc.wantSrc || u.CountSource != tc.wantCount {
				t.Fatalf("usage %+v; want window 8192 (%s), count %s", u, tc.wantSrc, tc.wantCount)
			}
			called := map[string]bool{}
			for _, r := range s.st.Requests() {
				if r.Status == http.StatusUnauthorized && r.Path != "/props" && r.Path != "/api/version" && r.Path != "/v1/models" {
					t.Errorf("%s %s sent without the client's key", r.Method, r.Path)
				}
				if r.Header.Get("Authorization") == "Bearer sk-gateway-key" {
					called[r.Path] = true
				}
			}
			for _, route := range tc.routes {
				if !called[route] {
					t.Errorf("the proxy never called %s with the client's key", route)
				}
			}
		})
	}
}

// Detection outlives the request that triggered it: a client that has
// already given up (its context is cancelled) does not leave a wrong
// backend kind or an unknown window cached for everyone after it.
func TestDetectionSurvivesCancelledRequest(t *testing.T) {
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := stubbackend.NewConversation("stub-model", "sys")
	c.User("hello")
	req := httptest.NewRequest("POST", "http://127.0.0.1:8786/v1/chat/completions", bytes.NewReader(c.Body(false))).WithContext(ctx)
	s.p.ServeHTTP(httptest.NewRecorder(), req)
	if got := s.p.Stats().Backend; got != kindLlamaCpp {
		t.Fatalf("backend detected as %q during a cancelled request", got)
	}
	if code, b := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
		t.Fatalf("HTTP %d %s", code, b)
	}
	if u, _ := s.p.Usage(""); u.Window != 8192 || u.WindowSource != "llama.cpp /props" {
		t.Fatalf("usage %+v", u)
	}
}

// Ollama cuts the very first long request of a session, before any
// usage has calibrated the estimate: the cut is still detected, and the
// cut count does not bend the calibration.
func TestOllamaTruncationBeforeCalibration(t *testing.T) {
	cases := []struct {
		name  string
		bytes int // of the first user message
	}{
		{"far over the window", 40000}, // read less than half the raw estimate
		{"pinned at the default window", 21000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &stubbackend.Server{Kind: stubbackend.Ollama, Window: 4096} // not loaded, no num_ctx: runtime default
			s := newStack(t, st, func(c *Config) { c.Window = 16384 })
			c := stubbackend.NewConversation("stub-model", "sys")
			c.User(stubbackend.Code(1, tc.bytes))
			if code, _ := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
				t.Fatal(code)
			}
			if !s.lastChat().Truncated {
				t.Fatal("the stub did not truncate: test setup")
			}
			if n := s.p.Stats().Truncations; n != 1 {
				t.Fatalf("%d truncations detected on the first request", n)
			}
			ms := s.p.model("stub-model")
			if _, n := ms.calibration(); n != 0 {
				t.Fatalf("a truncated count calibrated the estimate (%d samples)", n)
			}
			if u, _ := s.p.Usage(""); u.Window != 4096 || u.WindowSource != "truncation" {
				t.Fatalf("usage %+v", u)
			}
			// Later turns are compacted to fit; their honest counts
			// calibrate the estimate to the stub's 4 bytes a token.
			for i := 0; i < 3; i++ {
				c.Assistant("ok")
				c.User(fmt.Sprintf("and this one?\n%s", stubbackend.Code(uint64(i+2), 4000)))
				if code, _ := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
					t.Fatal(code)
				}
				if r := s.lastChat(); r.Truncated || r.Prompt > 4096 {
					t.Fatalf("turn %d still truncated: %d tokens", i+2, r.Prompt)
				}
			}
			ratio, n := ms.calibration()
			if n == 0 || ratio < 0.75 || ratio > 1.05 {
				t.Fatalf("calibration ratio %.3f from %d samples; want about 3.5/4", ratio, n)
			}
			if n := s.p.Stats().Truncations; n != 1 {
				t.Fatalf("%d truncations", n)
			}
		})
	}
}
