package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// doctorFixture is a temporary machine: a home, a repository with one
// writer, a git-lossless on PATH that is "this program", and nothing of
// the real user's environment.
type doctorFixture struct {
	base, home, repo, bin string
	env                   map[string]string
}

func newDoctorFixture(t *testing.T) *doctorFixture {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	base := t.TempDir()
	f := &doctorFixture{base: base, home: filepath.Join(base, "home"), repo: filepath.Join(base, "repo"), bin: filepath.Join(base, "bin", "git-lossless")}
	// Paths under os.TempDir() count as temporary builds; move it away
	// from the fixture.
	os.MkdirAll(filepath.Join(base, "tmp"), 0o700)
	for k, v := range map[string]string{
		"TMPDIR":              filepath.Join(base, "tmp"),
		"HOME":                f.home,
		"XDG_DATA_HOME":       filepath.Join(f.home, "data"),
		"XDG_CONFIG_HOME":     filepath.Join(f.home, "config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		// Never the real anchor key: its own, made on first use.
		"LOSSLESS_ANCHOR_KEY_FILE": filepath.Join(base, "anchor-key"),
	} {
		t.Setenv(k, v)
	}
	instUnsetenv(t, "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "LOSSLESS_ARCHIVE_EXCLUDE", "LOSSLESS_GUARD")
	instWriteFile(t, f.bin, "#!/bin/sh\necho git-lossless version test\n", 0o755)
	f.env = map[string]string{
		"HOME":              f.home,
		"PATH":              filepath.Dir(f.bin) + string(os.PathListSeparator) + filepath.Dir(git),
		"CLAUDE_CONFIG_DIR": filepath.Join(f.home, ".claude"),
	}
	if out, err := exec.Command("git", "init", "-q", f.repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	st, err := gitstore.OpenDir(f.repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), "w1", []gitstore.Record{{Event: gitstore.Event{Op: "read", Source: "cli", Path: "a.txt"}, Content: []byte("a\n"), HasContent: true}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// instWriteFile writes a test file, creating its directories.
func instWriteFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// instReadFile reads a test file.
func instReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// instUnsetenv unsets variables for one test (t.Setenv restores them).
func instUnsetenv(t *testing.T, keys ...string) {
	for _, k := range keys {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func (f *doctorFixture) opts() Options {
	return Options{
		Dir:        f.repo,
		Getenv:     func(k string) string { return f.env[k] },
		Executable: f.bin,
		Version:    "test",
		VersionOf:  settings.RunVersion,
	}
}

func (f *doctorFixture) userSettings() string {
	return filepath.Join(f.home, ".claude", "settings.json")
}

func (f *doctorFixture) install(t *testing.T, path, bin string) {
	t.Helper()
	p, err := settings.PlanInstall(path, bin, claudecode.HookSpecs())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
}

func checksByName(t *testing.T, cs []Check) map[string]Check {
	t.Helper()
	m := map[string]Check{}
	for _, c := range cs {
		if _, dup := m[c.Check]; dup {
			t.Errorf("check %q twice", c.Check)
		}
		m[c.Check] = c
		switch c.Status {
		case OK:
			if c.Fix != "" {
				t.Errorf("%s: OK with a fix %q", c.Check, c.Fix)
			}
		case Warn, Fail:
			if c.Fix == "" {
				t.Errorf("%s: %s without a fix", c.Check, c.Status)
			}
		default:
			t.Errorf("%s: status %q", c.Check, c.Status)
		}
		if c.Detail == "" {
			t.Errorf("%s: no detail", c.Check)
		}
	}
	return m
}

func wantStatus(t *testing.T, m map[string]Check, check, status, detail string) Check {
	t.Helper()
	c, ok := m[check]
	if !ok {
		t.Fatalf("no check %q in %v", check, m)
	}
	if c.Status != status || !strings.Contains(c.Detail, detail) {
		t.Errorf("%s: %s %q, want %s containing %q", check, c.Status, c.Detail, status, detail)
	}
	return c
}

func TestDoctorHealthyRepoWarnsAboutMissingHooks(t *testing.T) {
	f := newDoctorFixture(t)
	cs := Run(context.Background(), f.opts())
	m := checksByName(t, cs)
	wantStatus(t, m, "git-lossless on PATH", OK, "this program")
	wantStatus(t, m, "git on PATH", OK, "git")
	wantStatus(t, m, "archive location", OK, "repository")
	wantStatus(t, m, "archive readable", OK, "1 writer, 1 entry")
	wantStatus(t, m, "seal chains", OK, "1 writer")
	wantStatus(t, m, "ref locks", OK, "none")
	u := wantStatus(t, m, "claude-code hooks (user settings)", Warn, "not installed")
	if u.Fix != "git lossless install claude-code --apply" {
		t.Errorf("user fix %q", u.Fix)
	}
	p := wantStatus(t, m, "claude-code hooks (project settings)", Warn, "not installed")
	if p.Fix != "git lossless install claude-code --scope project --apply" {
		t.Errorf("project fix %q", p.Fix)
	}
	if _, ok := m["hook program"]; ok {
		t.Error("hook program checked with no hooks installed")
	}
	wantStatus(t, m, "edit guard", OK, "on")
	// Never anchored: a warning (anchoring is opt-in), not a failure.
	wantStatus(t, m, "anchored writers", Warn, "never anchored")
	if _, ok := m["anchor on push"]; ok {
		t.Error("the pre-push hook checked with lossless.anchorOnPush unset")
	}
	mc := wantStatus(t, m, "mcp server", Warn, "not registered")
	if mc.Fix != "git lossless install claude-code --apply" {
		t.Errorf("mcp fix %q", mc.Fix)
	}
	if ok, warn, fail := Count(cs); ok != 7 || warn != 4 || fail != 0 {
		t.Errorf("counts %d %d %d", ok, warn, fail)
	}
}

func TestDoctorAllOKWhenInstalled(t *testing.T) {
	f := newDoctorFixture(t)
	f.install(t, f.userSettings(), f.bin)
	f.registerMCP(t, f.userMCPConfig(), doctorMCPHelper(t, f.base), map[string]string{doctorMCPHelperEnv: "serve"})
	f.anchor(t, time.Now())
	cs := Run(context.Background(), f.opts())
	m := checksByName(t, cs)
	wantStatus(t, m, "claude-code hooks (user settings)", OK, "installed in "+f.userSettings())
	wantStatus(t, m, "claude-code hooks (project settings)", OK, "cover")
	wantStatus(t, m, "hook program", OK, f.bin)
	wantStatus(t, m, "mcp server", OK, "2 tools (alpha, beta)")
	if _, warn, fail := Count(cs); warn != 0 || fail != 0 {
		t.Errorf("not all OK: %+v", cs)
	}
	// Installed only in the project: also fine.
	os.Remove(f.userSettings())
	f.install(t, filepath.Join(f.repo, ".claude", "settings.json"), f.bin)
	m = checksByName(t, Run(context.Background(), f.opts()))
	wantStatus(t, m, "claude-code hooks (user settings)", OK, "cover")
	wantStatus(t, m, "claude-code hooks (project settings)", OK, "installed")
}

func TestDoctorStaleLockWarns(t *testing.T) {
	f := newDoctorFixture(t)
	lock := filepath.Join(f.repo, ".git", "refs", "lossless", "w1.lock")
	instWriteFile(t, lock, "left by a crash\n", 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lock, old, old)
	cs := Run(context.Background(), f.opts())
	m := checksByName(t, cs)
	c := wantStatus(t, m, "ref locks", Warn, lock)
	if c.Fix != "git lossless locks --clean" {
		t.Errorf("fix %q", c.Fix)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Error("doctor removed the lock; it must change nothing")
	}
	if _, _, fail := Count(cs); fail != 0 {
		t.Errorf("a stale lock is a warning, not a failure: %+v", cs)
	}
}

func TestDoctorBrokenChainFails(t *testing.T) {
	f := newDoctorFixture(t)
	// A chain moved to another writer's ref no longer links to that
	// writer's genesis.
	refs := filepath.Join(f.repo, ".git", "refs", "lossless")
	head := instReadFile(t, filepath.Join(refs, "w1"))
	instWriteFile(t, filepath.Join(refs, "w2"), string(head), 0o644)
	cs := Run(context.Background(), f.opts())
	m := checksByName(t, cs)
	c := wantStatus(t, m, "seal chains", Fail, "w2: ")
	if !strings.Contains(c.Fix, "git lossless verify") {
		t.Errorf("fix %q", c.Fix)
	}
	if strings.Contains(c.Detail, "w1:") {
		t.Errorf("the intact writer reported: %s", c.Detail)
	}
	if _, _, fail := Count(cs); fail != 1 {
		t.Errorf("fail count: %+v", cs)
	}
}

func TestDoctorSettingsProblems(t *testing.T) {
	t.Run("malformed", func(t *testing.T) {
		f := newDoctorFixture(t)
		instWriteFile(t, f.userSettings(), "{\n  \"hooks\": {\n", 0o600)
		m := checksByName(t, Run(context.Background(), f.opts()))
		c := wantStatus(t, m, "claude-code hooks (user settings)", Fail, f.userSettings()+":3:1: invalid JSON")
		if !strings.Contains(c.Fix, "fix the JSON") {
			t.Errorf("fix %q", c.Fix)
		}
		wantStatus(t, m, "claude-code hooks (project settings)", Warn, "not installed")
	})
	t.Run("missing program", func(t *testing.T) {
		f := newDoctorFixture(t)
		gone := filepath.Join(f.base, "gone", "git-lossless")
		f.install(t, f.userSettings(), gone)
		m := checksByName(t, Run(context.Background(), f.opts()))
		c := wantStatus(t, m, "hook program", Fail, gone)
		if !strings.Contains(c.Fix, "git lossless install claude-code --apply") {
			t.Errorf("fix %q", c.Fix)
		}
	})
	t.Run("hook program of another version", func(t *testing.T) {
		// A git-lossless-hook left from an older install runs old code on
		// every tool call: a real script answering --version like one.
		f := newDoctorFixture(t)
		stale := filepath.Join(f.base, "bin", "git-lossless-hook")
		instWriteFile(t, stale, "#!/bin/sh\necho git-lossless version 0.0.1-old\n", 0o755)
		f.install(t, f.userSettings(), stale)
		opt := f.opts()
		opt.Version = "test"
		m := checksByName(t, Run(context.Background(), opt))
		c := wantStatus(t, m, "hook program", Warn, stale+" is version 0.0.1-old, this program test")
		if !strings.Contains(c.Fix, "go install") || !strings.Contains(c.Fix, "install claude-code --apply") {
			t.Errorf("fix %q", c.Fix)
		}
		// The same program reporting this version is OK.
		instWriteFile(t, stale, "#!/bin/sh\necho git-lossless version test\n", 0o755)
		wantStatus(t, checksByName(t, Run(context.Background(), opt)), "hook program", OK, stale)
	})
	t.Run("program not executable", func(t *testing.T) {
		f := newDoctorFixture(t)
		plain := filepath.Join(f.base, "plain", "git-lossless")
		instWriteFile(t, plain, "#!/bin/sh\n", 0o644)
		f.install(t, filepath.Join(f.repo, ".claude", "settings.json"), plain)
		m := checksByName(t, Run(context.Background(), f.opts()))
		c := wantStatus(t, m, "hook program", Fail, "not executable")
		if !strings.Contains(c.Fix, "--scope project") {
			t.Errorf("fix %q", c.Fix)
		}
	})
	t.Run("outdated", func(t *testing.T) {
		f := newDoctorFixture(t)
		instWriteFile(t, f.userSettings(), `{"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "`+f.bin+` hook pre-tool-use", "timeout": 5}]}]}}`, 0o600)
		m := checksByName(t, Run(context.Background(), f.opts()))
		c := wantStatus(t, m, "claude-code hooks (user settings)", Warn, "outdated PreToolUse")
		if !strings.Contains(c.Detail, "missing SessionStart") {
			t.Errorf("detail %q", c.Detail)
		}
		wantStatus(t, m, "claude-code hooks (project settings)", Warn, "not installed")
		wantStatus(t, m, "hook program", OK, f.bin)
	})
	t.Run("guard off in the environment", func(t *testing.T) {
		f := newDoctorFixture(t)
		f.env["LOSSLESS_GUARD"] = "off"
		m := checksByName(t, Run(context.Background(), f.opts()))
		c := wantStatus(t, m, "edit guard", Warn, "LOSSLESS_GUARD=off")
		if c.Fix != "unset LOSSLESS_GUARD" {
			t.Errorf("fix %q", c.Fix)
		}
	})
	t.Run("guard off in settings", func(t *testing.T) {
		f := newDoctorFixture(t)
		instWriteFile(t, f.userSettings(), `{"env": {"LOSSLESS_GUARD": "off"}}`, 0o600)
		m := checksByName(t, Run(context.Background(), f.opts()))
		wantStatus(t, m, "edit guard", Warn, f.userSettings())
	})
}

func TestDoctorPathProgram(t *testing.T) {
	f := newDoctorFixture(t)
	running := filepath.Join(f.base, "build", "git-lossless")
	instWriteFile(t, running, "#!/bin/sh\n", 0o755)
	opt := f.opts()
	opt.Executable = running

	opt.Version = "other"
	m := checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "git-lossless on PATH", Warn, "is version test; this program")

	opt.Version = "test"
	m = checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "git-lossless on PATH", OK, "the same as this program")

	f.env["PATH"] = filepath.Join(f.base, "nothing")
	m = checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "git-lossless on PATH", Warn, "not found")
	wantStatus(t, m, "git on PATH", Warn, "not found")
}

func TestDoctorOutsideRepositoryWritesNothing(t *testing.T) {
	f := newDoctorFixture(t)
	plain := filepath.Join(f.base, "plain")
	os.MkdirAll(plain, 0o755)
	opt := f.opts()
	opt.Dir = plain
	cs := Run(context.Background(), opt)
	m := checksByName(t, cs)
	wantStatus(t, m, "archive location", OK, "not created yet")
	if _, ok := m["seal chains"]; ok {
		t.Error("chains checked in an archive that does not exist")
	}
	emb, _ := gitstore.EmbeddedDir()
	if _, err := os.Stat(emb); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("doctor created the embedded archive %s", emb)
	}
	// Once it exists, it is checked like any archive.
	st, err := gitstore.OpenDir(plain, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), "cli", []gitstore.Record{{Event: gitstore.Event{Op: "read", Source: "cli", Path: "/x"}}}); err != nil {
		t.Fatal(err)
	}
	m = checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "archive location", OK, "embedded archive "+emb)
	wantStatus(t, m, "seal chains", OK, "1 writer")
}

// git runs git in the fixture's repository.
func (f *doctorFixture) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = f.repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// anchor anchors the repository's archive on its origin (a bare
// repository made on first use), as `git lossless anchor push` does, with
// the checkpoint made at now.
func (f *doctorFixture) anchor(t *testing.T, now time.Time) {
	t.Helper()
	remote := filepath.Join(f.base, "remote.git")
	if _, err := os.Stat(remote); errors.Is(err, fs.ErrNotExist) {
		f.git(t, "init", "-q", "--bare", remote)
		f.git(t, "remote", "add", "origin", remote)
	}
	st, err := gitstore.OpenDir(f.repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := anchor.KeyPath()
	if err != nil {
		t.Fatal(err)
	}
	key, err := anchor.LoadKey(p, "", true)
	if err != nil {
		t.Fatal(err)
	}
	made, err := anchor.MakeCheckpoint(context.Background(), st, key, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range anchor.Send(context.Background(), st, made, []anchor.Target{{Remote: "origin", Mode: anchor.ModeRef, Dir: f.repo}}) {
		if s.Err != nil {
			t.Fatalf("anchor on origin: %v", s.Err)
		}
	}
}

// append records one more read by writer.
func (f *doctorFixture) append(t *testing.T, writer, content string) {
	t.Helper()
	st, err := gitstore.OpenDir(f.repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), writer, []gitstore.Record{{Event: gitstore.Event{Op: "read", Source: "cli", Path: "b.txt"}, Content: []byte(content), HasContent: true}}); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorAnchors: which writers are anchored, and how old each
// remote's last anchor is, as the archive moves on after an anchor.
func TestDoctorAnchors(t *testing.T) {
	f := newDoctorFixture(t)
	now := time.Now()
	f.anchor(t, now)
	opt := f.opts()
	m := checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "anchored writers", OK, "1 writer anchored from this machine, each at its current head")
	remote := filepath.Join(f.base, "remote.git")
	wantStatus(t, m, "last anchor on origin", OK, "origin ("+remote+"): checkpoint 1, just now")
	wantStatus(t, m, "last anchor on origin", OK, "holds every writer's current head")

	// The writer moves on: still OK, its last anchor covered an earlier head.
	f.append(t, "w1", "more\n")
	m = checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "anchored writers", OK, "0 at their current head, 1 moved since their last anchor (w1")
	wantStatus(t, m, "last anchor on origin", OK, "1 writer moved since")

	// A week and more later, with the writer moved: the remote's anchor is stale.
	opt.Now = func() time.Time { return now.Add(10 * 24 * time.Hour) }
	m = checksByName(t, Run(context.Background(), opt))
	c := wantStatus(t, m, "last anchor on origin", Warn, "10 days ago")
	if !strings.Contains(c.Detail, "w1") || !strings.Contains(c.Fix, "git lossless anchor push origin") {
		t.Errorf("stale anchor: %+v", c)
	}

	// A writer that never was in any checkpoint: a warning naming it.
	f.append(t, "w2", "new\n")
	opt.Now = nil
	cs := Run(context.Background(), opt)
	m = checksByName(t, cs)
	c = wantStatus(t, m, "anchored writers", Warn, "1 of 2 writers never anchored from this machine: w2")
	if !strings.Contains(c.Fix, "git lossless anchor push") || !strings.Contains(c.Fix, "install git-hooks --apply") {
		t.Errorf("fix %q", c.Fix)
	}
	if _, _, fail := Count(cs); fail != 0 {
		t.Errorf("an unanchored writer is a warning, not a failure: %+v", cs)
	}

	// Anchored again, old but complete: nothing to warn about.
	f.anchor(t, now)
	opt.Now = func() time.Time { return now.Add(30*24*time.Hour + time.Hour) } // checkpoint 2 is a second after 1
	m = checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "anchored writers", OK, "2 writers anchored from this machine, each at its current head")
	wantStatus(t, m, "last anchor on origin", OK, "checkpoint 2, 30 days ago")

	// Another anchor key (the old one replaced): the records no longer
	// check, and the doctor says why instead of claiming coverage.
	t.Setenv("LOSSLESS_ANCHOR_KEY_FILE", filepath.Join(f.base, "other-key"))
	if _, err := anchor.LoadKey(filepath.Join(f.base, "other-key"), "", true); err != nil {
		t.Fatal(err)
	}
	opt.Now = nil
	m = checksByName(t, Run(context.Background(), opt))
	wantStatus(t, m, "anchored writers", Warn, "none checks with this machine's anchor key")
}

// TestDoctorAnchorOnPushHook: with lossless.anchorOnPush true, the doctor
// checks the pre-push hook in the directory git runs hooks from.
func TestDoctorAnchorOnPushHook(t *testing.T) {
	f := newDoctorFixture(t)
	hooksDir := filepath.Join(f.repo, ".git", "hooks")
	hook := filepath.Join(hooksDir, "pre-push")
	check := func() (Check, bool) {
		t.Helper()
		m := checksByName(t, Run(context.Background(), f.opts()))
		c, ok := m["anchor on push"]
		return c, ok
	}
	want := func(status, detail, fix string) {
		t.Helper()
		c, ok := check()
		if !ok {
			t.Fatal("no anchor on push check")
		}
		if c.Status != status || !strings.Contains(c.Detail, detail) || !strings.Contains(c.Fix, fix) {
			t.Errorf("anchor on push: %s %q (fix %q), want %s containing %q (fix %q)", c.Status, c.Detail, c.Fix, status, detail, fix)
		}
	}
	if c, ok := check(); ok {
		t.Errorf("checked with anchoring on push off and no hook: %+v", c)
	}

	f.git(t, "config", "lossless.anchorOnPush", "true")
	want(Warn, "no pre-push hook in "+hooksDir, "git lossless install git-hooks --apply")

	if _, err := anchor.InstallPrePush(hooksDir, f.bin); err != nil {
		t.Fatal(err)
	}
	want(OK, hook+" runs "+f.bin, "")

	os.Chmod(hook, 0o644)
	want(Warn, "not executable", "chmod +x "+hook)
	os.Chmod(hook, 0o755)

	gone := filepath.Join(f.base, "gone", "git-lossless")
	if _, err := anchor.InstallPrePush(hooksDir, gone); err != nil {
		t.Fatal(err)
	}
	want(Warn, "not an executable program", "install git-hooks")

	// A hook manager's hooks directory: ours in .git/hooks is not run.
	if _, err := anchor.InstallPrePush(hooksDir, f.bin); err != nil {
		t.Fatal(err)
	}
	f.git(t, "config", "core.hooksPath", ".husky")
	want(Warn, "no pre-push hook in "+filepath.Join(f.repo, ".husky")+" (core.hooksPath)", "install git-hooks")
	instWriteFile(t, filepath.Join(f.repo, ".husky", "pre-push"), "#!/bin/sh\nexit 0\n", 0o755)
	want(Warn, "is not git-lossless's", "install git-hooks")
	f.git(t, "config", "--unset", "core.hooksPath")

	f.git(t, "config", "lossless.anchorOnPush", "maybe")
	want(Warn, "lossless.anchorOnPush", "git config lossless.anchorOnPush true")

	f.git(t, "config", "lossless.anchorOnPush", "off")
	want(OK, "not true: pushes do not anchor", "")
}

// doctorMCPHelperEnv makes this test binary an MCP server (see init),
// built on the MCP SDK, the second implementation the doctor's own
// JSON-RPC client is held to: "serve" answers like git lossless mcp with
// two tools, "paged" the same one tool per tools/list page, "crash"
// writes to stderr and exits 1, "hang" never answers.
const doctorMCPHelperEnv = "LOSSLESS_HOOKS_TEST_MCP_SERVER"

func init() {
	switch os.Getenv(doctorMCPHelperEnv) {
	case "":
		return
	case "serve", "paged":
		var opts *mcpsdk.ServerOptions
		if os.Getenv(doctorMCPHelperEnv) == "paged" {
			opts = &mcpsdk.ServerOptions{PageSize: 1}
		}
		srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "git-lossless", Version: "helper"}, opts)
		for _, n := range []string{"alpha", "beta"} {
			srv.AddTool(&mcpsdk.Tool{Name: n, Description: n, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
					return &mcpsdk.CallToolResult{}, nil
				})
		}
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "crash":
		os.Stderr.WriteString("git-lossless: error: no archive here\n")
		os.Exit(1)
	case "hang":
		time.Sleep(time.Minute)
	}
	os.Exit(0)
}

// doctorMCPHelper is a program named git-lossless (so that the doctor
// takes it for ours) that runs this test binary.
func doctorMCPHelper(t *testing.T, base string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(base, "mcpbin", "git-lossless")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *doctorFixture) userMCPConfig() string {
	return filepath.Join(f.home, ".claude", ".claude.json")
}

// registerMCP registers bin as our server in path (install's merge) and
// sets the entry's env.
func (f *doctorFixture) registerMCP(t *testing.T, path, bin string, env map[string]string) {
	t.Helper()
	p, err := settings.PlanMCPInstall(path, claudecode.MCPServerEntry(bin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(env) == 0 {
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(instReadFile(t, path), &doc); err != nil {
		t.Fatal(err)
	}
	doc["mcpServers"].(map[string]any)[settings.MCPServerName].(map[string]any)["env"] = env
	b, _ := json.MarshalIndent(doc, "", "  ")
	instWriteFile(t, path, string(b), 0o600)
}

func TestDoctorMCPServer(t *testing.T) {
	f := newDoctorFixture(t)
	helper := doctorMCPHelper(t, f.base)
	check := func(t *testing.T, status, detail string) Check {
		t.Helper()
		opt := f.opts()
		opt.MCPTimeout = 3 * time.Second
		start := time.Now()
		m := checksByName(t, Run(context.Background(), opt))
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("doctor took %s", d)
		}
		c := wantStatus(t, m, "mcp server", status, detail)
		t.Logf("%s %s\n  fix: %s", c.Status, c.Detail, c.Fix)
		return c
	}
	user := f.userMCPConfig()

	t.Run("answers", func(t *testing.T) {
		f.registerMCP(t, user, helper, map[string]string{doctorMCPHelperEnv: "serve"})
		c := check(t, OK, "`"+helper+" mcp` (user scope, "+user+") started and answered tools/list: 2 tools (alpha, beta); server git-lossless helper")
		if c.Fix != "" {
			t.Errorf("fix on OK: %q", c.Fix)
		}
	})
	t.Run("answers in pages", func(t *testing.T) {
		f.registerMCP(t, user, helper, map[string]string{doctorMCPHelperEnv: "paged"})
		check(t, OK, "answered tools/list: 2 tools (alpha, beta); server git-lossless helper")
	})
	t.Run("crashes", func(t *testing.T) {
		f.registerMCP(t, user, helper, map[string]string{doctorMCPHelperEnv: "crash"})
		c := check(t, Fail, "no archive here")
		if !strings.Contains(c.Fix, "git lossless install claude-code --apply") {
			t.Errorf("fix %q", c.Fix)
		}
	})
	t.Run("hangs", func(t *testing.T) {
		f.registerMCP(t, user, helper, map[string]string{doctorMCPHelperEnv: "hang"})
		check(t, Fail, "no answer within 3s")
	})
	t.Run("missing program", func(t *testing.T) {
		os.Remove(user)
		gone := filepath.Join(f.base, "gone", "git-lossless")
		f.registerMCP(t, user, gone, nil)
		check(t, Fail, gone)
	})
	t.Run("someone else's server under our name", func(t *testing.T) {
		instWriteFile(t, user, `{"mcpServers": {"git-lossless": {"type": "stdio", "command": "/usr/bin/other-tool", "args": ["serve"], "env": {}}}}`, 0o600)
		c := check(t, Warn, `runs "/usr/bin/other-tool", not `)
		if !strings.Contains(c.Fix, "claude mcp remove git-lossless -s user") {
			t.Errorf("fix %q", c.Fix)
		}
	})
	t.Run("unreadable config", func(t *testing.T) {
		instWriteFile(t, user, `{"mcpServers": {`, 0o600)
		check(t, Fail, user)
	})
	t.Run("project scope needs approval", func(t *testing.T) {
		os.Remove(user)
		project := filepath.Join(f.repo, ".mcp.json")
		f.registerMCP(t, project, helper, map[string]string{doctorMCPHelperEnv: "serve"})
		check(t, Warn, "the project server is not approved yet")
		// The project's own settings approve nothing in a folder not
		// trusted (Claude Code 2.1.328's behaviour).
		instWriteFile(t, filepath.Join(f.repo, ".claude", "settings.local.json"), `{"enabledMcpjsonServers": ["git-lossless"]}`, 0o600)
		check(t, Warn, "the project server is not approved yet")
		// Approved in the user's settings: started from there, also from
		// a subdirectory (Claude Code reads the nearest .mcp.json walking
		// up).
		instWriteFile(t, f.userSettings(), `{"enabledMcpjsonServers": ["git-lossless"]}`, 0o600)
		check(t, OK, "(project scope, "+project+") started")
		sub := filepath.Join(f.repo, "pkg")
		os.MkdirAll(sub, 0o755)
		opt := f.opts()
		opt.Dir = sub
		wantStatus(t, checksByName(t, Run(context.Background(), opt)), "mcp server", OK, "2 tools")
		// A trusted folder (the interactive start asked): approved.
		os.Remove(f.userSettings())
		check(t, Warn, "not approved yet")
		instWriteFile(t, user, `{"projects": {"`+f.repo+`": {"hasTrustDialogAccepted": true}}}`, 0o600)
		check(t, OK, "(project scope, "+project+") started")
		// Rejected: the user registration is used instead.
		instWriteFile(t, filepath.Join(f.repo, ".claude", "settings.local.json"), `{"disabledMcpjsonServers": ["git-lossless"]}`, 0o600)
		f.registerMCP(t, user, helper, map[string]string{doctorMCPHelperEnv: "serve"})
		check(t, OK, "(user scope, ")
		os.Remove(project)
	})
}
