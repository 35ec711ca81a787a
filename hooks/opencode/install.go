package opencode

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

//go:embed plugin.js
var pluginJS string

// pluginMark is in the first lines of every plugin file install writes:
// only such a file is replaced or removed.
const pluginMark = "git-lossless's opencode plugin"

// PluginFile is the name of the plugin in a plugin directory.
const PluginFile = "git-lossless.js"

// PluginSource is the plugin that runs hookBin (`<hookBin> hook opencode
// EVENT`): plugin.js with the program's absolute path written in.
func PluginSource(hookBin string) []byte {
	cfg, _ := json.Marshal(map[string]any{"bin": hookBin, "args": []string{"hook", Name}})
	return []byte(strings.Replace(pluginJS, "__GIT_LOSSLESS_HOOK__", string(cfg), 1))
}

// ConfigDir is opencode's config directory of a scope: the user's
// ($XDG_CONFIG_HOME/opencode, ~/.config/opencode), or the project's
// (.opencode at the top of dir's work tree), where opencode 1.18 loads
// plugin/*.js from without a config entry.
func ConfigDir(scope settings.Scope, dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch scope {
	case settings.ScopeUser:
		if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
			return filepath.Join(x, "opencode"), nil
		}
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locate ~/.config/opencode: %w (set HOME or XDG_CONFIG_HOME)", err)
			}
			home = h
		}
		return filepath.Join(home, ".config", "opencode"), nil
	case settings.ScopeProject:
		return filepath.Join(projectTop(dir), ".opencode"), nil
	}
	return "", fmt.Errorf("unknown scope %q (use user or project)", scope)
}

// projectTop is the top of dir's work tree (dir itself outside one).
func projectTop(dir string) string {
	top := dir
	if loc, err := gitstore.FindRepository(dir); err == nil && loc.WorkTree != "" {
		top = loc.WorkTree
	}
	if abs, err := filepath.Abs(top); err == nil {
		top = abs
	}
	return top
}

// ConfigFile is where the MCP server is registered: opencode.json in the
// user's config dir, or at the project's top.
func ConfigFile(scope settings.Scope, dir string, getenv func(string) string) (string, error) {
	if scope == settings.ScopeProject {
		return filepath.Join(projectTop(dir), "opencode.json"), nil
	}
	d, err := ConfigDir(scope, dir, getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "opencode.json"), nil
}

// MCPEntry is our server in opencode.json's "mcp" object: a local
// (stdio) server, the command as an array.
func MCPEntry(bin string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "local", "command": []string{bin, "mcp", "--harness", Name}, "enabled": true})
	return b
}

// isOurMCPEntry recognises an "mcp" entry of ours: a command array that
// runs git-lossless or git-lossless-mcp (any path) or bin with first
// argument mcp, or `git lossless mcp` (settings.IsOurMCPCommand).
func isOurMCPEntry(bin string) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var e struct {
			Command []string `json:"command"`
		}
		return json.Unmarshal(raw, &e) == nil && settings.IsOurMCPCommand(e.Command, bin)
	}
}

// planPlugin computes the plugin file's change: written (install) or
// removed (uninstall). A file at that path that install did not write is
// refused.
func planPlugin(path string, content []byte) (*settings.Plan, error) {
	p := &settings.Plan{Path: path}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		p.Exists, p.Before = true, b
		if !bytes.Contains(b[:min(len(b), 512)], []byte(pluginMark)) {
			return nil, &settings.Error{Path: path, Msg: "this file was not written by git-lossless; move it aside"}
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if content == nil {
		p.After = nil
		p.RemoveFile = p.Exists
		if p.Exists {
			p.Changes = []settings.Change{{Event: "plugin", Command: path, Action: "removed"}}
		}
		return p, nil
	}
	p.After = content
	action := "added"
	switch {
	case p.Exists && bytes.Equal(b, content):
		action = "unchanged"
	case p.Exists:
		action = "replaced"
	}
	p.Changes = []settings.Change{{Event: "plugin", Command: path, Action: action}}
	return p, nil
}

// Install implements hooks.Harness: the plugin in the scope's plugin
// directory and, unless opt.NoMCP, our MCP server in the scope's
// opencode.json ("mcp" key).
func (Harness) Install(ctx context.Context, opt hooks.InstallOptions) (hooks.Install, error) {
	sc := settings.Scope(opt.Scope)
	if sc == "" {
		sc = settings.ScopeUser
	}
	if sc != settings.ScopeUser && sc != settings.ScopeProject {
		return hooks.Install{}, fmt.Errorf("--scope %q: use user or project", opt.Scope)
	}
	var inst hooks.Install
	path, where := opt.HooksFile, ""
	if path == "" {
		d, err := ConfigDir(sc, opt.Dir, opt.Getenv)
		if err != nil {
			return inst, err
		}
		path, where = filepath.Join(d, "plugin", PluginFile), string(sc)+" plugin"
	}
	var content []byte
	if !opt.Uninstall {
		content = PluginSource(opt.Bin.Hook)
	}
	plan, err := planPlugin(path, content)
	if err != nil {
		return inst, refused(err, "nothing was written; move that file aside and run again")
	}
	unchanged := "the git-lossless plugin is already installed at %s; nothing to change"
	if opt.Uninstall {
		unchanged = "no git-lossless plugin at %s; nothing to change"
	}
	inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "plugin", Where: where, Plan: plan,
		Unchanged: fmt.Sprintf(unchanged, plan.Path), Removed: fmt.Sprintf("removed %s", plan.Path)})
	if !opt.NoMCP {
		mpath, mwhere := opt.MCPFile, ""
		if mpath == "" {
			if mpath, err = ConfigFile(sc, opt.Dir, opt.Getenv); err != nil {
				return inst, err
			}
			mwhere = string(sc) + " opencode config"
		}
		var mplan *settings.Plan
		if opt.Uninstall {
			mplan, err = settings.PlanMCPEntryUninstall(mpath, "mcp", isOurMCPEntry(opt.Bin.Path))
		} else {
			mplan, err = settings.PlanMCPEntryInstall(mpath, "mcp", opt.Bin.MCPCommand(), MCPEntry(opt.Bin.MCPCommand()), isOurMCPEntry(opt.Bin.Path))
		}
		if err != nil {
			return inst, refused(err, "nothing was written; fix the file (or move it aside) and run again, or pass --no-mcp to leave the MCP server out")
		}
		mu := "the git-lossless MCP server is already registered in %s; nothing to change"
		if opt.Uninstall {
			mu = "no git-lossless MCP server in %s; nothing to change"
		}
		inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "mcp config", Where: mwhere, Plan: mplan,
			Unchanged: fmt.Sprintf(mu, mplan.Path), Removed: fmt.Sprintf("removed %s (it held only the git-lossless MCP server)", mplan.Path)})
	}
	if !opt.Uninstall {
		inst.Done = append(inst.Done, "the plugin loads in opencode sessions started from now on")
		if !opt.NoMCP {
			inst.Done = append(inst.Done, fmt.Sprintf("the MCP server %q starts with opencode sessions started from now on (tools %s...)", settings.MCPServerName, MCPToolName("")))
		}
	}
	return inst, nil
}

// refused gives a file that cannot be changed with certainty the hint the
// user needs.
func refused(err error, hint string) error {
	if errors.As(err, new(*settings.Error)) {
		return &hooks.RefusedError{Err: err, Hint: hint}
	}
	return err
}

// MCPToolName is the name opencode gives a tool of our server: the
// server's and the tool's names joined by "_".
func MCPToolName(tool string) string { return settings.MCPServerName + "_" + tool }

// MCPTools implements hooks.Harness: our tools' names when the project's
// or the user's opencode.json registers our server (enabled).
func (Harness) MCPTools(dir string, getenv func(string) string) (func(string) string, error) {
	for _, sc := range []settings.Scope{settings.ScopeProject, settings.ScopeUser} {
		p, err := ConfigFile(sc, dir, getenv)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var cfg struct {
			MCP map[string]json.RawMessage `json:"mcp"`
		}
		if json.Unmarshal(b, &cfg) != nil {
			continue
		}
		e, ok := cfg.MCP[settings.MCPServerName]
		var en struct {
			Enabled *bool `json:"enabled"`
		}
		_ = json.Unmarshal(e, &en)
		if ok && isOurMCPEntry("")(e) && (en.Enabled == nil || *en.Enabled) {
			return MCPToolName, nil
		}
	}
	return nil, nil
}
