package settings

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Scope names which Claude Code settings file an install targets.
type Scope string

const (
	// ScopeUser is the user's own settings: every project on the machine.
	ScopeUser Scope = "user"
	// ScopeProject is the project's shared .claude/settings.json.
	ScopeProject Scope = "project"
)

// Path returns the settings.json of scope. User scope is
// $CLAUDE_CONFIG_DIR/settings.json, or ~/.claude/settings.json when that is
// unset (Claude Code's own rule); project scope is .claude/settings.json at
// the top of the repository containing dir, or in dir outside any
// repository, since that is where Claude Code looks when started there.
func Path(scope Scope, dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch scope {
	case ScopeUser:
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
	case ScopeProject:
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

// ProjectsDir returns the directory where Claude Code keeps its
// transcripts, one subdirectory per project:
// $CLAUDE_CONFIG_DIR/projects, or ~/.claude/projects when that is unset
// (the same rule as the user settings: see Path). dir resolves a relative
// CLAUDE_CONFIG_DIR.
func ProjectsDir(dir string, getenv func(string) string) (string, error) {
	p, err := Path(ScopeUser, dir, getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "projects"), nil
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
func MCPConfigPath(scope Scope, dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch scope {
	case ScopeUser:
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
	case ScopeProject:
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
