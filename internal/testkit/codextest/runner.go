package codextest

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

// ModelSlug is the model the config names: gpt-5.5 from Codex's bundled
// catalog gets the classic tools (exec_command, apply_patch as a custom
// tool, multi_agent_v1 behind tool_search); unknown slugs get no
// apply_patch, gpt-6* and gpt-5.6* get "code mode".
const ModelSlug = "gpt-5.5"

// Runner runs `codex exec` against a Model with an isolated home.
type Runner struct {
	Bin       string // the codex launcher (EnsureCodex)
	Home      string // HOME, a fresh temp dir
	CodexHome string // CODEX_HOME, Home/.codex: config.toml, hooks.json, sessions/
	BaseURL   string // the provider's base_url
	// BypassHookTrust passes --dangerously-bypass-hook-trust, without
	// which Codex silently skips hooks it has no persisted trust for
	// (TrustHooks writes that trust instead). True from NewRunner.
	BypassHookTrust bool
	Config          []string      // extra `-c key=value` overrides, e.g. "model_auto_compact_token_limit=1000"
	Env             []string      // extra KEY=VALUE entries, last wins
	Path            string        // PATH; the test process's PATH when empty
	Timeout         time.Duration // per Run; 120 s when zero
}

// NewRunner returns a Runner for bin talking to m, with a fresh HOME and
// CODEX_HOME holding the config (WriteConfig).
func NewRunner(t testing.TB, bin string, m *Model) *Runner {
	t.Helper()
	home := t.TempDir()
	r := &Runner{Bin: bin, Home: home, CodexHome: filepath.Join(home, ".codex"), BaseURL: m.URL(), BypassHookTrust: true}
	if err := r.WriteConfig(""); err != nil {
		t.Fatal(err)
	}
	return r
}

// ConfigPath is CODEX_HOME/config.toml.
func (r *Runner) ConfigPath() string { return filepath.Join(r.CodexHome, "config.toml") }

// HooksPath is CODEX_HOME/hooks.json, the user-scope hooks file.
func (r *Runner) HooksPath() string { return filepath.Join(r.CodexHome, "hooks.json") }

// WriteConfig writes config.toml: model ModelSlug from provider
// "codextest" at BaseURL over the Responses API, approval never, sandbox
// workspace-write, no retries; extra (TOML) is appended.
func (r *Runner) WriteConfig(extra string) error {
	cfg := fmt.Sprintf(`model = %q
model_provider = "codextest"
approval_policy = "never"
sandbox_mode = "workspace-write"

[model_providers.codextest]
name = "codextest"
base_url = %q
wire_api = "responses"
env_key = "CODEXTEST_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, ModelSlug, r.BaseURL) + extra
	if err := os.MkdirAll(r.CodexHome, 0o700); err != nil {
		return err
	}
	return os.WriteFile(r.ConfigPath(), []byte(cfg), 0o600)
}

// AppendConfig appends TOML to config.toml.
func (r *Runner) AppendConfig(toml string) error {
	f, err := os.OpenFile(r.ConfigPath(), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(toml); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// InstallHooks writes hooks to CODEX_HOME/hooks.json (user scope).
func (r *Runner) InstallHooks(t testing.TB, hooks ...Hook) {
	t.Helper()
	if err := WriteHooks(r.HooksPath(), hooks...); err != nil {
		t.Fatal(err)
	}
}

// TrustHooks persists trust for every hook in hooksJSON (r.HooksPath()
// when empty), as Codex's /hooks trust action would: it appends the
// [hooks.state."<key>"] trusted_hash tables to the user config.toml. Codex
// reads hook state only from user-controlled layers (the user
// config.toml and -c overrides), whatever the hooks file's scope.
func (r *Runner) TrustHooks(t testing.TB, hooksJSON string) []TrustEntry {
	t.Helper()
	if hooksJSON == "" {
		hooksJSON = r.HooksPath()
	}
	entries, err := HookTrust(hooksJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AppendConfig(TrustTOML(entries)); err != nil {
		t.Fatal(err)
	}
	return entries
}

// TrustProject marks dir trusted ([projects."<dir>"] trust_level =
// "trusted"), which Codex wants before it reads <dir>/.codex/ config and
// hooks; `codex exec --trust` writes the same.
func (r *Runner) TrustProject(t testing.TB, dir string) {
	t.Helper()
	k, _ := json.Marshal(dir)
	if err := r.AppendConfig(fmt.Sprintf("\n[projects.%s]\ntrust_level = \"trusted\"\n", k)); err != nil {
		t.Fatal(err)
	}
}

// Environ is the environment a run gets.
func (r *Runner) Environ() []string {
	path := r.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	env := []string{
		"HOME=" + r.Home,
		"CODEX_HOME=" + r.CodexHome,
		"PATH=" + path,
		"CODEXTEST_API_KEY=test",
		"TMPDIR=" + filepath.Join(r.Home, "tmp"),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
	}
	if v, ok := os.LookupEnv("USER"); ok {
		env = append(env, "USER="+v)
	}
	return append(env, r.Env...)
}

// Event is one line of `codex exec --json` output.
type Event map[string]any

// Type is the event's "type": thread.started, turn.started,
// item.started, item.completed, turn.completed, turn.failed, error.
func (e Event) Type() string { s, _ := e["type"].(string); return s }

// Item is the event's "item" (item.* events).
func (e Event) Item() map[string]any { m, _ := e["item"].(map[string]any); return m }

// Result is what one `codex exec` run printed and left.
type Result struct {
	ThreadID    string  // from thread.started: the session id hooks see
	Events      []Event // every --json line that parsed
	LastMessage string  // the last agent_message item's text
	Failed      bool    // a turn.failed or error event
	ExitCode    int
	Stdout      string
	Stderr      string
	Duration    time.Duration
}

// Items returns the completed items of type typ ("command_execution",
// "file_change", "agent_message", "collab_tool_call", "error", ...).
func (res Result) Items(typ string) []map[string]any {
	var out []map[string]any
	for _, e := range res.Events {
		if e.Type() == "item.completed" {
			if it := e.Item(); it["type"] == typ {
				out = append(out, it)
			}
		}
	}
	return out
}

// Run runs `codex exec [--dangerously-bypass-hook-trust] --json
// --skip-git-repo-check -C dir [-c k=v...] [args...] prompt` with stdin
// /dev/null. The error is non-nil when the process cannot run, times
// out, exits non-zero or prints no thread id; it then includes stdout and
// stderr. A failed turn with exit 0 is not an error here: check
// Result.Failed.
func (r *Runner) Run(ctx context.Context, dir, prompt string, args ...string) (Result, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_ = os.MkdirAll(filepath.Join(r.Home, "tmp"), 0o700)
	argv := []string{"exec"}
	if r.BypassHookTrust {
		argv = append(argv, "--dangerously-bypass-hook-trust")
	}
	argv = append(argv, "--json", "--skip-git-repo-check", "-C", dir)
	for _, c := range r.Config {
		argv = append(argv, "-c", c)
	}
	argv = append(argv, args...)
	argv = append(argv, prompt)
	cmd := exec.CommandContext(ctx, r.Bin, argv...)
	cmd.Dir = dir
	cmd.Env = r.Environ()
	cmd.Stdin = nil // /dev/null: exec must not wait for input
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		res.Events = append(res.Events, e)
		switch e.Type() {
		case "thread.started":
			res.ThreadID, _ = e["thread_id"].(string)
		case "turn.failed", "error":
			res.Failed = true
		case "item.completed":
			if it := e.Item(); it["type"] == "agent_message" {
				res.LastMessage, _ = it["text"].(string)
			}
		}
	}
	fail := func(why error) (Result, error) {
		return res, fmt.Errorf("codex exec %q: %w (after %s)\nstdout:\n%s\nstderr:\n%s",
			prompt, why, res.Duration.Round(time.Millisecond), res.Stdout, res.Stderr)
	}
	switch {
	case ctx.Err() != nil:
		return fail(ctx.Err())
	case err != nil:
		return fail(err)
	case res.ThreadID == "":
		return fail(errors.New("no thread.started event"))
	}
	return res, nil
}

// RolloutPath finds CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<id>.jsonl,
// the transcript Codex names in every hook's transcript_path.
func (r *Runner) RolloutPath(threadID string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(r.CodexHome, "sessions", "*", "*", "*", "rollout-*-"+threadID+".jsonl"))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		return "", fmt.Errorf("codextest: %d rollouts for thread %s under %s", len(matches), threadID, r.CodexHome)
	}
	return matches[0], nil
}

// RolloutLine is one rollout line: {"timestamp","ordinal","type","payload"}.
type RolloutLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"` // session_meta, response_item, event_msg, compacted, turn_context, world_state, ...
	Payload   json.RawMessage `json:"payload"`
	Raw       json.RawMessage `json:"-"`
}

// PayloadType is the payload's own "type" (response_item: message,
// function_call, custom_tool_call, ...; event_msg: task_started, ...).
func (l RolloutLine) PayloadType() string {
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(l.Payload, &p)
	return p.Type
}

// ReadRollout reads a rollout file; lines that do not parse are an error.
func ReadRollout(path string) ([]RolloutLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []RolloutLine
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var l RolloutLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		l.Raw = json.RawMessage(line)
		out = append(out, l)
	}
	return out, nil
}
