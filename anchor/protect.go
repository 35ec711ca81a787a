package anchor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// protectMarker is in every hook Protect writes, so a second run updates
// its own hook and never mistakes it for a user's. Any version of it
// (protectMarkerAny) is ours: v1 hooks lack the probe, and are rewritten.
const (
	protectMarker    = "# git-lossless anchor protect v2"
	protectMarkerAny = "# git-lossless anchor protect v"
)

// chainedName is where Protect moves a repository's own pre-receive hook,
// which its hook then runs with the same input.
const chainedName = "pre-receive.before-lossless"

// ProbePrefix is the namespace of the probe: every update of a ref under
// it is refused by the hook, with probeAnswer, and by nothing else, so a
// refusal carrying that answer proves that git ran the hook. The '+'
// cannot be in a machine name (validName), so no checkpoint ref
// (refs/lossless-anchor/<machine>/<clone>) can ever fall under it.
const ProbePrefix = gitstore.AnchorPrefix + "protect+probe/"

// probeAnswer is what the hook prints when it refuses the probe.
const probeAnswer = "anchor protect probe refused: the hook runs"

// protectHook is the pre-receive hook: it refuses, for the archive's refs
// (refs/lossless/*, refs/notes/lossless/*) and the checkpoint refs
// (refs/lossless-anchor/*), any deletion and any update that is not a
// fast-forward, and any update or deletion of an existing anchor tag
// (refs/tags/lossless-anchor/*: tags are created once). Stock git's
// receive.denyNonFastForwards and receive.denyDeletes cover refs/heads/*
// only, which is why a hook is needed. Then it runs the hook it replaced,
// if any, with the same input, and fails when either fails.
//
// A probe (ProbePrefix) is refused at once, before the chained hook: the
// push is refused whatever that hook says, and a user's hook should not
// see protect's own pushes. The chained hook is run only when this one
// runs as pre-receive, so a chained hook that is a link to this one (or a
// copy) cannot make it run itself for ever; no environment variable is
// used for that, as one would reach every push the chained hook makes.
const protectHook = `#!/bin/sh
` + protectMarker + `
# Refuses deletions and non-fast-forward updates of the git-lossless
# archive (refs/lossless/*, refs/notes/lossless/*), of its checkpoints
# (refs/lossless-anchor/*), and any change to an existing anchor tag
# (refs/tags/lossless-anchor/*). Then runs the previous pre-receive hook,
# ` + chainedName + `, if there is one.
# Every update of ` + ProbePrefix + `* is refused: git lossless anchor
# protect pushes there to prove that git runs this hook.
input=$(mktemp) || exit 1
trap 'rm -f "$input"' EXIT
cat >"$input"
status=0
is_zero() { case "$1" in *[!0]*) return 1 ;; *) return 0 ;; esac; }
while read -r old new ref; do
	case "$ref" in
	'` + ProbePrefix + `'*)
		echo "git-lossless: $ref: ` + probeAnswer + `" >&2
		exit 1
		;;
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
if [ "${0##*/}" = pre-receive ] && [ -x "$hooks/` + chainedName + `" ]; then
	"$hooks/` + chainedName + `" "$@" <"$input" || status=1
fi
exit $status
`

// ProtectResult says what Protect did.
type ProtectResult struct {
	Repo      string // the repository's git directory
	HooksDir  string // where git runs its hooks from (core.hooksPath honoured)
	HooksPath string // core.hooksPath as configured, "" when unset
	// HooksPathFrom says where core.hooksPath is set: the scope and file,
	// as `git config --show-scope --show-origin` names them.
	HooksPathFrom string
	// Shared: HooksDir is outside the repository, so every repository
	// whose git names the same directory runs the same hooks.
	Shared  bool
	Hook    string // the hook's path
	Chained string // the previous hook, moved aside and run by ours ("" when there was none)
	Updated bool   // our hook was there already and was rewritten
	// Unused is a hook of ours from an earlier protect in the
	// repository's own hooks/ that git does not run (core.hooksPath
	// points elsewhere); "" when there is none.
	Unused string
	// Owner is set when the repository belongs to another user than the
	// one running protect: the probe proves the hook for pushes made as
	// this user, and says so.
	Owner string
	// Probe is the ref the proof pushed to, which the repository refused
	// with the hook's answer.
	Probe string
}

// Protect installs the pre-receive hook into the bare repository at dir,
// in the hooks directory its git runs hooks from (`git rev-parse
// --git-path hooks` in the repository: core.hooksPath from its own, the
// global or the system configuration, a relative one taken from the
// repository's directory, as receive-pack runs hooks there), then proves
// it runs (CheckProtect): a returned *ProbeError means the hook is in
// place and the repository still accepts what it must refuse.
//
// An existing pre-receive hook that is not ours — a file, a symbolic link,
// even a dangling one — is kept: moved to pre-receive.before-lossless and
// run by ours with the same input. A directory there is refused (git
// cannot run it; every push there fails already). Running Protect again
// rewrites our hook in place and keeps what it kept.
//
// A non-bare repository is refused: protect guards the repository that
// clones push to, and a working clone given by mistake (`anchor protect
// .`) would be reported protected while the shared remote is not.
func Protect(ctx context.Context, dir string) (ProtectResult, error) {
	r, res, err := openProtected(ctx, dir)
	if err != nil {
		return res, err
	}
	if fi, err := os.Stat(r.hooks); err == nil && !fi.IsDir() {
		return res, fmt.Errorf("git runs this repository's hooks from %s, which is not a directory%s: git runs no hooks there; point core.hooksPath at a directory (or unset it), then run protect again", r.hooks, hooksPathWords(res))
	}
	inst, err := installHook(r.hooks, "pre-receive", chainedName, protectMarkerAny, protectHook)
	res.Hook, res.Chained, res.Updated = inst.Hook, inst.Chained, inst.Updated
	if err != nil {
		return res, fmt.Errorf("install the pre-receive hook in %s: %w", r.hooks, err)
	}
	res.Shared = outside(r.gitDir, r.hooks)
	if own := filepath.Join(r.gitDir, "hooks", "pre-receive"); !samePath(filepath.Dir(own), r.hooks) {
		if s, err := inspectHook(own, protectMarkerAny); err == nil && s.ours {
			res.Unused = own
		}
	}
	res.Probe, err = probe(ctx, r, res)
	return res, err
}

// CheckProtect proves, installing nothing, that the repository at dir
// refuses what the protect hook refuses: it pushes, from a throwaway
// repository, a commit to a fresh ref under ProbePrefix, which the hook
// refuses with its own answer. A push refused without that answer, or
// accepted, is a *ProbeError naming what protect finds wrong (the hook
// missing, replaced, not executable, on a filesystem that cannot execute
// it, core.hooksPath); an accepted probe ref is deleted again (git ran no
// hook, so nothing refuses that), leaving only the probe's commit as an
// unreachable object, which git gc prunes (deleting objects by hand could
// race a real push that names the same empty tree). A refused push leaves
// nothing in the repository: git drops the objects of a refused push (its
// quarantine).
// The proof holds for pushes made as this user with this configuration;
// ProtectResult.Owner says when the repository belongs to another user.
func CheckProtect(ctx context.Context, dir string) (ProtectResult, error) {
	r, res, err := openProtected(ctx, dir)
	if err != nil {
		return res, err
	}
	res.Shared = outside(r.gitDir, r.hooks)
	res.Hook = filepath.Join(r.hooks, "pre-receive")
	if _, err := os.Lstat(filepath.Join(r.hooks, chainedName)); err == nil {
		res.Chained = filepath.Join(r.hooks, chainedName)
	}
	res.Probe, err = probe(ctx, r, res)
	return res, err
}

// protected is a repository Protect works on, as receive-pack sees it.
type protected struct {
	gitDir    string   // its git directory, symbolic links resolved
	env       []string // the environment git runs in: ours without the variables that locate a repository or add configuration
	hooks     string   // where its git runs hooks from
	hooksPath string   // core.hooksPath as configured ("" when unset)
}

// openProtected checks that dir is a bare repository and finds where its
// git runs hooks, with the environment receive-pack would have: git's
// local transport starts receive-pack without the variables `git
// rev-parse --local-env-vars` lists (GIT_DIR, GIT_CONFIG_PARAMETERS, ...),
// and a server's sshd never sets them, so `git -c core.hooksPath=x
// lossless anchor protect` must not install where no push looks.
func openProtected(ctx context.Context, dir string) (protected, ProtectResult, error) {
	var r protected
	var res ProtectResult
	abs, err := filepath.Abs(dir)
	if err != nil {
		return r, res, fmt.Errorf("anchor protect: %w", err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return r, res, fmt.Errorf("%s does not exist: give the path of the bare repository that clones push to", abs)
	case err != nil:
		return r, res, fmt.Errorf("anchor protect: %w", err)
	case !fi.IsDir():
		return r, res, fmt.Errorf("%s is not a directory: give the path of the bare repository that clones push to", abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return r, res, fmt.Errorf("anchor protect: %w", err)
	}
	r.env, err = receiveEnv(ctx)
	if err != nil {
		return r, res, err
	}
	// The ceiling keeps git from taking a repository above dir (a plain
	// directory inside one, or a bare repository's refs/) for dir's own.
	ceiling := append(append([]string(nil), r.env...), "GIT_CEILING_DIRECTORIES="+filepath.Dir(real))
	out, err := gitEnv(ctx, real, ceiling, nil,
		"rev-parse", "--is-bare-repository", "--absolute-git-dir")
	if err != nil {
		return r, res, fmt.Errorf("%s is not a git repository: give the path of the bare repository that clones push to (%v)", abs, err)
	}
	bare, gitDir, _ := strings.Cut(out, "\n")
	if bare != "true" {
		return r, res, fmt.Errorf("%s is a non-bare repository (a working clone): anchor protect guards the bare repository that clones push to, and a hook here would leave that one open; give its path (on the server: git lossless anchor protect /srv/git/project.git)", abs)
	}
	if g, err := filepath.EvalSymlinks(gitDir); err == nil {
		gitDir = g
	}
	if gitDir != real {
		return r, res, fmt.Errorf("%s is not a git repository itself (git finds %s there): give that path", abs, gitDir)
	}
	r.gitDir = gitDir
	res.Repo = gitDir
	r.hooks, r.hooksPath, err = hooksDirEnv(ctx, gitDir, r.env)
	if err != nil {
		return r, res, err
	}
	res.HooksDir, res.HooksPath = r.hooks, r.hooksPath
	if r.hooksPath != "" {
		// "global\tfile:/home/u/.gitconfig\t<value>"
		if o, err := gitEnv(ctx, gitDir, r.env, nil, "config", "--show-scope", "--show-origin", "--get", "core.hooksPath"); err == nil {
			scope, rest, _ := strings.Cut(o, "\t")
			origin, _, _ := strings.Cut(rest, "\t")
			// git names a file relative to where it ran: the repository.
			if f, ok := strings.CutPrefix(origin, "file:"); ok && !filepath.IsAbs(f) {
				origin = "file:" + filepath.Join(gitDir, f)
			}
			res.HooksPathFrom = scope + " config " + origin
		}
	}
	res.Owner = ownerNote(gitDir)
	return r, res, nil
}

// receiveEnv is our environment without the variables that git's local
// transport removes before it starts receive-pack (`git rev-parse
// --local-env-vars`, as this git knows them).
func receiveEnv(ctx context.Context) ([]string, error) {
	out, err := gitIn(ctx, "", "rev-parse", "--local-env-vars")
	if err != nil {
		return nil, fmt.Errorf("anchor protect: %w", err)
	}
	drop := map[string]bool{}
	for _, v := range strings.Fields(out) {
		drop[v] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	return env, nil
}

// hooksPathWords says where core.hooksPath comes from, for messages.
func hooksPathWords(res ProtectResult) string {
	if res.HooksPath == "" {
		return ""
	}
	if res.HooksPathFrom == "" {
		return fmt.Sprintf(" (core.hooksPath = %s)", res.HooksPath)
	}
	return fmt.Sprintf(" (core.hooksPath = %s, from the %s)", res.HooksPath, res.HooksPathFrom)
}

// outside reports whether path is outside dir (both resolved).
func outside(dir, path string) bool {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	rel, err := filepath.Rel(dir, path)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// samePath reports whether a and b name the same directory.
func samePath(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return os.SameFile(fa, fb)
}

// hookState is what a hooks directory holds under one hook's name.
type hookState struct {
	exists bool // something is there (a dangling symbolic link too)
	ours   bool // a regular file (or a link to one) carrying the marker
}

// inspectHook reports what is at path. A directory there (or a link to
// one) is an error: git cannot run it, and it is not ours to move. Only a
// regular file is read, and only its start: a FIFO or a device put there
// must not hang or flood protect.
func inspectHook(path, marker string) (hookState, error) {
	var s hookState
	li, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	s.exists = true
	fi, err := os.Stat(path)
	if err != nil {
		return s, nil // a dangling or looping link: someone's, kept
	}
	if fi.IsDir() {
		what := "a directory"
		if li.Mode()&os.ModeSymlink != 0 {
			what = "a link to a directory"
		}
		return s, fmt.Errorf("%s is %s, not a hook (git cannot run it, so every push it guards fails): move it away, then run again", path, what)
	}
	if !fi.Mode().IsRegular() {
		return s, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	s.ours = bytes.Contains(head[:n], []byte(marker))
	return s, nil
}

// installHook writes script as hooksDir/name. What is there and not ours
// (marker) is kept under chained, which our hook runs; ours is rewritten
// in place. Both Protect and InstallPrePush install through it.
func installHook(hooksDir, name, chained, marker, script string) (ProtectResult, error) {
	var res ProtectResult
	// A directory made here is the user's alone (0700); the hook in it is
	// 0755, as git runs only executable hooks.
	if err := os.MkdirAll(hooksDir, 0o700); err != nil {
		return res, fmt.Errorf("create the hooks directory: %w", err)
	}
	hook := filepath.Join(hooksDir, name)
	chained = filepath.Join(hooksDir, chained)
	res.Hook = hook
	s, err := inspectHook(hook, marker)
	switch {
	case err != nil:
		return res, err
	case s.ours:
		res.Updated = true
	case s.exists:
		if err := keepAside(hook, chained); err != nil {
			return res, err
		}
	}
	if _, err := os.Lstat(chained); err == nil {
		res.Chained = chained
	} else if !errors.Is(err, os.ErrNotExist) {
		return res, err
	}
	if err := writeHook(hook, script); err != nil {
		return res, fmt.Errorf("write the %s hook: %w", name, err)
	}
	return res, nil
}

// keepAside gives the hook at hook (a file or a symbolic link, kept as
// it is) the name chained, never over something already there. A hard
// link does that in one step that fails when chained exists, so two
// installs at once cannot move our freshly written hook over the user's;
// writeHook then replaces hook. Where hard links are not supported it
// falls back to a check and a rename.
func keepAside(hook, chained string) error {
	err := os.Link(hook, chained)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		// The same file under both names: an install stopped between the
		// link and the write; go on.
		if a, e1 := os.Lstat(hook); e1 == nil {
			if b, e2 := os.Lstat(chained); e2 == nil && os.SameFile(a, b) {
				return nil
			}
		}
		return fmt.Errorf("%s exists and %s is not ours: move one of them aside first", chained, hook)
	}
	if _, err := os.Lstat(chained); err == nil {
		return fmt.Errorf("%s exists and %s is not ours: move one of them aside first", chained, hook)
	}
	if err := os.Rename(hook, chained); err != nil {
		return fmt.Errorf("keep the existing hook: %w", err)
	}
	return nil
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
// hook that is not ours (a file or a symbolic link) is moved to
// pre-push.before-lossless and run by ours first; a directory there is
// refused. Our own hook, from an earlier install, is rewritten in place
// (a new program path, a newer script).
func InstallPrePush(hooksDir, program string) (ProtectResult, error) {
	return installHook(hooksDir, "pre-push", PrePushChained, PrePushMarker, prePushHook(program))
}

// writeHook replaces path with an executable script atomically, so a push
// running meanwhile sees the old hook or the new one, never half of one.
//
// The temporary file has a name of its own, so two installs at once
// cannot write into one file, and mode 0755 set past the umask.
func writeHook(path, script string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".lossless-tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.WriteString(script)
	if err == nil {
		err = f.Chmod(0o755)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
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
// the common one in a linked worktree, or core.hooksPath when set, from
// any configuration git reads. A relative core.hooksPath is taken from
// where git runs hooks: the top of the worktree, or the repository's own
// directory in a bare repository (git prints it as configured there,
// whatever the current directory). hooksPath is core.hooksPath as
// configured ("" when unset), so a caller can say where the directory
// comes from.
func HooksDir(ctx context.Context, dir string) (hooks, hooksPath string, err error) {
	return hooksDirEnv(ctx, dir, nil)
}

// hooksDirEnv is HooksDir with git run in env (nil: ours).
func hooksDirEnv(ctx context.Context, dir string, env []string) (hooks, hooksPath string, err error) {
	out, err := gitEnv(ctx, dir, env, nil, "rev-parse", "--is-bare-repository", "--absolute-git-dir")
	if err != nil {
		return "", "", fmt.Errorf("locate the hooks directory: %w", err)
	}
	base := dir
	if bare, gitDir, _ := strings.Cut(out, "\n"); bare == "true" {
		base = gitDir
	}
	hooks, err = gitEnv(ctx, base, env, nil, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", "", fmt.Errorf("locate the hooks directory: %w", err)
	}
	if !filepath.IsAbs(hooks) {
		hooks = filepath.Join(base, hooks)
	}
	// Exit status 1 is "not set".
	hooksPath, _ = gitEnv(ctx, base, env, nil, "config", "--get", "core.hooksPath")
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
	return gitEnv(ctx, dir, nil, nil, args...)
}

// gitEnv is gitIn with the environment env (nil: ours) and, when stderr
// is not nil, git's stderr copied there whatever the outcome.
func gitEnv(ctx context.Context, dir string, env []string, stderr *string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if stderr != nil {
		*stderr = errb.String()
	}
	if err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return "", fmt.Errorf("git %s: %s: %w", strings.Join(args, " "), strings.TrimPrefix(msg, "fatal: "), err)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}
