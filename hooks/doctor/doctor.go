// Package doctor is `git lossless doctor`: a read-only health check of
// everything between Claude Code and the archive, each problem paired
// with the command that fixes it. It writes nothing: not the settings,
// not the locks, not the archive (the registered MCP server it starts is
// only asked for its tools; an embedded archive that does not exist yet
// is reported, not created; the one exception is gitstore.Discover
// creating it when a repository is found but unusable, which any command
// run there does too).
//
// It is a package of its own, not part of hooks, because it starts
// programs and reads every harness's configuration, which the hook
// program has no use for. It asks the MCP server for its tools with a
// JSON-RPC exchange of its own over stdio (mcp.go), not the MCP SDK:
// git-lossless, which runs the doctor, links no SDK (the server is
// cmd/git-lossless-mcp). It may import hooks, hooks/settings, the
// adapters, anchor, gitstore and seal; only cmd/git-lossless imports it.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// Doctor statuses, in increasing severity. FAIL means something is broken
// now (records are lost or cannot be trusted); WARN means it works but
// less than it should.
const (
	OK   = "OK"
	Warn = "WARN"
	Fail = "FAIL"
)

// Check is one line of the doctor's report.
type Check struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Fix is a command or action that resolves a WARN or FAIL ("" for OK).
	Fix string `json:"fix"`
}

// Options are the doctor's inputs. Zero values use the process's
// own, so the CLI passes its environment and tests pass theirs.
type Options struct {
	// Dir is the directory whose archive is checked (the CLI's -C).
	Dir string
	// Getenv supplies PATH, HOME, CLAUDE_CONFIG_DIR and LOSSLESS_GUARD.
	Getenv func(string) string
	// Executable is the running program (default os.Executable).
	Executable string
	// Version is the running program's version.
	Version string
	// VersionOf returns the version another git-lossless reports
	// (default: runs `PATH --version` with a 5 s timeout).
	VersionOf func(ctx context.Context, path string) (string, error)
	// UserSettings and ProjectSettings override claudecode.SettingsPath.
	UserSettings, ProjectSettings string
	// Now is the time anchor ages are measured to (default time.Now).
	Now func() time.Time
	// UserMCPConfig overrides the user's .claude.json (claudecode.MCPConfigPath).
	UserMCPConfig string
	// MCPTimeout bounds starting the registered MCP server and listing
	// its tools (default 10 s).
	MCPTimeout time.Duration
	// Harnesses are asked for their own checks, last (those implementing
	// hooks.DoctorChecker; the CLI passes harnesses.All()).
	Harnesses []hooks.Harness
}

// CountChecks tallies a report.
func Count(cs []Check) (ok, warn, fail int) {
	for _, c := range cs {
		switch c.Status {
		case OK:
			ok++
		case Warn:
			warn++
		default:
			fail++
		}
	}
	return
}

// Doctor runs every check and returns them in a fixed order: programs,
// archive, anchors, Claude Code settings, hook programs, MCP server, guard. A check
// that cannot run is a FAIL of that check, not a missing line. Lines are
// left out only when there is nothing to check: the archive checks after
// the location failed or when the embedded archive does not exist yet, the
// anchor checks for the embedded archive (it is never anchored), a last
// anchor line per remote never anchored to, the pre-push hook check when
// lossless.anchorOnPush is off and the hook is not installed, the hook
// program check when no settings name a program.
func Run(ctx context.Context, opt Options) []Check {
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Executable == "" {
		if exe, err := os.Executable(); err == nil {
			opt.Executable = exe
		}
	}
	if opt.VersionOf == nil {
		opt.VersionOf = settings.RunVersion
	}
	if opt.Dir == "" {
		opt.Dir, _ = os.Getwd()
	}
	var out []Check
	out = append(out, checkSelfOnPath(ctx, opt), checkGitOnPath(opt))
	out = append(out, checkArchive(ctx, opt)...)
	hookChecks, doctorInspected := checkSettings(opt)
	out = append(out, hookChecks...)
	if c, ok := checkHookPrograms(ctx, opt, doctorInspected); ok {
		out = append(out, c)
	}
	out = append(out, checkMCPServer(ctx, opt, doctorInspected))
	out = append(out, checkGuard(opt, doctorInspected))
	for _, h := range opt.Harnesses {
		if dc, ok := h.(hooks.DoctorChecker); ok {
			for _, c := range dc.DoctorChecks(ctx, hooks.DoctorOptions{Dir: opt.Dir, Getenv: opt.Getenv}) {
				out = append(out, Check{Check: c.Check, Status: c.Status, Detail: c.Detail, Fix: c.Fix})
			}
		}
	}
	out = append(out, checkGemini(opt)...)
	out = append(out, checkOpencode(opt)...)
	return out
}

func okCheck(check, detail string) Check { return Check{check, OK, detail, ""} }

func warnCheck(check, detail, fix string) Check {
	return Check{check, Warn, detail, fix}
}

func failCheck(check, detail, fix string) Check {
	return Check{check, Fail, detail, fix}
}

const doctorGoInstall = "go install github.com/git-lossless/git-lossless/cmd/...@latest"

// checkSelfOnPath: `git lossless` finds git-lossless through PATH, so a
// missing or older copy there means the commands a user types run
// something else than what is being checked.
func checkSelfOnPath(ctx context.Context, opt Options) Check {
	const name = "git-lossless on PATH"
	p, found := settings.LookPath("git-lossless", opt.Getenv("PATH"))
	if !found {
		return warnCheck(name, fmt.Sprintf("not found; `git lossless` will not run (this program is %s)", opt.Executable),
			"put git-lossless on PATH: `"+doctorGoInstall+"`, or copy "+opt.Executable+" into a PATH directory")
	}
	if settings.SameFile(p, opt.Executable) {
		return okCheck(name, fmt.Sprintf("%s (this program, version %s)", p, opt.Version))
	}
	v, err := opt.VersionOf(ctx, p)
	switch {
	case err != nil:
		return warnCheck(name, fmt.Sprintf("%s is another program and `%s --version` failed: %v (this is %s, version %s)", p, p, err, opt.Executable, opt.Version),
			"replace "+p+" with this version: `"+doctorGoInstall+"`")
	case v != opt.Version:
		return warnCheck(name, fmt.Sprintf("%s is version %s; this program (%s) is version %s", p, v, opt.Executable, opt.Version),
			"replace "+p+" with one version: `"+doctorGoInstall+"`")
	}
	return okCheck(name, fmt.Sprintf("%s (version %s, the same as this program at %s)", p, v, opt.Executable))
}

func checkGitOnPath(opt Options) Check {
	const name = "git on PATH"
	if p, found := settings.LookPath("git", opt.Getenv("PATH")); found {
		return okCheck(name, p)
	}
	return warnCheck(name, "not found; `git lossless ...` needs git to dispatch to git-lossless (the hooks run git-lossless directly and still work)",
		"install git (e.g. `apt-get install git`)")
}

// checkArchive locates the archive for opt.Dir, opens it and runs the
// quick verify (chains only) over every writer.
func checkArchive(ctx context.Context, opt Options) []Check {
	const (
		where    = "archive location"
		readable = "archive readable"
		chains   = "seal chains"
		locks    = "ref locks"
	)
	var loc gitstore.Location
	_, err := gitstore.FindRepository(opt.Dir)
	switch {
	case err == nil:
		loc, err = gitstore.Discover(opt.Dir)
		if err != nil {
			return []Check{failCheck(where, err.Error(), "check that "+opt.Dir+" and its repository are readable")}
		}
	case errors.Is(err, gitstore.ErrNoRepository):
		dir, err := gitstore.EmbeddedDir()
		if err != nil {
			return []Check{failCheck(where, err.Error(), "set HOME or XDG_DATA_HOME")}
		}
		if _, err := os.Stat(filepath.Join(dir, "objects")); errors.Is(err, fs.ErrNotExist) {
			return []Check{okCheck(where, fmt.Sprintf("no repository at %s: the embedded archive %s is used (not created yet: nothing recorded here so far)", opt.Dir, dir))}
		}
		loc = gitstore.Location{GitDir: dir, CommonDir: dir, Embedded: true}
	default:
		return []Check{failCheck(where, err.Error(), "check that "+opt.Dir+" is readable, or unset GIT_DIR")}
	}
	var out []Check
	switch {
	case loc.Fallback != "":
		out = append(out, warnCheck(where, loc.Fallback,
			"nothing to do if the embedded archive suits you; to record inside the repository use one with the files ref backend and sha1 objects"))
	case loc.Embedded:
		out = append(out, okCheck(where, fmt.Sprintf("no repository at %s: the embedded archive %s is used", opt.Dir, loc.CommonDir)))
	default:
		top := loc.WorkTree
		if top == "" {
			top = loc.CommonDir
		}
		out = append(out, okCheck(where, fmt.Sprintf("repository %s (refs/lossless/* in %s)", top, loc.CommonDir)))
	}

	st, err := gitstore.Open(loc, gitstore.Options{})
	if err != nil {
		return append(out, failCheck(readable, err.Error(), "fix the repository configuration named in the error"))
	}
	ws, err := st.Writers(ctx)
	if err != nil {
		return append(out, failCheck(readable, fmt.Sprintf("list writers in %s: %v", loc.CommonDir, err), "check the permissions of "+loc.CommonDir))
	}
	var bad []string
	var entries int64
	for _, w := range ws {
		if w.Err != "" {
			bad = append(bad, fmt.Sprintf("%s (%s)", w.Name, w.Err))
		}
		entries += w.Seq
	}
	if len(bad) > 0 {
		out = append(out, failCheck(readable, fmt.Sprintf("%d of %d writers unreadable: %s", len(bad), len(ws), strings.Join(bad, "; ")),
			"`git lossless verify` reports each writer; `git fsck` checks the objects"))
	} else {
		out = append(out, okCheck(readable, doctorCount(len(ws), "writer")+", "+doctorCount(int(entries), "entry")))
	}

	// The one verify policy (anchor.Check): the same writers, heads and
	// alarms as `git lossless verify`, chains only.
	v, err := anchor.Check(ctx, st, anchor.CheckOptions{SkipContent: true})
	switch {
	case err != nil:
		out = append(out, failCheck(chains, err.Error(), "`git lossless verify` shows the full report"))
	case !v.OK():
		var broken []string
		for _, r := range v.Writers {
			if b := r.Break; b != nil {
				broken = append(broken, fmt.Sprintf("%s: %s at entry %d: %s", r.Writer, b.Kind, b.Seq, b.Detail))
			}
		}
		for _, f := range v.Findings {
			who := f.Writer
			if who == "" {
				who = f.Clone
			}
			broken = append(broken, fmt.Sprintf("%s %s (%s): %s", f.Kind, who, f.Remote, f.Detail))
		}
		out = append(out, failCheck(chains, v.Summary()+": "+strings.Join(broken, "; "),
			"`git lossless verify` shows the full report; a break means a log was changed outside git-lossless (restore refs/lossless/<writer> from a clone or backup); an alarm stays open until a sync or check of its remote no longer finds it"))
	case len(v.Writers) == 0:
		out = append(out, okCheck(chains, "no writers yet"))
	default:
		out = append(out, okCheck(chains, fmt.Sprintf("%s: every entry links to the one before, no alarm open (chains only; `git lossless verify` also checks content)", doctorCount(len(v.Writers), "writer"))))
	}

	ls, err := st.Locks(ctx)
	var stale []string
	for _, l := range ls {
		if l.Stale {
			stale = append(stale, fmt.Sprintf("%s (%s)", l.Path, l.Why))
		}
	}
	switch {
	case err != nil:
		out = append(out, failCheck(locks, err.Error(), "check the permissions of "+filepath.Join(loc.CommonDir, "refs", "lossless")))
	case len(stale) > 0:
		out = append(out, warnCheck(locks, fmt.Sprintf("%d stale: %s; appends remove them, but they mark a git-lossless process that died mid-write", len(stale), strings.Join(stale, "; ")),
			"git lossless locks --clean"))
	case len(ls) > 0:
		out = append(out, okCheck(locks, fmt.Sprintf("%d held by running appends", len(ls))))
	default:
		out = append(out, okCheck(locks, "none"))
	}
	if !loc.Embedded {
		out = append(out, checkAnchors(ctx, opt, st, ws)...)
	}
	return out
}

// doctorAnchorStale is how old a remote's last anchor may be, while
// writers have moved past it, before the doctor warns: a history
// rewritten here since then would go unnoticed by that remote.
const doctorAnchorStale = 7 * 24 * time.Hour

// doctorAnchorFix is how to anchor now and on every push.
const doctorAnchorFix = "`git lossless anchor push` anchors now; to anchor on every push: `git config lossless.anchorOnPush true` and `git lossless install git-hooks --apply`"

// checkAnchors reports a repository's anchors: which writers' heads no
// checkpoint anchored from this machine holds, the age of the last anchor
// on each remote, and the pre-push hook when anchoring on push is on.
// Everything here is a WARN at worst: anchoring is opt-in, and an archive
// never anchored is as intact as before, only less protected (a rewrite
// of its history here would not be caught by anyone else). A check that
// cannot run (unreadable anchor state, git failing) is a FAIL, as
// everywhere in the doctor.
func checkAnchors(ctx context.Context, opt Options, st *gitstore.Store, ws []gitstore.WriterInfo) []Check {
	const covered = "anchored writers"
	now := time.Now()
	if opt.Now != nil {
		now = opt.Now()
	}
	var out []Check
	recs, err := anchor.ReadRecords(st)
	if err != nil {
		return append(out, failCheck(covered, "read this machine's anchor records: "+err.Error(),
			"fix or remove the file named in "+filepath.Join(st.Location().CommonDir, "lossless", "anchor", "remotes")+" (it is only this machine's memory of its anchors), then `git lossless anchor push`"))
	}
	all, err := anchor.AnchoredCheckpoints(ctx, st)
	if err != nil {
		return append(out, failCheck(covered, "read the anchored checkpoints: "+err.Error(), "`git lossless verify` reports the anchor state in detail"))
	}
	// The writer heads of every checkpoint anchored from this machine,
	// and, per remote, of its last one.
	type head struct {
		seq  int64
		seal string
	}
	anchored := map[string][]head{}
	byURL := map[string]*anchor.Checkpoint{}
	for _, a := range all {
		if !a.Own || a.Record == nil {
			continue
		}
		for _, w := range a.Checkpoint.Writers {
			anchored[w.Name] = append(anchored[w.Name], head{w.Entries, w.Seal})
		}
		if c := byURL[a.Record.URL]; c == nil || a.Checkpoint.N > c.N {
			byURL[a.Record.URL] = a.Checkpoint
		}
	}
	holds := func(c *anchor.Checkpoint, w gitstore.WriterInfo) bool {
		for _, h := range c.Writers {
			if h.Name == w.Name && h.Entries == w.Seq && h.Seal == w.Seal {
				return true
			}
		}
		return false
	}

	var current, moved, never []string
	total := 0
	for _, w := range ws {
		if w.Err != "" || w.Seq < 1 {
			continue // unreadable: "archive readable" says so
		}
		total++
		hs := anchored[w.Name]
		switch {
		case len(hs) == 0:
			never = append(never, w.Name)
		case slices.Contains(hs, head{w.Seq, w.Seal}):
			current = append(current, w.Name)
		default:
			moved = append(moved, w.Name)
		}
	}
	keyNote := ""
	if len(recs) > 0 && len(byURL) == 0 {
		p, _ := anchor.KeyPath()
		keyNote = fmt.Sprintf("; %s, but none checks with this machine's anchor key (%s): the key was replaced or moved", doctorCount(len(recs), "anchor record"), p)
	}
	switch {
	case total == 0:
		out = append(out, okCheck(covered, "no writers to anchor yet"+keyNote))
	case len(never) == total && len(recs) == 0:
		out = append(out, warnCheck(covered, fmt.Sprintf("never anchored: the heads of %s are known only to this machine, so a history rewritten here would go unnoticed (anchoring is opt-in)", doctorCount(total, "writer")), doctorAnchorFix))
	case len(never) > 0:
		out = append(out, warnCheck(covered, fmt.Sprintf("%d of %s never anchored from this machine: %s%s", len(never), doctorCount(total, "writer"), doctorList(never), keyNote), doctorAnchorFix))
	case len(moved) > 0:
		out = append(out, okCheck(covered, fmt.Sprintf("%s anchored from this machine; %d at their current head, %d moved since their last anchor (%s; the next anchor push covers them)", doctorCount(total, "writer"), len(current), len(moved), doctorList(moved))))
	default:
		out = append(out, okCheck(covered, fmt.Sprintf("%s anchored from this machine, each at its current head", doctorCount(total, "writer"))))
	}

	// The last anchor per remote (a remote anchored in two modes is one
	// remote: its newest record counts).
	last := map[string]anchor.RemoteRecord{}
	for _, r := range recs {
		if l, ok := last[r.URL]; !ok || r.Time.After(l.Time) {
			last[r.URL] = r
		}
	}
	urls := make([]string, 0, len(last))
	names := map[string]int{}
	for u, r := range last {
		urls = append(urls, u)
		names[r.Remote]++
	}
	sort.Strings(urls)
	for _, u := range urls {
		r := last[u]
		name := "last anchor on " + r.Remote
		if names[r.Remote] > 1 || r.Remote == "" {
			name = "last anchor on " + r.URL
		}
		age := now.Sub(r.Time)
		detail := fmt.Sprintf("%s (%s): checkpoint %d, %s (%s)", r.Remote, r.URL, r.N, doctorAge(age), r.Time.Local().Format(time.RFC3339))
		var behind []string
		c := byURL[u]
		for _, w := range ws {
			if w.Err == "" && w.Seq > 0 && (c == nil || !holds(c, w)) {
				behind = append(behind, w.Name)
			}
		}
		switch {
		case len(behind) == 0:
			out = append(out, okCheck(name, detail+"; it holds every writer's current head"))
		case age > doctorAnchorStale:
			out = append(out, warnCheck(name, fmt.Sprintf("%s; %s moved since (%s): a history rewritten here since then would go unnoticed there", detail, doctorCount(len(behind), "writer"), doctorList(behind)),
				"`git lossless anchor push "+r.Remote+"` (or anchor on every push: `git config lossless.anchorOnPush true` and `git lossless install git-hooks --apply`)"))
		default:
			out = append(out, okCheck(name, fmt.Sprintf("%s; %s moved since (the next anchor push covers them)", detail, doctorCount(len(behind), "writer"))))
		}
	}

	if c, ok := checkPrePush(ctx, opt); ok {
		out = append(out, c)
	}
	return out
}

// checkPrePush checks the pre-push hook when git config
// lossless.anchorOnPush asks for it (the line is left out when anchoring
// on push is off and our hook is not there: nothing was asked for).
func checkPrePush(ctx context.Context, opt Options) (Check, bool) {
	const name = "anchor on push"
	const install = "git lossless install git-hooks --apply"
	on, err := anchor.AnchorOnPush(ctx, opt.Dir)
	if err != nil {
		return warnCheck(name, err.Error()+": the pre-push hook anchors nothing", "`git config lossless.anchorOnPush true` (or false)"), true
	}
	dir, hooksPath, err := anchor.HooksDir(ctx, opt.Dir)
	if err != nil {
		if !on {
			return Check{}, false
		}
		return failCheck(name, err.Error(), "check that git runs in "+opt.Dir), true
	}
	hs, err := anchor.InspectPrePush(dir)
	if err != nil {
		if !on {
			return Check{}, false
		}
		return failCheck(name, err.Error(), "make "+dir+" readable"), true
	}
	where := dir
	if hooksPath != "" {
		where += " (core.hooksPath)"
	}
	switch {
	case !on && !hs.Ours:
		return Check{}, false
	case !on:
		return okCheck(name, fmt.Sprintf("the pre-push hook is installed in %s, but git config lossless.anchorOnPush is not true: pushes do not anchor", where)), true
	case !hs.Exists:
		return warnCheck(name, fmt.Sprintf("git config lossless.anchorOnPush is true, but there is no pre-push hook in %s: pushes do not anchor", where), install), true
	case !hs.Ours:
		return warnCheck(name, fmt.Sprintf("git config lossless.anchorOnPush is true, but %s is not git-lossless's (a hook manager may have replaced it): pushes do not anchor", hs.Hook),
			install+" (it keeps the current hook and runs it first)"), true
	case !hs.Executable:
		return warnCheck(name, hs.Hook+" is not executable: git skips it, so pushes do not anchor", "chmod +x "+hs.Hook), true
	}
	prog := hs.Program
	if !strings.ContainsRune(prog, filepath.Separator) {
		if p, found := settings.LookPath(prog, opt.Getenv("PATH")); found {
			prog = p
		}
	}
	switch {
	case hs.Program == "" || !settings.IsExecutable(prog):
		return warnCheck(name, fmt.Sprintf("%s runs %q, which is not an executable program: every push prints that the anchor failed", hs.Hook, hs.Program),
			install+" with the git-lossless you mean to keep"), true
	case !hs.Current:
		return warnCheck(name, hs.Hook+" was written by another version of git-lossless", install), true
	}
	return okCheck(name, fmt.Sprintf("every push anchors to the remote pushed to: %s runs %s", hs.Hook, hs.Program)), true
}

// doctorList names up to five items, then how many more.
func doctorList(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}

// doctorAge writes an age the way a person reads it: "3 minutes ago",
// "2 days ago".
func doctorAge(d time.Duration) string {
	n, unit := 0, ""
	switch {
	case d < 0:
		return "in the future (this machine's clock went back since)"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		n, unit = int(d/time.Minute), "minute"
	case d < 48*time.Hour:
		n, unit = int(d/time.Hour), "hour"
	default:
		n, unit = int(d/(24*time.Hour)), "day"
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}

// doctorInspected holds settings.Inspect results by scope, for later checks.
type doctorInspected struct {
	scope settings.Scope
	path  string
	hooks settings.InstalledHooks
	err   error
}

func doctorInstallFix(scope settings.Scope) string {
	if scope == settings.ScopeProject {
		return "git lossless install claude-code --scope project --apply"
	}
	return "git lossless install claude-code --apply"
}

// checkSettings reports our hooks in the user and the project settings.
// Claude Code merges both, so hooks in one of them are enough: the other
// is then OK with a note, and only when neither has them do both warn.
func checkSettings(opt Options) ([]Check, []doctorInspected) {
	paths := map[settings.Scope]string{settings.ScopeUser: opt.UserSettings, settings.ScopeProject: opt.ProjectSettings}
	var ins []doctorInspected
	for _, scope := range []settings.Scope{settings.ScopeUser, settings.ScopeProject} {
		in := doctorInspected{scope: scope, path: paths[scope]}
		if in.path == "" {
			in.path, in.err = claudecode.SettingsPath(scope, opt.Dir, opt.Getenv)
		}
		if in.err == nil {
			in.hooks, in.err = settings.Inspect(in.path, claudecode.HookSpecs())
		}
		ins = append(ins, in)
	}
	complete := map[settings.Scope]bool{}
	for _, in := range ins {
		complete[in.scope] = in.err == nil && in.hooks.Any() && in.hooks.Complete()
	}
	var out []Check
	for i, in := range ins {
		name := "claude-code hooks (" + string(in.scope) + " settings)"
		other := ins[1-i]
		h := in.hooks
		switch {
		case i == 1 && in.err == nil && other.err == nil && sameSettingsFile(in.path, other.path):
			out = append(out, okCheck(name, in.path+" is the user settings file (checked above)"))
		case in.err != nil:
			var se *settings.Error
			if errors.As(in.err, &se) {
				out = append(out, failCheck(name, in.err.Error()+"; Claude Code may reject these settings too",
					"fix the JSON in "+in.path+" by hand (backups from install are "+filepath.Base(in.path)+".bak-* beside it), then run `"+doctorInstallFix(in.scope)+"`"))
			} else if in.path != "" {
				out = append(out, failCheck(name, in.err.Error(), "make "+in.path+" readable"))
			} else {
				out = append(out, failCheck(name, in.err.Error(), "set HOME or CLAUDE_CONFIG_DIR"))
			}
		case h.Any() && h.Complete():
			out = append(out, okCheck(name, fmt.Sprintf("installed in %s (%d hooks)", in.path, len(h.Current))))
		case h.Any():
			var parts []string
			if len(h.Missing) > 0 {
				parts = append(parts, "missing "+strings.Join(h.Missing, ", "))
			}
			if len(h.Outdated) > 0 {
				parts = append(parts, "outdated "+strings.Join(h.Outdated, ", "))
			}
			out = append(out, warnCheck(name, fmt.Sprintf("partly installed in %s: %s", in.path, strings.Join(parts, "; ")), doctorInstallFix(in.scope)))
		case complete[other.scope]:
			out = append(out, okCheck(name, fmt.Sprintf("none in %s; the %s settings (%s) cover every session", in.path, other.scope, other.path)))
		case !h.Exists:
			out = append(out, warnCheck(name, fmt.Sprintf("not installed: no %s", in.path), doctorInstallFix(in.scope)))
		default:
			out = append(out, warnCheck(name, "not installed in "+in.path, doctorInstallFix(in.scope)))
		}
	}
	return out, ins
}

func sameSettingsFile(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b) || settings.SameFile(a, b)
}

// checkHookPrograms checks that every program our hooks run exists and is
// executable: otherwise every hook fails (Claude Code carries on, so
// nothing would be recorded and nobody would notice).
func checkHookPrograms(ctx context.Context, opt Options, ins []doctorInspected) (Check, bool) {
	const name = "hook program"
	type use struct {
		prog   string
		scopes []settings.Scope
	}
	var progs []*use
	byProg := map[string]*use{}
	for _, in := range ins {
		if in.err != nil {
			continue
		}
		for _, p := range in.hooks.Programs {
			u := byProg[p]
			if u == nil {
				u = &use{prog: p}
				byProg[p] = u
				progs = append(progs, u)
			}
			u.scopes = append(u.scopes, in.scope)
		}
	}
	if len(progs) == 0 {
		return Check{}, false
	}
	var bad, temp, good, stale []string
	fixScopes := map[settings.Scope]bool{}
	for _, u := range progs {
		p := u.prog
		if !strings.ContainsRune(p, filepath.Separator) {
			if found, okp := settings.LookPath(p, opt.Getenv("PATH")); okp {
				good = append(good, p+" (on PATH: "+found+")")
			} else {
				bad = append(bad, p+": not found on PATH")
				for _, s := range u.scopes {
					fixScopes[s] = true
				}
			}
			continue
		}
		st, err := os.Stat(p)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", p, errors.Unwrap(err)))
		case !st.Mode().IsRegular():
			bad = append(bad, p+": not a regular file")
		case st.Mode().Perm()&0o111 == 0:
			bad = append(bad, p+": not executable")
		case settings.IsTempBuild(p):
			temp = append(temp, p)
			continue
		default:
			// A git-lossless-hook left from an older install beside a
			// newer git-lossless runs old code on every tool call.
			if v, err := opt.VersionOf(ctx, p); err == nil && opt.Version != "" && v != opt.Version {
				stale = append(stale, fmt.Sprintf("%s is version %s, this program %s", p, v, opt.Version))
			}
			good = append(good, p)
			continue
		}
		for _, s := range u.scopes {
			fixScopes[s] = true
		}
	}
	var fixes []string
	for _, s := range []settings.Scope{settings.ScopeUser, settings.ScopeProject} {
		if fixScopes[s] {
			fixes = append(fixes, "`"+doctorInstallFix(s)+"`")
		}
	}
	fix := "run " + strings.Join(fixes, " and ") + " with the git-lossless you mean to keep (it rewrites the hook commands)"
	switch {
	case len(bad) > 0:
		return failCheck(name, strings.Join(bad, "; ")+": every hook fails and nothing is recorded", fix), true
	case len(temp) > 0:
		return warnCheck(name, strings.Join(temp, "; ")+" is a temporary `go run`/`go test` build and will disappear", "install git-lossless (`"+doctorGoInstall+"`) and run `git lossless install claude-code --apply` with it"), true
	case len(stale) > 0:
		return warnCheck(name, strings.Join(stale, "; ")+": the hooks run other code than the commands you type",
			"install both programs of one version (`"+doctorGoInstall+"`) and run `git lossless install claude-code --apply`"), true
	}
	return okCheck(name, strings.Join(good, "; ")+" executable"), true
}

func checkGuard(opt Options, ins []doctorInspected) Check {
	const name = "edit guard"
	if opt.Getenv("LOSSLESS_GUARD") == "off" {
		return warnCheck(name, "LOSSLESS_GUARD=off in this environment: sessions started from it edit unguarded", "unset LOSSLESS_GUARD")
	}
	for _, in := range ins {
		if in.err == nil && in.hooks.GuardOff {
			return warnCheck(name, fmt.Sprintf("%s sets LOSSLESS_GUARD=off in \"env\": every session edits unguarded", in.path),
				"remove LOSSLESS_GUARD from \"env\" in "+in.path)
		}
	}
	return okCheck(name, "on (LOSSLESS_GUARD is not off)")
}

// doctorCount writes "1 writer", "2 writers", "0 entries".
func doctorCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
