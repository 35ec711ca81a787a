package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bufio"

	"io"

	"syscall"

	"runtime"
)

// TestBenchAndDemoAreExternal: without git-lossless-bench beside it or on
// PATH, `git lossless demo` and `git lossless bench` say what to install
// (exit 3) and run nothing; with it (cmd/git-lossless-bench's tests run
// every benchmark as `git-lossless bench ...`) they run it.
func TestBenchAndDemoAreExternal(t *testing.T) {
	sb := newSandbox(t)
	sb.setenv("PATH", filepath.Dir(docsGit(t)))
	for _, args := range [][]string{{"demo"}, {"bench", "store"}, {"help", "bench"}} {
		r := sb.run(sb.root, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "git-lossless-bench is not installed beside git-lossless or on PATH") ||
			!strings.Contains(r.stderr, "hint: go install github.com/git-lossless/git-lossless/cmd/git-lossless-bench@latest") {
			t.Errorf("git lossless %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// help lists them, under measure, as git-lossless-bench's.
	r := sb.ok(sb.root, "help")
	for _, n := range []string{"bench", "demo"} {
		if !strings.Contains(r.stdout, "    "+n+" ") || !strings.Contains(r.stdout, "(git-lossless-bench)") {
			t.Errorf("help does not list %s as git-lossless-bench's:\n%s", n, r.stdout)
		}
	}
}

// runProgram runs bin (a git-lossless) in dir with the sandbox's
// environment and stdin.
func runProgram(t *testing.T, sb *sandbox, bin, dir, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, sb.env, strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: timed out\n%s", bin, strings.Join(args, " "), r.stderr)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	return r
}

// TestMCPIsExternal: `git lossless mcp` runs git-lossless-mcp, found
// beside git-lossless, else on PATH, with stdin, stdout, stderr, the
// directory (-C) and the exit code passed through; with it nowhere, it
// says what to install (exit 3) and runs nothing. git-lossless itself
// holds no MCP server (layoutcheck: it links no MCP SDK), so every answer
// below is git-lossless-mcp's.
func TestMCPIsExternal(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("delegated-through-mcp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A git-lossless alone in its directory, as a copy of the built one.
	lone := filepath.Join(sb.root, "lone", "git-lossless")
	b, err := os.ReadFile(e2eBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(lone), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o700); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Dir(docsGit(t))
	sb.setenv("PATH", gitDir)
	for _, args := range [][]string{{"mcp"}, {"-C", repo, "mcp", "--no-mask"}, {"help", "mcp"}} {
		r := runProgram(t, sb, lone, sb.root, "", args...)
		if r.code != exitError || r.stdout != "" || !strings.Contains(r.stderr, "git-lossless-mcp is not installed beside git-lossless or on PATH") ||
			!strings.Contains(r.stderr, "hint: go install github.com/git-lossless/git-lossless/cmd/git-lossless-mcp@latest") {
			t.Errorf("git lossless %s without git-lossless-mcp: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}

	frames := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`,
	}, "\n") + "\n"
	for _, c := range []struct{ how, bin, path string }{
		{"on PATH", lone, filepath.Dir(e2eBin) + string(os.PathListSeparator) + gitDir},
		{"beside git-lossless", e2eBin, gitDir},
	} {
		sb.setenv("PATH", c.path)
		r := runProgram(t, sb, c.bin, sb.root, frames, "-C", repo, "mcp")
		if r.code != exitOK {
			t.Fatalf("%s: git lossless -C REPO mcp: exit %d\n%s", c.how, r.code, r.stderr)
		}
		answers := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%s: stdout holds %q, not a JSON-RPC frame", c.how, l)
			}
			answers[string(m.ID)] = l
		}
		if !strings.Contains(answers["1"], `"serverInfo"`) || !strings.Contains(answers["2"], `"name":"search"`) ||
			!strings.Contains(answers["3"], "delegated-through-mcp") {
			t.Errorf("%s: answers %v", c.how, answers)
		}

		// Its own usage error, printed once, and its exit code.
		r = runProgram(t, sb, c.bin, repo, "", "mcp", "--no-such-flag")
		if r.code != exitUsage || strings.Count(r.stderr, "git-lossless: error:") != 1 || !strings.Contains(r.stderr, "--no-such-flag") {
			t.Errorf("%s: git lossless mcp --no-such-flag: exit %d\n%s", c.how, r.code, r.stderr)
		}
		// Its help is the command's.
		r = runProgram(t, sb, c.bin, repo, "", "help", "mcp")
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "usage: git lossless mcp [--harness NAME]") || !strings.Contains(r.stdout, "--no-mask") {
			t.Errorf("%s: git lossless help mcp: exit %d\n%s%s", c.how, r.code, r.stdout, r.stderr)
		}
	}

	// help lists it, among the agents' commands, as git-lossless-mcp's.
	r := sb.ok(sb.root, "help")
	if !strings.Contains(r.stdout, "    mcp ") || !strings.Contains(r.stdout, "git-lossless-mcp)") {
		t.Errorf("help does not list mcp as git-lossless-mcp's:\n%s", r.stdout)
	}
}

// TestMCPStopsWithGitLossless: a harness stops its MCP server with
// SIGTERM to the process it started, git-lossless when its config runs
// `git-lossless mcp`, or kills it. The server, git-lossless-mcp, must
// stop with it and not linger on the harness's pipes: stdout reaches end
// of file while stdin is still open (a server left behind would hold it
// open until the harness closed stdin, which a harness that already
// signalled may never do). SIGKILL cannot be passed on: on Linux the
// kernel's parent-death signal stops the server (dieWithUs).
func TestMCPStopsWithGitLossless(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	sb.setenv("PATH", filepath.Dir(docsGit(t)))
	sigs := []syscall.Signal{syscall.SIGTERM}
	if runtime.GOOS == "linux" {
		sigs = append(sigs, syscall.SIGKILL)
	}
	for _, sig := range sigs {
		t.Run(sig.String(), func(t *testing.T) { mcpStopsOn(t, sb, repo, sig) })
	}
}

func mcpStopsOn(t *testing.T, sb *sandbox, repo string, sig syscall.Signal) {
	cmd := exec.Command(e2eBin, "-C", repo, "mcp")
	cmd.Dir, cmd.Env = sb.root, sb.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close() // whatever happens, the server's stdin ends
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stdout)
	first := make(chan string, 1)
	go func() {
		l, _ := br.ReadString('\n')
		first <- l
	}()
	select {
	case l := <-first:
		if !strings.Contains(l, `"serverInfo"`) {
			t.Fatalf("the server's first answer is %q, not initialize's\n%s", l, errb.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no answer to initialize in 60 s\n%s", errb.String())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, br) // end of file: every writer of stdout is gone
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("wait: %v", err)
		}
		if strings.Contains(errb.String(), "panic") {
			t.Errorf("stderr after %v:\n%s", sig, errb.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("60 s after %v to git-lossless, its MCP server still holds stdout open\n%s", sig, errb.String())
	}
}

// TestMCPExternalSurvivesGarbage: through git-lossless's delegation, a
// hostile or broken client's garbage (not JSON, a frame of the wrong
// shape, control bytes) gets JSON-RPC errors, and the server goes on to
// answer the well-formed calls after it; it reads no file outside the
// repository for a path that climbs out.
func TestMCPExternalSurvivesGarbage(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	sb.setenv("PATH", filepath.Dir(docsGit(t)))
	frames := strings.Join([]string{
		`{not json}`,
		"\x00\x01\x02\xff",
		`{"jsonrpc":"2.0","id":7,"method":42}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"../../../../etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	r := runProgram(t, sb, e2eBin, sb.root, frames, "-C", repo, "mcp")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	parseErrors := 0
	answers := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout holds %q, not a JSON-RPC frame", l)
		}
		if m.Error != nil && m.Error.Code == -32700 {
			parseErrors++
		}
		answers[string(m.ID)] = l
	}
	if parseErrors == 0 {
		t.Errorf("no parse error answered for the garbage:\n%s", r.stdout)
	}
	if !strings.Contains(answers["1"], `"serverInfo"`) || !strings.Contains(answers["3"], `"name":"search"`) {
		t.Errorf("the well-formed calls after the garbage went unanswered:\n%s", r.stdout)
	}
	if a := answers["2"]; a == "" || strings.Contains(a, "root:") || !strings.Contains(a, `"isError":true`) {
		t.Errorf("read_file of a path outside the repository: %s", a)
	}
}
