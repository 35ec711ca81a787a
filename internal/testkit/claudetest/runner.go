package claudetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Runner runs the real CLI against a Model with an isolated home.
type Runner struct {
	Bin       string        // the claude binary (EnsureClaude)
	Home      string        // HOME, a fresh temp dir
	ConfigDir string        // CLAUDE_CONFIG_DIR, Home/.claude
	BaseURL   string        // ANTHROPIC_BASE_URL
	Settings  string        // passed as --settings when set
	Env       []string      // extra KEY=VALUE entries, last wins
	Path      string        // PATH; the test process's PATH when empty
	Timeout   time.Duration // per Run; 120 s when zero
}

// NewRunner returns a Runner for bin talking to m, with a fresh HOME.
func NewRunner(t testing.TB, bin string, m *Model) *Runner {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, ".claude")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	return &Runner{Bin: bin, Home: home, ConfigDir: cfg, BaseURL: m.URL()}
}

// Result is the CLI's --output-format json answer plus what the run left.
type Result struct {
	Type              string            `json:"type"`
	Subtype           string            `json:"subtype"`
	IsError           bool              `json:"is_error"`
	Result            string            `json:"result"`
	SessionID         string            `json:"session_id"`
	NumTurns          int               `json:"num_turns"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`

	Stdout   string        `json:"-"`
	Stderr   string        `json:"-"`
	Duration time.Duration `json:"-"`
}

// Environ is the environment a run gets.
func (r *Runner) Environ() []string {
	path := r.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	env := []string{
		"HOME=" + r.Home,
		"CLAUDE_CONFIG_DIR=" + r.ConfigDir,
		"PATH=" + path,
		"ANTHROPIC_BASE_URL=" + r.BaseURL,
		"ANTHROPIC_API_KEY=test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"TMPDIR=" + filepath.Join(r.Home, "tmp"),
		"LANG=C.UTF-8",
		"TERM=dumb",
	}
	if v, ok := os.LookupEnv("USER"); ok {
		env = append(env, "USER="+v)
	}
	return append(env, r.Env...)
}

// Run runs `claude -p prompt --permission-mode acceptEdits --output-format
// json [--settings F] args...` in dir and parses its output. The error is
// non-nil when the process fails, times out or prints no JSON result; it
// then includes stdout and stderr. A result with is_error true is not an
// error here: check Result.IsError.
func (r *Runner) Run(ctx context.Context, dir, prompt string, args ...string) (Result, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_ = os.MkdirAll(filepath.Join(r.Home, "tmp"), 0o755)
	argv := []string{"-p", prompt, "--permission-mode", "acceptEdits", "--output-format", "json"}
	if r.Settings != "" {
		argv = append(argv, "--settings", r.Settings)
	}
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, r.Bin, argv...)
	cmd.Dir = dir
	cmd.Env = r.Environ()
	cmd.Stdin = nil // /dev/null: -p must not wait for input
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start)}
	fail := func(why error) (Result, error) {
		return res, fmt.Errorf("claude -p %q %s: %w (after %s)\nstdout:\n%s\nstderr:\n%s",
			prompt, strings.Join(args, " "), why, res.Duration.Round(time.Millisecond), res.Stdout, res.Stderr)
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	if jerr := parseResult(stdout.Bytes(), &res); jerr != nil {
		if err != nil {
			return fail(err)
		}
		return fail(jerr)
	}
	if err != nil && !res.IsError {
		return fail(err)
	}
	return res, nil
}

// parseResult reads the last JSON object of the output (the result).
func parseResult(out []byte, res *Result) error {
	out = bytes.TrimSpace(out)
	if i := bytes.LastIndex(out, []byte("\n{")); i >= 0 {
		out = out[i+1:]
	}
	if len(out) == 0 {
		return errors.New("no output")
	}
	stdout, stderr, dur := res.Stdout, res.Stderr, res.Duration
	err := json.Unmarshal(out, res)
	res.Stdout, res.Stderr, res.Duration = stdout, stderr, dur
	if err == nil && res.SessionID == "" {
		err = errors.New("no session_id in output")
	}
	return err
}

// TranscriptPath finds <config>/projects/<slug>/<sessionID>.jsonl.
func (r *Runner) TranscriptPath(sessionID string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(r.ConfigDir, "projects", "*", sessionID+".jsonl"))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		return "", fmt.Errorf("claudetest: %d transcripts for session %s under %s", len(matches), sessionID, r.ConfigDir)
	}
	return matches[0], nil
}

// SubagentsDir is where the session's subagent transcripts go:
// <transcript without .jsonl>/subagents (agent-<agent_id>.jsonl and
// .meta.json). It may not exist.
func (r *Runner) SubagentsDir(sessionID string) (string, error) {
	p, err := r.TranscriptPath(sessionID)
	if err != nil {
		return "", err
	}
	return filepath.Join(strings.TrimSuffix(p, ".jsonl"), "subagents"), nil
}

// Line is one transcript line.
type Line struct {
	Type    string          `json:"type"`
	Subtype string          `json:"subtype"`
	UUID    string          `json:"uuid"`
	AgentID string          `json:"agentId"`
	Message json.RawMessage `json:"message"`
	Raw     json.RawMessage `json:"-"`
}

// ReadTranscript reads a JSONL transcript; lines that do not parse are an
// error.
func ReadTranscript(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		l.Raw = append(json.RawMessage(nil), b...)
		lines = append(lines, l)
	}
	return lines, sc.Err()
}

// ToolResultsIn returns the tool_result blocks of the transcript's user
// lines, in order.
func ToolResultsIn(lines []Line) []ToolResult {
	var out []ToolResult
	for _, l := range lines {
		if l.Type != "user" || len(l.Message) == 0 {
			continue
		}
		var m apiMessage
		if json.Unmarshal(l.Message, &m) != nil {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type == "tool_result" {
				out = append(out, ToolResult{ToolUseID: b.ToolUseID, IsError: b.IsError, Text: resultText(b.Content)})
			}
		}
	}
	return out
}
