package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/doctor"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// The setup commands: an agent harness's settings (here: each harness's
// adapter says which files, hooks/harnesses which harnesses) and the
// repository's git hooks (githooks.go). install and uninstall share one
// shape: compute the change, show it, and write only with --apply (backup
// first, or the user's own hook kept), so that a user sees exactly what
// changes in files other tools and people also edit.

func installCmd() *command {
	return &command{
		Name:    "install",
		Summary: "add git-lossless's hooks to an agent harness's settings, or the git hooks (anchoring pre-push, receipt-carrying post-rewrite and post-commit; a dry run without --apply), or the man page",
		Usage:   "HARNESS [--scope user|project] [--apply] [--settings FILE] [--mcp-config FILE] [--no-mcp] [--command PATH] | git-hooks [--apply] [--command PATH] | man [--dir DIR]",
		Long: `HARNESS is an agent harness git-lossless knows: ` + harnessList() + `. Each
writes its own hooks and MCP registration where the harness reads them;
--settings names another hooks file, --mcp-config another MCP config.

claude-code merges the hooks into Claude Code's settings.json and prints
the diff. Without --apply nothing is written. With --apply the current
file is first copied to settings.json.bak-YYYYMMDD-HHMMSS beside it, then
the new file replaces it atomically (mode 0600).

Hooks: SessionStart (compact|resume) runs ` + "`git-lossless hook session-start`" + `,
PreToolUse (Edit|Write|MultiEdit|NotebookEdit) the edit guard, PostToolUse
(Read|Edit|Write|MultiEdit|NotebookEdit|Bash: a Bash cat of a file is a
read) the recorder, PreCompact,
SubagentStop and SessionEnd the transcript sweeps; 10 s timeouts for the
per-tool hooks, 30 s for the sweeps.

Hooks of other tools, other keys and the file's layout are kept; entries
of ours from an earlier install (another path, matcher or timeout) are
replaced, never duplicated; running install twice changes nothing the
second time. A settings file that is not valid JSON, or whose "hooks" is
not shaped as Claude Code documents, is refused and left untouched.

It also registers git-lossless's MCP server (` + "`git lossless mcp`" + `: search,
read_span, restore_context, read_file... shown to the model as
mcp__git-lossless__<tool>) the way ` + "`claude mcp add --scope user|project`" + `
stores it: "mcpServers": {"git-lossless": {"type": "stdio", "command":
PROGRAM, "args": ["mcp"], "env": {}}}, PROGRAM being git-lossless-mcp
beside git-lossless (the server's own program), else git-lossless, whose
mcp command runs git-lossless-mcp from PATH; spliced into the file with every
other key kept, in the same diff, backup and atomic replace. --no-mcp
leaves the registration alone. A server of someone else's registered as
"git-lossless" is refused, not replaced.

The hooks and the server run the git-lossless found on PATH when that is
this program, else this program's absolute path; --command names another.
--scope user is $CLAUDE_CONFIG_DIR/settings.json (default
~/.claude/settings.json) and, for the server, $CLAUDE_CONFIG_DIR/.claude.json
(default ~/.claude.json); --scope project is .claude/settings.json and
.mcp.json at the top of the repository (or here, outside one). Claude Code
starts a project's .mcp.json servers once approved: it asks on the next
interactive start. --settings and --mcp-config name other files.

` + gitHooksLong + `

man writes the git-lossless(1) man page, made from this help, to
DIR/man1/git-lossless.1 (DIR default $XDG_DATA_HOME/man, else
~/.local/share/man; mode 0600, read by man running as you), so that
` + "`git lossless --help`" + ` (git runs ` + "`man git-lossless`" + `) opens it; it says
whether man finds DIR (` + "`manpath`" + `) and how to add it when not.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return harnessSettingsFlags(fs, "install")
		},
	}
}

func uninstallCmd() *command {
	return &command{
		Name:    "uninstall",
		Summary: "remove git-lossless's hooks from an agent harness's settings, or its git hooks (a dry run without --apply)",
		Usage:   "HARNESS [--scope user|project] [--apply] [--settings FILE] [--mcp-config FILE] [--no-mcp] | git-hooks [--apply]",
		Long: `HARNESS (` + harnessList() + `) undoes its install. claude-code removes every hook of ours (any path, any version) from Claude
Code's settings.json, and the matcher groups, event keys and "hooks" key
that held only ours; everything else stays as it is. It also removes our
MCP server's registration ("mcpServers"."git-lossless" when it runs
git-lossless-mcp mcp or git-lossless mcp; a server of someone else's under that name stays) from
the scope's .claude.json or .mcp.json, with "mcpServers" when it held
nothing else, and the file when it is left empty. Prints the diffs; writes
only with --apply, after a backup (FILE.bak-YYYYMMDD-HHMMSS).

git-hooks removes git-lossless's pre-push, post-rewrite and post-commit
hooks from the repository's hooks directory (core.hooksPath honoured) and
moves the hooks it kept (NAME.before-lossless) back in their place. A pre-push hook that is not
ours is left alone. Prints what changes; changes it only with --apply.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			return harnessSettingsFlags(fs, "uninstall")
		},
	}
}

// harnessSettingsFlags is the shared body of install and uninstall.
func harnessSettingsFlags(fs *pflag.FlagSet, verb string) func(context.Context, *env, []string) error {
	scope := fs.String("scope", "user", "which settings: user (every project) or project (this repository)")
	apply := fs.Bool("apply", false, "write the change (after a backup); without it nothing is written")
	settingsFile := fs.String("settings", "", "the harness's hooks file to change instead of the scope's (Claude Code: settings.json)")
	mcpConfig := fs.String("mcp-config", "", "MCP config file to change instead of the scope's (Claude Code: .claude.json or .mcp.json)")
	noMCP := fs.Bool("no-mcp", false, "leave the MCP server registration alone")
	var command, manDir *string
	if verb == "install" {
		command = fs.String("command", "", "program the hooks run (default: this git-lossless)")
		manDir = fs.String("dir", "", "man: the man directory to write man1/git-lossless.1 under (default $XDG_DATA_HOME/man)")
	} else {
		command = fs.String("command", "", "also treat `PATH hook ...` commands as ours")
		fs.MarkHidden("command")
	}
	targets := harnessList() + " or git-hooks"
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return cli.Usagef("%s needs one target: %s (`git lossless %s claude-code`)", verb, targets, verb)
		}
		if args[0] != "man" && fs.Changed("dir") {
			return cli.Usagef("--dir is for man: a harness and git-hooks take --settings or the repository's hooks directory")
		}
		switch args[0] {
		case "man":
			if verb != "install" {
				return cli.Usagef("uninstall: unknown target %q; the targets are %s and git-hooks (the man page is one file: rm it)", args[0], harnessList())
			}
			if fs.Changed("scope") || fs.Changed("settings") || fs.Changed("mcp-config") || fs.Changed("no-mcp") || fs.Changed("apply") || fs.Changed("command") {
				return cli.Usagef("install man takes only --dir")
			}
			return runInstallMan(ctx, e, *manDir)
		case "git-hooks":
			if fs.Changed("scope") || fs.Changed("settings") || fs.Changed("mcp-config") || fs.Changed("no-mcp") {
				return cli.Usagef("--scope, --settings, --mcp-config and --no-mcp are for a harness; git-hooks go into the repository's hooks directory")
			}
			return runGitHooks(ctx, e, verb, *apply, *command)
		}
		h, ok := harnesses.ByName(args[0])
		if !ok {
			if verb == "install" {
				return cli.Usagef("install: unknown target %q; the targets are %s, git-hooks and man", args[0], harnessList())
			}
			return cli.Usagef("%s: unknown target %q; the targets are %s and git-hooks", verb, args[0], harnessList())
		}
		sc := settings.Scope(*scope)
		if sc != settings.ScopeUser && sc != settings.ScopeProject {
			return cli.Usagef("--scope %q: use user or project", *scope)
		}
		getenv := e.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		abs := func(p string) string {
			if p != "" && !filepath.IsAbs(p) {
				return filepath.Join(e.Dir, p)
			}
			return p
		}

		var bin settings.HookBinary
		if verb == "install" || *command != "" {
			var err error
			bin, err = settings.ResolveBinary(ctx, settings.BinaryOptions{Override: *command, Dir: e.Dir, Getenv: getenv, Version: version})
			if err != nil {
				return err
			}
			if bin.Warning != "" {
				fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", bin.Warning)
			}
			if bin.MCPWarning != "" && verb == "install" && !*noMCP {
				fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", bin.MCPWarning)
			}
		}
		inst, err := h.Install(ctx, hooks.InstallOptions{Uninstall: verb == "uninstall", Scope: *scope, Dir: e.Dir, Getenv: getenv, Bin: bin,
			HooksFile: abs(*settingsFile), MCPFile: abs(*mcpConfig), NoMCP: *noMCP})
		if err != nil {
			var re *hooks.RefusedError
			if errors.As(err, &re) {
				return cli.WithHint(re.Err, re.Hint)
			}
			return err
		}
		for _, t := range inst.Targets {
			where := t.Plan.Path
			if t.Where != "" {
				where += " (" + t.Where + ")"
			}
			fmt.Fprintf(e.Stdout, "%s: %s\n", t.Label, where)
		}
		if verb == "install" {
			fmt.Fprintf(e.Stdout, "hook program: %s\n", bin.Hook)
			if !*noMCP {
				fmt.Fprintf(e.Stdout, "mcp program: %s\n", bin.MCPCommand())
			}
		}
		var changed []hooks.InstallTarget
		for _, t := range inst.Targets {
			if !t.Plan.Changed() {
				fmt.Fprintln(e.Stdout, t.Unchanged)
				continue
			}
			io.WriteString(e.Stdout, t.Plan.Diff())
			printSettingsChanges(e.Stdout, t.Plan.Changes)
			changed = append(changed, t)
		}
		if len(changed) == 0 {
			return nil
		}
		if !*apply {
			names := make([]string, len(changed))
			for i, t := range changed {
				names[i] = t.Plan.Path
			}
			fmt.Fprintf(e.Stdout, "dry run: nothing was written; run again with --apply to write %s (a backup is made first)\n", strings.Join(names, " and "))
			return nil
		}
		for _, t := range changed {
			backup, err := t.Plan.Apply(time.Now())
			if backup != "" {
				fmt.Fprintf(e.Stdout, "backup: %s\n", backup)
			}
			if err != nil {
				return err
			}
			if t.Plan.RemoveFile {
				fmt.Fprintln(e.Stdout, t.Removed)
			} else {
				fmt.Fprintf(e.Stdout, "wrote %s\n", t.Plan.Path)
			}
		}
		for _, l := range inst.Done {
			fmt.Fprintln(e.Stdout, l)
		}
		return nil
	}
}

func printSettingsChanges(w io.Writer, cs []settings.Change) {
	for _, c := range cs {
		if c.Action == "removed" && c.Command == "" {
			fmt.Fprintf(w, "  %-9s %s: hooks of git-lossless\n", c.Action, c.Event)
			continue
		}
		m := ""
		if c.Matcher != "" {
			m = " (" + c.Matcher + ")"
		}
		fmt.Fprintf(w, "  %-9s %s%s: %s\n", c.Action, c.Event, m, c.Command)
	}
}

func doctorCmd() *command {
	return &command{
		Name:    "doctor",
		Summary: "check the installation: PATH, archive, seal chains, locks, anchors, Claude Code hooks, MCP server",
		Usage:   "[--json]",
		Long: `One line per check: OK, WARN (works, but less than it should) or FAIL
(broken: records lost or untrustworthy), with a fix line under every
problem, then the counts. Checks: git-lossless and git on PATH; where the
archive for this directory is and whether it reads; every writer's seal
chain (chains only, as verify --no-content); stale ref locks; anchors (in
a repository); the hooks in Claude Code's user and project settings; that
the program the hooks run exists; the MCP server: the registration Claude
Code would start here (local, approved project .mcp.json, then user
.claude.json) is started with a 10 s deadline and asked for its tools over
MCP (initialize, tools/list), OK with the number of tools or FAIL with why
(not registered is a warning: install claude-code registers it);
LOSSLESS_GUARD. Changes nothing. Exit 1 when a check fails.

Anchors are opt-in (git lossless anchor --help), so their problems are
warnings, never failures: an archive never anchored is as intact as
before, only a rewrite of its history here would go unnoticed elsewhere.
"anchored writers" warns about writers no checkpoint anchored from this
machine holds (a writer whose head moved since its last anchor is fine:
the next anchor push covers it). "last anchor on REMOTE" gives the age of
the last anchor on each remote this machine anchored to, and warns when
it is more than 7 days old and writers have moved since. "anchor on push"
appears when git config lossless.anchorOnPush is true (or our pre-push
hook is installed), and warns when the pre-push hook is missing from the
hooks directory git uses (core.hooksPath honoured), replaced, not
executable, or runs a program that is gone, and when the setting is not a
boolean git reads. A check that cannot run (unreadable anchor records) is
a FAIL, as everywhere.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print the checks as a JSON array of {check,status,detail,fix}")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("doctor takes no arguments")
				}
				getenv := e.Getenv
				if getenv == nil {
					getenv = os.Getenv
				}
				checks := doctor.Run(ctx, doctor.Options{Dir: e.Dir, Getenv: getenv, Version: version, Harnesses: harnesses.All()})
				if err := ctx.Err(); err != nil {
					return err
				}
				_, _, nfail := doctor.Count(checks)
				if *asJSON {
					b, err := json.MarshalIndent(checks, "", "  ")
					if err != nil {
						return err
					}
					e.Stdout.Write(append(b, '\n'))
				} else {
					printDoctor(e.Stdout, checks)
				}
				if nfail > 0 {
					return cli.FailedError{Msg: fmt.Sprintf("%d of %d checks failed", nfail, len(checks))}
				}
				return nil
			}
		},
	}
}

func printDoctor(w io.Writer, checks []doctor.Check) {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "%-4s  %s: %s\n", c.Status, c.Check, c.Detail)
		if c.Status != doctor.OK && c.Fix != "" {
			fmt.Fprintf(&b, "  fix: %s\n", c.Fix)
		}
	}
	ok, warn, fail := doctor.Count(checks)
	fmt.Fprintf(&b, "%d ok, %d warn, %d fail\n", ok, warn, fail)
	io.WriteString(w, b.String())
}
