package anchor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ProbeError is a failed proof: the repository did not refuse the probe
// update with the hook's answer, so protect cannot vouch for it.
type ProbeError struct {
	Repo string // the repository's git directory
	Hook string // the hook that should have refused
	Ref  string // the probe ref
	// Accepted: the repository took the update, so git ran no hook of
	// ours: deletions and rewrites are not refused there either.
	Accepted bool
	// Removed: the accepted probe ref was deleted again. When false
	// after an acceptance, RemoveErr says why.
	Removed   bool
	RemoveErr error
	Reasons   []string // what protect found that explains it
	Git       string   // the probe push's stderr, trimmed
}

func (e *ProbeError) Error() string {
	var b strings.Builder
	if e.Accepted {
		fmt.Fprintf(&b, "%s accepted a push that the protect hook refuses (to %s): git did not run %s, so deletions and rewrites of the archive's refs are NOT refused there", e.Repo, e.Ref, e.Hook)
		if e.Removed {
			b.WriteString(" (the probe ref was deleted again)")
		} else if e.RemoveErr != nil {
			fmt.Fprintf(&b, " (the probe ref could not be deleted: %v)", e.RemoveErr)
		}
	} else {
		fmt.Fprintf(&b, "the probe push to %s (%s) was refused without the protect hook's answer, so it is not shown that git runs %s", e.Repo, e.Ref, e.Hook)
	}
	for _, r := range e.Reasons {
		b.WriteString("\n  - ")
		b.WriteString(r)
	}
	if e.Git != "" {
		b.WriteString("\n  git push said:")
		for _, l := range strings.Split(e.Git, "\n") {
			b.WriteString("\n    ")
			b.WriteString(l)
		}
	}
	return b.String()
}

// probe pushes a fresh commit, made in a throwaway repository, to a new
// ref under ProbePrefix in the protected repository, through real git
// push (receive-pack runs hooks; update-ref does not), and returns that
// ref when the repository refused it with the hook's answer. The
// protected repository's objects are touched only by the push itself,
// and a refused push leaves nothing: git keeps a push's objects apart
// until its pre-receive hook accepts them. Probe refs left by an earlier
// run killed between an accepted push and the deletion are deleted
// first: only a repository that runs no hook can hold one.
func probe(ctx context.Context, r protected, res ProtectResult) (string, error) {
	if err := dropProbeRefs(ctx, r); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "git-lossless-protect-probe-")
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	defer os.RemoveAll(tmp)
	format, err := gitEnv(ctx, r.gitDir, r.env, nil, "rev-parse", "--show-object-format")
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	env := append(append([]string(nil), r.env...),
		"GIT_AUTHOR_NAME=git-lossless", "GIT_AUTHOR_EMAIL=git-lossless@localhost",
		"GIT_COMMITTER_NAME=git-lossless", "GIT_COMMITTER_EMAIL=git-lossless@localhost",
		"GIT_TERMINAL_PROMPT=0")
	// --template= copies no template (no sample hooks); the object format
	// is the repository's, or it could not take the push.
	if _, err := gitEnv(ctx, tmp, env, nil, "init", "-q", "--bare", "--template=", "--object-format="+format, "."); err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	tree, err := gitEnv(ctx, tmp, env, nil, "mktree") // stdin is empty: the empty tree
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	commit, err := gitEnv(ctx, tmp, env, nil, "commit-tree", tree, "-m",
		"git-lossless anchor protect probe\n\nThe protect hook refuses this update; it is never kept.")
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	ref := ProbePrefix + hex.EncodeToString(nonce[:])
	var stderr string
	// --no-verify: no pre-push hook of this user's (core.hooksPath in
	// the global config) runs for the throwaway repository.
	_, perr := gitEnv(ctx, tmp, env, &stderr, "-c", "push.gpgSign=false", "push", "--no-verify", "--porcelain", r.gitDir, commit+":"+ref)
	stderr = strings.TrimSpace(stderr)
	present, err := refExists(ctx, r, ref)
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	if perr != nil && !present && strings.Contains(stderr, probeAnswer) {
		return ref, nil
	}
	pe := &ProbeError{Repo: r.gitDir, Hook: filepath.Join(r.hooks, "pre-receive"), Ref: ref, Accepted: present, Git: stderr}
	if present {
		// Only our commit is deleted: update-ref checks the old value.
		if _, err := gitEnv(ctx, r.gitDir, r.env, nil, "update-ref", "-d", ref, commit); err != nil {
			pe.RemoveErr = err
		} else {
			pe.Removed = true
		}
	}
	pe.Reasons = diagnose(r, res, perr)
	return "", pe
}

// refExists reports whether the protected repository has ref.
func refExists(ctx context.Context, r protected, ref string) (bool, error) {
	_, err := gitEnv(ctx, r.gitDir, r.env, nil, "rev-parse", "--verify", "-q", ref)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil
	}
	return false, err
}

// dropProbeRefs deletes every ref under ProbePrefix, directly (no hook
// is involved in update-ref): they are protect's own, and only an
// earlier probe that a repository accepted can have left one.
func dropProbeRefs(ctx context.Context, r protected) error {
	out, err := gitEnv(ctx, r.gitDir, r.env, nil, "for-each-ref", "--format=%(refname)", ProbePrefix)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	for _, ref := range strings.Fields(out) {
		if _, err := gitEnv(ctx, r.gitDir, r.env, nil, "update-ref", "-d", ref); err != nil {
			return fmt.Errorf("probe: delete the earlier probe ref: %w", err)
		}
	}
	return nil
}

// diagnose says why the hook did not answer the probe, as far as protect
// can see it from here; git's own words (its hint about an ignored hook,
// a hook it could not execute) are in ProbeError.Git.
func diagnose(r protected, res ProtectResult, perr error) []string {
	var why []string
	hook := filepath.Join(r.hooks, "pre-receive")
	where := "the hooks directory git names for this repository" + hooksPathWords(res)
	s, err := inspectHook(hook, protectMarkerAny)
	switch {
	case err != nil:
		why = append(why, err.Error())
	case !s.exists:
		why = append(why, fmt.Sprintf("there is no pre-receive hook in %s, %s", r.hooks, where))
	case !s.ours:
		why = append(why, fmt.Sprintf("%s is not the protect hook (never installed there, or replaced); run git lossless anchor protect", hook))
	default:
		fi, err := os.Stat(hook)
		switch {
		case err != nil:
			why = append(why, fmt.Sprintf("%s: %v", hook, err))
		case fi.Mode().Perm()&0o111 == 0:
			why = append(why, fmt.Sprintf("%s is not executable (mode %v): git skips such a hook; run git lossless anchor protect again", hook, fi.Mode().Perm()))
		case !canExec(hook):
			why = append(why, fmt.Sprintf("%s is executable (mode %v) but the system refuses to execute it: is %s on a filesystem mounted noexec?", hook, fi.Mode().Perm(), r.hooks))
		case perr == nil:
			why = append(why, fmt.Sprintf("the hook is in place and executable in %s, yet git did not run it: the receive-pack that took the push runs hooks from elsewhere (a wrapper, another git, a different configuration)", where))
		}
	}
	if res.HooksPath != "" && len(why) > 0 {
		why = append(why, fmt.Sprintf("git runs this repository's hooks from %s%s", r.hooks, hooksPathWords(res)))
	}
	if perr != nil && len(why) == 0 {
		why = append(why, "the push failed for another reason (see git's words below)")
	}
	if res.Owner != "" {
		why = append(why, res.Owner)
	}
	return why
}
