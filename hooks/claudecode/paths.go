package claudecode

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// SettingsPath returns Claude Code's settings.json of scope. User scope is
// $CLAUDE_CONFIG_DIR/settings.json, or ~/.claude/settings.json when that is
// unset (Claude Code's own rule); project scope is .claude/settings.json at
// the top of the repository containing dir, or in dir outside any
// repository, since that is where Claude Code looks when started there.
func SettingsPath(scope settings.Scope, dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch scope {
	case settings.ScopeUser:
		if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(absFrom(dir, d), "settings.json"), nil
		}
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locate ~/.claude: %w (set HOME or CLAUDE_CONFIG_DIR)", err)
			}
			home = h
		}
		return filepath.Join(home, ".claude", "settings.json"), nil
	case settings.ScopeProject:
		top := dir
		if loc, err := gitstore.FindRepository(dir); err == nil && loc.WorkTree != "" {
			top = loc.WorkTree
		}
		top, err := filepath.Abs(top)
		if err != nil {
			return "", err
		}
		return filepath.Join(top, ".claude", "settings.json"), nil
	}
	return "", fmt.Errorf("unknown settings scope %q (use user or project)", scope)
}

func absFrom(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// MCPConfigPath returns the file `claude mcp add --scope SCOPE` writes:
// user scope $CLAUDE_CONFIG_DIR/.claude.json, or ~/.claude.json when that
// is unset (not ~/.claude/.claude.json: the file lives beside the
// directory); project scope .mcp.json at the top of the repository
// containing dir (dir itself outside any repository).
func MCPConfigPath(scope settings.Scope, dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch scope {
	case settings.ScopeUser:
		if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(absFrom(dir, d), ".claude.json"), nil
		}
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locate ~/.claude.json: %w (set HOME or CLAUDE_CONFIG_DIR)", err)
			}
			home = h
		}
		return filepath.Join(home, ".claude.json"), nil
	case settings.ScopeProject:
		top, err := projectTop(dir)
		if err != nil {
			return "", err
		}
		return filepath.Join(top, ".mcp.json"), nil
	}
	return "", fmt.Errorf("unknown MCP config scope %q (use user or project)", scope)
}

// projectTop is the directory Claude Code treats as the project when
// started in dir: the repository's work tree, else dir.
func projectTop(dir string) (string, error) {
	top := dir
	if loc, err := gitstore.FindRepository(dir); err == nil && loc.WorkTree != "" {
		top = loc.WorkTree
	}
	return filepath.Abs(top)
}
