package codextest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Hook is one command hook in a hooks.json.
type Hook struct {
	Event   string // "PreToolUse", "SessionStart", ...
	Matcher string // tool-name matcher (a regex; "*" matches all); empty for none
	Command string // run through the shell, payload on stdin
	Timeout int    // seconds; 30 when zero
}

// hooksFile is hooks.json: Claude Code's schema, which Codex accepts.
type hooksFile struct {
	Hooks map[string][]hookGroup `json:"hooks"`
}

type hookGroup struct {
	Matcher *string       `json:"matcher,omitempty"`
	Hooks   []hookHandler `json:"hooks"`
}

type hookHandler struct {
	Type          string `json:"type"`
	Command       string `json:"command"`
	Timeout       *int   `json:"timeout,omitempty"`
	Async         bool   `json:"async,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`
}

// WriteHooks writes hooks to path as hooks.json (0600). Hooks of one event
// and matcher share a group, in the order given.
func WriteHooks(path string, hooks ...Hook) error {
	f := hooksFile{Hooks: map[string][]hookGroup{}}
	for _, h := range hooks {
		to := h.Timeout
		if to == 0 {
			to = 30
		}
		gs := f.Hooks[h.Event]
		i := 0
		for i < len(gs) && matcherOf(gs[i]) != h.Matcher {
			i++
		}
		if i == len(gs) {
			g := hookGroup{}
			if h.Matcher != "" {
				g.Matcher = &h.Matcher
			}
			gs = append(gs, g)
		}
		gs[i].Hooks = append(gs[i].Hooks, hookHandler{Type: "command", Command: h.Command, Timeout: &to})
		f.Hooks[h.Event] = gs
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func matcherOf(g hookGroup) string {
	if g.Matcher == nil {
		return ""
	}
	return *g.Matcher
}

// TrustEntry is one hook's persisted trust: the table
// [hooks.state."<Key>"] with trusted_hash = "<Hash>" in the user's
// config.toml.
type TrustEntry struct {
	Key  string // "<abs path of hooks.json>:<event label>:<group>:<handler>"
	Hash string // "sha256:<hex>"
}

// eventLabel is Codex's snake_case label of a hook event (hook keys and
// hashes use it).
func eventLabel(event string) string {
	var b strings.Builder
	for i, r := range event {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// HookTrust computes the trust entries Codex 0.169.0 wants for every
// command hook in the hooks.json at path (made absolute: Codex keys hooks
// by the file's absolute path). See the package doc for the algorithm.
func HookTrust(path string) ([]TrustEntry, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	var f hooksFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("codextest: %s: %w", abs, err)
	}
	events := make([]string, 0, len(f.Hooks))
	for e := range f.Hooks {
		events = append(events, e)
	}
	sort.Strings(events)
	var out []TrustEntry
	for _, e := range events {
		label := eventLabel(e)
		for gi, g := range f.Hooks[e] {
			for hi, h := range g.Hooks {
				if h.Type != "command" || strings.TrimSpace(h.Command) == "" {
					continue
				}
				out = append(out, TrustEntry{
					Key:  fmt.Sprintf("%s:%s:%d:%d", abs, label, gi, hi),
					Hash: hookHash(e, g.Matcher, h),
				})
			}
		}
	}
	return out, nil
}

// hookHash is Codex's trusted_hash of one handler: sha256 over the
// compact, key-sorted JSON of {"event_name": label, "matcher": m (only
// when the event takes matchers and one is set), "hooks": [the handler
// with its timeout made explicit and "async" always present]}.
func hookHash(event string, matcher *string, h hookHandler) string {
	timeout := 600
	if h.Timeout != nil {
		timeout = *h.Timeout
	}
	switch event {
	case "SessionEnd", "Interrupt": // default 1 s, clamped to 1..3
		if h.Timeout == nil {
			timeout = 1
		}
		timeout = min(max(timeout, 1), 3)
	default:
		timeout = max(timeout, 1)
	}
	handler := map[string]any{"type": "command", "command": h.Command, "timeout": timeout, "async": h.Async}
	if h.StatusMessage != "" {
		handler["statusMessage"] = h.StatusMessage
	}
	identity := map[string]any{"event_name": eventLabel(event), "hooks": []any{handler}}
	switch event {
	case "UserPromptSubmit", "Stop", "PreModelRequest", "Interrupt": // matcher ignored
	default:
		if matcher != nil {
			identity["matcher"] = *matcher
		}
	}
	b, _ := json.Marshal(identity) // Go sorts map keys: the canonical form
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TrustTOML renders entries as config.toml tables.
func TrustTOML(entries []TrustEntry) string {
	var b strings.Builder
	for _, e := range entries {
		k, _ := json.Marshal(e.Key) // a TOML basic string for these keys
		h, _ := json.Marshal(e.Hash)
		fmt.Fprintf(&b, "\n[hooks.state.%s]\ntrusted_hash = %s\n", k, h)
	}
	return b.String()
}

// ListedHook is one entry of the app server's hooks/list answer.
type ListedHook struct {
	Key          string  `json:"key"`
	EventName    string  `json:"eventName"`
	Matcher      *string `json:"matcher"`
	Command      string  `json:"command"`
	TimeoutSec   int     `json:"timeoutSec"`
	SourcePath   string  `json:"sourcePath"`
	Source       string  `json:"source"`
	Enabled      bool    `json:"enabled"`
	CurrentHash  string  `json:"currentHash"`
	TrustStatus  string  `json:"trustStatus"` // "untrusted", "trusted", "modified", "managed"
	DisplayOrder int     `json:"displayOrder"`
}

// ListHooks asks `codex app-server` (JSON-RPC over stdio: initialize,
// initialized, hooks/list {cwds}) which hooks Codex sees for cwd, with
// their keys, current hashes and trust status, in the runner's
// environment. Warnings are Codex's (e.g. timeout clamping).
func (r *Runner) ListHooks(ctx context.Context, cwd string) (hooks []ListedHook, warnings []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Bin, "app-server")
	cmd.Dir = cwd
	cmd.Env = r.Environ()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	cwdJSON, _ := json.Marshal(cwd)
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"codextest","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"hooks/list","params":{"cwds":[`+string(cwdJSON)+`]}}`+"\n")
	if err != nil {
		return nil, nil, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID != 2 {
			continue
		}
		if len(msg.Error) > 0 {
			return nil, nil, fmt.Errorf("codextest: hooks/list: %s", msg.Error)
		}
		var res struct {
			Data []struct {
				Hooks    []ListedHook `json:"hooks"`
				Warnings []string     `json:"warnings"`
			} `json:"data"`
		}
		if err := json.Unmarshal(msg.Result, &res); err != nil {
			return nil, nil, fmt.Errorf("codextest: hooks/list: %w", err)
		}
		for _, d := range res.Data {
			hooks = append(hooks, d.Hooks...)
			warnings = append(warnings, d.Warnings...)
		}
		return hooks, warnings, nil
	}
	return nil, nil, errors.Join(errors.New("codextest: app-server ended without a hooks/list answer: "+stderr.String()), sc.Err(), ctx.Err())
}
