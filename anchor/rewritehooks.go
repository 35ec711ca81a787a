package anchor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The receipt-carrying hooks: post-rewrite (git runs it after `commit
// --amend` and `rebase`, with "OLD NEW" lines on stdin) and post-commit
// (git 2.39 runs no post-rewrite for cherry-pick, but runs post-commit
// with CHERRY_PICK_HEAD naming the picked commit). Both run `git lossless
// receipt carry` so every rewritten commit gets a receipt of its own.
// They live beside the user's hooks as the pre-push hook does: an
// existing hook is kept as <name>.before-lossless and run first.

// RewriteHookMarker is the line that marks a carrying hook as ours.
const RewriteHookMarker = "# git-lossless receipt-carry v1"

// RewriteHooks are the hooks InstallRewriteHooks writes.
var RewriteHooks = []string{"post-rewrite", "post-commit"}

// rewriteGuard keeps the hook from running again inside the carry it
// started.
const rewriteGuard = "LOSSLESS_CARRY"

func rewriteHook(name, program string) string {
	// post-rewrite reads git's "OLD NEW" lines, for the user's hook and
	// ours; post-commit has no input and must never wait for any.
	run := shellQuote(program) + ` receipt carry --from-hook --cherry-pick </dev/null`
	capture, input, when := "", "/dev/null", `[ -f "$(git rev-parse --git-path CHERRY_PICK_HEAD 2>/dev/null)" ] &&
	`
	if name == "post-rewrite" {
		run = shellQuote(program) + ` receipt carry --from-hook --rewritten "$1" <"$input"`
		capture = "input=$(mktemp) || exit 0\ntrap 'rm -f \"$input\"' EXIT\ncat >\"$input\"\n"
		input, when = `"$input"`, ""
	}
	return `#!/bin/sh
` + RewriteHookMarker + `
# Gives every commit git rewrote (amend, rebase, cherry-pick) a receipt
# of its own, carried from the receipts of the commits it replaces.
# Installed by git lossless install git-hooks; removed by uninstall.
` + capture + `hooks=$(dirname "$0")
if [ -x "$hooks/` + name + `.before-lossless" ]; then
	"$hooks/` + name + `.before-lossless" "$@" <` + input + `
fi
if [ -z "$` + rewriteGuard + `" ] && ` + when + `[ -n "$(git for-each-ref --count=1 --format=x refs/notes/lossless/ 2>/dev/null)" ]; then
	` + rewriteGuard + `=1 ` + run + ` >/dev/null || true
fi
exit 0
`
}

// RewriteHookState is one carrying hook as a hooks directory holds it.
type RewriteHookState struct {
	Name    string
	Hook    string
	Exists  bool
	Ours    bool
	Current bool // ours and exactly what InstallRewriteHooks writes for the program
	Chained string
}

// InspectRewriteHooks reports the carrying hooks in hooksDir for program.
func InspectRewriteHooks(hooksDir, program string) ([]RewriteHookState, error) {
	var out []RewriteHookState
	for _, name := range RewriteHooks {
		s := RewriteHookState{Name: name, Hook: filepath.Join(hooksDir, name)}
		st, err := inspectHook(s.Hook, RewriteHookMarker)
		if err != nil {
			return nil, err
		}
		s.Exists, s.Ours = st.exists, st.ours
		if s.Ours {
			b, err := os.ReadFile(s.Hook)
			if err != nil {
				return nil, fmt.Errorf("read the %s hook: %w", name, err)
			}
			s.Current = string(b) == rewriteHook(name, program)
		}
		if _, err := os.Lstat(s.Hook + ".before-lossless"); err == nil {
			s.Chained = s.Hook + ".before-lossless"
		}
		out = append(out, s)
	}
	return out, nil
}

// InstallRewriteHooks writes the post-rewrite and post-commit hooks into
// hooksDir, keeping an existing hook of the user's beside ours.
func InstallRewriteHooks(hooksDir, program string) ([]ProtectResult, error) {
	var out []ProtectResult
	for _, name := range RewriteHooks {
		res, err := installHook(hooksDir, name, name+".before-lossless", RewriteHookMarker, rewriteHook(name, program))
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// UninstallRewriteHooks removes our carrying hooks and moves the user's
// kept hooks back. A hook that is not ours is never touched.
func UninstallRewriteHooks(hooksDir string) ([]UninstallResult, error) {
	var out []UninstallResult
	for _, name := range RewriteHooks {
		hook := filepath.Join(hooksDir, name)
		chained := hook + ".before-lossless"
		res := UninstallResult{Hook: hook}
		st, err := inspectHook(hook, RewriteHookMarker)
		if err != nil {
			return out, err
		}
		_, cerr := os.Lstat(chained)
		hasChained := cerr == nil
		if cerr != nil && !errors.Is(cerr, os.ErrNotExist) {
			return out, cerr
		}
		switch {
		case st.exists && !st.ours:
			res.NotOurs = true
		case hasChained:
			if err := os.Rename(chained, hook); err != nil {
				return out, fmt.Errorf("restore the previous %s hook: %w", name, err)
			}
			res.Removed, res.Restored = st.exists, chained
		case st.exists:
			if err := os.Remove(hook); err != nil {
				return out, fmt.Errorf("remove the %s hook: %w", name, err)
			}
			res.Removed = true
		}
		out = append(out, res)
	}
	return out, nil
}
