//go:build unix

package mcp

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// The real `git lossless mcp` process under a hostile client: raw frames
// on its stdin, every line of its stdout checked, its exit code.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// gitLosslessBinary builds cmd/git-lossless once per test process.
func gitLosslessBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-stdio-bin-")
		if err != nil {
			binErr = err
			return
		}
		// git-lossless runs `mcp` through git-lossless-mcp beside it:
		// the process the tests drive is the delegation, as a harness
		// registered with `git-lossless mcp` starts it.
		var bins []string
		if bins, binErr = testkit.BuildPrograms(dir, "git-lossless", "git-lossless-mcp"); binErr == nil {
			binPath = bins[0]
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// mcpProcess is a running `git lossless mcp`.
type mcpProcess struct {
	*rawClient
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	repo   string
	env    []string
}

// startMCP starts the binary in a fresh repository holding main.go and
// a remote URL with plantedPassword in .git/config, in an isolated HOME
// with the default configuration (redaction on).
func startMCP(t *testing.T) *mcpProcess {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	bin := gitLosslessBinary(t)
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	for _, d := range []string{home, repo} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "LOSSLESS_") || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "CLAUDE") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q")
	git("remote", "add", "origin", "https://agent:"+plantedPassword+"@git.example.invalid/repo.git")
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp")
	cmd.Dir, cmd.Env = repo, env
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &mcpProcess{cmd: cmd, stderr: &bytes.Buffer{}, repo: repo, env: env}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	p.rawClient = newRawClient(t, &lockedWriter{w: stdin}, stdout)
	return p
}

// lockedWriter writes each frame whole when goroutines send at once (a
// pipe write over PIPE_BUF may interleave with another).
type lockedWriter struct {
	mu sync.Mutex
	w  interface {
		Write([]byte) (int, error)
		Close() error
	}
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// end closes stdin, requires no further frame, and requires the process
// to exit 0 without a panic on stderr.
func (p *mcpProcess) end(t *testing.T) {
	t.Helper()
	if rest := p.rest(); len(rest) > 0 {
		t.Errorf("frames after the last ping: %v", raws(rest))
	}
	p.wait(t)
}

// wait requires the process to exit 0 without a panic on stderr.
func (p *mcpProcess) wait(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("git lossless mcp: %v, want exit 0 at the end of stdin\nstderr:\n%s", err, p.stderr)
		}
	case <-time.After(answerWait):
		t.Fatalf("git lossless mcp did not exit after stdin ended\nstderr:\n%s", p.stderr)
	}
	if strings.Contains(p.stderr.String(), "panic") || strings.Contains(p.stderr.String(), "goroutine ") {
		t.Errorf("stderr:\n%s", p.stderr)
	}
}

// TestStdioHostileClient drives the real process with every hostile
// frame (a ping after each), a 20 MB frame, 10,000 pipelined pings,
// eight goroutines calling tools and writing junk at once, and read_file
// of .git/config; then closes stdin. The process answers every frame as
// the specification says, writes nothing but JSON-RPC frames, archives
// nothing of .git/config, and exits 0. Before the frame guard the first
// bad frame ended it with exit code 3.
func TestStdioHostileClient(t *testing.T) {
	p := startMCP(t)
	p.initialize()
	runFrameCases(t, p.rawClient, hostileFrames())

	big := `{"method":"tools/call","params":{"name":"search","arguments":{"query":"` + strings.Repeat("a", 20<<20) + `"}},"jsonrpc":"2.0","id":"big"}`
	p.send([]byte(big))
	if a, _ := p.until(`"big"`); a.Error == nil || a.Error.Code != codeInvalidRequest {
		t.Errorf("a 20 MB frame: %.300s", a.raw)
	}
	p.ping(`"after-big"`)

	// 10,000 pings in one write: each answered once, with a result or,
	// over MaxInFlight at once, "server busy".
	const flood = 10000
	var b bytes.Buffer
	for i := range flood {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", 100000+i)
	}
	if _, err := p.in.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	answered, busy := map[string]bool{}, 0
	for len(answered) < flood {
		a, ok := p.next()
		if !ok {
			t.Fatalf("the output ended after %d of %d pings", len(answered), flood)
		}
		switch {
		case answered[a.id()]:
			t.Fatalf("answered twice: %s", a.raw)
		case a.Error != nil && a.Error.Code == codeServerBusy:
			busy++
		case a.Error != nil || string(a.Result) != "{}":
			t.Fatalf("a ping answered %s", a.raw)
		}
		answered[a.id()] = true
	}
	t.Logf("%d pipelined pings: %d answered busy", flood, busy)
	p.ping(`"after-flood"`)

	// Eight clients' worth of calls and junk at once.
	calls := []string{
		`{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"read_file","arguments":{"path":"main.go"}}}`,
		`{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"read_file","arguments":{"path":".git/config"}}}`,
		`{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"search","arguments":{"query":"main"}}}`,
		`{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"seal_status","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"%s","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"digests","arguments":{"limit":"x"}}}`,
	}
	var wg sync.WaitGroup
	want := map[string]bool{}
	for g := range 8 {
		for i := range 20 {
			want[fmt.Sprintf(`"g%d-%d"`, g, i)] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				id := fmt.Sprintf("g%d-%d", g, i)
				if _, err := p.in.Write([]byte(fmt.Sprintf(calls[(g+i)%len(calls)], id) + "\n{junk\n\n")); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := map[string]bool{}
	junk := 0
	for len(got) < len(want) {
		a, ok := p.next()
		if !ok {
			t.Fatalf("the output ended after %d of %d calls", len(got), len(want))
		}
		switch {
		case a.id() == "null" && a.Error != nil && a.Error.Code == codeParseError:
			junk++
		case want[a.id()] && !got[a.id()]:
			got[a.id()] = true
			if strings.Contains(a.raw, plantedPassword) {
				t.Errorf("an answer holds the password: %.300s", a.raw)
			}
			if strings.Contains(a.raw, `.git/config`) && !strings.Contains(a.raw, `"isError":true`) && (a.Error == nil || a.Error.Code != codeServerBusy) {
				t.Errorf("read_file .git/config answered %.300s", a.raw)
			}
		default:
			t.Fatalf("unexpected: %s", a.raw)
		}
	}
	for junk < len(want) {
		a, _ := p.next()
		if a.id() != "null" || a.Error == nil || a.Error.Code != codeParseError {
			t.Fatalf("unexpected: %s", a.raw)
		}
		junk++
	}
	p.ping(`"last"`)
	p.end(t)

	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir, cmd.Env = p.repo, p.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("package main")) {
		t.Error("read_file main.go archived nothing (the check below proves nothing)")
	}
	if bytes.Contains(out, []byte(plantedPassword)) {
		t.Error("the password of .git/config is in an object of the store")
	}
}

// TestStdioEndOfInput: stdin closed in the middle of a frame, after a
// call: the call is answered, the cut frame is a parse error, and the
// process exits 0. Stdin closed at once: exit 0, nothing written.
func TestStdioEndOfInput(t *testing.T) {
	p := startMCP(t)
	p.initialize()
	if _, err := p.in.Write([]byte(`{"jsonrpc":"2.0","id":"whole","method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":"cut","meth`)); err != nil {
		t.Fatal(err)
	}
	rest := p.rest()
	var ids []string
	for _, f := range rest {
		ids = append(ids, f.id())
		if f.id() == `"whole"` && f.Error != nil || f.id() == "null" && (f.Error == nil || f.Error.Code != codeParseError) {
			t.Errorf("answer %.300s", f.raw)
		}
	}
	if len(rest) != 2 || !(ids[0] == `"whole"` && ids[1] == "null" || ids[1] == `"whole"` && ids[0] == "null") {
		t.Errorf("answers %v, want the call's and a parse error", raws(rest))
	}
	p.wait(t)

	q := startMCP(t)
	q.end(t)
}
