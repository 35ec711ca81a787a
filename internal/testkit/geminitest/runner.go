package geminitest

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

// ModelName is the model every run asks for (-m).
const ModelName = "gemini-2.5-flash"

// Runner runs `gemini -p` against a Model with an isolated home.
type Runner struct {
	Bin     string // the gemini launcher (EnsureGemini)
	Home    string // HOME, a fresh temp dir; Gemini CLI keeps its state in Home/.gemini
	BaseURL string // GOOGLE_GEMINI_BASE_URL
	// Settings is written to Home/.gemini/settings.json before every run.
	// NewRunner fills in the api-key auth type (without it the CLI picks
	// auth type "gateway" for a custom base URL and exits: "Invalid auth
	// method selected."), no auto update, no usage statistics, no
	// telemetry. SetHooks and Set change it.
	Settings map[string]any
	Env      []string      // extra KEY=VALUE entries, last wins
	Path     string        // PATH; the test process's PATH when empty
	Timeout  time.Duration // per Run; 120 s when zero
}

// NewRunner returns a Runner for bin talking to m, with a fresh HOME.
func NewRunner(t testing.TB, bin string, m *Model) *Runner {
	t.Helper()
	return &Runner{Bin: bin, Home: t.TempDir(), BaseURL: m.URL(), Settings: map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}}
}

// GeminiDir is Home/.gemini.
func (r *Runner) GeminiDir() string { return filepath.Join(r.Home, ".gemini") }

// SettingsPath is the user settings file, Home/.gemini/settings.json.
func (r *Runner) SettingsPath() string { return filepath.Join(r.GeminiDir(), "settings.json") }

// Set sets a settings value by dotted path, e.g.
// Set("model.compressionThreshold", 0.001).
func (r *Runner) Set(path string, value any) {
	keys := strings.Split(path, ".")
	m := r.Settings
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	m[keys[len(keys)-1]] = value
}

// Hook is one command hook in settings.json.
type Hook struct {
	Event   string // BeforeTool, AfterTool, BeforeAgent, AfterAgent, SessionStart, SessionEnd, PreCompress, BeforeModel, AfterModel, BeforeToolSelection, Notification
	Matcher string // tool-name matcher for tool events ("*" for all); empty for none
	Command string // run through the shell, payload on stdin
	Timeout int    // milliseconds; 30000 when zero
}

// HooksSetting renders hooks as the settings "hooks" object: per event a
// list of {matcher, hooks:[{type:"command", name, command, timeout}]}
// groups; hooks of one event and matcher share a group.
func HooksSetting(hooks ...Hook) map[string]any {
	type group struct {
		matcher string
		hooks   []any
	}
	byEvent := map[string][]*group{}
	var order []string
	for _, h := range hooks {
		to := h.Timeout
		if to == 0 {
			to = 30000
		}
		gs, seen := byEvent[h.Event]
		if !seen {
			order = append(order, h.Event)
		}
		var g *group
		for _, x := range gs {
			if x.matcher == h.Matcher {
				g = x
			}
		}
		if g == nil {
			g = &group{matcher: h.Matcher}
			byEvent[h.Event] = append(gs, g)
		}
		g.hooks = append(g.hooks, map[string]any{"type": "command", "name": fmt.Sprintf("%s-%d", h.Event, len(g.hooks)),
			"command": h.Command, "timeout": to})
	}
	out := map[string]any{}
	for _, e := range order {
		var list []any
		for _, g := range byEvent[e] {
			entry := map[string]any{"hooks": g.hooks}
			if g.matcher != "" {
				entry["matcher"] = g.matcher
			}
			list = append(list, entry)
		}
		out[e] = list
	}
	return out
}

// SetHooks puts hooks into the user settings.
func (r *Runner) SetHooks(hooks ...Hook) { r.Settings["hooks"] = HooksSetting(hooks...) }

// TrustFolder adds dir to Home/.gemini/trustedFolders.json as
// TRUST_FOLDER. Run does it for its dir: in an untrusted folder the CLI
// downgrades --yolo ("Approval mode overridden to "default" because the
// current folder is not trusted.") and ignores the project settings.
func (r *Runner) TrustFolder(dir string) error {
	path := filepath.Join(r.GeminiDir(), "trustedFolders.json")
	folders := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &folders); err != nil {
			return fmt.Errorf("geminitest: %s: %w", path, err)
		}
	}
	folders[dir] = "TRUST_FOLDER"
	b, err := json.MarshalIndent(folders, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.GeminiDir(), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Environ is the environment a run gets.
func (r *Runner) Environ() []string {
	path := r.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	env := []string{
		"HOME=" + r.Home,
		"PATH=" + path,
		"GOOGLE_GEMINI_BASE_URL=" + r.BaseURL,
		"GEMINI_API_KEY=test",
		"GEMINI_CLI_NO_RELAUNCH=true", // no second node process for a bigger heap
		"TMPDIR=" + filepath.Join(r.Home, "tmp"),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"NO_BROWSER=1",
	}
	if v, ok := os.LookupEnv("USER"); ok {
		env = append(env, "USER="+v)
	}
	return append(env, r.Env...)
}

// Event is one line of --output-format stream-json.
type Event map[string]any

// Type is the event's "type": init, message, tool_use, tool_result,
// error, result.
func (e Event) Type() string { s, _ := e["type"].(string); return s }

// Str returns a top-level string field.
func (e Event) Str(key string) string { s, _ := e[key].(string); return s }

// Result is what one run printed and left.
type Result struct {
	SessionID string  // from the init event; the hooks' session_id
	Events    []Event // every stream-json line that parsed
	Response  string  // the assistant message deltas joined
	Status    string  // the result event's status ("success", "error")
	ExitCode  int
	Stdout    string
	Stderr    string
	Duration  time.Duration
}

// Run runs `gemini -m ModelName --yolo -p prompt --output-format
// stream-json [args...]` in dir (trusted first) with stdin /dev/null,
// after writing the settings. The error is non-nil when the process
// cannot run, times out, exits non-zero or prints no session id; it then
// includes stdout and stderr.
func (r *Runner) Run(ctx context.Context, dir, prompt string, args ...string) (Result, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.TrustFolder(dir); err != nil {
		return Result{}, err
	}
	b, err := json.MarshalIndent(r.Settings, "", "  ")
	if err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(r.SettingsPath(), b, 0o600); err != nil {
		return Result{}, err
	}
	_ = os.MkdirAll(filepath.Join(r.Home, "tmp"), 0o700)
	argv := append([]string{"-m", ModelName, "--yolo", "-p", prompt, "--output-format", "stream-json"}, args...)
	cmd := exec.CommandContext(ctx, r.Bin, argv...)
	cmd.Dir = dir
	cmd.Env = r.Environ()
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var resp strings.Builder
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		res.Events = append(res.Events, e)
		switch e.Type() {
		case "init":
			res.SessionID = e.Str("session_id")
		case "message":
			if e.Str("role") == "assistant" {
				resp.WriteString(e.Str("content"))
			}
		case "result":
			res.Status = e.Str("status")
		}
	}
	res.Response = resp.String()
	fail := func(why error) (Result, error) {
		return res, fmt.Errorf("gemini -p %q %s: %w (after %s)\nstdout:\n%s\nstderr:\n%s",
			prompt, strings.Join(args, " "), why, res.Duration.Round(time.Millisecond), res.Stdout, res.Stderr)
	}
	switch {
	case ctx.Err() != nil:
		return fail(ctx.Err())
	case err != nil:
		return fail(err)
	case res.SessionID == "":
		return fail(errors.New("no init event with a session_id"))
	}
	return res, nil
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

// ChatPath finds the session's chat file, Home/.gemini/tmp/<project>/
// chats/session-<date>T<HH-MM>-<first 8 of the id>.jsonl.
func (r *Runner) ChatPath(sessionID string) (string, error) {
	short := sessionID
	if len(short) > 8 {
		short = short[:8]
	}
	matches, err := filepath.Glob(filepath.Join(r.GeminiDir(), "tmp", "*", "chats", "session-*-"+short+".jsonl"))
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("geminitest: no chat file for session %s under %s", sessionID, r.GeminiDir())
	}
	// A session resumed in a later minute than it started gets a second
	// file, named by the resume's minute (seen when a test's two runs
	// straddled a minute boundary): the resumed run writes, and $sets its
	// compressed history, in the file it writes last.
	best, bestTime := "", time.Time{}
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			return "", err
		}
		if best == "" || fi.ModTime().After(bestTime) || (fi.ModTime().Equal(bestTime) && m > best) {
			best, bestTime = m, fi.ModTime()
		}
	}
	return best, nil
}

// ChatLine is one line of a chat file: a header ({sessionId,
// projectHash, startTime, kind}), a message ({id, type, content, ...},
// later lines with the same id win), or a "$set" of top-level state.
type ChatLine struct {
	Raw  json.RawMessage
	ID   string
	Type string // message type: user, gemini, info, error, ...
	Set  map[string]json.RawMessage
}

// ReadChat reads a chat file; lines that do not parse are an error.
func ReadChat(path string) ([]ChatLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []ChatLine
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var l struct {
			ID   string                     `json:"id"`
			Type string                     `json:"type"`
			Set  map[string]json.RawMessage `json:"$set"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		out = append(out, ChatLine{Raw: json.RawMessage(line), ID: l.ID, Type: l.Type, Set: l.Set})
	}
	return out, nil
}
