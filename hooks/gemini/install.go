package gemini

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// HookSpecs lists the hooks install writes into Gemini CLI's
// settings.json, timeouts in milliseconds (the CLI's unit). BeforeTool
// is the guard, for the two tools that change files; AfterTool records
// every tool's result (file tools' evidence; every call sweeps the chat
// and may hand the working set back after a compression, which no hook
// marks); BeforeAgent sweeps the session at each prompt and hands the
// working set back after a compression not handed back yet; SessionEnd
// sweeps. Not installed: PreCompress (it fires before every model turn,
// compression or not: no signal), SessionStart (a resumed session drops
// what it adds), the model events (the whole history on every call).
func HookSpecs() []settings.HookSpec {
	return []settings.HookSpec{
		{Event: BeforeTool, Matcher: "write_file|replace", Arg: Name + " " + string(hooks.PreToolUse), Timeout: 10000, Name: "git-lossless-guard"},
		{Event: AfterTool, Matcher: "*", Arg: Name + " " + string(hooks.PostToolUse), Timeout: 10000, Name: "git-lossless-record"},
		{Event: BeforeAgent, Arg: Name + " " + string(hooks.BeforeAgent), Timeout: 30000, Name: "git-lossless-prompt"},
		{Event: SessionEnd, Arg: Name + " " + string(hooks.SessionEnd), Timeout: 30000, Name: "git-lossless-sweep"},
	}
}

// SettingsPath is Gemini CLI's settings.json of scope: user
// $GEMINI_CLI_HOME/.gemini/settings.json or ~/.gemini/settings.json;
// project .gemini/settings.json at the top of the repository containing
// dir (dir itself outside one). The CLI reads the project file of the
// directory it starts in, and only once that folder is trusted.
func SettingsPath(scope settings.Scope, dir string, getenv func(string) string) (string, error) {
	getenv = getenvOr(getenv)
	switch scope {
	case settings.ScopeUser:
		home := getenv("GEMINI_CLI_HOME")
		if home == "" {
			home = getenv("HOME")
		}
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locate ~/.gemini: %w (set HOME or GEMINI_CLI_HOME)", err)
			}
			home = h
		}
		return filepath.Join(home, ".gemini", "settings.json"), nil
	case settings.ScopeProject:
		top := dir
		if loc, err := gitstore.FindRepository(dir); err == nil && loc.WorkTree != "" {
			top = loc.WorkTree
		}
		top, err := filepath.Abs(top)
		if err != nil {
			return "", err
		}
		return filepath.Join(top, ".gemini", "settings.json"), nil
	}
	return "", fmt.Errorf("unknown settings scope %q (use user or project)", scope)
}

// MCPServerEntry is the mcpServers entry install writes: bin with the
// arguments mcp --harness gemini (the server then serves Gemini CLI's
// sessions), the shape Gemini CLI reads (no "type").
func MCPServerEntry(bin string) settings.MCPServer {
	return settings.MCPServer{Command: bin, Args: []string{"mcp", "--harness", Name}, Env: map[string]string{}}
}

// Install implements hooks.Harness: the hooks and (unless opt.NoMCP) the
// MCP server in one settings.json, one plan (two plans of one file would
// each overwrite the other). opt.HooksFile names another file for both;
// opt.MCPFile, when set, takes the MCP server apart.
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
		var err error
		if path, err = SettingsPath(sc, opt.Dir, opt.Getenv); err != nil {
			return inst, err
		}
		where = string(sc) + " settings"
	}
	var plan *settings.Plan
	var err error
	if opt.Uninstall {
		plan, err = settings.PlanUninstall(path, opt.Bin.Hook)
	} else {
		plan, err = settings.PlanInstall(path, opt.Bin.Hook, HookSpecs())
	}
	if err != nil {
		return inst, refused(err)
	}
	mcpHere := !opt.NoMCP && opt.MCPFile == ""
	if mcpHere {
		if err := addMCP(plan, opt); err != nil {
			return inst, refused(err)
		}
	}
	unchanged := "git-lossless hooks are already installed in %s; nothing to change"
	if opt.Uninstall {
		unchanged = "no git-lossless hooks in %s; nothing to change"
	}
	inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "settings", Where: where, Plan: plan, Unchanged: fmt.Sprintf(unchanged, plan.Path)})
	if !opt.NoMCP && opt.MCPFile != "" {
		var mplan *settings.Plan
		if opt.Uninstall {
			mplan, err = settings.PlanMCPUninstall(opt.MCPFile, opt.Bin.Path)
		} else {
			mplan, err = settings.PlanMCPInstall(opt.MCPFile, MCPServerEntry(opt.Bin.MCPCommand()))
		}
		if err != nil {
			return inst, refused(err)
		}
		inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "mcp config", Plan: mplan,
			Unchanged: fmt.Sprintf("nothing to change in %s", mplan.Path), Removed: fmt.Sprintf("removed %s (it held only the git-lossless MCP server)", mplan.Path)})
	}
	if !opt.Uninstall {
		inst.Done = append(inst.Done, "the hooks apply to Gemini CLI sessions started from now on (`gemini` reads settings.json at start; `/hooks` lists them)")
		if !opt.NoMCP {
			inst.Done = append(inst.Done, fmt.Sprintf("the MCP server %q (tools %s...) starts with Gemini CLI sessions started from now on", settings.MCPServerName, MCPToolName(settings.MCPServerName, "")))
		}
		if sc == settings.ScopeProject {
			inst.Done = append(inst.Done, "Gemini CLI reads a project's .gemini/settings.json only in a trusted folder, and only when started at the repository's top: trust it when the CLI asks (or `/permissions` in the CLI), or install with --scope user")
		}
	}
	return inst, nil
}

// addMCP splices the MCP server's registration into the plan's new
// settings (or takes it out, at uninstall).
func addMCP(plan *settings.Plan, opt hooks.InstallOptions) error {
	doc := plan.After
	if doc == nil && !plan.RemoveFile {
		doc = plan.Before
	}
	var after []byte
	var changes []settings.Change
	var err error
	if opt.Uninstall {
		after, changes, err = settings.RemoveMCPServer(plan.Path, doc, opt.Bin.Path)
	} else {
		after, changes, err = settings.MergeMCPServer(plan.Path, doc, MCPServerEntry(opt.Bin.MCPCommand()))
	}
	if err != nil {
		return err
	}
	plan.After = after
	plan.Changes = append(plan.Changes, changes...)
	if !plan.Exists && len(plan.After) == 0 {
		plan.After = nil
	}
	return nil
}

// refused gives a file the settings editor cannot change with certainty
// (a *settings.Error) the hint the user needs.
func refused(err error) error {
	if errors.As(err, new(*settings.Error)) {
		return &hooks.RefusedError{Err: err, Hint: "nothing was written; fix the file (Gemini CLI also accepts comments in settings.json, which we do not edit: take them out or move the file aside) and run again"}
	}
	return err
}
