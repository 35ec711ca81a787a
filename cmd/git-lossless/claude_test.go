package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// claudeFixture is an isolated machine for the install and doctor
// commands: a home with its Claude config dir, a repository, and an
// environment that reaches nothing of the real user's.
type claudeFixture struct {
	base, home, cfg, repo string
	vars                  map[string]string
}

func newClaudeFixture(t *testing.T) *claudeFixture {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	base := t.TempDir()
	f := &claudeFixture{base: base, home: filepath.Join(base, "home"), repo: filepath.Join(base, "repo")}
	f.cfg = filepath.Join(f.home, ".claude")
	for k, v := range map[string]string{
		"HOME":                f.home,
		"XDG_DATA_HOME":       filepath.Join(f.home, "data"),
		"XDG_CONFIG_HOME":     filepath.Join(f.home, "config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   os.DevNull,
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "LOSSLESS_ARCHIVE_EXCLUDE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	f.vars = map[string]string{
		"HOME":              f.home,
		"CLAUDE_CONFIG_DIR": f.cfg,
		"PATH":              filepath.Dir(git),
	}
	if out, err := exec.Command("git", "init", "-q", f.repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return f
}

func (f *claudeFixture) run(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir, Getenv: func(k string) string { return f.vars[k] }}
	code = run(context.Background(), args, e)
	return code, out.String(), errb.String()
}

const claudeForeign = `{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Edit|Write|MultiEdit|NotebookEdit", "hooks": [{"type": "command", "command": "lint-it"}]}
    ]
  },
  "statusLine": {"type": "command", "command": "ctx-status"}
}
`

func claudeBackups(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.bak-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClaudeInstallDryRunThenApply(t *testing.T) {
	f := newClaudeFixture(t)
	path := filepath.Join(f.base, "s", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(claudeForeign), 0o644)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(path, old, old)
	bin := "/opt/lossless/bin/git-lossless"

	code, out, errOut := f.run(t, f.repo, "install", "claude-code", "--settings", path, "--command", bin)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"--- " + path + " (current)", "+++ " + path + " (new)", "@@ ", `+            "command": "` + bin + ` hook pre-tool-use",`, "added     PreCompact", "dry run: nothing was written"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	st, _ := os.Stat(path)
	if b, _ := os.ReadFile(path); string(b) != claudeForeign || !st.ModTime().Equal(old) {
		t.Fatal("dry run changed the file")
	}
	if b := claudeBackups(t, filepath.Dir(path)); len(b) != 0 {
		t.Fatalf("dry run wrote a backup: %v", b)
	}

	code, out, errOut = f.run(t, f.repo, "install", "claude-code", "--settings", path, "--command", bin, "--apply")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	backups := claudeBackups(t, filepath.Dir(path))
	if len(backups) != 1 || !strings.Contains(out, "backup: "+backups[0]) || !strings.Contains(out, "wrote "+path) {
		t.Fatalf("apply output:\n%s\nbackups %v", out, backups)
	}
	if !regexp.MustCompile(`\.bak-\d{8}-\d{6}$`).MatchString(backups[0]) {
		t.Errorf("backup name %s", backups[0])
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != claudeForeign {
		t.Error("backup is not the previous file")
	}
	after, _ := os.ReadFile(path)
	if !bytes.Contains(after, []byte(`"command": "lint-it"`)) || !bytes.Contains(after, []byte(bin+" hook session-end")) {
		t.Errorf("merged settings:\n%s", after)
	}
	for _, p := range []string{path, backups[0]} {
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", p, st.Mode().Perm())
		}
	}

	code, out, _ = f.run(t, f.repo, "install", "claude-code", "--settings", path, "--command", bin, "--apply")
	if code != 0 || !strings.Contains(out, "already installed") || strings.Contains(out, "+++") {
		t.Fatalf("second install: exit %d\n%s", code, out)
	}
	if len(claudeBackups(t, filepath.Dir(path))) != 1 {
		t.Error("a no-op install wrote a backup")
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, after) {
		t.Error("a no-op install rewrote the file")
	}
}

func TestClaudeUninstallRestoresForeignOnly(t *testing.T) {
	f := newClaudeFixture(t)
	path := filepath.Join(f.cfg, "settings.json")
	os.MkdirAll(f.cfg, 0o700)
	os.WriteFile(path, []byte(claudeForeign), 0o600)
	bin := "/opt/lossless/bin/git-lossless"
	if code, out, errOut := f.run(t, f.repo, "install", "claude-code", "--command", bin, "--apply"); code != 0 {
		t.Fatalf("install: %d\n%s%s", code, out, errOut)
	}
	installed, _ := os.ReadFile(path)
	code, out, _ := f.run(t, f.repo, "uninstall", "claude-code")
	if code != 0 || !strings.Contains(out, "dry run") || !strings.Contains(out, "removed   SessionEnd") {
		t.Fatalf("uninstall dry run: %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, installed) {
		t.Fatal("uninstall dry run changed the file")
	}
	if code, out, errOut := f.run(t, f.repo, "uninstall", "claude-code", "--apply"); code != 0 || !strings.Contains(out, "backup: ") {
		t.Fatalf("uninstall: %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(path); string(b) != claudeForeign {
		t.Fatalf("uninstall left:\n%s", b)
	}
	if code, out, _ := f.run(t, f.repo, "uninstall", "claude-code", "--apply"); code != 0 || !strings.Contains(out, "no git-lossless hooks") {
		t.Fatalf("second uninstall: %d\n%s", code, out)
	}
}

func TestClaudeInstallScopes(t *testing.T) {
	f := newClaudeFixture(t)
	bin := "/opt/lossless/bin/git-lossless"
	code, out, errOut := f.run(t, f.repo, "install", "claude-code", "--command", bin, "--apply")
	user := filepath.Join(f.cfg, "settings.json")
	if code != 0 || !strings.Contains(out, "settings: "+user+" (user settings)") {
		t.Fatalf("user scope: %d\n%s%s", code, out, errOut)
	}
	if st, err := os.Stat(f.cfg); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("config dir: %v %v", st, err)
	}
	sub := filepath.Join(f.repo, "pkg", "deep")
	os.MkdirAll(sub, 0o755)
	code, out, errOut = f.run(t, sub, "install", "claude-code", "--scope", "project", "--command", bin, "--apply")
	top, _ := filepath.EvalSymlinks(f.repo)
	project := filepath.Join(top, ".claude", "settings.json")
	if code != 0 || !strings.Contains(out, "settings: "+project+" (project settings)") {
		t.Fatalf("project scope: %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(project); err != nil {
		t.Fatal(err)
	}
	// Without --command the running program is used: here the test binary,
	// a temporary build, which is warned about.
	code, out, errOut = f.run(t, f.repo, "install", "claude-code", "--settings", filepath.Join(f.base, "x.json"))
	if code != 0 || !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "temporary") {
		t.Errorf("default program: %d\n%s%s", code, out, errOut)
	}
}

func TestClaudeInstallUsageErrors(t *testing.T) {
	f := newClaudeFixture(t)
	for _, args := range [][]string{
		{"install"},
		{"install", "cursor"},
		{"install", "claude-code", "extra"},
		{"install", "claude-code", "--scope", "global"},
		{"uninstall"},
		{"install", "claude-code", "--bogus"},
		{"doctor", "extra"},
	} {
		if code, out, errOut := f.run(t, f.repo, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
	if _, err := os.Stat(f.cfg); err == nil {
		t.Error("a refused invocation created the config dir")
	}
}

func TestClaudeInstallMalformedSettingsFailClosed(t *testing.T) {
	f := newClaudeFixture(t)
	dir := filepath.Join(f.base, "cfg")
	path := filepath.Join(dir, "settings.json")
	os.MkdirAll(dir, 0o700)
	body := "{\n  \"hooks\": {\"PreToolUse\": []},\n  \"model\": \"opus\",,\n}\n"
	os.WriteFile(path, []byte(body), 0o644)
	for _, verb := range []string{"install", "uninstall"} {
		code, out, errOut := f.run(t, f.repo, verb, "claude-code", "--settings", path, "--command", "/x/git-lossless", "--apply")
		if code != exitError {
			t.Fatalf("%s: exit %d\n%s%s", verb, code, out, errOut)
		}
		if !strings.Contains(errOut, "git-lossless: error: "+path+":3:19: invalid JSON") || !strings.Contains(errOut, "hint: nothing was written") {
			t.Errorf("%s: stderr %q", verb, errOut)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != body {
		t.Error("malformed file changed")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files beside the settings (no backup, no temp file expected)", len(ents))
	}
}

var doctorLineRe = regexp.MustCompile(`^(OK|WARN|FAIL)  [^:]+: .+$`)

func TestDoctorCLI(t *testing.T) {
	f := newClaudeFixture(t)
	os.WriteFile(filepath.Join(f.repo, "a.txt"), []byte("a\n"), 0o644)
	if code, out, errOut := f.run(t, f.repo, "record", "--op", "read", "a.txt"); code != 0 {
		t.Fatalf("record: %d %s%s", code, out, errOut)
	}
	code, out, errOut := f.run(t, f.repo, "doctor")
	if code != 0 {
		t.Fatalf("healthy doctor: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !regexp.MustCompile(`^\d+ ok, \d+ warn, 0 fail$`).MatchString(lines[len(lines)-1]) {
		t.Errorf("count line %q", lines[len(lines)-1])
	}
	warns := 0
	for i, l := range lines[:len(lines)-1] {
		switch {
		case strings.HasPrefix(l, "  fix: "):
			if i == 0 || strings.HasPrefix(lines[i-1], "OK") || strings.HasPrefix(lines[i-1], "  fix") {
				t.Errorf("fix line not under a problem: %q", l)
			}
		case doctorLineRe.MatchString(l):
			if !strings.HasPrefix(l, "OK") {
				warns++
				if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "  fix: ") {
					t.Errorf("no fix under %q", l)
				}
			}
		default:
			t.Errorf("unexpected line %q", l)
		}
	}
	for _, want := range []string{
		"OK    archive location: repository ",
		"OK    seal chains: 1 writer",
		"WARN  claude-code hooks (user settings): not installed",
		"  fix: git lossless install claude-code --apply\n",
		"  fix: git lossless install claude-code --scope project --apply\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = f.run(t, f.repo, "doctor", "--json")
	if code != 0 {
		t.Fatalf("doctor --json: exit %d", code)
	}
	var checks []map[string]any
	if err := json.Unmarshal([]byte(out), &checks); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	if len(checks) != len(lines)-1-warns {
		t.Errorf("%d JSON checks, %d text checks", len(checks), len(lines)-1-warns)
	}
	for _, c := range checks {
		for _, k := range []string{"check", "status", "detail", "fix"} {
			if _, ok := c[k]; !ok {
				t.Errorf("check %v lacks %q", c, k)
			}
		}
	}

	// A chain moved to another writer's ref breaks: FAIL, exit 1.
	refs := filepath.Join(f.repo, ".git", "refs", "lossless")
	cliRefs, _ := filepath.Glob(filepath.Join(refs, "cli-*"))
	if len(cliRefs) != 1 {
		t.Fatalf("cli writers: %v", cliRefs)
	}
	head, err := os.ReadFile(cliRefs[0])
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(refs, "moved"), head, 0o644)
	code, out, errOut = f.run(t, f.repo, "doctor")
	if code != exitFailed || !strings.Contains(out, "FAIL  seal chains: 2 writers, 1 ok, 1 broken: moved: ") || !strings.Contains(out, ", 1 fail\n") || !strings.Contains(errOut, "checks failed") {
		t.Errorf("broken chain: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = f.run(t, f.repo, "doctor", "--json")
	if code != exitFailed || json.Unmarshal([]byte(out), &checks) != nil {
		t.Errorf("broken chain --json: exit %d\n%s", code, out)
	}
}

func TestClaudeCommandsInHelp(t *testing.T) {
	f := newClaudeFixture(t)
	_, out, _ := f.run(t, f.repo, "help")
	for _, c := range []string{"install", "uninstall", "doctor"} {
		if !regexp.MustCompile(`(?m)^ +` + c + ` +\S`).MatchString(out) {
			t.Errorf("help lacks %s:\n%s", c, out)
		}
	}
	for _, c := range []string{"install", "uninstall", "doctor"} {
		if code, out, _ := f.run(t, f.repo, c, "--help"); code != 0 || !strings.Contains(out, "usage: git lossless "+c) {
			t.Errorf("%s --help: %d\n%s", c, code, out)
		}
	}
}

// runIn runs the CLI in dir with stdin.
func (f *claudeFixture) runIn(t *testing.T, dir, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Dir: dir, Getenv: func(k string) string { return f.vars[k] }}
	code = run(context.Background(), args, e)
	return code, out.String(), errb.String()
}

func hookPayload(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHookCommandAlwaysExitsZero: Claude Code reads exit 2 from a
// PreToolUse hook as a block, so no failure of ours — bad flags, a bad
// -C, a bad global flag, a bad payload — may exit non-zero; each is one
// stderr line. The guard's deny is exit 0 with the decision on stdout.
func TestHookCommandAlwaysExitsZero(t *testing.T) {
	f := newClaudeFixture(t)
	file := filepath.Join(f.repo, "a.go")
	if err := os.WriteFile(file, []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := hookPayload(t, map[string]any{"session_id": "s1", "cwd": f.repo, "hook_event_name": "PreToolUse", "tool_name": "Edit",
		"tool_use_id": "toolu_1", "tool_input": map[string]any{"file_path": file, "old_string": "a", "new_string": "b"}})
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"hook", "pre-tool-use", "--weird"}, edit},
		{[]string{"hook", "--weird", "pre-tool-use"}, edit},
		{[]string{"-C", "/nonexistent/dir", "hook", "pre-tool-use"}, "{bad json"},
		{[]string{"--bogus", "hook", "pre-tool-use"}, "{}"},
		{[]string{"hook"}, edit},
		{[]string{"hook", "pre-tool-use", "extra"}, edit},
		{[]string{"hook", "NoSuchEvent"}, edit},
		{[]string{"hook", "post-tool-use"}, "not json"},
		{[]string{"hook", "session-end"}, hookPayload(t, map[string]any{"session_id": "s1", "cwd": "/nonexistent/dir"})},
	} {
		code, out, errOut := f.runIn(t, f.repo, c.stdin, c.args...)
		if code != 0 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "git-lossless: hook") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0 and one stderr line", c.args, code, out, errOut)
		}
	}
	// The deliberate block: exit 0, the deny on stdout, nothing on stderr.
	code, out, errOut := f.runIn(t, f.repo, edit, "-C", f.repo, "hook", "PreToolUse")
	if code != 0 || errOut != "" || !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Errorf("blind edit: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// LOSSLESS_GUARD=off lets it through.
	f.vars["LOSSLESS_GUARD"] = "off"
	if code, out, errOut := f.runIn(t, f.repo, edit, "hook", "pre-tool-use"); code != 0 || out != "" || errOut != "" {
		t.Errorf("guard off: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	delete(f.vars, "LOSSLESS_GUARD")
	// Help is still help.
	if code, out, _ := f.runIn(t, f.repo, "", "hook", "--help"); code != 0 || !strings.Contains(out, "usage: git lossless hook") {
		t.Errorf("hook --help: exit %d\n%s", code, out)
	}
}

// TestRestoreCLI: the restore command's flags, its default budget, and
// that what it prints counts as seen for the guard.
func TestRestoreCLI(t *testing.T) {
	f := newClaudeFixture(t)
	file := filepath.Join(f.repo, "a.go")
	if err := os.WriteFile(file, []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := hookPayload(t, map[string]any{"session_id": "s1", "cwd": f.repo, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": "toolu_r",
		"tool_input": map[string]any{"file_path": file}, "tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": file, "content": "package a\n", "numLines": 2, "startLine": 1, "totalLines": 2}}})
	if code, _, errOut := f.runIn(t, f.repo, read, "hook", "post-tool-use"); code != 0 || errOut != "" {
		t.Fatalf("post-tool-use: %d %s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"restore"}, "restore needs --session or --files"},
		{[]string{"restore", "--session", "s1", "--budget", "0"}, "--budget must be positive"},
		{[]string{"restore", "--session", "s1", "--budget", "x"}, "invalid argument"},
	} {
		if code, _, errOut := f.run(t, f.repo, c.args...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %q, want usage error %q", c.args, code, errOut, c.want)
		}
	}
	if code, out, _ := f.run(t, f.repo, "restore", "--help"); code != 0 || !regexp.MustCompile(`--budget int +characters of content at most \(default 8000\)`).MatchString(out) {
		t.Errorf("restore --help (default budget 8000):\n%s", out)
	}
	// The working set of the session, then one file by relative name.
	code, out, errOut := f.run(t, f.repo, "restore", "--session", "s1")
	if code != 0 || !strings.Contains(out, "=== a.go (unchanged since you saw it; current content, full) ===\npackage a\n=== end of a.go ===") {
		t.Fatalf("restore --session: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = f.run(t, f.repo, "restore", "--session", "s1", "--agent", "sub1", "--files", "a.go", "--budget", "5")
	if code != 0 || !strings.Contains(out, "=== a.go: not in the archive for this context; over the budget, not shown") {
		t.Fatalf("restore --files --budget 5: %d\n%s", code, out)
	}
	// The subagent's restore above printed nothing; a full one vouches for
	// its edit.
	edit := hookPayload(t, map[string]any{"session_id": "s1", "cwd": f.repo, "tool_name": "Edit", "tool_use_id": "toolu_e", "agent_id": "sub1",
		"tool_input": map[string]any{"file_path": file, "old_string": "a", "new_string": "b"}})
	if _, out, _ := f.runIn(t, f.repo, edit, "hook", "pre-tool-use"); !strings.Contains(out, "deny") {
		t.Fatalf("subagent edit before its restore: %q", out)
	}
	if code, out, errOut := f.run(t, f.repo, "restore", "--session", "s1", "--agent", "sub1", "--files", "a.go"); code != 0 || !strings.Contains(out, "package a\n") {
		t.Fatalf("restore --agent: %d\n%s%s", code, out, errOut)
	}
	if _, out, errOut := f.runIn(t, f.repo, edit, "hook", "pre-tool-use"); out != "" || errOut != "" {
		t.Fatalf("subagent edit after its restore: %q %q", out, errOut)
	}
}
