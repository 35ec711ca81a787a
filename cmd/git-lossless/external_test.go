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
