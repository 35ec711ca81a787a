// Package hooklog is a stand-in command hook for driving agent CLIs in
// tests: a /bin/sh script that records every payload it gets on stdin,
// one file per call (so concurrent hook processes never interleave), and
// answers chosen payloads with a fixed stdout and exit code, e.g. a
// PreToolUse deny. Codex and Gemini CLI hooks use it; opencode's
// plugin (opencodetest) writes the same files. It imports testing: only
// test kits and _test.go files may import it.
package hooklog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Rule answers the payloads of one hook event that contain a string.
type Rule struct {
	Event    string // hook_event_name; empty matches every event
	Contains string // a substring of the raw payload; empty matches all
	Stdout   string // printed when the rule matches
	Exit     int    // the exit status then
}

// Log is the recording hook.
type Log struct {
	Dir    string // payloads land here as <unix-nanos>-<pid>.json
	Script string // the hook command (an absolute path, no arguments)
}

var eventName = regexp.MustCompile(`^[A-Za-z_.-]*$`)

// New writes the recording script into a temp dir. The first matching
// rule answers; a payload no rule matches gets no output and exit 0.
func New(t testing.TB, rules ...Rule) *Log {
	t.Helper()
	base := t.TempDir()
	l := &Log{Dir: filepath.Join(base, "payloads"), Script: filepath.Join(base, "log-hook.sh")}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\nf=%s/$(date +%%s%%N)-$$.json\ncat > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"\n", shellQuote(l.Dir))
	for i, r := range rules {
		if !eventName.MatchString(r.Event) {
			t.Fatalf("hooklog: bad event name %q", r.Event)
		}
		out := filepath.Join(base, fmt.Sprintf("rule-%d.out", i))
		if err := os.WriteFile(out, []byte(r.Stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		var conds []string
		if r.Event != "" {
			conds = append(conds, fmt.Sprintf(`grep -Eq '"hook_event_name"[[:space:]]*:[[:space:]]*"%s"' "$f"`, r.Event))
		}
		if r.Contains != "" {
			conds = append(conds, "grep -Fq -- "+shellQuote(r.Contains)+` "$f"`)
		}
		if len(conds) == 0 {
			conds = []string{"true"}
		}
		fmt.Fprintf(&b, "if %s; then cat %s; exit %d; fi\n", strings.Join(conds, " && "), shellQuote(out), r.Exit)
	}
	b.WriteString("exit 0\n")
	if err := os.WriteFile(l.Script, []byte(b.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	return l
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Payload is one hook payload as the CLI sent it.
type Payload map[string]any

// Str returns a top-level string field.
func (p Payload) Str(key string) string { s, _ := p[key].(string); return s }

// Event is hook_event_name.
func (p Payload) Event() string { return p.Str("hook_event_name") }

// Input returns tool_input as a map (nil when it is not an object).
func (p Payload) Input() map[string]any { m, _ := p["tool_input"].(map[string]any); return m }

// JSON is the payload re-encoded (keys sorted, <>& left alone), for
// messages and substring checks.
func (p Payload) JSON() string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any(p))
	return strings.TrimSuffix(b.String(), "\n")
}

// Payloads returns every payload logged so far, oldest first.
func (l *Log) Payloads(t testing.TB) []Payload {
	t.Helper()
	return ReadDir(t, l.Dir)
}

// ReadDir reads the payload files of a directory, oldest first (the
// same-width nanosecond stamps in their names sort by time).
func ReadDir(t testing.TB, dir string) []Payload {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []Payload
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var p Payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("hook payload %s: %v\n%s", n, err, b)
		}
		out = append(out, p)
	}
	return out
}

// Find returns the payloads of event (every event when empty) for which
// match (when not nil) is true.
func (l *Log) Find(t testing.TB, event string, match func(Payload) bool) []Payload {
	t.Helper()
	return Filter(l.Payloads(t), event, match)
}

// Filter returns the payloads of event (every event when empty) for
// which match (when not nil) is true.
func Filter(ps []Payload, event string, match func(Payload) bool) []Payload {
	var out []Payload
	for _, p := range ps {
		if (event == "" || p.Event() == event) && (match == nil || match(p)) {
			out = append(out, p)
		}
	}
	return out
}

// Events lists the payloads' event names in order, each followed by
// "(detail)" when detail returns a non-empty string for it.
func Events(ps []Payload, detail func(Payload) string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		e := p.Event()
		if detail != nil {
			if d := detail(p); d != "" {
				e += "(" + d + ")"
			}
		}
		out = append(out, e)
	}
	return out
}
