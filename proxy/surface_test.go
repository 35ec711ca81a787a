package proxy

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/seal"
)

func TestSurface(t *testing.T) {
	s := newStack(t, &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}, nil)
	for _, path := range []string{"/lossless/usage", "/lossless/usage?session=nope"} {
		if code, _ := s.get(path); code != 404 {
			t.Fatalf("%s before any request: HTTP %d", path, code)
		}
	}
	demoSession(t, s, 8)
	code, body := s.get("/lossless/usage")
	if code != 200 {
		t.Fatalf("usage: %d", code)
	}
	var u map[string]any
	json.Unmarshal(body, &u)
	for _, k := range []string{"window", "used", "used_after_compaction", "pct", "count_source", "model", "last_compaction_at", "session"} {
		if _, ok := u[k]; !ok {
			t.Errorf("usage lacks %q: %s", k, body)
		}
	}
	if u["window"].(float64) != 8192 || u["last_compaction_at"] == nil || u["model"] != "stub-model" {
		t.Errorf("usage %s", body)
	}
	if code, _ := s.get("/lossless/usage?session=" + u["session"].(string)); code != 200 {
		t.Errorf("usage by session: %d", code)
	}
	if code, _ := s.get("/lossless/usage?session=other"); code != 404 {
		t.Errorf("unknown session: %d", code)
	}
	code, body = s.get("/lossless/stats")
	var st Stats
	if code != 200 || json.Unmarshal(body, &st) != nil || st.Compacted == 0 || len(st.Sessions) != 1 || st.TokensKeptOut <= 0 {
		t.Errorf("stats %d %s", code, body)
	}
	code, body = s.get("/lossless/events")
	var evs []Event
	if code != 200 || json.Unmarshal(body, &evs) != nil {
		t.Fatalf("events %d %s", code, body)
	}
	var comp *Event
	for i := range evs {
		if evs[i].Kind == "compaction" {
			comp = &evs[i]
		}
	}
	if comp == nil || comp.Before <= comp.After || len(comp.Spans) == 0 && !comp.Reused {
		t.Fatalf("no compaction event: %s", body)
	}
	_, body = s.get("/lossless/events?after=" + itoa(int(evs[len(evs)-1].Seq)))
	if strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("events after the last: %s", body)
	}
	code, body = s.get("/lossless/health")
	if code != 200 || !bytes.Contains(body, []byte("<title>git lossless proxy</title>")) || !bytes.Contains(body, []byte("/lossless/stats")) {
		t.Errorf("health page %d", code)
	}
	if code, body = s.get("/lossless/health?format=json"); code != 200 || !bytes.Contains(body, []byte(`"ok": true`)) {
		t.Errorf("health json %d %s", code, body)
	}
	if code, _ := s.post("/lossless/usage", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST usage: %d", code)
	}
	if code, _ := s.get("/lossless/nothing"); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
}

func TestStartAndListen(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.OpenAI}
	up, _ := st.Start()
	defer st.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.Listen = up, &MemoryArchive{}, "0.0.0.0:0"
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("non-loopback listen: %v", err)
	}
	cfg.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + srv.Addr + "/lossless/health?format=json")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte(`"writer": "proxy-127_0_0_1_`)) {
		t.Fatalf("health %s", b)
	}
	cancel()
	if err := srv.Wait(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := http.Get("http://" + srv.Addr + "/lossless/health"); err == nil {
		t.Fatal("the proxy still serves after its context ended")
	}
}

// Wait returns only once every request the proxy answered is recorded:
// the savings log then holds a line for each.
func TestRunWaitRecordsEverything(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.Listen = up, &MemoryArchive{}, "127.0.0.1:0"
	cfg.LogPath = filepath.Join(t.TempDir(), LogFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := stubbackend.NewConversation("stub-model", "sys")
	for i := 1; i <= 9; i++ {
		c.User(stubbackend.DemoTurn(i))
		resp, err := http.Post("http://"+srv.Addr+"/v1/chat/completions", "application/json", bytes.NewReader(c.Body(false)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.Assistant("ok")
	}
	cancel() // right after the last answer, no Idle
	if err := srv.Wait(); err != nil {
		t.Fatal(err)
	}
	rep, err := Savings(context.Background(), nil, cfg.LogPath, time.Time{}, time.Now().Add(time.Hour))
	if err != nil || rep.Requests != 9 || rep.Compacted == 0 {
		t.Fatalf("savings log after Wait: %+v %v", rep, err)
	}
}

// A client connection that never sent a request (a load generator's spare
// dial) does not hold the shutdown up: Wait returns without error once no
// handler runs. http.Server.Shutdown alone waited 5 s for such a
// connection and Wait then failed with a deadline error.
func TestWaitIgnoresConnectionsWithoutRequests(t *testing.T) {
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive, cfg.Listen = up, &MemoryArchive{}, "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + srv.Addr + "/lossless/health")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	conn, err := net.Dial("tcp", srv.Addr) // connected, silent
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cancel()
	if err := srv.Wait(); err != nil {
		t.Fatalf("Wait with a silent client connection open: %v", err)
	}
}

// bareRepo makes an archive without git, with extra config lines.
func bareRepo(t *testing.T, config string) (string, *gitstore.Store) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir := filepath.Join(t.TempDir(), "archive.git")
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/lossless"} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
	}
	os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tbare = true\n"+config), 0o600)
	st, err := gitstore.Open(gitstore.Location{GitDir: dir, CommonDir: dir}, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}

// Spans through a real git archive, age-encrypted: they verify without
// the key, read with it, and the plaintext is in no object.
func TestEncryptedSpansInGitArchive(t *testing.T) {
	id, _ := age.GenerateX25519Identity()
	dir, store := bareRepo(t, "[lossless]\n\tencrypt = true\n\trecipient = "+id.Recipient().String()+"\n")
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}
	s := newStack(t, st, func(c *Config) {
		c.Archive, c.Store, c.Writer = nil, store, "proxy-test"
		c.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
	})
	marker := "PLAINTEXT-MARKER-5f0c2a"
	c := stubbackend.NewConversation("stub-model", "sys")
	for i := 1; i <= 12; i++ {
		c.User(stubbackend.DemoTurn(i) + "\n" + marker + " in turn " + itoa(i))
		if code, b := s.post("/v1/chat/completions", c.Body(false)); code != 200 {
			t.Fatalf("turn %d: %d %s", i, code, b)
		}
		c.Assistant("ok")
	}
	ctx := context.Background()
	evs, err := store.Events(ctx, gitstore.Query{Op: "span", Source: "proxy"})
	if err != nil || len(evs) < 2 {
		t.Fatalf("span events %d %v", len(evs), err)
	}
	for _, e := range evs {
		if !gitstore.IsEncrypted(&e) || e.Writer != "proxy-test" || !ValidSpanID(SpanIDOf(&e)) {
			t.Fatalf("span event %s", e.Raw)
		}
	}
	rep, err := store.Verify(ctx, "proxy-test", seal.Options{})
	if err != nil || !rep.OK() || rep.Blobs != len(evs) {
		t.Fatalf("verify without the key: %+v %v", rep, err)
	}
	if _, _, err := ReadSpan(ctx, store, SpanIDOf(&evs[0]), nil); !errors.Is(err, gitstore.ErrContentLocked) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("read without identity: %v", err)
	}
	_, sp, err := ReadSpan(ctx, store, SpanIDOf(&evs[0]), []age.Identity{id})
	if err != nil || sp.Format != SpanFormat || len(sp.Messages) == 0 || !strings.Contains(string(sp.Messages[0].Message), marker) {
		t.Fatalf("read with identity: %+v %v", sp, err)
	}
	if _, _, err := ReadSpan(ctx, store, "sp-aaaaaaaaaaaaaaaa", nil); !errors.Is(err, ErrNoSpan) {
		t.Fatalf("unknown span: %v", err)
	}
	// The marker is in no file of the archive, inflated objects included.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, _ := os.ReadFile(p)
		data := raw
		if zr, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			if b, err := io.ReadAll(zr); err == nil {
				data = b
			}
		}
		if bytes.Contains(data, []byte(marker)) || bytes.Contains(raw, []byte(marker)) {
			t.Errorf("plaintext in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rpt, err := Savings(ctx, store, filepath.Join(dir, "lossless", "proxy", LogFile), time.Time{}, time.Now().Add(time.Minute))
	if err != nil || rpt.Spans != len(evs) || rpt.SpansEncrypted != len(evs) || rpt.Requests != 12 || rpt.Compacted == 0 || rpt.TokensKeptOut <= 0 {
		t.Fatalf("savings %+v %v", rpt, err)
	}
}

// Savings are counted from the log and the archive, by time.
func TestSavingsWindow(t *testing.T) {
	dir, store := bareRepo(t, "")
	logPath := filepath.Join(dir, "lossless", "proxy", LogFile)
	os.MkdirAll(filepath.Dir(logPath), 0o700)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	lines := []LogLine{
		{TS: now.Add(-48 * time.Hour), Session: "a", Before: 9000, After: 3000, Compacted: true, Summarised: true, CountSource: "exact"},
		{TS: now.Add(-2 * time.Hour), Session: "a", Before: 9500, After: 3500, Compacted: true, Reused: true, CountSource: "exact"},
		{TS: now.Add(-time.Hour), Session: "b", Before: 2000, After: 2000, CountSource: "est"},
		{TS: now.Add(-time.Minute), Session: "b", Before: 9000, After: 9000, FailOpen: "summary-error", CountSource: "est"},
	}
	var buf bytes.Buffer
	for _, l := range lines {
		b, _ := json.Marshal(l)
		buf.Write(append(b, '\n'))
	}
	buf.WriteString("not json\n")
	os.WriteFile(logPath, buf.Bytes(), 0o600)
	r, err := Savings(context.Background(), store, logPath, now.Add(-24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 3 || r.Compacted != 1 || r.SummariesReused != 1 || r.Summaries != 0 || r.TokensBefore != 20500 || r.TokensAfter != 14500 || r.TokensKeptOut != 6000 || r.FailOpen["summary-error"] != 1 || r.Sessions != 2 {
		t.Fatalf("report %+v", r)
	}
}

// An old, large log is trimmed by age, not by position.
func TestLogTrimByAge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LogFile)
	now := time.Now()
	var buf bytes.Buffer
	pad := strings.Repeat("x", 2000)
	for i := 0; buf.Len() < logMaxBytes+1; i++ {
		ts := now.Add(-time.Duration(i%200) * 24 * time.Hour) // ages mixed, not in file order
		b, _ := json.Marshal(map[string]any{"ts": ts, "session": pad})
		buf.Write(append(b, '\n'))
	}
	os.WriteFile(path, buf.Bytes(), 0o600)
	l, err := openSavingsLog(path, now)
	if err != nil {
		t.Fatal(err)
	}
	l.close()
	data, _ := os.ReadFile(path)
	if len(data) > logMaxBytes/2 {
		t.Fatalf("log still %d bytes", len(data))
	}
	oldest := now
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var v struct{ TS time.Time }
		json.Unmarshal(line, &v)
		if v.TS.Before(oldest) {
			oldest = v.TS
		}
	}
	if now.Sub(oldest) > logRetention {
		t.Fatalf("a line older than the retention survived: %s", oldest)
	}
}

func TestConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Upstream, cfg.Archive = "http://127.0.0.1:1/v1/", &MemoryArchive{}
	p, err := New(t.Context(), cfg)
	if err != nil || p.up.base.String() != "http://127.0.0.1:1" {
		t.Fatalf("%v %v", p, err)
	}
	cfg.Archive = nil
	if _, err := New(t.Context(), cfg); err == nil {
		t.Fatal("no archive accepted")
	}
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "localhost:8786": true, "[::1]:0": true, "0.0.0.0:8786": false, "192.168.1.2:80": false, ":8786": false} {
		if err := checkListen(addr, false); (err == nil) != ok {
			t.Errorf("listen %s: %v", addr, err)
		}
	}
	src := Sources{
		Flags: map[string]string{"window": "4096"},
		Getenv: func(k string) string {
			return map[string]string{"LOSSLESS_PROXY_WINDOW": "8192", "LOSSLESS_PROXY_TAIL": "0.3"}[k]
		},
		Git: func(k string) string {
			return map[string]string{"lossless.proxy.window": "16384", "lossless.proxy.tail": "0.1", "lossless.proxy.min-tail": "6"}[k]
		},
	}
	c, err := Load(src)
	if err != nil || c.Window != 4096 || c.TailShare != 0.3 || c.MinTail != 6 || c.Threshold != 0.85 {
		t.Fatalf("precedence: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{{"threshold": "2"}, {"backend": "gpt"}, {"max-body": "lots"}, {"summary-timeout": "-1s"}, {"window": "-5"}} {
		if _, err := Load(Sources{Flags: bad}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if n, _ := parseBytes("32MiB"); n != 32<<20 {
		t.Errorf("32MiB = %d", n)
	}
}
