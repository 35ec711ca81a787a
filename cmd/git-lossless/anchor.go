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

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
)

func anchorCmd() *command {
	return &command{
		Name:    "anchor",
		Summary: "push signed checkpoints of every writer's seal head to remotes, so a rewritten history is caught",
		Usage:   "push [REMOTE...] [--tags] [--path DIR] [--with-archive] | key | protect [--check] BARE_REPO",
		Long: `A hash chain shows tampering only if someone outside the machine remembers
an earlier head. An anchor is that memory: a checkpoint — every writer's
(name, entries, head seal, commit) and every refs/notes/lossless/* head
(receipts), signed with this machine's anchor key — pushed to a remote.
git lossless verify then checks every chain against every checkpoint
anchored or fetched before, and verify --anchor REMOTE fetches a remote's
checkpoints and catches a history rewritten here (anchor-mismatch) or there
(anchor-rollback, anchor-fork). The format is anchor/FORMAT.md.

anchor push [REMOTE...]
  Makes this clone's next checkpoint (reusing the last when no head moved:
  one signature per change) and pushes it to each REMOTE (default: git
  config lossless.remote, else origin; several remotes are several
  witnesses) as refs/lossless-anchor/<machine>/<clone>, fast-forward only.
  It sends nothing else — no file versions, no spans — so anchoring is safe
  toward a public or shared remote. A remote that fails (network, auth, a
  rejected update) is named with why; nothing is recorded as anchored there.
  --tags (or git config lossless.anchorMode tags) stores each checkpoint as
  an annotated tag lossless-anchor/<machine>/<clone>/<n> instead, which a
  hosted service can make immutable (GitHub tag rulesets, GitLab and Gitea
  protected tags; see the README). --path DIR writes the checkpoint as a
  file under DIR/lossless-anchor/ (another disk, a synced folder), never
  over an existing one. --with-archive also pushes refs/lossless/* and
  refs/notes/lossless/* through the same gate as git lossless push (secrets
  and git-ignored files are refused unless allowed).

anchor key
  Prints this machine's public anchor key (created on first use at
  os.UserConfigDir()/git-lossless/anchor-key, mode 0600, or
  $LOSSLESS_ANCHOR_KEY_FILE). Its name is the machine name in every
  checkpoint: git config lossless.machine sets it when the key is made.

anchor protect [--check] BARE_REPO
  Installs a pre-receive hook into a self-hosted bare repository that
  refuses deletions and non-fast-forward updates of refs/lossless/*,
  refs/notes/lossless/* and refs/lossless-anchor/*, and any change to an
  existing anchor tag. An existing pre-receive hook is kept and run by ours.
  The hook goes where the repository's git runs hooks (core.hooksPath
  honoured; a directory shared with other repositories is named). Then
  protect proves it: it pushes a throwaway update the hook must refuse
  (to refs/lossless-anchor/protect+probe/...), and fails, saying why, if
  the repository accepts it (exit 1; exit 3 when it could not install).
  --check only proves, installing nothing. Run it as the user pushes run
  as on the server: the proof is a push made as this user.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			tags := fs.Bool("tags", false, "anchor push: store each checkpoint as an annotated tag (for services that protect tags)")
			path := fs.String("path", "", "anchor push: write the checkpoint under this directory instead of pushing")
			withArchive := fs.Bool("with-archive", false, "anchor push: also push refs/lossless/* and refs/notes/lossless/* (checked like git lossless push)")
			allowSecrets := fs.Bool("allow-secrets", false, "with --with-archive: send content holding secrets anyway")
			allowIgnored := fs.Bool("allow-ignored", false, "with --with-archive: send file versions git ignores anyway")
			asJSON := fs.Bool("json", false, "print the outcome as JSON")
			check := fs.Bool("check", false, "anchor protect: install nothing, only prove that the repository refuses what the hook refuses")
			fromHook := fs.Bool("from-hook", false, "run from the pre-push hook: quiet, and the remote is the one being pushed to")
			_ = fs.MarkHidden("from-hook")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return cli.Usagef("usage: git lossless anchor push [REMOTE...] | key | protect [--check] BARE_REPO")
				}
				if *check && args[0] != "protect" {
					return cli.Usagef("--check goes with anchor protect")
				}
				switch args[0] {
				case "key":
					if len(args) != 1 {
						return cli.Usagef("anchor key takes no arguments")
					}
					st, err := cli.OpenStore(e)
					if err != nil {
						return err
					}
					key, err := loadAnchorKey(st, true)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.Stdout, "%s\n", key.VKey)
					return nil
				case "protect":
					if len(args) != 2 {
						return cli.Usagef("usage: git lossless anchor protect [--check] BARE_REPO")
					}
					return anchorProtect(ctx, e, joinDir(e.Dir, args[1]), *check)
				case "push":
				default:
					return cli.Usagef("unknown anchor subcommand %q: push, key or protect", args[0])
				}
				remotes := args[1:]
				if *fromHook {
					// Run from git's pre-push hook: the user's push waits
					// for it, so a remote that hangs must not hold it.
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, fromHookTimeout)
					defer cancel()
				}
				if *path != "" && (len(remotes) > 0 || *tags || *withArchive) {
					return cli.Usagef("--path anchors to a directory: give no REMOTE, --tags or --with-archive with it")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				if st.Location().Embedded {
					return cli.WithHint(errors.New("anchors need a repository; this is the embedded archive"), "run it inside the repository whose archive you want to anchor")
				}
				key, err := loadAnchorKey(st, true)
				if err != nil {
					return err
				}
				mode := anchor.ModeRef
				if v := st.Config().Get("lossless.anchorMode"); v != "" {
					switch v {
					case "tags", "ref":
						mode = v
					default:
						return cli.WithHint(fmt.Errorf("git config lossless.anchorMode %q", v), "use ref or tags")
					}
				}
				if *tags {
					mode = anchor.ModeTags
				}
				var targets []anchor.Target
				switch {
				case *path != "":
					targets = []anchor.Target{{Remote: *path, Mode: anchor.ModePath, Dir: e.Dir}}
				case len(remotes) > 0:
					for _, r := range remotes {
						if err := gitstore.ValidRemote(r); err != nil {
							return cli.Usagef("%v", err)
						}
						targets = append(targets, anchor.Target{Remote: r, Mode: mode, Dir: e.Dir})
					}
				default:
					r := st.Config().Get("lossless.remote")
					if r == "" {
						r = "origin"
					}
					targets = []anchor.Target{{Remote: r, Mode: mode, Dir: e.Dir}}
				}
				made, err := anchor.MakeCheckpoint(ctx, st, key, time.Now())
				if err != nil {
					return err
				}
				c := made.Checkpoint
				out := e.Stdout
				if *fromHook || *asJSON {
					out = io.Discard
				}
				state := "unchanged since it was made"
				if made.New {
					state = "new, signed"
				}
				fmt.Fprintf(out, "checkpoint %d of %s/%s (%s): %s, %s\n", c.N, c.Machine, c.Clone, state, cli.Plural(len(c.Writers), "writer"), cli.Plural(len(c.Notes), "notes ref"))
				for _, s := range made.Skipped {
					fmt.Fprintf(e.Stderr, "git-lossless: warning: writer %s left out: its head cannot be read (git lossless verify says why)\n", s)
				}
				var archiveErr error
				if *withArchive {
					archiveErr = anchorArchive(ctx, e, st, targets, *allowSecrets, *allowIgnored, out)
				}
				sent := anchor.Send(ctx, st, made, targets)
				failed := 0
				for _, s := range sent {
					switch {
					case s.Err != nil:
						failed++
						fmt.Fprintf(e.Stderr, "git-lossless: anchor on %s failed: %v\n", s.Target.Remote, s.Err)
					case s.UpToDate:
						fmt.Fprintf(out, "anchored on %s: up to date (%s)\n", s.Target.Remote, s.Pushed)
					default:
						fmt.Fprintf(out, "anchored on %s: %s\n", s.Target.Remote, s.Pushed)
					}
				}
				if *asJSON {
					type sentJSON struct {
						Remote   string `json:"remote"`
						URL      string `json:"url"`
						Mode     string `json:"mode"`
						Pushed   string `json:"pushed,omitempty"`
						UpToDate bool   `json:"up_to_date"`
						Error    string `json:"error,omitempty"`
					}
					rep := struct {
						Machine string     `json:"machine"`
						Clone   string     `json:"clone"`
						N       int64      `json:"n"`
						New     bool       `json:"new"`
						Writers int        `json:"writers"`
						Notes   int        `json:"notes"`
						Sent    []sentJSON `json:"sent"`
					}{c.Machine, c.Clone, c.N, made.New, len(c.Writers), len(c.Notes), nil}
					for _, s := range sent {
						j := sentJSON{Remote: s.Target.Remote, URL: s.URL, Mode: s.Target.Mode, Pushed: s.Pushed, UpToDate: s.UpToDate}
						if s.Err != nil {
							j.Error = s.Err.Error()
						}
						rep.Sent = append(rep.Sent, j)
					}
					enc := json.NewEncoder(e.Stdout)
					enc.SetIndent("", "  ")
					if err := enc.Encode(rep); err != nil {
						return err
					}
				}
				switch {
				case failed > 0:
					return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("anchor failed on %d of %d targets; nothing is recorded as anchored there", failed, len(sent))},
						"check the remote's name and your access to it (`git ls-remote REMOTE`), then run `git lossless anchor push` again")
				case archiveErr != nil:
					return archiveErr
				}
				return nil
			}
		},
	}
}

// fromHookTimeout bounds an anchor push run from the pre-push hook.
const fromHookTimeout = 30 * time.Second

// loadAnchorKey loads (with create, making on first use) the anchor key;
// a new key is named after git config lossless.machine when set.
func loadAnchorKey(st *gitstore.Store, create bool) (*anchor.Key, error) {
	p, err := anchor.KeyPath()
	if err != nil {
		return nil, err
	}
	machine := st.Config().Get("lossless.machine")
	k, err := anchor.LoadKey(p, machine, create)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, cli.WithHint(fmt.Errorf("no anchor key at %s", p), "`git lossless anchor key` makes one")
		}
		return nil, fmt.Errorf("anchor key: %w", err)
	}
	return k, nil
}

// anchorArchive pushes the archive to each git target through the push
// gate, as git lossless push does; a refused or failed one makes the
// returned error (the anchors still go).
func anchorArchive(ctx context.Context, e *env, st *gitstore.Store, targets []anchor.Target, allowSecrets, allowIgnored bool, out io.Writer) error {
	pol, err := gitstore.PushPolicyFromConfig(st.Config())
	if err != nil {
		return cli.WithHint(err, "use true or false")
	}
	pol.AllowSecrets = pol.AllowSecrets || allowSecrets
	pol.AllowIgnored = pol.AllowIgnored || allowIgnored
	allowedBy := pushAllowedBy(allowSecrets, allowIgnored, false, pol.AllowSecrets && !allowSecrets, pol.AllowIgnored && !allowIgnored)
	var bad []string
	var refusedAll []gitstore.PushProblem
	for _, t := range targets {
		r := gitstore.Remote{URL: t.Remote, Dir: t.Dir}
		refs, err := st.Transport().LsRemote(ctx, r)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", t.Remote, err))
			continue
		}
		plan, err := st.Outgoing(ctx, refs)
		if err != nil {
			return err
		}
		probs, err := plan.Check(ctx, pol)
		if err != nil {
			return err
		}
		printPushPlan(out, t.Remote, plan)
		printPushProblems(out, probs, allowedBy)
		if refused := gitstore.Refused(probs); len(refused) > 0 {
			refusedAll = append(refusedAll, refused...)
			bad = append(bad, fmt.Sprintf("%s: %d item(s) held back, the archive was not pushed", t.Remote, len(refused)))
			continue
		}
		if plan.Empty() {
			fmt.Fprintf(out, "archive on %s: up to date\n", t.Remote)
			continue
		}
		pushed, err := st.Transport().Push(ctx, r, plan, false)
		printPushed(out, t.Remote, pushed)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", t.Remote, err))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	hint := "run `git lossless push --dry-run REMOTE` to see what is held back"
	if len(refusedAll) > 0 {
		hint = pushHint(refusedAll)
	}
	return cli.WithHint(cli.FailedError{Msg: "archive not pushed: " + strings.Join(bad, "; ")}, hint)
}

// anchorTarget reads a verify --anchor argument: a directory that is not
// a git repository is an anchor directory (path mode); anything else is a
// git remote (name, URL or repository path).
func anchorTarget(e *env, arg string) anchor.Target {
	p := joinDir(e.Dir, arg)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		_, headErr := os.Stat(filepath.Join(p, "HEAD"))
		_, dotErr := os.Stat(filepath.Join(p, ".git"))
		if headErr != nil && dotErr != nil {
			return anchor.Target{Remote: arg, Mode: anchor.ModePath, Dir: e.Dir}
		}
	}
	return anchor.Target{Remote: arg, Mode: anchor.ModeRef, Dir: e.Dir}
}

// printFindings prints a remote check's findings, each with its evidence.
func printFindings(w io.Writer, rc *anchor.RemoteCheck) {
	if rc.OK() {
		fmt.Fprintf(w, "OK     anchor %s: %d checkpoint chains, %d newly accepted\n", rc.Remote, rc.Clones, rc.Accepted)
		return
	}
	for _, f := range rc.Findings {
		who := f.Clone
		if f.Writer != "" {
			who = f.Writer + " (checkpoints of " + f.Clone + ")"
		}
		if who != "" {
			who += ": "
		}
		remote := f.Remote
		if remote == "" {
			remote = rc.Remote
		}
		fmt.Fprintf(w, "ALARM  %s on %s: %s%s\n", f.Kind, remote, who, f.Detail)
		if f.Evidence != "" {
			fmt.Fprintf(w, "       evidence (both signed checkpoints): %s\n", f.Evidence)
		}
		for _, part := range []struct {
			what string
			b    []byte
		}{{"seen before", f.Seen}, {"on the remote now", f.Now}} {
			if part.b == nil {
				continue
			}
			fmt.Fprintf(w, "       %s:\n", part.what)
			for _, l := range strings.Split(strings.TrimRight(string(part.b), "\n"), "\n") {
				fmt.Fprintf(w, "         %s\n", l)
			}
		}
	}
}

// anchorProtect installs the protect hook into the bare repository at dir
// (or, with check, only proves it) and says where it went, what it kept,
// who else runs it, and that the repository refused the probe. A failed
// proof is an error: the hook is not guarding anything.
func anchorProtect(ctx context.Context, e *env, dir string, check bool) error {
	protect := anchor.Protect
	if check {
		protect = anchor.CheckProtect
	}
	res, err := protect(ctx, dir)
	var pe *anchor.ProbeError
	if err != nil && !errors.As(err, &pe) {
		return err
	}
	if !check {
		verb := "installed"
		if res.Updated {
			verb = "updated"
		}
		fmt.Fprintf(e.Stdout, "%s %s, which refuses deletions and non-fast-forward updates of refs/lossless/*, refs/notes/lossless/* and refs/lossless-anchor/*, and changes to anchor tags\n", verb, res.Hook)
	}
	if res.HooksPath != "" {
		from := ""
		if res.HooksPathFrom != "" {
			from = ", from the " + res.HooksPathFrom
		}
		fmt.Fprintf(e.Stdout, "hooks directory %s is core.hooksPath (%s%s)\n", res.HooksDir, res.HooksPath, from)
	}
	if res.Shared {
		fmt.Fprintf(e.Stdout, "shared: %s is outside the repository; every repository whose git names it runs this hook too (it guards only git-lossless's refs there as well)\n", res.HooksDir)
	}
	if res.Chained != "" {
		fmt.Fprintf(e.Stdout, "the repository's own pre-receive hook runs after it, from %s\n", res.Chained)
	}
	if res.Unused != "" {
		fmt.Fprintf(e.Stdout, "note: %s, from an earlier protect, is not run by git (core.hooksPath names %s); it can be removed\n", res.Unused, res.HooksDir)
	}
	if pe != nil {
		// The check ran and the repository is not protected: exit 1, as
		// a failed verify; exit 3 is for what could not be done at all.
		return cli.FailedError{Msg: err.Error()}
	}
	fmt.Fprintf(e.Stdout, "proved: a push to %s was refused by the hook\n", res.Probe)
	if res.Owner != "" {
		fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", res.Owner)
	}
	return nil
}
