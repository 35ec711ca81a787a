package gitstore

// Remotes and the git processes that reach them: ls-remote, push, and
// the environment they run in.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// gitMessage is the first line of a git process's stderr (escaped), or
// the process error.
func gitMessage(stderr []byte, err error) string {
	// One line: git's first messages joined ("fatal: unable to connect to
	// host:" is followed by the reason on the next line), its hints and
	// progress left out.
	var parts []string
	for _, l := range strings.Split(strings.TrimSpace(string(stderr)), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "hint:") || strings.HasPrefix(l, "To ") {
			continue
		}
		parts = append(parts, l)
		if len(parts) == 3 {
			break
		}
	}
	msg := strings.Join(parts, " ")
	if msg == "" {
		return err.Error()
	}
	return strings.Trim(strconv.QuoteToGraphic(msg), `"`)
}

// gitEnv is the environment of the git processes the gate runs: the
// user's own (their SSH config, credential helpers), without the
// variables that would point git at another repository or change how it
// reads paths, and never prompting on a terminal.
func gitEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_LITERAL_PATHSPECS",
			"GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_TERMINAL_PROMPT":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0")
}

// Remote is where a push goes.
type Remote struct {
	// URL is a remote name, URL or path, as git push takes it.
	URL string
	// Dir is where git runs: a relative path in URL resolves there.
	// Default: the work tree, else the git dir.
	Dir string
}

// ValidRemote refuses a remote that git could read as an option, or one
// holding control characters.
func ValidRemote(url string) error {
	switch {
	case url == "":
		return errors.New("the remote is empty")
	case strings.HasPrefix(url, "-"):
		return fmt.Errorf("remote %s starts with '-': refused (it would read as an option)", QuotePath(url))
	}
	for _, c := range url {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("remote %s holds a control character: refused", QuotePath(url))
		}
	}
	return nil
}

func (s *Store) git(ctx context.Context, r Remote, args ...string) *exec.Cmd {
	return s.gitAt(ctx, r, s.loc.CommonDir, args...)
}

// gitAt is git run on the repository at gitDir (a fetch quarantine), in
// the archive's directory and environment.
func (s *Store) gitAt(ctx context.Context, r Remote, gitDir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + gitDir}, args...)...)
	cmd.Dir = r.Dir
	if cmd.Dir == "" {
		cmd.Dir = s.loc.WorkTree
	}
	if cmd.Dir == "" {
		cmd.Dir = s.loc.CommonDir
	}
	cmd.Env = gitEnv()
	cmd.Stdin = nil // never a prompt answered from our stdin
	gitobj.OwnProcessGroup(cmd)
	// A helper that outlives a killed git keeps its pipes open: stop
	// waiting for them soon after git itself is gone.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// LsRemote returns the remote's refs under the archive's prefixes, from
// the user's own `git ls-remote` (their SSH config and credential helpers
// apply), run in this archive's repository.
func (t Transport) LsRemote(ctx context.Context, r Remote) (map[string]string, error) {
	s := t.s
	if err := ValidRemote(r.URL); err != nil {
		return nil, err
	}
	out, err := s.lsRemote(ctx, r, PushRefPatterns)
	if err != nil {
		return nil, err
	}
	return ParseLsRemote(out)
}

// lsRemote runs `git ls-remote` for patterns and returns its output.
func (s *Store) lsRemote(ctx context.Context, r Remote, patterns []string) ([]byte, error) {
	cmd := s.git(ctx, r, append([]string{"ls-remote", "--", r.URL}, patterns...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("git ls-remote %s: %s", QuotePath(r.URL), gitMessage(errb.Bytes(), err))
	}
	return out.Bytes(), nil
}

// PushArgs returns the arguments of git (after "git") that push exactly
// o's refs to url: one refspec LOCAL:REF per ref — the planned commit, not
// the ref's name, so that batches a writer appends after the plan was
// checked are not sent unchecked — never '+', each with
// --force-with-lease=REF:OLD (OLD empty when the remote lacks the ref), so
// every update is a compare-and-swap against the remote value o was
// planned from: a remote that moved since is refused by git ("stale
// info"), and a non-fast-forward update goes through only with force and
// only over that value.
func (o *Outgoing) PushArgs(url string, force bool) ([]string, error) {
	if err := ValidRemote(url); err != nil {
		return nil, err
	}
	// --no-verify: the user's pre-push hooks are for their branches; the
	// archive's own gate (Check) has run, and our pre-push hook must not
	// anchor again from inside a push of ours.
	args := []string{"push", "--porcelain", "--no-recurse-submodules", "--no-verify"}
	var specs []string
	for _, u := range o.Refs() {
		if u.Err != "" {
			return nil, fmt.Errorf("%s cannot be pushed: %s", u.Ref, u.Err)
		}
		if u.NonFastForward && !force {
			return nil, fmt.Errorf("%s is a non-fast-forward update: it needs force", u.Ref)
		}
		if !gitobj.IsID(u.Local) {
			return nil, fmt.Errorf("%s: planned commit %q is not an object id", u.Ref, u.Local)
		}
		args = append(args, "--force-with-lease="+u.Ref+":"+u.Remote)
		specs = append(specs, u.Local+":"+u.Ref)
	}
	if len(specs) == 0 {
		return nil, errors.New("nothing to push")
	}
	args = append(args, "--", url)
	return append(args, specs...), nil
}

// PushedRef is one ref's outcome, as `git push --porcelain` reports it.
type PushedRef struct {
	Ref     string `json:"ref"`
	Flag    string `json:"flag"`    // git's: " " fast-forward, "+" forced, "*" new, "=" up to date, "!" rejected
	Summary string `json:"summary"` // git's: "abc..def", "[new reference]", "[rejected] (stale info)", ...
	OK      bool   `json:"ok"`
}

// Push runs `git push` with PushArgs and returns each ref's outcome. The
// error is set when git failed, with its message; the outcomes it
// reported are returned all the same.
func (t Transport) Push(ctx context.Context, r Remote, o *Outgoing, force bool) ([]PushedRef, error) {
	s := t.s
	args, err := o.PushArgs(r.URL, force)
	if err != nil {
		return nil, err
	}
	return s.runPush(ctx, r, args)
}

// runPush runs `git push` with args (which must hold --porcelain) and
// returns each ref's outcome as git reports it; the error, when git
// failed, names the remote and the first rejected ref or git's message.
func (s *Store) runPush(ctx context.Context, r Remote, args []string) ([]PushedRef, error) {
	if s.readOnly {
		return nil, fmt.Errorf("push: %w", ErrReadOnly)
	}
	cmd := s.git(ctx, r, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var res []PushedRef
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 || len(f[0]) != 1 {
			continue
		}
		_, dst, _ := strings.Cut(f[1], ":")
		res = append(res, PushedRef{Ref: dst, Flag: f[0], Summary: f[2], OK: f[0] != "!"})
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		msg := gitMessage(errb.Bytes(), runErr)
		for _, p := range res {
			if !p.OK {
				msg = p.Ref + " " + p.Summary
				break
			}
		}
		return res, fmt.Errorf("git push %s: %s", QuotePath(r.URL), msg)
	}
	return res, nil
}
