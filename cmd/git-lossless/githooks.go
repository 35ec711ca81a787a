package main

// `install git-hooks` and `uninstall git-hooks`: the repository's pre-push
// hook, which anchors to the remote being pushed to (anchor.InstallPrePush
// writes it). They have the shape of `install claude-code`: say what
// changes, change it only with --apply. A hooks directory is shared with
// the user's own hooks and hook managers, so nothing of theirs is ever
// deleted: an existing pre-push hook is kept beside ours and run by it,
// and uninstall puts it back.

import (
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// gitHooksLong is the git-hooks part of install's and uninstall's help.
const gitHooksLong = `git-hooks installs a pre-push hook into the directory git runs this
repository's hooks from (` + "`git rev-parse --git-path hooks`" + `: .git/hooks, or
core.hooksPath when set, e.g. a hook manager's .husky). When git config
lossless.anchorOnPush is true and the repository holds an archive, every
` + "`git push REMOTE`" + ` runs ` + "`git lossless anchor push --from-hook -- REMOTE`" + `
before it sends anything: a signed checkpoint of every writer's seal head
goes to the same remote (no content; see ` + "`git lossless anchor --help`" + `).
git runs pre-push hooks for ` + "`git push --dry-run`" + ` too, so a dry run
anchors as well. A failed anchor never fails the push: it is one line on
stderr. An existing pre-push hook is kept as pre-push.before-lossless and
runs before the anchor; its verdict still decides the push (a push it
refuses anchors nothing). It also installs post-rewrite and post-commit
hooks that give every commit git rewrites (commit --amend, rebase,
cherry-pick) a receipt carried from the commits it replaces (see ` + "`git lossless receipt --help`" + `);
an existing hook of those names is kept as NAME.before-lossless and runs
first. uninstall git-hooks removes only our hooks and moves the kept ones
back. The hook runs this program (as install
claude-code picks it) or --command PATH.`

// runGitHooks is install/uninstall git-hooks: a dry run unless apply.
func runGitHooks(ctx context.Context, e *env, verb string, apply bool, command string) error {
	dir, hooksPath, err := anchor.HooksDir(ctx, e.Dir)
	if err != nil {
		return cli.WithHint(err, "run it inside the repository whose pushes should anchor (or pass -C DIR)")
	}
	st, err := anchor.InspectPrePush(dir)
	if err != nil {
		return err
	}
	where := dir
	if hooksPath != "" {
		where += " (core.hooksPath " + hooksPath + ")"
	}
	fmt.Fprintf(e.Stdout, "hooks directory: %s\n", where)
	if verb == "uninstall" {
		return uninstallGitHooks(e, st, apply)
	}

	getenv := e.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	bin, err := settings.ResolveBinary(ctx, settings.BinaryOptions{Override: command, Dir: e.Dir, Getenv: getenv})
	if err != nil {
		return err
	}
	if bin.Warning != "" {
		fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", bin.Warning)
	}
	fmt.Fprintf(e.Stdout, "hook program: %s\n", bin.Path)
	// The hook does nothing until this is on: say so, whatever happens.
	note := func() {
		on, err := anchor.AnchorOnPush(ctx, e.Dir)
		switch {
		case err != nil:
			fmt.Fprintf(e.Stderr, "git-lossless: warning: %v: the hook anchors nothing until it is true or false\n", err)
		case !on:
			fmt.Fprintln(e.Stdout, "anchoring on push is off: `git config lossless.anchorOnPush true` turns it on for this repository (--global: every repository with this hook)")
		}
	}

	rw, err := anchor.InspectRewriteHooks(dir, bin.Path)
	if err != nil {
		return err
	}
	rwCurrent := true
	for _, h := range rw {
		rwCurrent = rwCurrent && h.Current
		if h.Exists && !h.Ours && h.Chained != "" {
			return cli.WithHint(fmt.Errorf("%s is not git-lossless's and %s exists too: there is no place to keep the existing hook", h.Hook, h.Chained),
				"nothing was written; merge or move one of them aside, then run again")
		}
	}
	if st.Ours && st.Current && st.Program == bin.Path && rwCurrent {
		fmt.Fprintf(e.Stdout, "the git-lossless pre-push, post-rewrite and post-commit hooks are already installed in %s; nothing to change\n", filepath.Dir(st.Hook))
		note()
		return nil
	}
	if st.Exists && !st.Ours && st.Chained != "" {
		return cli.WithHint(fmt.Errorf("%s is not git-lossless's and %s exists too: there is no place to keep the existing hook", st.Hook, st.Chained),
			"nothing was written; merge or move one of them aside, then run again")
	}
	switch {
	case st.Ours && st.Program != bin.Path && st.Program != "":
		fmt.Fprintf(e.Stdout, "  update   %s: runs %s (was %s)\n", st.Hook, bin.Path, st.Program)
	case st.Ours:
		fmt.Fprintf(e.Stdout, "  update   %s: to this version's hook\n", st.Hook)
	case st.Exists:
		fmt.Fprintf(e.Stdout, "  keep     the existing %s as %s: it runs first, and its verdict decides the push\n", st.Hook, anchor.PrePushChained)
		fmt.Fprintf(e.Stdout, "  add      %s: then anchors to the remote pushed to\n", st.Hook)
	default:
		fmt.Fprintf(e.Stdout, "  add      %s: anchors to the remote pushed to\n", st.Hook)
	}
	if !st.Ours && st.Chained != "" {
		fmt.Fprintf(e.Stdout, "  chain    %s (kept by an earlier install) runs first\n", st.Chained)
	}
	for _, h := range rw {
		switch {
		case h.Ours && h.Current:
		case h.Ours:
			fmt.Fprintf(e.Stdout, "  update   %s: to this version's hook\n", h.Hook)
		case h.Exists:
			fmt.Fprintf(e.Stdout, "  keep     the existing %s as %s.before-lossless: it runs first\n", h.Hook, h.Name)
			fmt.Fprintf(e.Stdout, "  add      %s: then carries receipts to rewritten commits\n", h.Hook)
		default:
			fmt.Fprintf(e.Stdout, "  add      %s: carries receipts to rewritten commits (amend, rebase, cherry-pick)\n", h.Hook)
		}
	}
	if w := inWorkTree(e.Dir, dir); w != "" {
		fmt.Fprintf(e.Stderr, "git-lossless: warning: the hooks directory is inside the working tree %s: the new and moved files show in `git status`, and committing them gives every clone a hook that runs %s\n", w, bin.Path)
	}
	if !apply {
		fmt.Fprintf(e.Stdout, "dry run: nothing was written; run again with --apply to write %s\n", st.Hook)
		note()
		return nil
	}
	res, err := anchor.InstallPrePush(dir, bin.Path)
	if err != nil {
		return err
	}
	carried, err := anchor.InstallRewriteHooks(dir, bin.Path)
	if err != nil {
		return err
	}
	for _, c := range carried {
		fmt.Fprintf(e.Stdout, "installed %s: carries receipts to rewritten commits\n", c.Hook)
		if c.Chained != "" {
			fmt.Fprintf(e.Stdout, "the previous %s runs first, from %s\n", filepath.Base(c.Hook), c.Chained)
		}
	}
	verb = "installed"
	if res.Updated {
		verb = "updated"
	}
	fmt.Fprintf(e.Stdout, "%s %s\n", verb, res.Hook)
	if res.Chained != "" {
		fmt.Fprintf(e.Stdout, "the previous pre-push hook runs first, from %s (`git lossless uninstall git-hooks --apply` puts it back)\n", res.Chained)
	}
	note()
	return nil
}

func uninstallGitHooks(e *env, st anchor.PrePushState, apply bool) error {
	if err := uninstallRewriteHooks(e, filepath.Dir(st.Hook), apply); err != nil {
		return err
	}
	switch {
	case st.Exists && !st.Ours:
		fmt.Fprintf(e.Stdout, "%s is not git-lossless's; nothing to change\n", st.Hook)
		if st.Chained != "" {
			fmt.Fprintf(e.Stdout, "%s is a pre-push hook an install of git-lossless kept; move it back by hand if you want it\n", st.Chained)
		}
		return nil
	case !st.Exists && st.Chained == "":
		fmt.Fprintf(e.Stdout, "no git-lossless pre-push hook in %s; nothing to change\n", filepath.Dir(st.Hook))
		return nil
	case st.Exists && st.Chained != "":
		fmt.Fprintf(e.Stdout, "  remove   %s (git-lossless's)\n  restore  %s as %s\n", st.Hook, st.Chained, st.Hook)
	case st.Exists:
		fmt.Fprintf(e.Stdout, "  remove   %s (git-lossless's)\n", st.Hook)
	default:
		fmt.Fprintf(e.Stdout, "  restore  %s as %s (git-lossless's hook is gone already)\n", st.Chained, st.Hook)
	}
	if !apply {
		fmt.Fprintf(e.Stdout, "dry run: nothing was changed; run again with --apply to change %s\n", filepath.Dir(st.Hook))
		return nil
	}
	res, err := anchor.UninstallPrePush(filepath.Dir(st.Hook))
	if err != nil {
		return err
	}

	if res.NotOurs { // replaced between the look and the change
		fmt.Fprintf(e.Stdout, "%s is not git-lossless's (any more); nothing was changed\n", res.Hook)
		return nil
	}
	if res.Removed {
		fmt.Fprintf(e.Stdout, "removed git-lossless's %s\n", res.Hook)
	}
	if res.Restored != "" {
		fmt.Fprintf(e.Stdout, "restored the previous pre-push hook from %s\n", res.Restored)
	}
	return nil
}

// uninstallRewriteHooks removes our post-rewrite and post-commit hooks
// and moves the user's kept ones back (only with apply; else says so).
func uninstallRewriteHooks(e *env, dir string, apply bool) error {
	hs, err := anchor.InspectRewriteHooks(dir, "")
	if err != nil {
		return err
	}
	planned := false
	for _, h := range hs {
		switch {
		case h.Exists && !h.Ours:
			continue
		case h.Ours && h.Chained != "":
			fmt.Fprintf(e.Stdout, "  remove   %s (git-lossless's)\n  restore  %s as %s\n", h.Hook, h.Chained, h.Hook)
		case h.Ours:
			fmt.Fprintf(e.Stdout, "  remove   %s (git-lossless's)\n", h.Hook)
		case h.Chained != "":
			fmt.Fprintf(e.Stdout, "  restore  %s as %s (git-lossless's hook is gone already)\n", h.Chained, h.Hook)
		default:
			continue
		}
		planned = true
	}
	if !planned || !apply {
		return nil
	}
	rs, err := anchor.UninstallRewriteHooks(dir)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Removed {
			fmt.Fprintf(e.Stdout, "removed git-lossless's %s\n", r.Hook)
		}
		if r.Restored != "" {
			fmt.Fprintf(e.Stdout, "restored the previous %s hook from %s\n", filepath.Base(r.Hook), r.Restored)
		}
	}
	return nil
}

// inWorkTree returns the work tree's top when hooksDir is inside it but not
// inside its git directory (a core.hooksPath such as .husky: files there
// are the repository's content), else "".
func inWorkTree(dir, hooksDir string) string {
	loc, err := gitstore.FindRepository(dir)
	if err != nil || loc.WorkTree == "" {
		return ""
	}
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	h, top, gd := real(hooksDir), real(loc.WorkTree), real(loc.CommonDir)
	under := func(p, root string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if under(h, top) && !under(h, gd) && !under(h, real(loc.GitDir)) {
		return loc.WorkTree
	}
	return ""
}
