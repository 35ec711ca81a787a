package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/proxy"
)

// proxyTestEnv isolates a test from the machine's git configuration and
// archives.
// proxyTestEnv isolates a test from the user's configuration.
func proxyTestEnv(t *testing.T) { testkit.IsolateUserConfig(t) }

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: os.Getenv})
	return code, out.String(), errb.String()
}

// Every setting the code reads is documented, in --help and docs/proxy.md.
func TestProxySettingsDocumented(t *testing.T) {
	proxyTestEnv(t)
	files, _ := filepath.Glob("../../proxy/*.go")
	mine, _ := filepath.Glob("proxy*.go")
	files = append(files, mine...)
	files = append(files, "../../gitstore/crypt.go")
	re := regexp.MustCompile(`\blossless\.(?:proxy\.)?[a-z][a-z0-9-]*[a-z0-9]\b|\bLOSSLESS_[A-Z0-9_]+\b`)
	keys := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range re.FindAllString(string(src), -1) {
			if k != "lossless.proxy" {
				keys[k] = true
			}
		}
	}
	for _, s := range proxy.Settings {
		keys[s.Git] = true
		if s.Env != "" {
			keys[s.Env] = true
		}
	}
	if len(keys) < 30 {
		t.Fatalf("found only %d settings: the scan is broken", len(keys))
	}
	readme, err := os.ReadFile("../../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	var help strings.Builder
	for _, c := range []string{"proxy", "statusline", "span", "savings"} {
		code, out, _ := runCLI(t, c, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d", c, code)
		}
		help.WriteString(out)
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if !bytes.Contains(readme, []byte("`"+k+"`")) {
			t.Errorf("%s is read but not documented in docs/proxy.md", k)
		}
		if !strings.Contains(help.String(), k) {
			t.Errorf("%s is read but not documented in `git lossless proxy --help`", k)
		}
	}
	// Every flag of the proxy command is a setting.
	_, out, _ := runCLI(t, "proxy", "--help")
	for _, s := range proxy.Settings {
		if s.Kind != "" && s.Name != "" && !strings.Contains(out, "--"+s.Name) {
			t.Errorf("proxy --help lacks --%s", s.Name)
		}
	}
}

// proxyWithStub starts a stub backend and an in-process proxy on a free
// port; it returns the running proxy (its URL is "http://" + Addr).
func proxyWithStub(t *testing.T, st *stubbackend.Server, cfg func(*proxy.Config)) *proxy.Server {
	t.Helper()
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	c := proxy.DefaultConfig()
	c.Listen, c.Upstream, c.Archive = "127.0.0.1:0", up, &proxy.MemoryArchive{}
	if cfg != nil {
		cfg(&c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := proxy.Run(ctx, c)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("proxy shutdown: %v", err)
		}
	})
	return srv
}

// idle waits until the proxy has recorded every exchange it answered.
func idle(t *testing.T, p *proxy.Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStatusline(t *testing.T) {
	proxyTestEnv(t)
	srv := proxyWithStub(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 32768}, nil)
	url := "http://" + srv.Addr
	// No request yet: ctx ? and exit 1.
	code, out, _ := runCLI(t, "statusline", "--url", url)
	if code != 1 || out != "ctx ?\n" {
		t.Fatalf("before any request: exit %d %q", code, out)
	}
	c := stubbackend.NewConversation("stub-model", "sys")
	c.User(stubbackend.Code(1, 40000))
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(c.Body(false)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	idle(t, srv.Proxy) // the client has its answer before the proxy has recorded it
	code, out, _ = runCLI(t, "statusline", "--url", url)
	if code != 0 || !regexp.MustCompile(`^ctx \d+% \(\d+(\.\d)?k/32k\) (exact|est|reported)\n$`).MatchString(out) {
		t.Fatalf("exit %d %q", code, out)
	}
	// The URL from the environment; an unknown session.
	t.Setenv("LOSSLESS_PROXY_URL", url)
	if code, out, _ = runCLI(t, "statusline"); code != 0 || !strings.HasPrefix(out, "ctx ") || out == "ctx ?\n" {
		t.Fatalf("env URL: exit %d %q", code, out)
	}
	if code, out, _ = runCLI(t, "statusline", "--session", "nope"); code != 1 || out != "ctx ?\n" {
		t.Fatalf("unknown session: exit %d %q", code, out)
	}
	// Nothing listening.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	if code, out, _ = runCLI(t, "statusline", "--url", dead); code != 1 || out != "ctx ?\n" {
		t.Fatalf("no proxy: exit %d %q", code, out)
	}
	// A server that never answers: ctx ? within the 2 s limit.
	hang, _ := net.Listen("tcp", "127.0.0.1:0")
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	// (the deadline, not a clock reading, is what the test checks)
	code, out, _ = runCLI(t, "statusline", "--url", "http://"+hang.Addr().String())
	if code != 1 || out != "ctx ?\n" {
		t.Fatalf("hanging proxy: exit %d %q", code, out)
	}
	if _, err := statusline(context.Background(), "http://"+hang.Addr().String(), ""); !errors.Is(err, context.DeadlineExceeded) || statuslineTimeout != 2*time.Second {
		t.Fatalf("hanging proxy: %v; want the %s deadline", err, statuslineTimeout)
	}
	for n, want := range map[int64]string{950: "950", 12900: "12.9k", 13209: "13.2k", 32000: "32k", 32768: "32k", 8192: "8k",
		131072: "128k", 200000: "200k", 1 << 20: "1M", 1250000: "1.2M", 1000: "1k", 999999: "1M"} {
		if got := kfmt(n); got != want {
			t.Errorf("kfmt(%d) = %q, want %q", n, got, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
// When match is set, the first time the written text matches it, its
// submatches are sent on matched: a test waits for a line of output
// without polling.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	match   *regexp.Regexp
	matched chan []string
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.match != nil {
		if m := s.match.FindStringSubmatch(s.b.String()); m != nil {
			s.matched <- m
			s.match = nil
		}
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func gitInitRepo(t *testing.T, config ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for i := 0; i+1 < len(config); i += 2 {
		if out, err := exec.Command("git", "-C", dir, "config", "--add", config[i], config[i+1]).CombinedOutput(); err != nil {
			t.Fatalf("git config: %v %s", err, out)
		}
	}
	return dir
}

// The proxy command end to end: it serves in the repository it was
// started in, archives encrypted spans there, and savings and span read
// them back.
func TestProxyCommandSavingsSpan(t *testing.T) {
	proxyTestEnv(t)
	id, _ := age.GenerateX25519Identity()
	repo := gitInitRepo(t, "lossless.encrypt", "true", "lossless.recipient", id.Recipient().String(), "lossless.proxy.window", "8192")
	st := &stubbackend.Server{Kind: stubbackend.OpenAI, Window: 8192}
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{match: regexp.MustCompile(`on http://(127\.0\.0\.1:\d+) -> `), matched: make(chan []string, 1)}
	errb := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-C", repo, "proxy", "--listen", "127.0.0.1:0", "--upstream", up, "--min-tail", "2"}, &env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb, Getenv: os.Getenv})
	}()
	var base string
	select {
	case m := <-out.matched:
		base = "http://" + m[1]
	case code := <-done:
		cancel()
		t.Fatalf("proxy exited %d before serving: %s %s", code, out.String(), errb.String())
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("proxy did not start: %s %s", out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "spans age-encrypted") || !regexp.MustCompile(`writer proxy-[0-9a-f]{8}-127_0_0_1_`).MatchString(out.String()) {
		t.Errorf("banner: %s", out.String())
	}
	c := stubbackend.NewConversation("stub-model", "sys")
	for i := 1; i <= 10; i++ {
		c.User(stubbackend.DemoTurn(i))
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(c.Body(false)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: HTTP %d", i, resp.StatusCode)
		}
		c.Assistant("ok")
	}
	// The command returns only after the proxy has shut down, which waits
	// for every request in flight to be recorded.
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("proxy exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proxy did not stop")
	}
	if !strings.Contains(errb.String(), "compacted ") {
		t.Errorf("no compaction logged: %s", errb.String())
	}

	code, sout, serr := runCLI(t, "-C", repo, "savings", "--json")
	var rep proxy.Report
	if code != 0 || json.Unmarshal([]byte(sout), &rep) != nil {
		t.Fatalf("savings: exit %d %s %s", code, sout, serr)
	}
	if rep.Requests != 10 || rep.Compacted == 0 || rep.Spans == 0 || rep.SpansEncrypted != rep.Spans || rep.TokensKeptOut <= 0 {
		t.Fatalf("savings %+v", rep)
	}
	code, sout, _ = runCLI(t, "-C", repo, "savings", "--since", "1h")
	for _, want := range []string{"requests     10 (", "kept out of the window", "span", "encrypted"} {
		if code != 0 || !strings.Contains(sout, want) {
			t.Errorf("savings text lacks %q:\n%s", want, sout)
		}
	}
	if code, _, _ := runCLI(t, "-C", repo, "savings", "--since", "yesterday-ish"); code != 2 {
		t.Errorf("bad --since: exit %d", code)
	}

	store, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := store.Events(context.Background(), gitstore.Query{Op: "span", Source: "proxy"})
	if len(evs) == 0 {
		t.Fatal("no span in the repository")
	}
	spanID := proxy.SpanIDOf(&evs[0])
	code, sout, serr = runCLI(t, "-C", repo, "span", spanID)
	if code != 1 || !strings.Contains(sout, "locked") || !strings.Contains(serr, "hint:") {
		t.Fatalf("span without identity: exit %d %q %q", code, sout, serr)
	}
	keyFile := filepath.Join(t.TempDir(), "key.txt")
	os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600)
	code, sout, serr = runCLI(t, "-C", repo, "span", "--identity", keyFile, spanID)
	if code != 0 || !strings.Contains(sout, "Turn 1. Here is src/module1.go") || !strings.Contains(sout, "--- summary ---") {
		t.Fatalf("span with identity: exit %d %.300s %s", code, sout, serr)
	}
	t.Setenv("LOSSLESS_AGE_IDENTITY", keyFile)
	code, sout, _ = runCLI(t, "-C", repo, "span", "--json", spanID)
	var sp proxy.Span
	if code != 0 || json.Unmarshal([]byte(sout), &sp) != nil || sp.ID != spanID {
		t.Fatalf("span --json: exit %d %.200s", code, sout)
	}
	if code, _, _ := runCLI(t, "-C", repo, "span", "not-a-span"); code != 2 {
		t.Errorf("bad span id: exit %d", code)
	}
	if code, _, _ := runCLI(t, "-C", repo, "verify"); code != 0 {
		t.Errorf("verify without the key: exit %d", code)
	}
}

func TestProxyCommandRefusesRemoteListen(t *testing.T) {
	proxyTestEnv(t)
	repo := gitInitRepo(t)
	code, _, errOut := runCLI(t, "-C", repo, "proxy", "--listen", "0.0.0.0:0")
	if code == 0 || !strings.Contains(errOut, "loopback") {
		t.Fatalf("exit %d %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "-C", repo, "proxy", "--window", "lots")
	if code != 2 || !strings.Contains(errOut, "--window") {
		t.Fatalf("bad window: exit %d %s", code, errOut)
	}
}

// The real command pointed at itself refuses to start, in any spelling
// of its own address, before it prints its banner or serves anything.
func TestProxyCommandRefusesItselfAsUpstream(t *testing.T) {
	proxyTestEnv(t)
	repo := gitInitRepo(t)
	for _, host := range []string{"127.0.0.1", "localhost", "0.0.0.0"} {
		var code int
		var sout, serr string
		for attempt := 0; attempt < 3; attempt++ {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().(*net.TCPAddr)
			ln.Close() // the command binds it again
			code, sout, serr = runCLI(t, "-C", repo, "proxy", "--listen", addr.String(), "--upstream", "http://"+host+":"+strconv.Itoa(addr.Port)+"/v1")
			if !strings.Contains(serr, "address already in use") {
				break // (another process took the port: try another)
			}
		}
		if code == 0 || !strings.Contains(serr, "is this proxy itself") || !strings.Contains(serr, "hint: point --upstream at the model server") {
			t.Fatalf("upstream %s: exit %d\nstdout %s\nstderr %s", host, code, sout, serr)
		}
		if strings.Contains(sout, "git lossless proxy on") {
			t.Fatalf("upstream %s: the banner was printed before the refusal: %s", host, sout)
		}
	}
}

// Full capture through the command: with git config
// lossless.proxy.capture journal, messages that were never compacted are
// archived by the time the command has stopped, and recall, span and
// savings read them.
func TestProxyCommandJournal(t *testing.T) {
	proxyTestEnv(t)
	repo := gitInitRepo(t, "lossless.proxy.capture", "journal", "lossless.proxy.window", "1000000")
	st := &stubbackend.Server{Kind: stubbackend.OpenAI, Window: 1000000}
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{match: regexp.MustCompile(`on http://(127\.0\.0\.1:\d+) -> `), matched: make(chan []string, 1)}
	errb := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-C", repo, "proxy", "--listen", "127.0.0.1:0", "--upstream", up}, &env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb, Getenv: os.Getenv})
	}()
	var base string
	select {
	case m := <-out.matched:
		base = "http://" + m[1]
	case code := <-done:
		t.Fatalf("proxy exited %d before serving: %s %s", code, out.String(), errb.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("proxy did not start: %s %s", out.String(), errb.String())
	}
	c := stubbackend.NewConversation("stub-model", "sys")
	for i := 1; i <= 3; i++ {
		c.User(fmt.Sprintf("turn %d: the wombatgrid parser drops trailing fields", i))
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(c.Body(false)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: HTTP %d", i, resp.StatusCode)
		}
		c.Assistant("ok")
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("proxy exit %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("proxy did not stop")
	}
	if !strings.Contains(out.String(), "capture   journal") {
		t.Errorf("banner: %s", out.String())
	}
	// sys, 3 questions, 2 answers: each once, though resent every turn.
	code, sout, serr := runCLI(t, "-C", repo, "savings", "--json")
	var rep proxy.Report
	if code != 0 || json.Unmarshal([]byte(sout), &rep) != nil {
		t.Fatalf("savings: exit %d %s %s", code, sout, serr)
	}
	if rep.Requests != 3 || rep.Compacted != 0 || rep.Journaled != 6 || rep.Spans != 0 {
		t.Fatalf("savings %+v", rep)
	}
	code, sout, serr = runCLI(t, "-C", repo, "recall", "search", "wombatgrid", "--json")
	var res struct {
		Hits []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"hits"`
	}
	if code != 0 || json.Unmarshal([]byte(sout), &res) != nil || len(res.Hits) != 3 {
		t.Fatalf("recall: exit %d %s %s", code, sout, serr)
	}
	code, sout, serr = runCLI(t, "-C", repo, "span", res.Hits[0].ID)
	if code != 0 || !strings.Contains(sout, "(journal)") || !strings.Contains(sout, "wombatgrid") {
		t.Fatalf("span: exit %d %s %s", code, sout, serr)
	}
}
