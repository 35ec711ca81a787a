package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// Cut upstreams. A backend that dies in the middle of an answer must
// reach the client as a cut (curl exit 18, Go's io.ErrUnexpectedEOF),
// exactly as it would straight from the backend, with everything received
// before the cut delivered first, and the cut counted.

// sseHead and sseEvents are a streamed chat answer; sseCut sends the
// events and then dies inside the next chunk (it announces 100 bytes and
// sends 20).
const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"

var sseEvents = []string{
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"first"}}]}` + "\n\n",
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" second"}}]}` + "\n\n",
}

// cutPartial is what the backend sends of the chunk it dies in.
const cutPartial = `data: {"id":"c1","obj`

func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func sseCut() string {
	var b strings.Builder
	b.WriteString(sseHead)
	for _, e := range sseEvents {
		b.WriteString(chunk(e))
	}
	b.WriteString("64\r\n" + cutPartial)
	return b.String()
}

// shortBody is the 100 bytes a backend that announced 1000 sends.
var shortBody = []byte(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)[:100]

func shortCL(status int) string {
	return fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", status, http.StatusText(status)) + string(shortBody)
}

// cutServer is a hostile backend: on the path it cuts it reads the
// request, writes raw (headers and part of a body) on the bare
// connection and closes it. Summary calls get a proper answer, every
// other path a 404 (no detection succeeds; the proxy does not need one).
type cutServer struct {
	*httptest.Server
	raw   string
	path  string
	reset bool // close with a TCP reset rather than a FIN
}

func newCutServer(t *testing.T, path, raw string, reset bool) *cutServer {
	t.Helper()
	cs := &cutServer{raw: raw, path: path, reset: reset}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.Header.Get("X-Lossless-Summary") != "":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q}}]}`,
				"The user and the assistant went through the turns of the task one by one; nothing is left open.")
		case r.URL.Path == cs.path:
			conn, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			bw.WriteString(cs.raw)
			bw.Flush()
			if tc, ok := conn.(*net.TCPConn); ok && cs.reset {
				tc.SetLinger(0)
			}
			conn.Close()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(cs.Close)
	return cs
}

// cutProxy runs a proxy in front of upstream on a real listener.
func cutProxy(t *testing.T, upstream string, mut func(*Config)) (*Server, string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Backend, cfg.Window = "127.0.0.1:0", upstream, "openai", 8192
	cfg.Archive = &MemoryArchive{}
	cfg.LogPath = filepath.Join(t.TempDir(), LogFile)
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
			t.Errorf("proxy: %v", err)
		}
	})
	return srv, cfg.LogPath
}

// curlPost posts body to url with the real curl and returns its exit
// code and what it wrote to its output file.
func curlPost(t *testing.T, url string, body []byte, extra ...string) (int, []byte, string) {
	t.Helper()
	curl := testkit.NeedTool(t, "curl")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, body, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"-sS", "--max-time", "20", "-o", out, "-H", "Content-Type: application/json", "--data-binary", "@" + in}, extra...)
	cmd := exec.CommandContext(ctx, curl, append(args, url)...)
	cmd.Env = append(os.Environ(), "no_proxy=*", "NO_PROXY=*", "http_proxy=", "HTTP_PROXY=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("curl: %v", err)
	}
	got, _ := os.ReadFile(out)
	return code, got, stderr.String()
}

// goPost posts body with Go's client and reads the whole answer.
func goPost(t *testing.T, url string, body []byte, connClose bool) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Close = connClose
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: connClose}, Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp.StatusCode, got, err
}

// isCurlCut reports whether curl's exit code says the transfer was cut:
// 18 (partial file) or 56 (failure receiving network data).
func isCurlCut(code int) bool { return code == 18 || code == 56 }

func TestUpstreamCutReachesClient(t *testing.T) {
	chat := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	plain := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	unparsable := []byte(`{"model":"m","messages":"not a list"}`)
	type tc struct {
		name     string
		path     string // the path the backend cuts
		raw      string
		reset    bool
		body     []byte
		want     []byte // at least this reaches the client before the cut
		compact  bool   // a compacted request (the summary succeeds)
		logLine  bool   // the request is a chat request (a savings log line)
		failOpen string
	}
	for _, c := range []tc{
		{name: "stream", path: "/v1/chat/completions", raw: sseCut(), body: chat, want: []byte(strings.Join(sseEvents, "")), logLine: true},
		{name: "stream cut between chunks", path: "/v1/chat/completions", raw: sseHead + chunk(sseEvents[0]) + chunk(sseEvents[1]), body: chat, want: []byte(strings.Join(sseEvents, "")), logLine: true},
		{name: "stream reset", path: "/v1/chat/completions", raw: sseCut(), reset: true, body: chat, want: []byte(strings.Join(sseEvents, "")), logLine: true},
		{name: "stream malformed chunk", path: "/v1/chat/completions", raw: sseHead + chunk(sseEvents[0]) + chunk(sseEvents[1]) + "zz\r\n" + cutPartial + "\r\n0\r\n\r\n", body: chat, want: []byte(strings.Join(sseEvents, "")), logLine: true},
		{name: "stream anthropic", path: "/v1/messages", raw: sseCut(), body: []byte(`{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`), want: []byte(strings.Join(sseEvents, "")), logLine: true},
		{name: "stream compacted", path: "/v1/chat/completions", raw: sseCut(), body: overBudgetBody(9, true), want: []byte(strings.Join(sseEvents, "")), compact: true, logLine: true},
		{name: "content-length", path: "/v1/chat/completions", raw: shortCL(200), body: plain, want: shortBody, logLine: true},
		{name: "content-length error answer", path: "/v1/chat/completions", raw: shortCL(400), body: plain, want: shortBody, logLine: true},
		{name: "content-length unparsable (fail-open)", path: "/v1/chat/completions", raw: shortCL(200), body: unparsable, want: shortBody, logLine: true, failOpen: "unparsable"},
		{name: "stream pass-through", path: "/v1/completions", raw: sseCut(), body: chat, want: []byte(strings.Join(sseEvents, ""))},
		{name: "content-length pass-through", path: "/api/chat", raw: shortCL(200), body: plain, want: shortBody},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newCutServer(t, c.path, c.raw, c.reset)
			srv, logPath := cutProxy(t, up.URL, nil)
			arch := srv.Proxy.archive.(*MemoryArchive)
			direct, via := up.URL+c.path, "http://"+srv.Addr+c.path

			// Straight to the backend, curl knows it was cut.
			code, _, stderr := curlPost(t, direct, c.body)
			t.Logf("straight to the backend: curl exit %d: %s", code, strings.TrimSpace(stderr))
			if !isCurlCut(code) {
				t.Fatalf("straight to the backend curl exits %d; the test's backend does not cut", code)
			}
			cuts := 0
			for _, connClose := range []bool{false, true} {
				var extra []string
				if connClose {
					extra = []string{"-H", "Connection: close"}
				}
				code, got, stderr := curlPost(t, via, c.body, extra...)
				t.Logf("through the proxy (Connection: close %v): curl exit %d: %s", connClose, code, strings.TrimSpace(stderr))
				cuts++
				if !isCurlCut(code) {
					t.Errorf("through the proxy (Connection: close %v) curl exits %d (%s), want 18 or 56 as straight to the backend; got %q", connClose, code, strings.TrimSpace(stderr), got)
				}
				if !bytes.HasPrefix(got, c.want) {
					t.Errorf("through the proxy (Connection: close %v) the client got %q, want at least %q (everything before the cut)", connClose, got, c.want)
				}
				status, got, err := goPost(t, via, c.body, connClose)
				t.Logf("through the proxy (Connection: close %v): Go client: HTTP %d, %d bytes, %v", connClose, status, len(got), err)
				cuts++
				if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("Go client (Connection: close %v): HTTP %d, read error %v, want io.ErrUnexpectedEOF; got %q", connClose, status, err, got)
				}
				if !bytes.HasPrefix(got, c.want) {
					t.Errorf("Go client (Connection: close %v) got %q, want at least %q", connClose, got, c.want)
				}
			}
			idleProxy(t, srv.Proxy)
			st := srv.Proxy.Stats()
			if st.UpstreamCuts != cuts {
				t.Errorf("stats: upstream_cuts %d, want %d", st.UpstreamCuts, cuts)
			}
			evs := 0
			for _, e := range srv.Proxy.events.since(0) {
				if e.Kind == "upstream-cut" {
					evs++
				}
			}
			if evs != cuts {
				t.Errorf("%d upstream-cut events, want %d", evs, cuts)
			}
			if c.logLine {
				lines := readLogLines(t, logPath)
				if len(lines) != cuts {
					t.Fatalf("%d log lines, want %d", len(lines), cuts)
				}
				for _, l := range lines {
					if !l.UpstreamCut || l.FailOpen != c.failOpen || l.Compacted != c.compact {
						t.Errorf("log line %+v: want upstream_cut, fail_open %q, compacted %v", l, c.failOpen, c.compact)
					}
				}
				rep, err := Savings(context.Background(), nil, logPath, time.Time{}, time.Now().Add(time.Hour))
				if err != nil || rep.UpstreamCuts != cuts {
					t.Errorf("savings: upstream_cuts %d (%v), want %d", rep.UpstreamCuts, err, cuts)
				}
			}
			// What the proxy archived is what it folded away from the
			// request, complete before the request went up; the cut answer
			// is never archived.
			if c.compact {
				if st.Compacted != cuts || len(arch.Spans()) == 0 {
					t.Fatalf("compacted %d, %d spans", st.Compacted, len(arch.Spans()))
				}
				for _, sp := range arch.Spans() {
					b, _ := json.Marshal(sp)
					if bytes.Contains(b, []byte("first")) || bytes.Contains(b, []byte(cutPartial)) {
						t.Errorf("span %s holds part of the cut answer", sp.ID)
					}
				}
			} else if len(arch.Spans()) != 0 {
				t.Errorf("%d spans archived for uncompacted requests", len(arch.Spans()))
			}
		})
	}
}

// A backend that delivers everything it announced is not a cut: the
// answer arrives whole with its Content-Length, also when the client asks
// to close the connection, and nothing is counted.
func TestCompleteAnswerNotACut(t *testing.T) {
	body := []byte(`{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"done"}}]}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", itoa(len(body)))
		w.Write(body)
	}))
	defer up.Close()
	srv, _ := cutProxy(t, up.URL, nil)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		for _, connClose := range []bool{false, true} {
			req, _ := http.NewRequest("POST", "http://"+srv.Addr+path, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			req.Close = connClose
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, body) || resp.ContentLength != int64(len(body)) {
				t.Errorf("%s (close %v): %q, length %d, %v", path, connClose, got, resp.ContentLength, err)
			}
		}
	}
	idleProxy(t, srv.Proxy)
	if n := srv.Proxy.Stats().UpstreamCuts; n != 0 {
		t.Errorf("upstream_cuts %d for whole answers", n)
	}
}

// A summary call whose answer is cut fails open: no span, no memo, the
// client's exact bytes go upstream.
func TestSummaryCutFailsOpen(t *testing.T) {
	var mu sync.Mutex
	var chats [][]byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Lossless-Summary") != "" {
			conn, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			bw.WriteString(shortCL(200))
			bw.Flush()
			conn.Close()
			return
		}
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		chats = append(chats, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer up.Close()
	srv, _ := cutProxy(t, up.URL, nil)
	body := overBudget(9)
	status, _, err := goPost(t, "http://"+srv.Addr+"/v1/chat/completions", body, false)
	if err != nil || status != 200 {
		t.Fatalf("HTTP %d %v", status, err)
	}
	idleProxy(t, srv.Proxy)
	st := srv.Proxy.Stats()
	if st.FailOpen["summary-cut"] != 1 || st.Compacted != 0 {
		t.Fatalf("fail-open %v, compacted %d; want summary-cut", st.FailOpen, st.Compacted)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(chats) != 1 || !bytes.Equal(chats[0], body) {
		t.Fatalf("the backend did not get the client's exact bytes")
	}
	if n := len(srv.Proxy.archive.(*MemoryArchive).Spans()); n != 0 {
		t.Fatalf("%d spans archived from a cut summary", n)
	}
}

func idleProxy(t *testing.T, p *Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}

func readLogLines(t *testing.T, path string) []LogLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []LogLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// A panic in the proxy while it relays an answer cuts the answer off as a
// cut, never ends it as if it were complete; the proxy serves on.
func TestPanicMidAnswerIsACut(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvents[0])
		if r.Header.Get("X-Test-Whole") != "" {
			io.WriteString(w, sseEvents[1]+"data: [DONE]\n\n")
			return
		}
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // the rest never comes while the proxy listens
	}))
	defer up.Close()
	srv, _ := cutProxy(t, up.URL, nil)
	srv.Proxy.hooks.relay = func() { panic("boom") }
	chat := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	status, got, err := goPost(t, "http://"+srv.Addr+"/v1/chat/completions", chat, false)
	if !errors.Is(err, io.ErrUnexpectedEOF) || status != 200 || string(got) != sseEvents[0] {
		t.Fatalf("HTTP %d, read error %v, got %q; want the first event, then io.ErrUnexpectedEOF", status, err, got)
	}
	idleProxy(t, srv.Proxy)
	if n := srv.Proxy.Stats().FailOpen["internal-after-answer"]; n != 1 {
		t.Fatalf("fail-open %v", srv.Proxy.Stats().FailOpen)
	}
	srv.Proxy.hooks = hooks{}
	req, _ := http.NewRequest("POST", "http://"+srv.Addr+"/v1/chat/completions", bytes.NewReader(chat))
	req.Header.Set("X-Test-Whole", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.HasSuffix(got, []byte("[DONE]\n\n")) {
		t.Fatalf("after the panic: %v %q", err, got)
	}
}
