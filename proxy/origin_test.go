package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// guarded is a proxy on a real 127.0.0.1 listener (as `git lossless
// proxy` runs it) in front of a stub backend, with an in-memory archive.
type guarded struct {
	t    *testing.T
	st   *stubbackend.Server
	arch *MemoryArchive
	srv  *Server
	base string // http://127.0.0.1:PORT
	port string
	logs *syncLines
}

func startGuarded(t *testing.T, mut func(*Config)) *guarded {
	t.Helper()
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	g := &guarded{t: t, st: st, arch: &MemoryArchive{}, logs: &syncLines{}}
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Archive, cfg.LogPath = "127.0.0.1:0", up, g.arch, "-"
	cfg.Logf = g.logs.add
	if mut != nil {
		mut(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Run(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	g.srv, g.base = srv, "http://"+srv.Addr
	g.port = srv.Addr[strings.LastIndexByte(srv.Addr, ':')+1:]
	return g
}

// do sends one request over 127.0.0.1; hdr is key, value, ... where the
// key "Host" sets the Host header the client claims.
func (g *guarded) do(method, path string, body []byte, hdr ...string) (*http.Response, string) {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, g.base+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.idle()
	return resp, string(b)
}

func (g *guarded) idle() {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.srv.Proxy.Idle(ctx); err != nil {
		g.t.Fatal(err)
	}
}

// untouched fails unless the backend has received no request at all
// (no chat, no detection probe, no pass-through), the archive holds no
// span, and the proxy counted no chat request.
func (g *guarded) untouched(what string) {
	g.t.Helper()
	if n := len(g.st.Requests()); n != 0 {
		var paths []string
		for _, r := range g.st.Requests() {
			paths = append(paths, r.Method+" "+r.Path)
		}
		g.t.Errorf("%s: the backend received %d requests: %v", what, n, paths)
	}
	if n := len(g.arch.Spans()); n != 0 {
		g.t.Errorf("%s: %d spans archived", what, n)
	}
	if st := g.srv.Proxy.Stats(); st.Requests != 0 || st.Passthrough != 0 || st.Compacted != 0 {
		g.t.Errorf("%s: the proxy handled it: %d chat requests, %d passed through, %d compacted", what, st.Requests, st.Passthrough, st.Compacted)
	}
}

// longChat is an OpenAI request over the stub's 8,192-token window: the
// proxy compacts it, archiving spans and asking the backend for a
// summary.
func longChat(model string) []byte {
	c := stubbackend.NewConversation(model, "You are a careful code reviewer.")
	for i := 1; i <= 10; i++ {
		c.User(stubbackend.DemoTurn(i))
		c.Assistant(fmt.Sprintf("Reviewed module %d.", i))
	}
	c.User(stubbackend.DemoTurn(11))
	return c.Body(false)
}

// longMessages is the same conversation on the Anthropic route.
func longMessages() []byte {
	var msgs []map[string]any
	for i := 1; i <= 10; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": stubbackend.DemoTurn(i)},
			map[string]any{"role": "assistant", "content": fmt.Sprintf("Reviewed module %d.", i)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": stubbackend.DemoTurn(11)})
	b, _ := json.Marshal(map[string]any{"model": "stub-model", "max_tokens": 512, "system": "You are a careful code reviewer.", "messages": msgs})
	return b
}

// Each attack a web page (or a DNS-rebound name) can make is refused
// with 403 before anything reaches the backend or the archive.
func TestBrowserAttacksRefused(t *testing.T) {
	evil := "http://evil.example"
	for _, tc := range []struct {
		name         string
		method, path string
		body         []byte
		hdr          []string
		why          string // in the refusal's body
	}{
		{"rebound host reads stats", "GET", "/lossless/stats", nil, []string{"Host", "evil.example"}, "Host"},
		{"rebound host with the port reads stats", "GET", "/lossless/stats", nil, []string{"Host", "evil.example:PORT"}, "Host"},
		{"rebound host reads the dashboard", "GET", "/lossless/health", nil, []string{"Host", "evil.example:PORT"}, "Host"},
		{"rebound host drives the model", "POST", "/v1/chat/completions", longChat("stub-model"), []string{"Host", "evil.example:PORT", "Content-Type", "application/json"}, "Host"},
		{"rebound host passes through", "DELETE", "/api/delete", []byte(`{"model":"stub-model"}`), []string{"Host", "evil.example:PORT"}, "Host"},
		{"loopback name on another port", "GET", "/lossless/stats", nil, []string{"Host", "127.0.0.1:1"}, "Host"},
		{"no port where the proxy is not on 80", "GET", "/lossless/stats", nil, []string{"Host", "localhost"}, "Host"},
		{"localhost subdomain", "GET", "/lossless/stats", nil, []string{"Host", "evil.localhost:PORT"}, "Host"},
		{"simple cross-origin POST, OpenAI route", "POST", "/v1/chat/completions", longChat("stub-model"), []string{"Origin", evil, "Content-Type", "text/plain", "Sec-Fetch-Site", "cross-site"}, "Origin"},
		{"simple cross-origin POST, Anthropic route", "POST", "/v1/messages", longMessages(), []string{"Origin", evil, "Content-Type", "text/plain", "Sec-Fetch-Site", "cross-site"}, "Origin"},
		{"cross-origin pass-through DELETE", "DELETE", "/api/delete", []byte(`{"model":"stub-model"}`), []string{"Origin", evil, "Content-Type", "text/plain"}, "Origin"},
		{"cross-origin read of stats", "GET", "/lossless/stats", nil, []string{"Origin", evil}, "Origin"},
		{"cross-origin preflight", "OPTIONS", "/v1/chat/completions", nil, []string{"Origin", evil, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type"}, "Origin"},
		{"Origin: null (sandboxed frame, file://)", "POST", "/v1/chat/completions", longChat("stub-model"), []string{"Origin", "null", "Content-Type", "text/plain"}, "Origin"},
		{"cross-site without Origin", "POST", "/v1/chat/completions", longChat("stub-model"), []string{"Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}, "Sec-Fetch-Site"},
		{"cross-site GET without Origin", "GET", "/lossless/stats", nil, []string{"Sec-Fetch-Site", "cross-site"}, "Sec-Fetch-Site"},
		{"same-site without Origin", "POST", "/v1/chat/completions", longChat("stub-model"), []string{"Sec-Fetch-Site", "same-site", "Content-Type", "text/plain"}, "Sec-Fetch-Site"},
		{"same-site page on another port", "POST", "/v1/chat/completions", longChat("stub-model"), []string{"Origin", "http://127.0.0.1:3000", "Sec-Fetch-Site", "same-site", "Content-Type", "text/plain"}, "Origin"},
		{"same-origin POST from a page on the proxy's origin", "POST", "/v1/chat/completions", longChat("stub-model"), []string{"Origin", "http://127.0.0.1:PORT", "Sec-Fetch-Site", "same-origin", "Content-Type", "application/json"}, "Origin"},
		{"same-origin pass-through GET", "GET", "/api/tags", nil, []string{"Sec-Fetch-Site", "same-origin"}, "Sec-Fetch-Site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGuarded(t, nil)
			for i := range tc.hdr {
				tc.hdr[i] = strings.ReplaceAll(tc.hdr[i], "PORT", g.port)
			}
			resp, body := g.do(tc.method, tc.path, tc.body, tc.hdr...)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("HTTP %d, want 403: %.200s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type %q", ct)
			}
			if !strings.Contains(body, tc.why) || strings.Count(body, "\n") != 1 {
				t.Errorf("refusal body does not say why (%s) in one line: %q", tc.why, body)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("a refusal carries Access-Control-Allow-Origin %q", resp.Header.Get("Access-Control-Allow-Origin"))
			}
			g.untouched(tc.name)
		})
	}
}

// A client's text in the console log stays on its line: a model name with
// a line break, a terminal escape and a Unicode line separator prints as
// one escaped line.
func TestLogInjectionEscaped(t *testing.T) {
	g := startGuarded(t, func(c *Config) { c.Verbose = true })
	model := "x\n[lossless] fake line\x1b[2J\u2028y"
	resp, _ := g.do("POST", "/v1/chat/completions", longChat(model), "Content-Type", "application/json", "X-Lossless-Session", "s\tone")
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	g.logs.mu.Lock()
	lines := append([]string(nil), g.logs.lines...)
	g.logs.mu.Unlock()
	found := false
	for _, l := range lines {
		if strings.ContainsAny(l, "\n\r\x1b\u2028") {
			t.Errorf("a log line carries a raw control character: %q", l)
		}
		if strings.Contains(l, `x\n[lossless] fake line\x1b[2J\u2028y`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no log line shows the model name escaped:\n%s", strings.Join(lines, "\n--\n"))
	}
}

// What the checks let through: loopback names with the proxy's port, no
// browser headers, an address typed by the user, the dashboard reading
// its own data.
func TestOwnClientsAdmitted(t *testing.T) {
	g := startGuarded(t, nil)
	for _, tc := range []struct {
		name string
		path string
		hdr  []string
	}{
		{"127.0.0.1", "/lossless/health?format=json", nil},
		{"localhost", "/lossless/health?format=json", []string{"Host", "localhost:PORT"}},
		{"LocalHost in capitals", "/lossless/health?format=json", []string{"Host", "LocalHost:PORT"}},
		{"another 127/8 address", "/lossless/health?format=json", []string{"Host", "127.5.6.7:PORT"}},
		{"[::1]", "/lossless/health?format=json", []string{"Host", "[::1]:PORT"}},
		{"typed into the address bar", "/lossless/health", []string{"Sec-Fetch-Site", "none", "Sec-Fetch-Mode", "navigate"}},
		{"the dashboard's fetch", "/lossless/stats", []string{"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors"}},
		{"the dashboard's fetch with its Origin", "/lossless/events?after=0", []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://127.0.0.1:PORT"}},
		{"the dashboard on localhost", "/lossless/stats", []string{"Host", "localhost:PORT", "Sec-Fetch-Site", "same-origin", "Origin", "http://localhost:PORT"}},
		{"Node's fetch (sec-fetch-mode only)", "/lossless/stats", []string{"Sec-Fetch-Mode", "cors"}},
	} {
		for i := range tc.hdr {
			tc.hdr[i] = strings.ReplaceAll(tc.hdr[i], "PORT", g.port)
		}
		if resp, body := g.do("GET", tc.path, nil, tc.hdr...); resp.StatusCode != 200 {
			t.Errorf("%s: HTTP %d %.200s", tc.name, resp.StatusCode, body)
		}
	}
	// A chat request from a loopback client without browser headers is
	// compacted and archived as before.
	resp, body := g.do("POST", "/v1/chat/completions", longChat("stub-model"), "Content-Type", "application/json")
	if resp.StatusCode != 200 || len(g.arch.Spans()) == 0 || g.srv.Proxy.Stats().Compacted != 1 {
		t.Fatalf("chat: HTTP %d, %d spans, stats %+v: %.200s", resp.StatusCode, len(g.arch.Spans()), g.srv.Proxy.Stats(), body)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an answer to a non-browser client carries Access-Control-Allow-Origin")
	}
	if st := g.srv.Proxy.Stats(); len(st.Refused) != 0 {
		t.Errorf("refused: %v", st.Refused)
	}
}

// The refusals are counted by reason, and the first of each is logged
// (once, not once per request).
func TestRefusalsCountedAndLoggedOnce(t *testing.T) {
	g := startGuarded(t, nil)
	for i := 0; i < 3; i++ {
		g.do("GET", "/lossless/stats", nil, "Host", "evil.example:"+g.port)
		g.do("POST", "/v1/chat/completions", []byte(`{}`), "Origin", "http://evil.example")
	}
	g.do("POST", "/v1/chat/completions", []byte(`{}`), "Sec-Fetch-Site", "cross-site")
	st := g.srv.Proxy.Stats()
	if st.Refused["host"] != 3 || st.Refused["origin"] != 3 || st.Refused["sec-fetch-site"] != 1 {
		t.Fatalf("refused %v", st.Refused)
	}
	logs := g.logs.String()
	if n := strings.Count(logs, `Host "evil.example:`+g.port+`"`); n != 1 {
		t.Errorf("the Host refusal is logged %d times:\n%s", n, logs)
	}
	if n := strings.Count(logs, `Origin "http://evil.example"`); n != 1 {
		t.Errorf("the Origin refusal is logged %d times:\n%s", n, logs)
	}
	if !strings.Contains(logs, "--allow-origin") {
		t.Errorf("the log does not say how to allow an origin:\n%s", logs)
	}
}

// An origin named with allow-origin may call: its preflight is answered
// by the proxy (never forwarded), its requests reach the backend, and
// every answer carries Access-Control-Allow-Origin for it alone (a
// backend's own CORS headers are dropped).
func TestAllowedOrigin(t *testing.T) {
	const ui = "http://localhost:3000"
	g := startGuarded(t, func(c *Config) { c.AllowOrigins = []string{"http://LOCALHOST:3000/"} })
	resp, body := g.do("OPTIONS", "/v1/chat/completions", nil, "Origin", ui, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, content-type, x-lossless-session", "Access-Control-Request-Private-Network", "true")
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != ui ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		h.Get("Access-Control-Allow-Headers") != "authorization, content-type, x-lossless-session" ||
		h.Get("Access-Control-Allow-Private-Network") != "true" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Fatalf("preflight: HTTP %d %v %q", resp.StatusCode, h, body)
	}
	if n := len(g.st.Requests()); n != 0 {
		t.Fatalf("the preflight was forwarded (%d backend requests)", n)
	}
	// A preflight asking for a malformed header list is answered without
	// echoing it.
	resp, _ = g.do("OPTIONS", "/v1/chat/completions", nil, "Origin", ui, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-a;\\r\\nx-b: 1")
	if resp.Header.Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("echoed a malformed header list: %q", resp.Header.Get("Access-Control-Allow-Headers"))
	}

	resp, body = g.do("POST", "/v1/chat/completions", longChat("stub-model"), "Origin", ui, "Sec-Fetch-Site", "same-site", "Content-Type", "text/plain")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != ui || len(g.arch.Spans()) == 0 {
		t.Fatalf("chat from the allowed origin: HTTP %d ACAO %q, %d spans: %.200s", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), len(g.arch.Spans()), body)
	}
	if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Origin") {
		t.Errorf("no Vary: Origin on %v", resp.Header)
	}
	resp, _ = g.do("GET", "/lossless/stats", nil, "Origin", ui, "Sec-Fetch-Site", "same-site")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != ui {
		t.Errorf("stats from the allowed origin: HTTP %d ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	// The match is exact: another port, scheme or host is refused.
	for _, o := range []string{"http://localhost:3001", "https://localhost:3000", "http://127.0.0.1:3000", "http://localhost:3000.evil.example"} {
		if resp, _ := g.do("GET", "/lossless/stats", nil, "Origin", o); resp.StatusCode != 403 {
			t.Errorf("Origin %s: HTTP %d", o, resp.StatusCode)
		}
	}
}

// The backend's CORS headers never reach the client: the proxy decides
// who may read its answers. And the request the backend gets carries the
// backend's Host, never the client's.
func TestUpstreamHostAndCORSHeaders(t *testing.T) {
	type seen struct{ host, xfh string }
	got := make(chan seen, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.Header.Get("Host")}
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Headers", "*")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"models":[]}`))
	}))
	defer up.Close()
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Archive, cfg.LogPath, cfg.Backend = "127.0.0.1:0", up.URL, &MemoryArchive{}, "-", "ollama"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr[strings.LastIndexByte(srv.Addr, ':')+1:]
	req, _ := http.NewRequest("GET", "http://"+srv.Addr+"/api/tags", nil)
	req.Host = "localhost:" + port
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s := <-got
	if want := strings.TrimPrefix(up.URL, "http://"); s.host != want || s.xfh != "" {
		t.Errorf("the backend saw Host %q (header %q), want its own %q", s.host, s.xfh, want)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("HTTP %d, the backend's CORS headers were relayed: %v", resp.StatusCode, resp.Header)
	}
}

// trickle sends path's headers announcing a body of size bytes, then the
// body one byte per tick, until the proxy answers or drops the
// connection; bounded, it fails if the proxy never does. It returns the
// answer's status (0 when the connection was cut without one).
func trickle(t *testing.T, addr, path string, size int) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, addr, size)
	status := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			status <- 0 // reset or closed: cut without an answer
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for sent := 1; sent < size-1; sent++ {
		select {
		case s := <-status:
			return s
		case <-tick.C:
			if _, err := c.Write([]byte(" ")); err != nil {
				return <-status // the proxy closed the connection
			}
		}
	}
	t.Fatalf("%s: the proxy read a %d-byte body trickled over %d ticks without cutting it", path, size, size)
	return 0
}

// A client that sends its headers and then trickles the body is cut
// after body-timeout: answered 408 (or dropped), nothing forwarded,
// nothing archived.
func TestSlowBodyCut(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		t.Run(path, func(t *testing.T) {
			g := startGuarded(t, func(c *Config) { c.BodyTimeout = 200 * time.Millisecond })
			// Larger than net/http drains after a handler, so the
			// server half-closes and the 408 is readable.
			if s := trickle(t, g.srv.Addr, path, 1<<20); s != http.StatusRequestTimeout && s != 0 {
				t.Errorf("HTTP %d, want 408 or a closed connection", s)
			}
			g.idle()
			if n := g.srv.Proxy.Stats().BodyTimeouts; n != 1 {
				t.Errorf("%d body timeouts counted", n)
			}
			g.untouched("a trickled body")
		})
	}
	// Pass-through streams the body as it comes: the backend's request is
	// aborted, never completed.
	t.Run("pass-through", func(t *testing.T) {
		g := startGuarded(t, func(c *Config) { c.BodyTimeout = 200 * time.Millisecond })
		if s := trickle(t, g.srv.Addr, "/api/generate", 1<<20); s != http.StatusRequestTimeout && s != 0 {
			t.Errorf("HTTP %d, want 408 or a closed connection", s)
		}
		g.idle()
		if n := g.srv.Proxy.Stats().BodyTimeouts; n != 1 {
			t.Errorf("%d body timeouts counted", n)
		}
		for _, r := range g.st.Requests() {
			if r.Path == "/api/generate" && len(r.Body) >= 1<<20 {
				t.Errorf("the backend received the whole body")
			}
		}
	})
}

// The body timeout bounds the body only: once it has arrived, a streamed
// answer may take longer than body-timeout and is relayed whole (had the
// connection's deadline stayed after the body, net/http's background read
// would cancel the request when it passed).
func TestBodyTimeoutSparesLongAnswers(t *testing.T) {
	const timeout = 100 * time.Millisecond
	cancelled := make(chan bool, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\n")
		w.(http.Flusher).Flush()
		// The answer goes on past the proxy's body deadline: that time
		// passing is what is tested.
		select {
		case <-time.After(4 * timeout):
			cancelled <- false
		case <-r.Context().Done():
			cancelled <- true
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"two\"}}]}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Archive, cfg.LogPath, cfg.Backend, cfg.Window = "127.0.0.1:0", up.URL, &MemoryArchive{}, "-", "openai", 1<<20
	cfg.BodyTimeout = timeout
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+srv.Addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if <-cancelled {
		t.Fatal("the backend's request was cancelled while it streamed the answer")
	}
	if err != nil || !strings.Contains(string(b), `"two"`) || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("the streamed answer was cut: %v %q", err, b)
	}
}

// With allow-remote on a non-loopback address the proxy also answers to
// the address the connection arrived on and to the allow-host names;
// never to just any name.
func TestAllowRemoteHosts(t *testing.T) {
	start := func(t *testing.T, hosts ...string) (*guarded, string) {
		g := startGuarded(t, func(c *Config) { c.Listen, c.AllowRemote, c.AllowHosts = "0.0.0.0:0", true, hosts })
		g.base = "http://127.0.0.1:" + g.port
		return g, g.port
	}
	g, port := start(t)
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "localhost:" + port: 200,
		"proxy.lan:" + port: 403, "10.9.8.7:" + port: 403, "evil.example:" + port: 403,
	} {
		if resp, body := g.do("GET", "/lossless/stats", nil, "Host", host); resp.StatusCode != want {
			t.Errorf("Host %s: HTTP %d, want %d: %.100s", host, resp.StatusCode, want, body)
		}
	}
	g, port = start(t, "proxy.lan", "Gateway.example:9000")
	for host, want := range map[string]int{
		"proxy.lan:" + port: 200, "PROXY.LAN:" + port: 200, "proxy.lan:1": 403, "proxy.lan": 403,
		"gateway.example:9000": 200, "gateway.example:" + port: 403, "other.lan:" + port: 403,
	} {
		if resp, body := g.do("GET", "/lossless/stats", nil, "Host", host); resp.StatusCode != want {
			t.Errorf("allow-host: Host %s: HTTP %d, want %d: %.100s", host, resp.StatusCode, want, body)
		}
	}
	// The address a remote client connects to: a non-loopback address of
	// this machine, when it has one.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.To4() == nil || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		g.base = "http://" + net.JoinHostPort(ipn.IP.String(), port)
		if resp, body := g.do("GET", "/lossless/stats", nil); resp.StatusCode != 200 {
			t.Errorf("Host %s (the address the connection arrived on): HTTP %d %.100s", ipn.IP, resp.StatusCode, body)
		}
		if resp, _ := g.do("GET", "/lossless/stats", nil, "Host", "evil.example:"+port); resp.StatusCode != 403 {
			t.Errorf("rebound name over %s: HTTP %d", ipn.IP, resp.StatusCode)
		}
		break
	}
	// On loopback, allow-host is ignored, and the log says so.
	g = startGuarded(t, func(c *Config) { c.AllowHosts = []string{"proxy.lan"} })
	if resp, _ := g.do("GET", "/lossless/stats", nil, "Host", "proxy.lan:"+g.port); resp.StatusCode != 403 {
		t.Errorf("allow-host on a loopback listener: HTTP %d", resp.StatusCode)
	}
	if !strings.Contains(g.logs.String(), "allow-host is ignored") {
		t.Errorf("no warning that allow-host is ignored:\n%s", g.logs.String())
	}
}

// The Host check of a proxy used as a plain handler (no server to say
// which port a connection arrived on) uses the listen address's port; a
// Host without a port stands for port 80.
func TestCheckHostWithoutServer(t *testing.T) {
	for _, tc := range []struct {
		listen string
		host   string
		ok     bool
	}{
		{"127.0.0.1:8786", "127.0.0.1:8786", true},
		{"127.0.0.1:8786", "localhost:8786", true},
		{"127.0.0.1:8786", "[::1]:8786", true},
		{"127.0.0.1:8786", "[0:0:0:0:0:0:0:1]:8786", true},
		{"127.0.0.1:8786", "127.255.0.1:8786", true},
		{"127.0.0.1:8786", "127.0.0.1:8787", false},
		{"127.0.0.1:8786", "127.0.0.1", false},
		{"127.0.0.1:8786", "127.0.0.1:08786", false},
		{"127.0.0.1:8786", "127.0.0.1:", false},
		{"127.0.0.1:8786", "::1", false},
		{"127.0.0.1:8786", "[::1", false},
		{"127.0.0.1:8786", "localhost.:8786", false},
		{"127.0.0.1:8786", "127.0.0.1.nip.io:8786", false},
		{"127.0.0.1:8786", "0.0.0.0:8786", false},
		{"127.0.0.1:8786", "192.168.1.2:8786", false},
		{"127.0.0.1:8786", "user@127.0.0.1:8786", false},
		{"127.0.0.1:80", "localhost", true},
		{"127.0.0.1:80", "127.0.0.1:80", true},
		{"127.0.0.1:80", "[::1]", true},
		{"127.0.0.1:0", "localhost:4321", true}, // the port is unknown
	} {
		cfg := DefaultConfig()
		cfg.Listen = tc.listen
		g, err := newGuard(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/lossless/stats", nil)
		r.Host = tc.host
		if why := g.checkHost(r); (why == "") != tc.ok {
			t.Errorf("listen %s, Host %q: ok=%v, %q", tc.listen, tc.host, why == "", why)
		}
	}
}

func TestNormOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:3000":         "http://localhost:3000",
		"HTTP://LocalHost:3000":         "http://localhost:3000",
		"http://localhost:80":           "http://localhost",
		"https://ui.example:443":        "https://ui.example",
		"https://ui.example":            "https://ui.example",
		"http://[::1]:3000":             "http://[::1]:3000",
		"tauri://localhost":             "tauri://localhost",
		"null":                          "",
		"":                              "",
		"http://localhost:3000/":        "",
		"http://localhost:3000/x":       "",
		"http://u@localhost:3000":       "",
		"http://localhost:3000?":        "",
		"localhost:3000":                "",
		"http://localhost:3000 , x":     "",
		"http://localhost:3000\r\nX: 1": "",
	} {
		if got := normOrigin(in); got != want {
			t.Errorf("normOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLogText(t *testing.T) {
	for in, want := range map[string]string{
		"qwen2.5-coder:7b":        "qwen2.5-coder:7b",
		`C:\models\x y`:           `C:\models\x y`,
		"naïve 模型":                "naïve 模型",
		"x\n[lossless] fake line": `x\n[lossless] fake line`,
		"a\r\nb\tc":               `a\r\nb\tc`,
		"\x1b[31mred\x1b[0m":      `\x1b[31mred\x1b[0m`,
		"line\u2028sep\u2029para": `line\u2028sep\u2029para`,
		"evil\u202egnp.exe":       `evil\u202egnp.exe`,
		"nul\x00bell\x07del\x7f":  `nul\x00bell\adel\x7f`,
		"bad\xffutf8":             `bad\xffutf8`,
		"nbsp\u00a0":              `nbsp\u00a0`,
	} {
		if got := logText(in); got != want {
			t.Errorf("logText(%q) = %q, want %q", in, got, want)
		}
	}
	var got string
	logf := escapeLogf(func(f string, a ...any) { got = fmt.Sprintf(f, a...) })
	logf("%s %v %v %d %v\n%s", "a\nb", fmt.Errorf("e\nf"), []string{"g\nh"}, 7, 2*time.Second, rawLog("stack\ntrace"))
	if want := "a\\nb e\\nf [g\\nh] 7 2s\nstack\ntrace"; got != want {
		t.Errorf("escapeLogf: %q, want %q", got, want)
	}
}

func TestConfigAccessSettings(t *testing.T) {
	src := Sources{
		Flags: map[string]string{"allow-origin": "http://localhost:3000,http://127.0.0.1:8080/"},
		Getenv: func(k string) string {
			return map[string]string{"LOSSLESS_PROXY_ALLOW_HOST": "proxy.lan, gw.example:9000"}[k]
		},
		Git: func(k string) string {
			return map[string]string{"lossless.proxy.allow-origin": "http://git.example", "lossless.proxy.body-timeout": "90s"}[k]
		},
		GitAll: func(k string) []string {
			return map[string][]string{"lossless.proxy.allow-host": {"git-a.lan", "git-b.lan"}, "lossless.proxy.allow-origin": {"http://git.example"}}[k]
		},
	}
	c, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.AllowOrigins, " ") != "http://localhost:3000 http://127.0.0.1:8080" || strings.Join(c.AllowHosts, " ") != "proxy.lan gw.example:9000" || c.BodyTimeout != 90*time.Second {
		t.Fatalf("flag over env over git: origins %q hosts %q body-timeout %s", c.AllowOrigins, c.AllowHosts, c.BodyTimeout)
	}
	// Every git config value of a multi-valued key.
	src.Flags, src.Getenv = nil, nil
	if c, err = Load(src); err != nil || strings.Join(c.AllowHosts, " ") != "git-a.lan git-b.lan" || strings.Join(c.AllowOrigins, " ") != "http://git.example" {
		t.Fatalf("git config: %q %q %v", c.AllowHosts, c.AllowOrigins, err)
	}
	if d := DefaultConfig(); d.BodyTimeout != time.Minute || d.AllowHosts != nil || d.AllowOrigins != nil {
		t.Fatalf("defaults: %s %q %q", d.BodyTimeout, d.AllowHosts, d.AllowOrigins)
	}
	for _, bad := range []map[string]string{
		{"allow-origin": "*"}, {"allow-origin": "null"}, {"allow-origin": "localhost:3000"}, {"allow-origin": "http://x.example/app"},
		{"allow-host": "*.lan"}, {"allow-host": "http://proxy.lan"}, {"allow-host": "proxy.lan:99999"}, {"allow-host": "fe80::1"},
		{"body-timeout": "0s"}, {"body-timeout": "soon"},
	} {
		if _, err := Load(Sources{Flags: bad}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// An embedder's Config is checked by New too.
	cfg := DefaultConfig()
	cfg.Archive, cfg.AllowOrigins = &MemoryArchive{}, []string{"*"}
	if _, err := New(t.Context(), cfg); err == nil {
		t.Error("New accepted allow-origin *")
	}
}
