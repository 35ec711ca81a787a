package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const instTestBin = "/opt/lossless/bin/git-lossless"

// instSpecs are the hooks the tests install: Claude Code's
// (hooks/claudecode.HookSpecs, which this package cannot import), the
// richest shape the editor has to splice.
func instSpecs() []HookSpec {
	return []HookSpec{
		{Event: "SessionStart", Matcher: "compact|resume", Arg: "session-start", Timeout: 10},
		{Event: "PreToolUse", Matcher: "Edit|Write|MultiEdit|NotebookEdit", Arg: "pre-tool-use", Timeout: 10},
		{Event: "PostToolUse", Matcher: "Read|Edit|Write|MultiEdit|NotebookEdit", Arg: "post-tool-use", Timeout: 10},
		{Event: "PreCompact", Arg: "pre-compact", Timeout: 30},
		{Event: "SubagentStop", Arg: "subagent-stop", Timeout: 30},
		{Event: "SessionEnd", Arg: "session-end", Timeout: 30},
	}
}

// instForeign is a settings file as another tool and a person left it:
// foreign hooks in events and matchers we also use, and other keys.
const instForeign = `{
  "permissions": {
    "allow": ["Bash(ls:*)", "Read(~/notes/**)"],
    "deny": []
  },
  "env": {"FOO": "bar", "N": 1.50},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Edit|Write|MultiEdit|NotebookEdit",
        "hooks": [
          {"type": "command", "command": "prettier --check \"$FILE\"", "timeout": 5}
        ]
      }
    ],
    "PostToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-log \u003e /tmp/x"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
  },
  "statusLine": {"type": "command", "command": "ctx-status", "padding": 0},
  "zzz-unknown": [true, null, {"nested": "\u00e9"}]
}
`

func instWriteFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func instReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// instTopMembers returns the top-level keys in file order with their compact
// values: the "as JSON values" comparison of the brief.
func instTopMembers(t *testing.T, doc []byte) ([]string, map[string]string) {
	t.Helper()
	s, err := parseSettings("t", doc, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	vals := map[string]string{}
	for _, m := range s.top {
		keys = append(keys, m.key)
		var b bytes.Buffer
		if err := json.Compact(&b, s.text(m.val)); err != nil {
			t.Fatal(err)
		}
		vals[m.key] = b.String()
	}
	return keys, vals
}

type instTestHook struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Timeout *float64 `json:"timeout"`
}

type instTestGroup struct {
	Matcher *string        `json:"matcher"`
	Hooks   []instTestHook `json:"hooks"`
}

func instDecodeHooks(t *testing.T, doc []byte) map[string][]instTestGroup {
	t.Helper()
	var v struct {
		Hooks map[string][]instTestGroup `json:"hooks"`
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, doc)
	}
	return v.Hooks
}

// instAssertOurs checks that every event holds exactly one hook of ours, in a
// group of its own with the spec's matcher, command and timeout.
func instAssertOurs(t *testing.T, doc []byte, bin string) {
	t.Helper()
	hooks := instDecodeHooks(t, doc)
	for _, spec := range instSpecs() {
		var found []instTestGroup
		for _, g := range hooks[spec.Event] {
			for _, h := range g.Hooks {
				if IsOurHookCommand(h.Command, bin) {
					found = append(found, g)
				}
			}
		}
		if len(found) != 1 {
			t.Fatalf("%s: %d hooks of ours, want 1\n%s", spec.Event, len(found), doc)
		}
		g := found[0]
		if len(g.Hooks) != 1 {
			t.Errorf("%s: our group holds %d hooks", spec.Event, len(g.Hooks))
		}
		h := g.Hooks[0]
		if want := HookCommand(bin, spec.Arg); h.Command != want || h.Type != "command" {
			t.Errorf("%s: hook %+v, want command %q", spec.Event, h, want)
		}
		if h.Timeout == nil || *h.Timeout != float64(spec.Timeout) {
			t.Errorf("%s: timeout %v, want %d", spec.Event, h.Timeout, spec.Timeout)
		}
		switch {
		case spec.Matcher == "" && g.Matcher != nil:
			t.Errorf("%s: matcher %q, want none", spec.Event, *g.Matcher)
		case spec.Matcher != "" && (g.Matcher == nil || *g.Matcher != spec.Matcher):
			t.Errorf("%s: matcher %v, want %q", spec.Event, g.Matcher, spec.Matcher)
		}
	}
}

func instBackups(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".bak-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

func TestInstallIntoMissingSettingsCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", ".claude")
	path := filepath.Join(dir, "settings.json")
	p, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	if p.Exists || !p.Changed() || len(p.Changes) != len(instSpecs()) {
		t.Fatalf("plan %+v", p)
	}
	if !strings.HasPrefix(p.Diff(), "--- /dev/null\n") {
		t.Fatalf("diff of a new file:\n%s", p.Diff())
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("planning created the directory")
	}
	backup, err := p.Apply(time.Now())
	if err != nil || backup != "" {
		t.Fatalf("apply: backup %q err %v", backup, err)
	}
	instAssertOurs(t, instReadFile(t, path), instTestBin)
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{path, 0o600}, {dir, 0o700}, {filepath.Dir(dir), 0o700}} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, st.Mode().Perm(), c.mode)
		}
	}
	if b := instBackups(t, dir); len(b) != 0 {
		t.Errorf("backups of a file that did not exist: %v", b)
	}
	if !bytes.HasPrefix(instReadFile(t, path), []byte("{\n  \"hooks\": {\n    \"SessionStart\": [\n")) {
		t.Errorf("layout:\n%s", instReadFile(t, path))
	}
}

func TestInstallIntoEmptyFileAndEmptyObject(t *testing.T) {
	for _, body := range []string{"", " \n", "{}", "{}\n", "{ }"} {
		path := filepath.Join(t.TempDir(), "settings.json")
		instWriteFile(t, path, body, 0o644)
		p, err := PlanInstall(path, instTestBin, instSpecs())
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if _, err := p.Apply(time.Now()); err != nil {
			t.Fatal(err)
		}
		got := instReadFile(t, path)
		instAssertOurs(t, got, instTestBin)
		keys, _ := instTopMembers(t, got)
		if len(keys) != 1 || keys[0] != "hooks" {
			t.Errorf("%q: keys %v", body, keys)
		}
	}
}

func TestInstallKeepsForeignHooksAndKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	instWriteFile(t, path, instForeign, 0o600)
	p, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	after := instReadFile(t, path)
	instAssertOurs(t, after, instTestBin)

	keysBefore, valsBefore := instTopMembers(t, []byte(instForeign))
	keysAfter, valsAfter := instTopMembers(t, after)
	if strings.Join(keysBefore, ",") != strings.Join(keysAfter, ",") {
		t.Errorf("top-level keys reordered: %v -> %v", keysBefore, keysAfter)
	}
	for _, k := range keysBefore {
		if k != "hooks" && valsBefore[k] != valsAfter[k] {
			t.Errorf("%s changed: %s -> %s", k, valsBefore[k], valsAfter[k])
		}
	}
	// Every byte outside the hooks object is where it was.
	before := []byte(instForeign)
	sb, _ := parseSettings("", before, "")
	sa, _ := parseSettings("", after, "")
	hb, ha := sb.top[sb.hooksAt].val, sa.top[sa.hooksAt].val
	if !bytes.Equal(before[:hb.start], after[:ha.start]) || !bytes.Equal(before[hb.end:], after[ha.end:]) {
		t.Errorf("bytes outside hooks changed:\n%s", after)
	}
	// Foreign groups: same events, same positions, same JSON values (the
	// \u003e escape and the 1.50 included, as written).
	for _, ev := range sb.events {
		var evA *event
		for i := range sa.events {
			if sa.events[i].m.key == ev.m.key {
				evA = &sa.events[i]
			}
		}
		if evA == nil {
			t.Fatalf("event %s lost", ev.m.key)
		}
		for gi, g := range ev.groups {
			if gi >= len(evA.groups) || !bytes.Equal(sb.text(g.span), sa.text(evA.groups[gi].span)) {
				t.Errorf("%s[%d] changed", ev.m.key, gi)
			}
		}
	}
	if !bytes.Contains(after, []byte(`"audit-log \u003e /tmp/x"`)) || !bytes.Contains(after, []byte(`"N": 1.50`)) {
		t.Error("foreign text re-encoded")
	}
	// Our entry comes after the foreign one in the shared matcher.
	hooks := instDecodeHooks(t, after)
	if pre := hooks["PreToolUse"]; len(pre) != 2 || pre[0].Hooks[0].Command != `prettier --check "$FILE"` {
		t.Errorf("PreToolUse groups: %+v", pre)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
}

func TestInstallIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	instWriteFile(t, path, instForeign, 0o600)
	p, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	once := instReadFile(t, path)
	p2, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	if p2.Changed() || p2.Diff() != "" {
		t.Fatalf("second install changes:\n%s", p2.Diff())
	}
	for _, c := range p2.Changes {
		if c.Action != "unchanged" {
			t.Errorf("second install: %+v", c)
		}
	}
	if b, err := p2.Apply(time.Now()); err != nil || b != "" {
		t.Fatalf("no-op apply: %q %v", b, err)
	}
	if !bytes.Equal(once, instReadFile(t, path)) {
		t.Fatal("file rewritten by a no-op install")
	}
	if n := len(instBackups(t, filepath.Dir(path))); n != 1 {
		t.Errorf("%d backups, want 1 (from the first install only)", n)
	}
}

func TestInstallReplacesOurOlderEntries(t *testing.T) {
	old := `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [
          {"type": "command", "command": "echo first"},
          {"type": "command", "command": "/old/bin/git-lossless hook pre-tool-use", "timeout": 5},
          {"type": "command", "command": "echo last"}
        ]
      },
      {
        "matcher": "Edit|Write|MultiEdit|NotebookEdit",
        "hooks": [{"type": "command", "command": "'/old path/git-lossless' hook pre-tool-use", "timeout": 5}]
      }
    ],
    "SessionStart": [
      {"matcher": "compact|resume", "hooks": [{"type": "command", "command": "/old/bin/git-lossless hook session-start", "timeout": 10}]},
      {"matcher": "startup", "hooks": [{"type": "command", "command": "git lossless hook session-start"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "/old/bin/git-lossless hook stop"}]}]
  }
}
`
	path := filepath.Join(t.TempDir(), "settings.json")
	instWriteFile(t, path, old, 0o600)
	p, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, c := range p.Changes {
		actions[c.Event] = c.Action
	}
	if actions["PreToolUse"] != "replaced" || actions["SessionStart"] != "replaced" || actions["Stop"] != "removed" || actions["PreCompact"] != "added" {
		t.Errorf("actions %v", actions)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	after := instReadFile(t, path)
	instAssertOurs(t, after, instTestBin)
	if bytes.Contains(after, []byte("/old")) || bytes.Contains(after, []byte("git lossless hook")) || bytes.Contains(after, []byte(`"Stop"`)) {
		t.Errorf("old entries left:\n%s", after)
	}
	hooks := instDecodeHooks(t, after)
	pre := hooks["PreToolUse"]
	if len(pre) != 2 || len(pre[0].Hooks) != 2 || pre[0].Hooks[0].Command != "echo first" || pre[0].Hooks[1].Command != "echo last" {
		t.Errorf("mixed group: %+v", pre)
	}
	// The pure group of ours with the right matcher is replaced in place.
	if *pre[1].Matcher != "Edit|Write|MultiEdit|NotebookEdit" || pre[1].Hooks[0].Command != HookCommand(instTestBin, "pre-tool-use") {
		t.Errorf("replacement not in place: %+v", pre[1])
	}
	// The mixed group's foreign hooks keep their exact text.
	if !bytes.Contains(after, []byte("          {\"type\": \"command\", \"command\": \"echo first\"},\n          {\"type\": \"command\", \"command\": \"echo last\"}\n")) {
		t.Errorf("mixed group text:\n%s", after)
	}
	p2, _ := PlanInstall(path, instTestBin, instSpecs())
	if p2.Changed() {
		t.Errorf("not idempotent after a replacement:\n%s", p2.Diff())
	}
}

func TestInstallUninstallRestoresForeignOnlyState(t *testing.T) {
	for name, body := range map[string]string{
		"foreign":  instForeign,
		"no hooks": "{\n  \"model\": \"opus\",\n  \"env\": {}\n}\n",
		"compact":  `{"model":"opus","hooks":{"Stop":[]}}`,
		"tabs":     "{\n\t\"hooks\": {\n\t\t\"Stop\": [{\"hooks\": []}]\n\t},\n\t\"x\": 1\n}",
		"crlf":     "{\r\n  \"x\": [1,\r\n 2]\r\n}\r\n",
		"hooks {}": "{\"hooks\": {}, \"x\": 1}",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			instWriteFile(t, path, body, 0o600)
			p, err := PlanInstall(path, instTestBin, instSpecs())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Apply(time.Now()); err != nil {
				t.Fatal(err)
			}
			installed := instReadFile(t, path)
			instAssertOurs(t, installed, instTestBin)
			if strings.Contains(body, "\r\n") && bytes.Count(installed, []byte("\n")) != bytes.Count(installed, []byte("\r\n")) {
				t.Errorf("mixed line endings:\n%q", installed)
			}
			if !strings.Contains(body, "\n") && bytes.Contains(installed, []byte("\n")) {
				t.Errorf("one-line file became multi-line")
			}
			u, err := PlanUninstall(path, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range u.Changes {
				if c.Action != "removed" {
					t.Errorf("uninstall change %+v", c)
				}
			}
			if _, err := u.Apply(time.Now()); err != nil {
				t.Fatal(err)
			}
			got := instReadFile(t, path)
			if name == "hooks {}" {
				// An empty hooks object cannot be told from one that held
				// only ours: it goes too. The same value for Claude Code.
				body = `{"x": 1}`
			}
			if !jsonEqual(got, []byte(body)) {
				t.Fatalf("uninstall did not restore the value:\n%s\nwant\n%s", got, body)
			}
			if name != "hooks {}" && string(got) != body {
				t.Errorf("uninstall did not restore the bytes:\n%q\nwant\n%q", got, body)
			}
			u2, err := PlanUninstall(path, "")
			if err != nil || u2.Changed() {
				t.Errorf("second uninstall: %v %v", err, u2.Diff())
			}
		})
	}
}

func TestInstallUninstallNothingToRemove(t *testing.T) {
	dir := t.TempDir()
	p, err := PlanUninstall(filepath.Join(dir, "missing.json"), "")
	if err != nil || p.Changed() || p.Exists {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("uninstall created a file")
	}
}

func TestInstallDryRunWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	instWriteFile(t, path, instForeign, 0o644)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Diff(); !strings.Contains(d, "+++ ") || !strings.Contains(d, "@@ ") {
		t.Fatalf("diff:\n%s", d)
	}
	st, _ := os.Stat(path)
	if !bytes.Equal(instReadFile(t, path), []byte(instForeign)) || !st.ModTime().Equal(old) || st.Mode().Perm() != 0o644 {
		t.Error("planning touched the file")
	}
	if b := instBackups(t, filepath.Dir(path)); len(b) != 0 {
		t.Errorf("backups: %v", b)
	}
}

// Malformed settings fail closed: an error naming the file and position,
// the file untouched, and no backup (nothing was about to be written, so
// there is nothing to protect; a backup would only litter the directory).
func TestInstallMalformedSettingsFailClosed(t *testing.T) {
	cases := []struct {
		name, body string
		pos        string // line:col in the error
		msg        string
	}{
		{"truncated", "{\n  \"a\": 1,\n  \"hooks\": {\"PreToolUse\": [\n", "4:1", "invalid JSON"},
		{"trailing comma", "{\n  \"a\": 1,\n}\n", "3:1", "invalid JSON"},
		{"garbage after", "{}\n}", "2:1", "invalid JSON"},
		{"top-level array", "[1]", "1:1", "expected an object"},
		{"hooks array", "{\n  \"hooks\": []\n}", "2:12", `"hooks" is an array`},
		{"hooks null", "{\"hooks\": null}", "1:11", `"hooks" is null`},
		{"event object", "{\"hooks\": {\"PreToolUse\": {}}}", "1:26", "hooks.PreToolUse is an object, expected an array"},
		{"group string", "{\"hooks\": {\"Stop\": [\"x\"]}}", "1:21", "hooks.Stop[0] is a string"},
		{"group hooks object", "{\"hooks\": {\"Stop\": [{\"hooks\": {}}]}}", "1:31", "hooks.Stop[0].hooks is an object"},
		{"hook number", "{\"hooks\": {\"Stop\": [{\"hooks\": [7]}]}}", "1:32", "hooks.Stop[0].hooks[0] is a number"},
		{"duplicate hooks", "{\"hooks\": {}, \"hooks\": {}}", "1:15", `duplicate key "hooks"`},
		{"duplicate event", "{\"hooks\": {\"Stop\": [], \"Stop\": []}}", "1:24", "duplicate key hooks.Stop"},
		{"bom", "\ufeff{}", "1:1", "invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "settings.json")
			instWriteFile(t, path, c.body, 0o644)
			install := func(path, bin string) (*Plan, error) { return PlanInstall(path, bin, instSpecs()) }
			for _, f := range []func(string, string) (*Plan, error){install, PlanUninstall} {
				_, err := f(path, instTestBin)
				var se *Error
				if !errors.As(err, &se) {
					t.Fatalf("err %v, want a Error", err)
				}
				if want := path + ":" + c.pos + ": "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("error %q, want prefix %q and %q", err, want, c.msg)
				}
			}
			if got := instReadFile(t, path); string(got) != c.body {
				t.Error("file changed")
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("directory holds %d entries, want only the settings file", len(ents))
			}
		})
	}
}

func TestInstallBackupHoldsPreviousFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	instWriteFile(t, path, instForeign, 0o644)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.Local)
	p, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	backup, err := p.Apply(now)
	if err != nil {
		t.Fatal(err)
	}
	if backup != path+".bak-20260304-050607" {
		t.Errorf("backup name %s", backup)
	}
	if got := instReadFile(t, backup); string(got) != instForeign {
		t.Error("backup differs from the previous file")
	}
	for _, f := range []string{path, backup} {
		if st, _ := os.Stat(f); st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	// A second change in the same second keeps the first backup.
	u, err := PlanUninstall(path, "")
	if err != nil {
		t.Fatal(err)
	}
	backup2, err := u.Apply(now)
	if err != nil {
		t.Fatal(err)
	}
	if backup2 != backup+"-2" || string(instReadFile(t, backup)) != instForeign || !bytes.Equal(instReadFile(t, backup2), p.After) {
		t.Errorf("second backup %s", backup2)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("%d files: a temporary file left behind?", len(ents))
	}
}

func TestInstallApplyRefusesAFileChangedMeanwhile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	instWriteFile(t, path, "{}", 0o600)
	p, err := PlanInstall(path, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	instWriteFile(t, path, `{"model": "opus"}`, 0o600)
	if _, err := p.Apply(time.Now()); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Fatalf("apply over a changed file: %v", err)
	}
	if string(instReadFile(t, path)) != `{"model": "opus"}` {
		t.Error("file overwritten")
	}
}

func TestInstallFollowsSymlinkedSettings(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "claude.json")
	instWriteFile(t, target, "{}\n", 0o600)
	link := filepath.Join(dir, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(link, instTestBin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != target {
		t.Errorf("path %s, want the link's target", p.Path)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	instAssertOurs(t, instReadFile(t, link), instTestBin)
}

func TestInstallQuotesProgramPaths(t *testing.T) {
	bin := "/Users/me/My Tools/git-lossless"
	cmd := HookCommand(bin, "pre-tool-use")
	if cmd != `'/Users/me/My Tools/git-lossless' hook pre-tool-use` {
		t.Fatalf("command %s", cmd)
	}
	if prog, arg := hookProgram(cmd); prog != bin || arg != "pre-tool-use" {
		t.Errorf("hookProgram = %q %q", prog, arg)
	}
	if got := HookCommand("/it's/git-lossless", "x"); got != `'/it'\''s/git-lossless' hook x` {
		t.Errorf("quote: %s", got)
	}
	if prog, _ := hookProgram(`LOSSLESS_GUARD=off "/a b/git-lossless" hook x`); prog != "/a b/git-lossless" {
		t.Errorf("hookProgram with env prefix: %q", prog)
	}
	for cmd, want := range map[string]bool{
		"/usr/local/bin/git-lossless hook pre-tool-use":      true,
		`'/a b/git-lossless' hook session-end`:               true,
		`"C:\tools\git-lossless.exe" hook pre-compact`:       true,
		"git lossless hook post-tool-use":                    true,
		"cd /x && git-lossless hook stop":                    true,
		"/opt/custom/recorder hook pre-tool-use":             false,
		"/home/me/src/git-lossless/scripts/lint.sh":          false,
		"git-lossless record --op read x":                    false,
		"echo git-lossless hookshot":                         false,
		"/home/me/git-lossless-hook-helper pre-tool-use":     false,
		"/usr/local/bin/git-lossless-hook hook pre-tool-use": true,
		`'/a b/git-lossless-hook.exe' hook session-end`:      true,
		"/usr/local/bin/git-lossless-hook pre-tool-use":      false,
		"/usr/local/bin/git-lossless-hooks hook x":           false,
		"python3 ~/.claude/hooks/git-lossless_wrapper.py x":  false,
	} {
		if got := IsOurHookCommand(cmd, ""); got != want {
			t.Errorf("IsOurHookCommand(%q) = %v", cmd, got)
		}
	}
	if !IsOurHookCommand("/opt/custom/recorder hook pre-tool-use", "/opt/custom/recorder") {
		t.Error("the configured program is not recognised")
	}
	// Install and uninstall round trip with a quoted path.
	path := filepath.Join(t.TempDir(), "settings.json")
	p, err := PlanInstall(path, bin, instSpecs())
	if err != nil {
		t.Fatal(err)
	}
	p.Apply(time.Now())
	instAssertOurs(t, instReadFile(t, path), bin)
	if !bytes.Contains(instReadFile(t, path), []byte(`"'/Users/me/My Tools/git-lossless' hook session-start"`)) {
		t.Errorf("quoted command:\n%s", instReadFile(t, path))
	}
}

func TestInstallResolveBinary(t *testing.T) {
	base := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(base, "tmp")) // so base itself is not "temporary"
	os.MkdirAll(filepath.Join(base, "tmp"), 0o700)
	binDir := filepath.Join(base, "bin")
	os.MkdirAll(binDir, 0o755)
	prog := filepath.Join(binDir, "git-lossless")
	instWriteFile(t, prog, "#!/bin/sh\n", 0o755)
	link := filepath.Join(base, "link-to-git-lossless")
	os.Symlink(prog, link)
	env := func(path string) func(string) string {
		return func(k string) string {
			if k == "PATH" {
				return path
			}
			return ""
		}
	}
	exe := func(p string) func() (string, error) { return func() (string, error) { return p, nil } }

	// Running the PATH copy (through another name): the PATH name is used.
	b, err := ResolveBinary(context.Background(), BinaryOptions{Getenv: env("/nonexistent:" + binDir), Executable: exe(link)})
	if err != nil || b.Path != prog || b.Warning != "" {
		t.Errorf("same program on PATH: %+v %v", b, err)
	}
	// Another program on PATH: this one, with a warning.
	other := filepath.Join(base, "other", "git-lossless")
	instWriteFile(t, other, "#!/bin/sh\n", 0o755)
	b, _ = ResolveBinary(context.Background(), BinaryOptions{Getenv: env(binDir), Executable: exe(other)})
	if b.Path != other || !strings.Contains(b.Warning, "different program") {
		t.Errorf("different program: %+v", b)
	}
	// A go run build: warned.
	tmpBuild := filepath.Join(base, "tmp", "go-build1234", "b001", "exe", "git-lossless")
	b, _ = ResolveBinary(context.Background(), BinaryOptions{Getenv: env(""), Executable: exe(tmpBuild)})
	if b.Path != tmpBuild || !strings.Contains(b.Warning, "temporary") {
		t.Errorf("go run build: %+v", b)
	}
	// Not on PATH, not temporary: no warning.
	b, _ = ResolveBinary(context.Background(), BinaryOptions{Getenv: env(""), Executable: exe(other)})
	if b.Path != other || b.Warning != "" {
		t.Errorf("plain: %+v", b)
	}
	// Overrides: relative paths from Dir, bare names as given.
	b, _ = ResolveBinary(context.Background(), BinaryOptions{Override: "bin/git-lossless", Dir: base})
	if b.Path != prog {
		t.Errorf("override: %+v", b)
	}
	b, _ = ResolveBinary(context.Background(), BinaryOptions{Override: "git-lossless", Dir: base})
	if b.Path != "git-lossless" || b.Hook != "git-lossless" {
		t.Errorf("bare override: %+v", b)
	}
	if b, _ = ResolveBinary(context.Background(), BinaryOptions{Override: prog}); b.Hook != prog {
		t.Errorf("no git-lossless-hook beside it: the hooks run %s, want %s", b.Hook, prog)
	}
}

// TestResolveBinaryHookProgram: the hooks run the git-lossless-hook beside
// git-lossless when it is an executable file of the same version (each
// program here is a real script answering --version), and git-lossless
// itself, with a warning saying why, when it is of another version or
// broken; a non-executable or directory sibling is not used.
func TestResolveBinaryHookProgram(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "git-lossless")
	hook := filepath.Join(dir, HookProgramName)
	instWriteFile(t, prog, "#!/bin/sh\necho git-lossless version 1.0\n", 0o755)
	resolve := func() HookBinary {
		t.Helper()
		b, err := ResolveBinary(context.Background(), BinaryOptions{Override: prog, Version: "1.0"})
		if err != nil || b.Path != prog {
			t.Fatalf("ResolveBinary: %+v %v", b, err)
		}
		return b
	}
	for _, c := range []struct {
		name, script string
		mode         os.FileMode
		want, warn   string
	}{
		{"same version", "#!/bin/sh\necho git-lossless version 1.0\n", 0o755, hook, ""},
		{"older version", "#!/bin/sh\necho git-lossless version 0.9\n", 0o755, prog, "is version 0.9, not 1.0"},
		{"not ours", "#!/bin/sh\necho hello\n", 0o755, prog, "not git-lossless's version line"},
		{"fails", "#!/bin/sh\nexit 3\n", 0o755, prog, "unusable"},
		{"not executable", "#!/bin/sh\necho git-lossless version 1.0\n", 0o644, prog, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(hook)
			instWriteFile(t, hook, c.script, c.mode)
			os.Chmod(hook, c.mode)
			b := resolve()
			if b.Hook != c.want {
				t.Fatalf("hooks run %s, want %s (%+v)", b.Hook, c.want, b)
			}
			if c.warn == "" && b.Warning != "" || c.warn != "" && !strings.Contains(b.Warning, c.warn) {
				t.Fatalf("warning %q, want one containing %q", b.Warning, c.warn)
			}
		})
	}
	os.Remove(hook)
	if err := os.Mkdir(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	if b := resolve(); b.Hook != prog {
		t.Fatalf("a directory named %s was taken for the hook program", HookProgramName)
	}
	if got := HookCommand(hook, "post-tool-use"); !IsOurHookCommand(got, "") {
		t.Fatalf("%q is not recognised as ours, so uninstall would leave it", got)
	}
}

func TestInstallDiffFormat(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	b := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
	got := unifiedLineDiff("x", "y", a, b, 3)
	want := "--- x\n+++ y\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -8,3 +8,4 @@\n h\n i\n j\n+k\n"
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := unifiedLineDiff("x", "y", "", "{}\n", 3); got != "--- x\n+++ y\n@@ -0,0 +1 @@\n+{}\n" {
		t.Errorf("diff from empty:\n%s", got)
	}
	if got := unifiedLineDiff("x", "y", "a", "a\n", 3); !strings.Contains(got, "-a\n\\ No newline at end of file\n+a\n") {
		t.Errorf("diff of a missing newline:\n%s", got)
	}
	// The diff applies: the plus and context lines of a full-context
	// diff are the new file.
	full := unifiedLineDiff("x", "y", instForeign, instForeign+"x\n", 1000)
	var rebuilt strings.Builder
	for _, l := range strings.Split(full, "\n")[3:] {
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "+") {
			rebuilt.WriteString(l[1:] + "\n")
		}
	}
	if rebuilt.String() != instForeign+"x\n" {
		t.Errorf("full-context diff does not rebuild the file")
	}
	if !regexp.MustCompile(`^--- x\n\+\+\+ y\n@@ -1,\d+ \+1,\d+ @@\n`).MatchString(full) {
		t.Errorf("header: %.60q", full)
	}
}

// unsetenv unsets variables for one test (t.Setenv restores them).
func unsetenv(t *testing.T, keys ...string) {
	for _, k := range keys {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}
