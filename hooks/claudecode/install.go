package claudecode

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// HookSpecs lists the hooks install writes into Claude Code's
// settings.json, in the order new event keys are added. Timeouts are short
// because Claude Code waits for a hook before the tool runs, and a
// timed-out hook fails open: the per-tool hooks get 10 s, the transcript
// sweeps 30 s. PostToolUse takes Bash too: a Bash `cat` (or sed -n, head,
// tail, nl -ba) whose stdout is the file is a read (see hooks/shellread).
// The commands name no harness (`hook EVENT`): Claude Code is
// the hook command's default harness, so settings written by earlier
// versions stay current.
func HookSpecs() []settings.HookSpec {
	return []settings.HookSpec{
		{Event: "SessionStart", Matcher: "compact|resume", Arg: "session-start", Timeout: 10},
		{Event: "PreToolUse", Matcher: "Edit|Write|MultiEdit|NotebookEdit", Arg: "pre-tool-use", Timeout: 10},
		{Event: "PostToolUse", Matcher: "Read|Edit|Write|MultiEdit|NotebookEdit|Bash", Arg: "post-tool-use", Timeout: 10},
		{Event: "PreCompact", Arg: "pre-compact", Timeout: 30},
		{Event: "SubagentStop", Arg: "subagent-stop", Timeout: 30},
		{Event: "SessionEnd", Arg: "session-end", Timeout: 30},
	}
}

// Install implements hooks.Harness: the hooks in settings.json (user
// scope $CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json,
// project scope .claude/settings.json at the repository's top) and, unless
// opt.NoMCP, the MCP server's registration where `claude mcp add --scope
// user|project` writes it (see MCPConfigPath).
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
	planFn := func(path string) (*settings.Plan, error) {
		return settings.PlanInstall(path, opt.Bin.Hook, HookSpecs())
	}
	mcpPlanFn := func(path string) (*settings.Plan, error) {
		return settings.PlanMCPInstall(path, MCPServerEntry(opt.Bin.MCPCommand()))
	}
	unchanged, mcpUnchanged := "git-lossless hooks are already installed in %s; nothing to change", "the git-lossless MCP server is already registered in %s; nothing to change"
	if opt.Uninstall {
		planFn = func(path string) (*settings.Plan, error) { return settings.PlanUninstall(path, opt.Bin.Hook) }
		mcpPlanFn = func(path string) (*settings.Plan, error) { return settings.PlanMCPUninstall(path, opt.Bin.Path) }
		unchanged, mcpUnchanged = "no git-lossless hooks in %s; nothing to change", "no git-lossless MCP server in %s; nothing to change"
	}
	plan, err := planFn(path)
	if err != nil {
		return inst, refused(err, "nothing was written; fix the file (or move it aside) and run again")
	}
	inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "settings", Where: where, Plan: plan, Unchanged: fmt.Sprintf(unchanged, plan.Path)})
	if !opt.NoMCP {
		mpath, mwhere := opt.MCPFile, ""
		if mpath == "" {
			if mpath, err = MCPConfigPath(sc, opt.Dir, opt.Getenv); err != nil {
				return inst, err
			}
			mwhere = string(sc) + " MCP servers"
		}
		mplan, err := mcpPlanFn(mpath)
		if err != nil {
			return inst, refused(err, "nothing was written; fix the file (or move it aside) and run again, or pass --no-mcp to leave the MCP server out")
		}
		inst.Targets = append(inst.Targets, hooks.InstallTarget{Label: "mcp config", Where: mwhere, Plan: mplan,
			Unchanged: fmt.Sprintf(mcpUnchanged, mplan.Path), Removed: fmt.Sprintf("removed %s (it held only the git-lossless MCP server)", mplan.Path)})
	}
	if !opt.Uninstall {
		inst.Done = append(inst.Done, "the hooks apply to Claude Code sessions started from now on")
		if !opt.NoMCP {
			tools := MCPToolName(settings.MCPServerName, "")
			inst.Done = append(inst.Done, fmt.Sprintf("the MCP server %q (tools %s...) starts with Claude Code sessions started from now on; Claude Code asks before the first call of each tool unless the settings' \"permissions\": {\"allow\": [...]} lists %q",
				settings.MCPServerName, tools, strings.TrimSuffix(tools, "__")))
			if sc == settings.ScopeProject {
				inst.Done = append(inst.Done, "Claude Code uses a project's .mcp.json servers once approved: it asks on the next interactive start (`claude mcp list` shows it)")
			}
		}
	}
	return inst, nil
}

// refused gives a file the settings editor cannot change with certainty
// (a *settings.Error) the hint the user needs.
func refused(err error, hint string) error {
	if errors.As(err, new(*settings.Error)) {
		return &hooks.RefusedError{Err: err, Hint: hint}
	}
	return err
}
