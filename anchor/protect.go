package anchor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// protectMarker is in every hook Protect writes, so a second run updates
// its own hook and never mistakes it for a user's.
const protectMarker = "# git-lossless anchor protect v1"

// chainedName is where Protect moves a repository's own pre-receive hook,
// which its hook then runs with the same input.
const chainedName = "pre-receive.before-lossless"

// protectHook is the pre-receive hook: it refuses, for the archive's refs
// (refs/lossless/*, refs/notes/lossless/*) and the checkpoint refs
// (refs/lossless-anchor/*), any deletion and any update that is not a
// fast-forward, and any update or deletion of an existing anchor tag
// (refs/tags/lossless-anchor/*: tags are created once). Stock git's
// receive.denyNonFastForwards and receive.denyDeletes cover refs/heads/*
// only, which is why a hook is needed. Then it runs the hook it replaced,
// if any, with the same input, and fails when either fails.
const protectHook = `#!/bin/sh
` + protectMarker + `
# Refuses deletions and non-fast-forward updates of the git-lossless
# archive (refs/lossless/*, refs/notes/lossless/*), of its checkpoints
# (refs/lossless-anchor/*), and any change to an existing anchor tag
# (refs/tags/lossless-anchor/*). Then runs the previous pre-receive hook,
# ` + chainedName + `, if there is one.
input=$(mktemp) || exit 1
trap 'rm -f "$input"' EXIT
cat >"$input"
status=0
is_zero() { case "$1" in *[!0]*) return 1 ;; *) return 0 ;; esac; }
while read -r old new ref; do
	case "$ref" in
	refs/lossless/*|refs/notes/lossless/*|refs/lossless-anchor/*)
		if is_zero "$new"; then
			echo "git-lossless: deleting $ref is refused (anchor protect)" >&2
			status=1
		elif ! is_zero "$old" && ! git merge-base --is-ancestor "$old" "$new" 2>/dev/null; then
			echo "git-lossless: $ref: non-fast-forward update refused (anchor protect)" >&2
			status=1
		fi
		;;
	refs/tags/lossless-anchor/*)
		if ! is_zero "$old"; then
			echo "git-lossless: $ref exists: anchor tags are never moved or deleted (anchor protect)" >&2
			status=1
		fi
		;;
	esac
done <"$input"
hooks=$(dirname "$0")
if [ -x "$hooks/` + chainedName + `" ]; then
	"$hooks/` + chainedName + `" "$@" <"$input" || status=1
fi
exit $status
`

// ProtectResult says what Protect did.
type ProtectResult struct {
	Hook    string // the hook's path
	Chained string // the previous hook, moved aside and run by ours ("" when there was none)
	Updated bool   // our hook was there already and was rewritten
}

// Protect installs the pre-receive hook into the bare repository at dir
// (its hooks directory: core.hooksPath is not consulted, the server's own
// hooks/ is what receive-pack runs unless the server says otherwise). An
// existing pre-receive hook that is not ours is kept: moved to
// hooks/pre-receive.before-lossless and run by ours with the same input.
func Protect(dir string) (ProtectResult, error) {
	var res ProtectResult
	if fi, err := os.Stat(filepath.Join(dir, "objects")); err != nil || !fi.IsDir() {
		return res, fmt.Errorf("%s is not a bare git repository (no objects/ directory); give the server's repository path", dir)
	}
	hooks := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		return res, err
	}
	hook := filepath.Join(hooks, "pre-receive")
	res.Hook = hook
	old, err := os.ReadFile(hook)
	switch {
	case err == nil && bytes.Contains(old, []byte(protectMarker)):
		res.Updated = true
	case err == nil:
		chained := filepath.Join(hooks, chainedName)
		if _, err := os.Stat(chained); err == nil {
			return res, fmt.Errorf("%s exists and %s is not ours: move one of them aside first", chained, hook)
		}
		if err := os.Rename(hook, chained); err != nil {
			return res, fmt.Errorf("keep the existing pre-receive hook: %w", err)
		}
		res.Chained = chained
	case !errors.Is(err, os.ErrNotExist):
		return res, err
	}
	if _, err := os.Stat(filepath.Join(hooks, chainedName)); err == nil {
		res.Chained = filepath.Join(hooks, chainedName)
	}
	tmp := hook + ".lossless-tmp"
	if err := os.WriteFile(tmp, []byte(protectHook), 0o755); err != nil {
		return res, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return res, err
	}
	if err := os.Rename(tmp, hook); err != nil {
		os.Remove(tmp)
		return res, err
	}
	return res, nil
}

// PrePushMarker is in the pre-push hook InstallPrePush writes: it is how
// InstallPrePush, UninstallPrePush and the doctor tell our hook from a
// user's, whatever program it runs.
const PrePushMarker = "# git-lossless pre-push v1"

// PrePushChained is where InstallPrePush moves an existing pre-push hook,
// beside ours in the same hooks directory; UninstallPrePush moves it back.
const PrePushChained = "pre-push.before-lossless"

// PrePushGuard is set in the environment of the anchor push the hook
// runs. A hook that finds it set anchors nothing, so a push made by the
// anchor push itself can never start another one (anchor push already
// pushes with --no-verify; this holds even if a future path does not).
const PrePushGuard = "LOSSLESS_PRE_PUSH"

// prePushHook is the pre-push hook running program. The order is the
// point of it:
//
//   - The previous hook, if any, runs first with the same arguments and
//     input, and its verdict is the push's: a push it refuses sends
//     nothing, not even an anchor. A /bin/sh script is sourced with $0
//     still naming pre-push, because hook managers (husky) dispatch on
//     their hook's own file name; anything else is run as it is.
//   - Then, when git config lossless.anchorOnPush is true and the
//     repository holds an archive, it anchors to the remote being pushed
//     to. That never fails the user's push: a failed anchor is one line on
//     stderr, the first line of the anchor's own error.
//
// No exec: the EXIT trap must remove the temporary files.
func prePushHook(program string) string {
	return `#!/bin/sh
` + PrePushMarker + `
# Runs the previous pre-push hook, ` + PrePushChained + `, if there is
# one: its verdict decides the push. Then, when git config
# lossless.anchorOnPush is true, anchors git-lossless's seal heads to the
# remote being pushed to (git lossless anchor push: signed checkpoints
# only, no content). A failed anchor never fails the push.
# Installed by git lossless install git-hooks; removed by uninstall.
input=$(mktemp) || exit 1
trap 'rm -f "$input" "$input.err"' EXIT
cat >"$input"
hooks=$(dirname "$0")
if [ -x "$hooks/` + PrePushChained + `" ]; then
	case $(head -n 1 "$hooks/` + PrePushChained + `") in
	'#!/bin/sh' | '#!/usr/bin/env sh')
		sh -c '. "$0.before-lossless"' "$hooks/pre-push" "$@" <"$input" || exit
		;;
	*)
		"$hooks/` + PrePushChained + `" "$@" <"$input" || exit
		;;
	esac
fi
if [ -z "$` + PrePushGuard + `" ] &&
	[ "$(git config --bool lossless.anchorOnPush 2>/dev/null)" = true ] &&
	[ -n "$(git for-each-ref --count=1 --format=x refs/lossless/ refs/notes/lossless/ 2>/dev/null)" ]; then
	` + PrePushGuard + `=1 ` + shellQuote(program) + ` anchor push --from-hook -- "$1" </dev/null >/dev/null 2>"$input.err" || {
		status=$?
		why=$(grep -v -e '^git-lossless: hint:' -e '^git-lossless: warning:' "$input.err" | head -n 1)
		why=${why#git-lossless: }
		why=${why#error: }
		why=${why#"anchor on $1 failed: "}
		echo "git-lossless: anchor push to $1 failed (your push goes on): ${why:-exit status $status}" >&2
	}
fi
exit 0
`
}

// prePushProgramPrefix starts the line of our hook that runs the program.
const prePushProgramPrefix = "\t" + PrePushGuard + "=1 "

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// shellWord reads the first shell word of s as shellQuote writes it
// (single-quoted pieces and backslash escapes) and reports whether it was
// one.
func shellWord(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case '\\':
			if i+1 == len(s) {
				return "", false
			}
			b.WriteByte(s[i+1])
			i++
		case ' ', '\t':
			return b.String(), b.Len() > 0
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), b.Len() > 0
}

// PrePushState is what a hooks directory holds of the pre-push hook: what
// install's dry run and uninstall describe, and what the doctor checks.
type PrePushState struct {
	Hook       string // <hooks>/pre-push
	Exists     bool   // a pre-push hook is there, ours or not
	Ours       bool   // it carries PrePushMarker
	Executable bool   // it is executable (git skips a hook that is not, with only a hint)
	Program    string // the program our hook runs ("" when not ours, or unreadable)
	Current    bool   // ours, and exactly what InstallPrePush writes for Program
	Chained    string // <hooks>/pre-push.before-lossless when it exists, else ""
}

// InspectPrePush reports the pre-push hook in hooksDir. It changes
// nothing; a missing directory is a directory without hooks.
func InspectPrePush(hooksDir string) (PrePushState, error) {
	s := PrePushState{Hook: filepath.Join(hooksDir, "pre-push")}
	if _, err := os.Lstat(filepath.Join(hooksDir, PrePushChained)); err == nil {
		s.Chained = filepath.Join(hooksDir, PrePushChained)
	} else if !errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("inspect %s: %w", PrePushChained, err)
	}
	fi, err := os.Stat(s.Hook)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("inspect the pre-push hook: %w", err)
	}
	s.Exists = true
	s.Executable = fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
	b, err := os.ReadFile(s.Hook)
	if err != nil {
		return s, fmt.Errorf("read the pre-push hook: %w", err)
	}
	if !bytes.Contains(b, []byte(PrePushMarker)) {
		return s, nil
	}
	s.Ours = true
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, prePushProgramPrefix); ok && strings.Contains(rest, " anchor push --from-hook ") {
			if p, ok := shellWord(rest); ok {
				s.Program = p
			}
			break
		}
	}
	s.Current = s.Program != "" && string(b) == prePushHook(s.Program)
	return s, nil
}

// InstallPrePush installs the pre-push hook into hooksDir (what `git
// rev-parse --git-path hooks` names: core.hooksPath is honoured there),
// running program (this binary's path) to anchor. An existing pre-push
// hook that is not ours is moved to pre-push.before-lossless and run by
// ours first. Our own hook, from an earlier install, is rewritten in
// place (a new program path, a newer script).
func InstallPrePush(hooksDir, program string) (ProtectResult, error) {
	var res ProtectResult
	// A directory made here is the user's alone (0700); the hook in it is
	// 0755, as git runs only executable hooks.
	if err := os.MkdirAll(hooksDir, 0o700); err != nil {
		return res, fmt.Errorf("create the hooks directory: %w", err)
	}
	hook := filepath.Join(hooksDir, "pre-push")
	res.Hook = hook
	old, err := os.ReadFile(hook)
	switch {
	case err == nil && bytes.Contains(old, []byte(PrePushMarker)):
		res.Updated = true
	case err == nil:
		chained := filepath.Join(hooksDir, PrePushChained)
		if _, err := os.Lstat(chained); err == nil {
			return res, fmt.Errorf("%s exists and %s is not ours: move one of them aside first", chained, hook)
		}
		if err := os.Rename(hook, chained); err != nil {
			return res, fmt.Errorf("keep the existing pre-push hook: %w", err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return res, fmt.Errorf("read the pre-push hook: %w", err)
	}
	if _, err := os.Lstat(filepath.Join(hooksDir, PrePushChained)); err == nil {
		res.Chained = filepath.Join(hooksDir, PrePushChained)
	}
	if err := writeHook(hook, prePushHook(program)); err != nil {
		return res, fmt.Errorf("write the pre-push hook: %w", err)
	}
	return res, nil
}

// writeHook replaces path with an executable script atomically, so a push
// running meanwhile sees the old hook or the new one, never half of one.
func writeHook(path, script string) error {
	tmp := path + ".lossless-tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // past the umask
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// UninstallResult says what UninstallPrePush did.
type UninstallResult struct {
	Hook     string // <hooks>/pre-push
	Removed  bool   // our hook was removed
	Restored string // the hook InstallPrePush had kept, moved back to Hook ("" when none)
	NotOurs  bool   // Hook is someone else's: left alone, and so is any kept hook
}

// UninstallPrePush removes our pre-push hook from hooksDir and moves the
// hook it had kept (pre-push.before-lossless) back in its place, in one
// rename, so that no push runs between the two without the user's hook.
// A pre-push hook that is not ours is never touched: uninstall removes
// only what install wrote. When our hook is gone but the kept one is
// still there (the hook deleted by hand), the kept one is moved back.
func UninstallPrePush(hooksDir string) (UninstallResult, error) {
	s, err := InspectPrePush(hooksDir)
	res := UninstallResult{Hook: s.Hook}
	if err != nil {
		return res, err
	}
	switch {
	case s.Exists && !s.Ours:
		res.NotOurs = true
		return res, nil
	case s.Chained != "":
		if err := os.Rename(s.Chained, s.Hook); err != nil {
			return res, fmt.Errorf("restore the previous pre-push hook: %w", err)
		}
		res.Removed, res.Restored = s.Exists, s.Chained
	case s.Exists:
		if err := os.Remove(s.Hook); err != nil {
			return res, fmt.Errorf("remove the pre-push hook: %w", err)
		}
		res.Removed = true
	}
	return res, nil
}

// HooksDir returns the directory git runs this repository's hooks from,
// as git itself resolves it (`git rev-parse --git-path hooks`): .git/hooks,
// the common one in a linked worktree, or core.hooksPath when set (a
// relative one taken from the top of the worktree, as git runs hooks
// there). hooksPath is core.hooksPath as configured ("" when unset), so a
// caller can say where the directory comes from.
func HooksDir(ctx context.Context, dir string) (hooks, hooksPath string, err error) {
	out, err := gitIn(ctx, dir, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", "", fmt.Errorf("locate the hooks directory: %w", err)
	}
	hooks = out
	if !filepath.IsAbs(hooks) {
		hooks = filepath.Join(dir, hooks)
	}
	// Exit status 1 is "not set".
	hooksPath, _ = gitIn(ctx, dir, "config", "--get", "core.hooksPath")
	return filepath.Clean(hooks), hooksPath, nil
}

// AnchorOnPush reports git config lossless.anchorOnPush as the hook reads
// it (`git config --bool`, so includes and git's spellings of true and
// false count): unset is false; a value git does not take for a boolean
// is an error, and then the hook anchors nothing.
func AnchorOnPush(ctx context.Context, dir string) (bool, error) {
	out, err := gitIn(ctx, dir, "config", "--bool", "--get", "lossless.anchorOnPush")
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil // not set
	case err != nil:
		return false, fmt.Errorf("git config lossless.anchorOnPush: %w", err)
	}
	return out == "true", nil
}

// gitIn runs git in dir and returns its trimmed stdout; a failure carries
// git's own message.
func gitIn(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return "", fmt.Errorf("git %s: %s: %w", strings.Join(args, " "), strings.TrimPrefix(msg, "fatal: "), err)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}
