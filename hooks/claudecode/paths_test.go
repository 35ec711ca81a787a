package claudecode

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/settings"
)

func TestSettingsPath(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }
	if p, _ := SettingsPath(settings.ScopeUser, "/x", getenv); p != filepath.Join(home, ".claude", "settings.json") {
		t.Errorf("user default: %s", p)
	}
	env["CLAUDE_CONFIG_DIR"] = "/cfg/claude"
	if p, _ := SettingsPath(settings.ScopeUser, "/x", getenv); p != "/cfg/claude/settings.json" {
		t.Errorf("CLAUDE_CONFIG_DIR: %s", p)
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	repo := filepath.Join(home, "repo")
	for _, d := range []string{".git/objects", ".git/refs", "sub/dir"} {
		os.MkdirAll(filepath.Join(repo, d), 0o755)
	}
	os.WriteFile(filepath.Join(repo, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	top, _ := filepath.EvalSymlinks(repo)
	if p, _ := SettingsPath(settings.ScopeProject, filepath.Join(repo, "sub", "dir"), getenv); p != filepath.Join(top, ".claude", "settings.json") {
		t.Errorf("project in a repository: %s", p)
	}
	plain := filepath.Join(home, "plain")
	os.MkdirAll(plain, 0o755)
	if p, _ := SettingsPath(settings.ScopeProject, plain, getenv); p != filepath.Join(plain, ".claude", "settings.json") {
		t.Errorf("project outside a repository: %s", p)
	}
	if _, err := SettingsPath("global", plain, getenv); err == nil {
		t.Error("unknown scope accepted")
	}
}

func TestMCPConfigPath(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	top, _ := filepath.EvalSymlinks(repo)
	sub := filepath.Join(repo, "a", "b")
	os.MkdirAll(sub, 0o755)
	env := map[string]string{"HOME": "/home/u", "CLAUDE_CONFIG_DIR": "/cfg"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		scope settings.Scope
		dir   string
		unset bool
		want  string
	}{
		{settings.ScopeUser, sub, false, "/cfg/.claude.json"},
		{settings.ScopeUser, sub, true, "/home/u/.claude.json"},
		{settings.ScopeProject, sub, false, filepath.Join(top, ".mcp.json")},
		{settings.ScopeProject, base, false, filepath.Join(base, ".mcp.json")},
	} {
		if c.unset {
			delete(env, "CLAUDE_CONFIG_DIR")
		}
		got, err := MCPConfigPath(c.scope, c.dir, getenv)
		if err != nil || got != c.want {
			t.Errorf("%s in %s: %q %v, want %q", c.scope, c.dir, got, err, c.want)
		}
	}
	if got := MCPToolName("git-lossless", "restore_context"); got != "mcp__git-lossless__restore_context" {
		t.Errorf("tool name %q", got)
	}
	if got := MCPToolName("my server.v2", "x"); got != "mcp__my_server_v2__x" {
		t.Errorf("tool name %q", got)
	}
}
