package opencodetest

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

// ProviderID and ModelID name the scripted model in the config: the
// model is "opencodetest/mock-model".
const (
	ProviderID = "opencodetest"
	ModelID    = "mock-model"
)

// Runner runs `opencode run` against a Model with an isolated home.
type Runner struct {
	Bin     string // the opencode launcher (EnsureOpencode)
	Home    string // HOME, a fresh temp dir; XDG dirs below it
	BaseURL string // the provider's baseURL
	// Context and Output are the model's limit. opencode compacts when a
	// step's tokens exceed Context - Output, and loops compacting when
	// Context <= Output. NewRunner sets 100000 and 4096.
	Context, Output int
	// PluginDeps, when set, is a cached install of PluginPackage
	// (EnsurePluginDeps) that Run seeds the config dirs from
	// (SeedPluginDeps); empty lets opencode npm-install it at run time.
	PluginDeps string
	LogLevel   string        // --log-level for the logs printed to stderr; WARN when empty
	Env        []string      // extra KEY=VALUE entries, last wins
	Path       string        // PATH; the test process's PATH when empty
	Timeout    time.Duration // per Run; 120 s when zero
}

// NewRunner returns a Runner for bin talking to m, with a fresh HOME.
func NewRunner(t testing.TB, bin string, m *Model) *Runner {
	t.Helper()
	return &Runner{Bin: bin, Home: t.TempDir(), BaseURL: m.URL(), Context: 100000, Output: 4096}
}

// ConfigDir is the global config dir, Home/.config/opencode.
func (r *Runner) ConfigDir() string { return filepath.Join(r.Home, ".config", "opencode") }

// DataDir is Home/.local/share/opencode: opencode.db (SQLite, WAL) with
// the sessions, messages and parts, and log/.
func (r *Runner) DataDir() string { return filepath.Join(r.Home, ".local", "share", "opencode") }

// Config is the opencode config a run gets (through
// OPENCODE_CONFIG_CONTENT, so no opencode.json lands in the work tree):
// the scripted model as an @ai-sdk/openai-compatible provider, for the
// main and the small model, everything allowed, no autoupdate or share.
func (r *Runner) Config() map[string]any {
	model := ProviderID + "/" + ModelID
	return map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"model":       model,
		"small_model": model,
		"autoupdate":  false,
		"share":       "disabled",
		"permission":  map[string]any{"edit": "allow", "bash": "allow", "webfetch": "allow"},
		"provider": map[string]any{ProviderID: map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "opencodetest",
			"options": map[string]any{"baseURL": r.BaseURL, "apiKey": "test"},
			"models": map[string]any{ModelID: map[string]any{
				"name": "Mock Model", "tool_call": true,
				"limit": map[string]any{"context": r.Context, "output": r.Output},
			}},
		}},
	}
}

// Environ is the environment a run gets.
func (r *Runner) Environ() []string {
	path := r.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	cfg, _ := json.Marshal(r.Config())
	env := []string{
		"HOME=" + r.Home,
		"PATH=" + path,
		"XDG_CONFIG_HOME=" + filepath.Join(r.Home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(r.Home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(r.Home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(r.Home, ".local", "state"),
		"OPENCODE_CONFIG_CONTENT=" + string(cfg),
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_SHARE=1",
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

// Event is one line of `opencode run --format json`.
type Event map[string]any

// Type is the event's "type": step_start, tool_use, step_finish, text,
// error.
func (e Event) Type() string { s, _ := e["type"].(string); return s }

// Part is the event's "part" (the stored message part).
func (e Event) Part() map[string]any { m, _ := e["part"].(map[string]any); return m }

// Result is what one run printed and left.
type Result struct {
	SessionID string  // the ses_... id of the events
	Events    []Event // every --format json line that parsed
	Text      string  // the text parts joined
	ExitCode  int
	Stdout    string
	Stderr    string // with the logs (--print-logs)
	Duration  time.Duration
}

// EventsOf returns the run's events of type typ.
func (res Result) EventsOf(typ string) []Event {
	var out []Event
	for _, e := range res.Events {
		if e.Type() == typ {
			out = append(out, e)
		}
	}
	return out
}

// Run runs `opencode run --format json --print-logs --log-level
// LogLevel [args...] prompt` in dir with stdin /dev/null, after seeding the config
// dirs' plugin SDK (PluginDeps). The error is non-nil when the process
// cannot run, times out, exits non-zero or prints no session id; it then
// includes stdout and stderr.
func (r *Runner) Run(ctx context.Context, dir, prompt string, args ...string) (Result, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if r.PluginDeps != "" {
		dirs := []string{r.ConfigDir()}
		if fi, err := os.Stat(filepath.Join(dir, ".opencode")); err == nil && fi.IsDir() {
			dirs = append(dirs, filepath.Join(dir, ".opencode"))
		}
		for _, d := range dirs {
			if err := SeedPluginDeps(d, r.PluginDeps); err != nil {
				return Result{}, fmt.Errorf("opencodetest: seed %s: %w", d, err)
			}
		}
	}
	_ = os.MkdirAll(filepath.Join(r.Home, "tmp"), 0o700)
	level := r.LogLevel
	if level == "" {
		level = "WARN"
	}
	argv := append(append([]string{"run", "--format", "json", "--print-logs", "--log-level", level}, args...), prompt)
	cmd := exec.CommandContext(ctx, r.Bin, argv...)
	cmd.Dir = dir
	cmd.Env = r.Environ()
	cmd.Stdin = nil
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
	var text strings.Builder
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		res.Events = append(res.Events, e)
		if id, _ := e["sessionID"].(string); id != "" && res.SessionID == "" {
			res.SessionID = id
		}
		if e.Type() == "text" {
			if s, _ := e.Part()["text"].(string); s != "" {
				text.WriteString(s)
			}
		}
	}
	res.Text = text.String()
	fail := func(why error) (Result, error) {
		return res, fmt.Errorf("opencode run %q: %w (after %s)\nstdout:\n%s\nstderr:\n%s",
			prompt, why, res.Duration.Round(time.Millisecond), res.Stdout, tail(res.Stderr, 8000))
	}
	switch {
	case ctx.Err() != nil:
		return fail(ctx.Err())
	case err != nil:
		return fail(err)
	case res.SessionID == "":
		return fail(errors.New("no event with a sessionID"))
	}
	return res, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// Export runs `opencode export <sessionID>` in dir and returns the JSON
// it prints: {info: the session, messages: [{info, parts}]}.
func (r *Runner) Export(ctx context.Context, dir, sessionID string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Bin, "export", sessionID)
	cmd.Dir = dir
	cmd.Env = r.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("opencode export %s: %w\n%s", sessionID, err, stderr.Bytes())
	}
	out := stdout.Bytes()
	if i := bytes.IndexByte(out, '{'); i > 0 { // a line of chatter before the JSON
		out = out[i:]
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("opencode export %s printed no JSON:\n%s\n%s", sessionID, stdout.Bytes(), stderr.Bytes())
	}
	return out, nil
}
