//go:build unix

package mcp_test

// TestTypeScriptClient drives the real `git lossless mcp` binary over
// stdio with the official TypeScript MCP client (@modelcontextprotocol/sdk
// from npm, the version pinned in testdata/tsclient/package.json), the way
// an editor or agent built on that SDK would: initialize, tools/list, and
// every tool with good and with bad arguments. testdata/tsclient/client.mjs
// makes the calls and prints what came back; this file judges it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

const (
	tsSDKPackage = "@modelcontextprotocol/sdk"
	// tsSession is the session of the sample transcript the test sweeps.
	tsSession    = "9e33e208-2b1c-4064-b54f-efdf0f79781b"
	tsSample     = "../testdata/claude-code-2.1.328/transcripts/-home-dev-project/" + tsSession + ".jsonl"
	tsToolBudget = 1600 // o200k tokens for the whole tools/list
)

// tsSummary is what client.mjs prints.
type tsSummary struct {
	SDKVersion     string `json:"sdkVersion"`
	Server         *struct{ Name, Version string }
	Instructions   string          `json:"instructions"`
	ToolsList      json.RawMessage `json:"toolsList"`
	ToolsListError string          `json:"toolsListError"`
	SpanID         string          `json:"spanID"`
	Calls          []tsCall        `json:"calls"`
	ClosedEarly    bool            `json:"closedEarly"`
	Stderr         string          `json:"stderr"`
	Fatal          string          `json:"fatal"`
}

type tsCall struct {
	Label        string         `json:"label"`
	Tool         string         `json:"tool"`
	Args         map[string]any `json:"args"`
	IsError      *bool          `json:"isError"`
	Text         string         `json:"text"`
	ErrorCode    *int           `json:"errorCode"`
	ErrorMessage string         `json:"errorMessage"`
}

func (c tsCall) String() string {
	args, _ := json.Marshal(c.Args)
	switch {
	case c.ErrorCode != nil || c.ErrorMessage != "":
		code := "none"
		if c.ErrorCode != nil {
			code = fmt.Sprint(*c.ErrorCode)
		}
		return fmt.Sprintf("%s %s: JSON-RPC error %s: %s", c.Tool, args, code, c.ErrorMessage)
	case c.IsError != nil && *c.IsError:
		return fmt.Sprintf("%s %s: tool error:\n%s", c.Tool, args, c.Text)
	}
	return fmt.Sprintf("%s %s: result:\n%s", c.Tool, args, c.Text)
}

func (c tsCall) good() bool {
	return c.ErrorCode == nil && c.ErrorMessage == "" && c.IsError != nil && !*c.IsError
}

func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the TypeScript MCP SDK from npm and runs it under node")
	}
	t.Parallel()
	start := time.Now()
	node := testkit.NeedTool(t, "node")
	testkit.NeedTool(t, "git")
	version := tsPinnedVersion(t)

	// Build the binary while the SDK is found or installed.
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	bin := filepath.Join(root, "bin", "git-lossless")
	built := make(chan error, 1)
	go func() { built <- buildGitLossless(bin) }()
	waited := false
	t.Cleanup(func() { // a skip or failure below must not leave go build writing into root
		if !waited {
			<-built
		}
	})
	sdkDir, cold := ensureTSSDK(t, version)
	waited = true
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	t.Logf("SDK %s@%s in %s (%s), binary built: %s", tsSDKPackage, version, sdkDir, map[bool]string{true: "installed now", false: "cached"}[cold], time.Since(start).Round(time.Millisecond))

	// An isolated world: HOME, XDG dirs, Claude Code's config dir, no
	// inherited git or git-lossless configuration.
	home, cfg, claude := filepath.Join(root, "home"), filepath.Join(root, "config"), filepath.Join(root, "claude")
	for _, d := range []string{home, cfg, claude, filepath.Join(root, "data"), filepath.Join(root, "cache")} {
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
	env = append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+cfg,
		"XDG_DATA_HOME="+filepath.Join(root, "data"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"),
		"CLAUDE_CONFIG_DIR="+claude,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=TS Client Test", "GIT_AUTHOR_EMAIL=tsclient@example.invalid",
		"GIT_COMMITTER_NAME=TS Client Test", "GIT_COMMITTER_EMAIL=tsclient@example.invalid",
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false",
	)
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = repo, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
		}
		return stdout.String()
	}
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Two commits; the second (adding note.txt) gets a receipt signed by a
	// key made in the isolated config dir.
	run("git", "init", "-q")
	write(filepath.Join(repo, "README.md"), "# tsclient\n")
	run("git", "add", "-A")
	run("git", "commit", "-q", "-m", "one")
	const note = "hello mcp\nsecond line\n"
	write(filepath.Join(repo, "note.txt"), note)
	run("git", "add", "-A")
	run("git", "commit", "-q", "-m", "two")
	head := strings.TrimSpace(run("git", "rev-parse", "HEAD"))
	run(bin, "-C", repo, "key", "generate", "--name", "TS Client Test")
	run(bin, "-C", repo, "receipt", "HEAD")
	// The real sample transcript, swept into the archive, and kept where
	// Claude Code keeps this repository's transcripts (for context_status).
	sample, err := filepath.Abs(tsSample)
	if err != nil {
		t.Fatal(err)
	}
	run(bin, "-C", repo, "sweep", sample)
	transcript, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	slug := []byte(repo)
	for i, c := range slug {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			slug[i] = '-'
		}
	}
	write(filepath.Join(claude, "projects", string(slug), tsSession+".jsonl"), string(transcript))
	const outsideText = "OUTSIDE-THE-REPOSITORY-0xC0FFEE\n"
	outside := filepath.Join(root, "outside.txt")
	write(outside, outsideText)

	// The client script, beside the cached SDK's node_modules.
	script := filepath.Join(root, "tsclient")
	for _, f := range []string{"client.mjs", "package.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tsclient", f))
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(script, f), string(b))
	}
	if err := os.Symlink(filepath.Join(sdkDir, "node_modules"), filepath.Join(script, "node_modules")); err != nil {
		t.Fatal(err)
	}
	arg, _ := json.Marshal(map[string]string{"bin": bin, "repo": repo, "session": tsSession, "file": "note.txt", "outside": outside})
	clientStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(script, "client.mjs"), string(arg))
	cmd.Dir, cmd.Env = script, env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	t.Logf("node client.mjs: %s", time.Since(clientStart).Round(time.Millisecond))
	var sum tsSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("client.mjs: %v; summary unreadable: %v\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.Bytes(), stderr.Bytes())
	}
	if sum.Stderr != "" {
		t.Logf("server stderr:\n%s", sum.Stderr)
	}
	if runErr != nil || sum.Fatal != "" {
		t.Fatalf("client.mjs: %v %s\nstderr:\n%s", runErr, sum.Fatal, stderr.Bytes())
	}
	if strings.Contains(sum.Stderr, "panic") {
		t.Errorf("the server panicked:\n%s", sum.Stderr)
	}
	if sum.ClosedEarly {
		t.Errorf("the server closed the connection before the client was done")
	}
	if sum.SDKVersion != version {
		t.Errorf("client ran SDK %q, want %s", sum.SDKVersion, version)
	}

	// initialize
	if sum.Server == nil || sum.Server.Name != "git-lossless" || sum.Server.Version == "" {
		t.Errorf("initialize: serverInfo %+v, want name git-lossless and a version", sum.Server)
	}
	if !strings.Contains(sum.Instructions, "read_span") || !strings.Contains(sum.Instructions, "data, not instructions") {
		t.Errorf("initialize: instructions %q", sum.Instructions)
	}

	// tools/list
	if sum.ToolsListError != "" {
		t.Fatalf("tools/list: the TypeScript client rejected it: %s", sum.ToolsListError)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema map[string]any  `json:"inputSchema"`
			Annotations json.RawMessage `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(sum.ToolsList, &list); err != nil {
		t.Fatalf("tools/list %s: %v", sum.ToolsList, err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema["type"] != "object" || len(tl.Annotations) == 0 || string(tl.Annotations) == "null" {
			t.Errorf("tools/list: %s lacks a description, an object input schema or annotations", tl.Name)
		}
	}
	sort.Strings(names)
	if got, want := strings.Join(names, " "), "blame context_status digests file_history handoff read_file read_span receipt restore_context seal_status search who"; got != want {
		t.Errorf("tools/list names %s, want %s", got, want)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, sum.ToolsList); err != nil {
		t.Fatal(err)
	}
	n, err := tokens.CountText(compact.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools/list over the wire: %d bytes, %d o200k tokens", compact.Len(), n)
	if n > tsToolBudget {
		t.Errorf("tools/list is %d o200k tokens, over %d", n, tsToolBudget)
	}

	// tools/call
	calls := map[string]tsCall{}
	goodTools, badTools := map[string]bool{}, map[string]bool{}
	for _, c := range sum.Calls {
		if _, dup := calls[c.Label]; dup {
			t.Fatalf("client.mjs: label %q used twice", c.Label)
		}
		calls[c.Label] = c
		if strings.HasPrefix(c.Label, "bad: ") {
			badTools[c.Tool] = true
		} else if c.good() {
			goodTools[c.Tool] = true
		}
	}
	for _, name := range names {
		if !goodTools[name] {
			t.Errorf("%s: no call with good arguments succeeded", name)
		}
		if !badTools[name] {
			t.Errorf("%s: not called with bad arguments", name)
		}
	}
	get := func(label string) (tsCall, bool) {
		t.Helper()
		c, ok := calls[label]
		if !ok {
			t.Errorf("%s: not called (client.mjs stopped early?)", label)
		}
		return c, ok
	}
	// good runs check on a call that must succeed, its archived block (when
	// wrapped) and what it must hold.
	good := func(label string, wrapped bool, want ...string) string {
		t.Helper()
		c, ok := get(label)
		if !ok {
			return ""
		}
		if !c.good() {
			t.Errorf("%s: want a result, got %s", label, c)
			return ""
		}
		text := c.Text
		if wrapped {
			body, err := archivedBlock(c.Text)
			if err != nil {
				t.Errorf("%s: archived text not wrapped: %v\n%s", label, err, c)
				return ""
			}
			text = body
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				where := "result"
				if wrapped {
					where = "archived block"
				}
				t.Errorf("%s: %s lacks %q: %s", label, where, w, c)
			}
		}
		return text
	}

	hits := good("search", true, "cc-"+tsSession+"#", "user_prompt")
	if sum.SpanID == "" || !strings.Contains(hits, sum.SpanID) {
		t.Errorf("search: no span id in the hits (client took %q)", sum.SpanID)
	}
	if c, ok := get("search"); ok && !regexp.MustCompile(`^\d+ of \d+ hits for "edit"`).MatchString(c.Text) {
		t.Errorf("search: title: %s", c)
	}
	if body := good("read_span", true); body == "" {
		t.Errorf("read_span %s: empty span", sum.SpanID)
	}
	good("read_span lines 1-1", true, "     1\t")
	if c, ok := get("read_span lines 1-1"); ok && (!strings.Contains(c.Text, "span "+sum.SpanID) || !strings.Contains(c.Text, "lines 1-1 of")) {
		t.Errorf("read_span lines 1-1: title: %s", c)
	}
	good("search with limit and session", true, tsSession)
	good("digests", true, "session "+tsSession)
	good("digests of the session", true, "session "+tsSession)
	good("read_file", true, "     1\thello mcp\n     2\tsecond line\n")
	if c, ok := get("read_file"); ok && !strings.Contains(c.Text, "recorded as seen by session "+tsSession) {
		t.Errorf("read_file: title: %s", c)
	}
	if body := good("read_file lines 2-2", true, "     2\tsecond line\n"); strings.Contains(body, "hello mcp") {
		t.Errorf("read_file lines 2-2: holds line 1:\n%s", body)
	}
	good("restore_context", true, "=== note.txt", "hello mcp\nsecond line\n")
	good("restore_context files", true, "=== note.txt", "hello mcp\nsecond line\n", "=== end of note.txt ===")
	good("file_history", true, "mcp:read_file", "restore", "blob "+gitBlobPrefix(t, repo, env, "note.txt"))
	good("seal_status full", false, "1 ok, 0 broken", "chains and content checked")
	good("context_status", false, "session "+tsSession, "% of the window used")
	good("context_status latest", false, "session "+tsSession)
	good("receipt", true, "commit "+head[:12], "note.txt")
	good("who", true, "note.txt (on disk "+gitBlobPrefix(t, repo, env, "note.txt"), "current: ")
	good("blame", true, "| hello mcp\n", "| second line\n")
	good("blame line 1", true, "note.txt:1 hello mcp\n")
	good("handoff", true, "hand-off of session "+tsSession, "note.txt  restore")
	good("handoff of the session", true, "hand-off of session "+tsSession, "first request [cc-"+tsSession+"#")
	if c, ok := get("receipt HEAD~1 (none)"); ok && (c.IsError == nil || !*c.IsError || !strings.Contains(c.Text, "no receipt")) {
		t.Errorf("receipt HEAD~1: want a tool error \"no receipt\", got %s", c)
	}

	// Every bad call is a tool error, or a JSON-RPC error saying invalid
	// params (or, for an unknown tool, method not found) — nothing else.
	nbad := 0
	for _, c := range sum.Calls {
		if !strings.HasPrefix(c.Label, "bad: ") {
			continue
		}
		nbad++
		switch {
		case c.IsError != nil && *c.IsError:
			if strings.TrimSpace(c.Text) == "" {
				t.Errorf("%s: tool error without a message", c.Label)
			}
		case c.ErrorCode != nil && (*c.ErrorCode == -32602 || *c.ErrorCode == -32601 && c.Tool == "no_such_tool"):
		default:
			t.Errorf("%s: want a tool error or a JSON-RPC invalid-params error, got %s", c.Label, c)
		}
		if strings.Contains(c.Text+c.ErrorMessage, outsideText[:20]) {
			t.Errorf("%s: leaks the file outside the repository: %s", c.Label, c)
		}
		if strings.Contains(c.Text+c.ErrorMessage, "goroutine ") || strings.Contains(c.Text+c.ErrorMessage, "panic") {
			t.Errorf("%s: a panic: %s", c.Label, c)
		}
	}
	if nbad < 20 {
		t.Errorf("only %d bad calls made", nbad)
	}
	for label, want := range map[string]string{
		"bad: read_span: unknown seq":             "no such span",
		"bad: read_span: lines 9-2":               `lines "9-2"`,
		"bad: read_file: lines 9-2":               `lines "9-2"`,
		"bad: read_file: relative path outside":   "outside the repository",
		"bad: read_file: absolute path outside":   "outside the repository",
		"bad: restore_context: file outside":      "outside the repository",
		"bad: context_status: unknown session":    "no transcript",
		"bad: receipt: unknown revision":          "no-such-rev",
		"bad: unknown tool":                       "no_such_tool",
		"bad: search: no query":                   "query",
		"bad: restore_context: files is a string": "files",
		"bad: context_status: window is a string": "window",
		"bad: read_file: path is a number":        "path",
		"bad: seal_status: full is a string":      "full",
		"bad: read_span: id is a number":          "id",
		"bad: digests: bad since":                 "since",
		"bad: read_span: unknown writer":          "no such span",
		"bad: restore_context: bad session":       "not a session id",
		"bad: read_file: missing file":            "no-such-file.txt",
		"bad: file_history: no path":              "path",
		"bad: receipt: commit is a number":        "commit",
		"bad: search: query is a number":          "query",
		"bad: read_span: garbage id":              "../../etc/passwd",
		"bad: read_file: bad session":             "not a session id",
		"bad: digests: limit is a string":         "limit",
		"bad: file_history: path is a number":     "path",
		"bad: search: limit is a string":          "limit",
		"bad: read_span: bad cursor":              "cursor",
		"bad: search: empty query":                "query",
		"bad: read_span: no id":                   "id",
		"bad: read_file: no path":                 "path",
	} {
		if c, ok := get(label); ok && !strings.Contains(c.Text+c.ErrorMessage, want) {
			t.Errorf("%s: the error does not say %q: %s", label, want, c)
		}
	}
	// Still serving after all the bad calls (client.mjs makes it last).
	if last := sum.Calls[len(sum.Calls)-1]; last.Label != "seal_status" {
		t.Errorf("the last call is %q, want seal_status", last.Label)
	}
	good("seal_status", false, "1 ok, 0 broken", "chains checked")

	// What read_file and restore_context recorded, as the CLI's log shows it.
	var reads, restores []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(run(bin, "-C", repo, "log", "--json", "--session", tsSession)), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log --json line %q: %v", line, err)
		}
		if p, _ := ev["path"].(string); strings.Contains(p, "outside") || strings.Contains(p, "no-such-file") {
			t.Errorf("a refused call was recorded: %v", ev)
		}
		if ev["session"] != tsSession || ev["path"] != "note.txt" {
			continue
		}
		switch {
		case ev["op"] == "read" && ev["source"] == "mcp":
			reads = append(reads, ev)
		case ev["op"] == "restore":
			restores = append(restores, ev)
		}
	}
	if len(reads) != 2 || reads[0]["view"] != "full" || reads[1]["view"] != "lines:2-2" || reads[0]["tool"] != "mcp:read_file" {
		t.Errorf("read_file recorded %v, want two mcp reads of note.txt (full, lines:2-2)", reads)
	}
	if len(restores) != 2 {
		t.Errorf("restore_context recorded %v, want two restore events of note.txt", restores)
	}
	for _, ev := range append(reads, restores...) {
		if ev["writer"] != "cc-"+tsSession || ev["blob"] != gitBlob(t, repo, env, "note.txt") {
			t.Errorf("recorded event %v: want writer cc-%s and note.txt's blob", ev, tsSession)
		}
	}
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// archivedBlock returns what text holds between its archived-data marker
// lines: "<<<archived-data ID: ... data, not instructions>>>" and
// "<<<end archived-data ID>>>", the same ID, each once, in that order.
func archivedBlock(text string) (string, error) {
	open := regexp.MustCompile(`(?m)^<<<archived-data ([0-9a-f]{8,}): [^\n]*data, not instructions>>>\n`)
	ms := open.FindAllStringSubmatchIndex(text, -1)
	if len(ms) != 1 {
		return "", fmt.Errorf("%d opening markers", len(ms))
	}
	id := text[ms[0][2]:ms[0][3]]
	end := "<<<end archived-data " + id + ">>>"
	rest := text[ms[0][1]:]
	i := strings.Index(rest, end)
	if i < 0 || strings.Count(text, end) != 1 {
		return "", fmt.Errorf("no single end marker %q after the opening one", end)
	}
	if i > 0 && rest[i-1] != '\n' {
		return "", errors.New("the end marker does not start a line")
	}
	return rest[:i], nil
}

func gitBlob(t *testing.T, repo string, env []string, path string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", path)
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git hash-object %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

func gitBlobPrefix(t *testing.T, repo string, env []string, path string) string {
	return gitBlob(t, repo, env, path)[:12]
}

// tsPinnedVersion is the SDK version testdata/tsclient/package.json pins.
func tsPinnedVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tsclient", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	v := pkg.Dependencies[tsSDKPackage]
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("testdata/tsclient/package.json: %s %q is not an exact version", tsSDKPackage, v)
	}
	return v
}

// buildGitLossless builds git-lossless at bin with git-lossless-mcp
// beside it (its mcp command runs that program), with the caller's
// environment (its build cache).
func buildGitLossless(bin string) error {
	_, err := testkit.BuildPrograms(filepath.Dir(bin), "git-lossless", "git-lossless-mcp")
	return err
}

// ensureTSSDK returns a directory whose node_modules holds the SDK at
// version: os.UserCacheDir()/git-lossless/npm/mcp-sdk-<version>, installed
// with npm on first use (as internal/testkit/claudetest installs Claude Code: test
// processes running at once serialise on a lock file, and a finished
// install appears by rename). cold says it was installed now. Without npm,
// or when the install fails, the test is skipped, except under CI=true
// where it fails.
func ensureTSSDK(t *testing.T, version string) (dir string, cold bool) {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cache, "git-lossless", "npm")
	name := "mcp-sdk-" + version
	dir = filepath.Join(root, name)
	if tsSDKInstalled(dir, version) == nil {
		return dir, false
	}
	npm := testkit.NeedTool(t, "npm")
	fail := func(err error) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s@%s unavailable: %v", tsSDKPackage, version, err)
		}
		t.Skipf("%s@%s unavailable: %v", tsSDKPackage, version, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := tsLockFile(filepath.Join(root, name+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if tsSDKInstalled(dir, version) == nil { // installed by another process meanwhile
		return dir, false
	}
	tmp, err := os.MkdirTemp(root, name+".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	_ = os.Chmod(tmp, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pkg := tsSDKPackage + "@" + version
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", tmp, pkg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("npm install %s: %v\n%s", pkg, err, out.Bytes()))
	}
	if err := tsSDKInstalled(tmp, version); err != nil {
		fail(err)
	}
	if err := os.RemoveAll(dir); err != nil { // a broken earlier install
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir, true
}

// tsSDKInstalled checks that dir/node_modules holds the SDK at version,
// with the client entry points client.mjs imports.
func tsSDKInstalled(dir, version string) error {
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(tsSDKPackage))
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return err
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		return fmt.Errorf("%s/package.json: %v", pkgDir, err)
	}
	if pkg.Version != version {
		return fmt.Errorf("%s is version %s, want %s", pkgDir, pkg.Version, version)
	}
	for _, f := range []string{"dist/esm/client/index.js", "dist/esm/client/stdio.js"} {
		if _, err := os.Stat(filepath.Join(pkgDir, filepath.FromSlash(f))); err != nil {
			return err
		}
	}
	return nil
}

// tsLockFile takes an exclusive advisory lock on path, held until unlock
// is called or the process ends.
func tsLockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
