package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// An upstream that is the proxy's own listener, in any spelling, is
// refused at start; one on another port or another address is not.
func TestUpstreamIsSelfRefusedAtStart(t *testing.T) {
	cases := []struct {
		listen   string // bound with port 0
		upstream string // PORT is replaced by the bound port
		self     bool
	}{
		{"127.0.0.1:0", "http://127.0.0.1:PORT", true},
		{"127.0.0.1:0", "http://127.0.0.1:PORT/v1", true},
		{"127.0.0.1:0", "http://localhost:PORT", true},
		{"127.0.0.1:0", "http://LOCALHOST:PORT/", true},
		{"127.0.0.1:0", "http://0.0.0.0:PORT", true},
		{"127.0.0.1:0", "http://[::ffff:127.0.0.1]:PORT", true},
		{"0.0.0.0:0", "http://127.0.0.1:PORT", true},
		{"0.0.0.0:0", "http://127.0.0.2:PORT", true},
		{"0.0.0.0:0", "http://localhost:PORT", true},
		{"0.0.0.0:0", "http://[::1]:PORT", true},
		{"[::1]:0", "http://[::1]:PORT", true},
		{"[::1]:0", "http://[::]:PORT", true},
		{"127.0.0.1:0", "http://127.0.0.1:1", false},    // another port
		{"127.0.0.1:0", "http://[::1]:PORT", false},     // another socket
		{"127.0.0.1:0", "http://127.0.0.2:PORT", false}, // not what 127.0.0.1 accepts
		{"127.0.0.1:0", "http://no-such-host.invalid:PORT", false},
	}
	for _, tc := range cases {
		t.Run(tc.listen+" "+tc.upstream, func(t *testing.T) {
			ln, err := net.Listen("tcp", tc.listen)
			if err != nil {
				if strings.HasPrefix(tc.listen, "[::1]") {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				t.Fatal(err)
			}
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			cfg := DefaultConfig()
			cfg.Listen, cfg.Upstream, cfg.Archive, cfg.LogPath = ln.Addr().String(), strings.ReplaceAll(tc.upstream, "PORT", port), &MemoryArchive{}, "-"
			cfg.AllowRemote = true
			p, err := New(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Serve(ctx, ln) }()
			if tc.self {
				err := <-done
				cancel()
				if !errors.Is(err, ErrUpstreamIsSelf) || !strings.Contains(err.Error(), "listens on "+ln.Addr().String()) {
					t.Fatalf("Serve: %v; want ErrUpstreamIsSelf naming the listen address", err)
				}
				if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
					c.Close()
					t.Fatal("the refused proxy's listener still accepts connections")
				}
				return
			}
			// Not itself: it serves (its own surface answers).
			resp, err := http.Get("http://127.0.0.1:" + port + "/lossless/health?format=json")
			if strings.HasPrefix(tc.listen, "[::1]") {
				resp, err = http.Get("http://[::1]:" + port + "/lossless/health?format=json")
			}
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("a proxy with upstream %s does not serve: %v", cfg.Upstream, err)
			}
			resp.Body.Close()
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Run and Listen refuse too, before serving anything.
func TestRunRefusesSelfUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // free the port for Run (the test's only race: another process taking it)
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Archive, cfg.LogPath = addr, "http://localhost:"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), &MemoryArchive{}, "-"
	srv, err := Run(context.Background(), cfg)
	if !errors.Is(err, ErrUpstreamIsSelf) || srv != nil {
		t.Fatalf("Run: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the refused proxy left its listener open")
	}
}

// loopPost posts body to url and returns the status, the body, and the
// answer's headers.
func loopPost(t *testing.T, url string, body []byte, hdr ...string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", url, err)
	}
	return resp.StatusCode, b, resp.Header
}

// Two proxies pointing at each other: every request, on every route,
// comes back to the proxy that sent it once, is refused there with 508,
// and the 508 goes back to the client. Each client request costs one
// hop through the other proxy, not a runaway chain.
func TestTwoProxiesPointingAtEachOther(t *testing.T) {
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cutProxy(t, "http://"+lnB.Addr().String(), func(c *Config) { c.Backend, c.Window = "auto", 0 })
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Archive, cfg.LogPath = lnB.Addr().String(), "http://"+a.Addr, &MemoryArchive{}, "-"
	b, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, lnB) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("B: %v", err)
		}
	})

	chat := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	reqs := []struct{ via, path string }{
		{a.Addr, "/v1/chat/completions"},
		{a.Addr, "/v1/messages"},
		{a.Addr, "/api/chat"},
		{lnB.Addr().String(), "/v1/chat/completions"},
	}
	for _, r := range reqs {
		code, body, hdr := loopPost(t, "http://"+r.via+r.path, chat)
		if code != http.StatusLoopDetected || !bytes.Contains(body, []byte("loop detected")) {
			t.Fatalf("POST %s via %s: HTTP %d %s; want 508 loop detected", r.path, r.via, code, body)
		}
		if hdr.Get(HopHeader) != "" {
			t.Errorf("the answer carries %s: %q", HopHeader, hdr.Get(HopHeader))
		}
		if r.path == "/v1/messages" && !bytes.Contains(body, []byte(`"type":"error"`)) {
			t.Errorf("anthropic route: %s", body)
		}
	}
	idleProxy(t, a.Proxy)
	idleProxy(t, b)
	sa, sb := a.Proxy.Stats(), b.Stats()
	// Every client request and every detection probe that came round was
	// refused once, by whichever proxy sent it; nothing ran away.
	if sa.LoopsRefused < 3 || sb.LoopsRefused < 1 {
		t.Errorf("loops refused: A %d, B %d; want at least 3 and 1", sa.LoopsRefused, sb.LoopsRefused)
	}
	loops := 0
	for _, e := range append(a.Proxy.events.since(0), b.events.since(0)...) {
		if e.Kind == "loop" {
			loops++
		}
	}
	if loops != sa.LoopsRefused+sb.LoopsRefused {
		t.Errorf("%d loop events, %d refusals counted", loops, sa.LoopsRefused+sb.LoopsRefused)
	}
	// Bounded: each chat request was handled once by each proxy (two
	// sent to A, one to B), then refused where it had started.
	if sa.Requests != 3 || sb.Requests != 3 {
		t.Errorf("chat requests handled: A %d, B %d; a loop ran on", sa.Requests, sb.Requests)
	}
	// The proxies serve on: their own surface answers.
	for _, p := range []string{a.Addr, lnB.Addr().String()} {
		resp, err := http.Get("http://" + p + "/lossless/stats")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("after the loop: %v", err)
		}
		resp.Body.Close()
	}
}

// A proxy whose upstream became itself after start (the start check
// could not see it: here the handler is mounted behind the address it
// forwards to) refuses the request when it comes round.
func TestSelfLoopPerRequest(t *testing.T) {
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.LogPath, cfg.Backend, cfg.Window = srv.URL, &MemoryArchive{}, "-", "openai", 8192
	p, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h = p
	code, body, _ := loopPost(t, srv.URL+"/v1/chat/completions", []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if code != http.StatusLoopDetected {
		t.Fatalf("HTTP %d %s", code, body)
	}
	idleProxy(t, p)
	if st := p.Stats(); st.LoopsRefused != 1 || st.Requests != 1 {
		t.Fatalf("loops refused %d, chat requests %d; want 1 and 1", st.LoopsRefused, st.Requests)
	}
}

// What a client puts in the hop header: only well-formed ids go on, with
// the proxy's own appended; every request the proxy sends upstream
// (probes, summaries, the forwarded request) carries it; the proxy's id
// is never shown to a client; too many hops are refused, and a refusal
// is about that request only.
func TestHopHeaderFromClient(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}
	s := newStack(t, st, nil)
	id := s.p.id
	if !validHopID(id) {
		t.Fatalf("own id %q is not a valid hop id", id)
	}
	code, resp, hdr := loopPost(t, s.srv.URL+"/v1/chat/completions", overBudget(9),
		HopHeader, "glp-0123456789abcdef01234567, bad id, <x>", HopHeader, "other.proxy_1")
	if code != 200 || !isCompacted(s.lastChat().Body) {
		t.Fatalf("HTTP %d %.200s", code, resp)
	}
	s.idle()
	reqs := s.st.Requests()
	kinds := map[string]bool{}
	for _, r := range reqs {
		got := r.Header.Get(HopHeader)
		switch {
		case r.Summary:
			kinds["summary"] = true
		case r.Path == "/v1/chat/completions":
			kinds["chat"] = true
			if want := "glp-0123456789abcdef01234567, other.proxy_1, " + id; got != want {
				t.Errorf("forwarded chat request: %s %q, want %q", HopHeader, got, want)
			}
			continue
		default:
			kinds["probe"] = true
		}
		if got != id {
			t.Errorf("%s %s (proxy's own call): %s %q, want %q", r.Method, r.Path, HopHeader, got, id)
		}
	}
	if !kinds["summary"] || !kinds["chat"] || !kinds["probe"] {
		t.Fatalf("the stub saw %v; want probes, a summary and the chat request", kinds)
	}
	if hdr.Get(HopHeader) != "" {
		t.Errorf("answer carries %s", HopHeader)
	}
	for _, path := range []string{"/lossless/stats", "/lossless/health?format=json", "/lossless/events", "/lossless/usage"} {
		if _, b := s.get(path); bytes.Contains(b, []byte(id)) {
			t.Errorf("%s shows the proxy's hop id", path)
		}
	}

	// maxHops ids pass; one more is refused, and only that request.
	ids := make([]string, maxHops+1)
	for i := range ids {
		ids[i] = "glp-hop" + strconv.Itoa(i)
	}
	small := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if code, b, _ := loopPost(t, s.srv.URL+"/v1/chat/completions", small, HopHeader, strings.Join(ids[:maxHops], ",")); code != 200 {
		t.Fatalf("%d hops: HTTP %d %s", maxHops, code, b)
	}
	if code, b, _ := loopPost(t, s.srv.URL+"/v1/chat/completions", small, HopHeader, strings.Join(ids, ",")); code != http.StatusLoopDetected {
		t.Fatalf("%d hops: HTTP %d %s", maxHops+1, code, b)
	}
	// A client naming the proxy's own id gets its own request refused;
	// the next request without it is served.
	if code, _, _ := loopPost(t, s.srv.URL+"/v1/chat/completions", small, HopHeader, id); code != http.StatusLoopDetected {
		t.Fatalf("own id: HTTP %d", code)
	}
	if code, b, _ := loopPost(t, s.srv.URL+"/v1/chat/completions", small); code != 200 {
		t.Fatalf("after refusals: HTTP %d %s", code, b)
	}
	s.idle()
	var stats Stats
	_, b := s.get("/lossless/stats")
	if err := json.Unmarshal(b, &stats); err != nil || stats.LoopsRefused != 2 {
		t.Fatalf("loops_refused %d (%v), want 2", stats.LoopsRefused, err)
	}
}

// An upstream that answers with the hop header does not get it to the
// client, on any path of the answer (relayed, error, pass-through,
// overflow error read whole).
func TestHopHeaderNotRelayed(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set(HopHeader, r.Header.Get(HopHeader))
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("status") {
		case "400":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"bad"}}`)
		case "overflow":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (9000 in the messages, 0 in the completion)."}}`)
		default:
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
		}
	}))
	defer up.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.LogPath, cfg.Backend = up.URL, &MemoryArchive{}, "-", "openai"
	p, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	small := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	for _, path := range []string{"/v1/chat/completions", "/v1/chat/completions?status=400", "/v1/chat/completions?status=overflow", "/v1/completions", "/api/chat?status=400"} {
		code, _, hdr := loopPost(t, srv.URL+path, small)
		if code == 0 || hdr.Get(HopHeader) != "" {
			t.Errorf("%s: HTTP %d with %s %q", path, code, HopHeader, hdr.Get(HopHeader))
		}
	}
}
