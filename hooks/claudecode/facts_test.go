package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
)

// TestFactsSampleSession reads the facts of the real 2.1.328 session
// (swept into a repository): the first request, the one after /compact
// (the task notification and the /compact echo are harness text, not
// requests), the three files the main agent changed, no open error.
func TestFactsSampleSession(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	main := swCopySample(t, repo)
	st := swOpen(t, repo)
	if _, err := hooks.SweepSession(ctx, st, New(), main, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := readFacts(ctx, st, trSampleSession, "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Goal != "please edit" || strings.Join(f.Latest, "|") != "edit again" {
		t.Errorf("requests: goal %q latest %q", f.Goal, f.Latest)
	}
	if got := strings.Join(f.Edited, ","); got != "hello.txt,notes.md,main.go" || len(f.EditedBySub) != 0 {
		t.Errorf("edited %q (by subagent %v)", got, f.EditedBySub)
	}
	if len(f.OpenErrors) != 0 || f.Encrypted != 0 || f.Spans == 0 {
		t.Errorf("facts %+v", f)
	}
	// The subagent's own context: its prompt is its goal.
	sub, err := readFacts(ctx, st, trSampleSession, trSampleAgent)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Goal != "SUBTASK read main.go" {
		t.Errorf("subagent goal %q", sub.Goal)
	}

	text, err := manifest(ctx, st, trSampleSession, "", "compact", hooks.ManifestBudget)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"git-lossless: this session (" + trSampleSession + ") was compacted.\nFacts from the archive",
		`Goal (first request): "please edit"`,
		"Latest requests (oldest first):\n  \"edit again\"\n",
		"Files edited: hello.txt, notes.md, main.go\n",
		"Errors still open: none\n",
		"Search everything archived: `git lossless recall search QUERY --session " + trSampleSession + "`\n",
		"Its working set, as archived in git",
		"- hello.txt: edited by you",
		"mcp__git-lossless__restore_context",
		"mcp__git-lossless__read_file",
		"mcp__git-lossless__search",
		"mcp__git-lossless__read_span",
		"git lossless restore --session " + trSampleSession,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("manifest lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "Facts from the archive") > strings.Index(text, "Its working set") {
		t.Errorf("facts after the working set:\n%s", text)
	}
	if len(text) > hooks.ManifestBudget {
		t.Errorf("manifest of %d characters", len(text))
	}
	// After a resume the conversation is whole again: no facts.
	text, _ = manifest(ctx, st, trSampleSession, "", "resume", hooks.ManifestBudget)
	if strings.Contains(text, "Facts from the archive") || !strings.Contains(text, "was resumed") {
		t.Errorf("resume manifest:\n%s", text)
	}
}

// factsTranscript writes Claude Code 2.1.328-shaped transcript lines.
type factsTranscript struct {
	t       *testing.T
	session string
	cwd     string
	buf     bytes.Buffer
	n       int
	ts      time.Time
}

func newFactsTranscript(t *testing.T, session, cwd string) *factsTranscript {
	return &factsTranscript{t: t, session: session, cwd: cwd, ts: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)}
}

func (x *factsTranscript) line(typ string, message any, extra map[string]any) {
	x.n++
	x.ts = x.ts.Add(time.Second)
	l := map[string]any{"type": typ, "uuid": fmt.Sprintf("00000000-0000-4000-8000-%012d", x.n), "parentUuid": nil,
		"isSidechain": false, "sessionId": x.session, "timestamp": x.ts.Format(time.RFC3339Nano), "cwd": x.cwd,
		"version": "2.1.328", "message": message}
	for k, v := range extra {
		l[k] = v
	}
	b, err := json.Marshal(l)
	if err != nil {
		x.t.Fatal(err)
	}
	x.buf.Write(append(b, '\n'))
}

func (x *factsTranscript) prompt(text string) {
	x.line("user", map[string]any{"role": "user", "content": text}, nil)
}

// call is a tool call and its result (isErr: an error result).
func (x *factsTranscript) call(id, tool string, input map[string]any, result string, isErr bool) {
	x.line("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input}}}, nil)
	block := map[string]any{"type": "tool_result", "tool_use_id": id, "content": result}
	if isErr {
		block["is_error"] = true
	}
	x.line("user", map[string]any{"role": "user", "content": []any{block}}, map[string]any{"toolUseResult": "Error: " + result})
}

// read is a full Read of path showing content, as 2.1.328 records it.
func (x *factsTranscript) read(id, path, content string) {
	n := strings.Count(content, "\n") + 1
	x.line("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": path}}}}, nil)
	x.line("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": transcriptgen.Numbered(strings.Split(content, "\n"), 1)}}},
		map[string]any{"toolUseResult": map[string]any{"type": "text", "file": map[string]any{"filePath": path, "content": content, "numLines": n, "startLine": 1, "totalLines": n}}})
}

func (x *factsTranscript) write(t *testing.T) string {
	p := filepath.Join(t.TempDir(), x.session+".jsonl")
	if err := os.WriteFile(p, x.buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFactsOpenErrors: an error followed by a success of the same tool
// on the same target is closed; one that is not stays open; the target
// of a Bash call is its command; a newer error replaces an older one of
// the same call; requests are the first and the last three, cut and
// flattened.
func TestFactsOpenErrors(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	st := swOpen(t, repo)
	x := newFactsTranscript(t, "facts-1", repo)
	a, b, c := filepath.Join(repo, "a.go"), filepath.Join(repo, "b.go"), filepath.Join(repo, "c.go")
	long := "Refactor the sweep so that " + strings.Repeat("every transcript line is read once ", 12) + "END-NOT-SHOWN"
	x.prompt("Make the tests pass\nand keep the API.")
	x.call("toolu_1", "Bash", map[string]any{"command": "go test ./..."}, "Exit code 1\n--- FAIL: TestX\nFAIL", true)
	x.call("toolu_2", "Bash", map[string]any{"command": "go test ./..."}, "ok", false)
	x.prompt("<task-notification>\n<task-id>ab12</task-id>\n</task-notification>")
	x.prompt("second request")
	x.call("toolu_3", "Edit", map[string]any{"file_path": a, "old_string": "x", "new_string": "y"}, "<tool_use_error>String to replace not found in file.\nString: x</tool_use_error>", true)
	x.call("toolu_4", "Edit", map[string]any{"file_path": b, "old_string": "x", "new_string": "y"}, "<tool_use_error>File has not been read yet.</tool_use_error>", true)
	x.call("toolu_5", "Edit", map[string]any{"file_path": b, "old_string": "x", "new_string": "y"}, "The file "+b+" has been updated successfully.", false)
	x.call("toolu_6", "Bash", map[string]any{"command": "make lint"}, "lint: 3 problems (old)", true)
	x.call("toolu_7", "Bash", map[string]any{"command": "go vet ./..."}, "ok", false)
	x.call("toolu_8", "Bash", map[string]any{"command": "make lint"}, "lint: 1 problem\nmain.go:3: unused", true)
	x.prompt("third request")
	x.call("toolu_9", "Read", map[string]any{"file_path": c}, "File does not exist.", true)
	x.prompt(long)
	x.prompt("[Request interrupted by user]")
	x.prompt("fifth   request\twith\r\nwhite space")
	path := x.write(t)
	if _, err := hooks.SweepSession(ctx, st, New(), path, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := readFacts(ctx, st, "facts-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Goal != "Make the tests pass and keep the API." {
		t.Errorf("goal %q", f.Goal)
	}
	if len(f.Latest) != 3 || f.Latest[0] != "third request" || !strings.HasPrefix(f.Latest[1], "Refactor the sweep so that every") ||
		!strings.HasSuffix(f.Latest[1], "…") || len([]rune(f.Latest[1])) > hooks.FactsPromptChars || strings.Contains(f.Latest[1], "END-NOT-SHOWN") ||
		f.Latest[2] != "fifth request with white space" {
		t.Errorf("latest %q", f.Latest)
	}
	want := []hooks.OpenError{
		{Tool: "Edit", Target: "a.go", Text: "String to replace not found in file."},
		{Tool: "Bash", Target: "make lint", Text: "lint: 1 problem"},
		{Tool: "Read", Target: "c.go", Text: "File does not exist."},
	}
	if fmt.Sprint(f.OpenErrors) != fmt.Sprint(want) {
		t.Errorf("open errors\n got %q\nwant %q", f.OpenErrors, want)
	}
	if got := strings.Join(f.Edited, ","); got != "b.go" {
		t.Errorf("edited %q", got)
	}
	text := f.Text("facts-1", 4000)
	for _, w := range []string{
		"Errors still open (no later success of the same tool on the same target):\n" +
			"  * Edit a.go: String to replace not found in file.\n" +
			"  * Bash make lint: lint: 1 problem\n" +
			"  * Read c.go: File does not exist.\n",
		`Goal (first request): "Make the tests pass and keep the API."`,
	} {
		if !strings.Contains(text, w) {
			t.Errorf("facts text lacks %q:\n%s", w, text)
		}
	}
	for _, bad := range []string{"go test", "TestX", "has not been read", "(old)", "task-notification", "interrupted"} {
		if strings.Contains(text, bad) {
			t.Errorf("facts text holds %q:\n%s", bad, text)
		}
	}
}

// TestFactsMaskSecrets: a key-shaped value that reached a span unredacted
// (here: put in the facts directly) is masked in the text.
func TestFactsMaskSecrets(t *testing.T) {
	token := "ghp_" + strings.Repeat("A1b2C3d4", 4) + "Zz99"
	f := &hooks.SessionFacts{Goal: "deploy with " + token, OpenErrors: []hooks.OpenError{{Tool: "Bash", Target: "curl -H 'Authorization: token " + token + "'", Text: "401"}}}
	text := f.Text("s", 4000)
	if strings.Contains(text, token) || !strings.Contains(text, "ghp****Zz99") {
		t.Errorf("secret not masked:\n%s", text)
	}
}

// TestFactsEncryptedSpansNotRead: with lossless.encrypt the spans are
// age ciphertext; without an identity they are counted, not read.
func TestFactsEncryptedSpansNotRead(t *testing.T) {
	ctx := context.Background()
	repo := swGitInit(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	swGit(t, repo, "config", "lossless.encrypt", "true")
	swGit(t, repo, "config", "lossless.recipient", id.Recipient().String())
	st := swOpen(t, repo)
	x := newFactsTranscript(t, "facts-enc", repo)
	x.prompt("secret plans")
	x.call("toolu_1", "Bash", map[string]any{"command": "false"}, "exit 1", true)
	if _, err := hooks.SweepSession(ctx, st, New(), x.write(t), hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := readFacts(ctx, st, "facts-enc", "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Encrypted != 3 || f.Goal != "" || len(f.OpenErrors) != 0 {
		t.Fatalf("facts %+v", f)
	}
	text := f.Text("facts-enc", 4000)
	if !strings.Contains(text, "3 encrypted spans not read") || strings.Contains(text, "secret plans") || strings.Contains(text, "Errors still open") {
		t.Errorf("facts text:\n%s", text)
	}
}

// TestFactsManifestBudgetThroughSessionStart: a big generated session
// (hundreds of files, many requests and errors) through the real hook:
// facts first, then the working set, all within ManifestBudget; and the
// MCP tools are named only when Claude Code has the server registered.
func TestFactsManifestBudgetThroughSessionStart(t *testing.T) {
	repo := swGitInit(t)
	session := "facts-big"
	var main bytes.Buffer
	if err := transcriptgen.GenerateWith(&main, transcriptgen.Options{Seed: 7, TargetBytes: 2 << 20, Root: repo, SessionID: session, Files: 400}); err != nil {
		t.Fatal(err)
	}
	x := newFactsTranscript(t, session, repo)
	x.buf.Write(main.Bytes())
	// Reads after the last compaction, so that the working set outgrows
	// what the budget leaves it.
	for i := range 250 {
		name := fmt.Sprintf("wide/file_with_a_long_name_%03d.go", i)
		content := fmt.Sprintf("package wide // %d\n", i)
		if err := os.MkdirAll(filepath.Join(repo, "wide"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		x.read(fmt.Sprintf("toolu_wide_%d", i), filepath.Join(repo, name), content)
	}
	for i := range 12 {
		x.call(fmt.Sprintf("toolu_err_%d", i), "Bash", map[string]any{"command": fmt.Sprintf("make target-%d", i)}, strings.Repeat("error text ", 50), true)
		x.prompt(fmt.Sprintf("request %d: %s", i, strings.Repeat("word ", 80)))
	}
	path := x.write(t)
	home := t.TempDir()
	cfg := filepath.Join(home, ".claude")
	env := map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": cfg}
	run := func() string {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"session_id": session, "transcript_path": path, "cwd": repo, "hook_event_name": "SessionStart", "source": "compact"})
		var out, errb bytes.Buffer
		start := time.Now()
		code := hooks.Run(context.Background(), New(), "SessionStart", hooks.Env{Stdin: bytes.NewReader(payload), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
		if code != 0 || errb.Len() > 0 {
			t.Fatalf("session-start: %d %s", code, errb.String())
		}
		t.Logf("session-start took %s", time.Since(start))
		var o struct {
			H struct {
				Text string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		return o.H.Text
	}
	text := run()
	if len(text) > hooks.ManifestBudget {
		t.Errorf("manifest of %d characters, budget %d", len(text), hooks.ManifestBudget)
	}
	fi, wi := strings.Index(text, "Facts from the archive"), strings.Index(text, "Its working set")
	if fi < 0 || wi < fi || len(manifestLines(text)) < 10 {
		t.Fatalf("facts then working set expected:\n%s", text)
	}
	if !regexp.MustCompile(`\n- \.\.\. and \d+ more files`).MatchString(text) || len(text) < hooks.ManifestBudget-400 {
		t.Errorf("the working set should fill the budget left by the facts (%d chars):\n%s", len(text), text)
	}
	for _, w := range []string{"Latest requests (oldest first):\n  \"request 9: word", "  * Bash make target-11: error text", "(7 older ones not shown)", "Files edited: ", "git lossless recall search QUERY --session facts-big"} {
		if !strings.Contains(text, w) {
			t.Errorf("manifest lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "mcp__git-lossless__") {
		t.Errorf("MCP tools named with no server registered:\n%s", text)
	}
	// Registered for the user (as install does): the tools are named.
	p, err := settings.PlanMCPInstall(filepath.Join(cfg, ".claude.json"), MCPServerEntry("/usr/local/bin/git-lossless"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	text = run()
	t.Logf("manifest (%d chars):\n%s", len(text), text)
	if len(text) > hooks.ManifestBudget || !strings.Contains(text, "mcp__git-lossless__restore_context") || !strings.Contains(text, "Facts from the archive") {
		t.Errorf("manifest with the server registered (%d chars):\n%s", len(text), text)
	}
}
