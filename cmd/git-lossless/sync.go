package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
)

func syncCmd() *command {
	return &command{
		Name:    "sync",
		Summary: "share the archive through a git remote: fetch other machines' writers, push ours",
		Usage:   "[REMOTE] [--dry-run] [--allow-secrets] [--allow-ignored] [--json]",
		Long: `Fetches the remote's writers (refs/lossless/*), notes refs (receipts) and
checkpoints into tracking refs (refs/lossless-tracking/<remote id>/..., never
over a local ref), then, per writer and notes ref:

  equal       nothing to do
  behind      the remote has more: fast-forwarded here, after its chain is
              verified against every head this machine saw (witness, anchors)
  new-there   only on the remote: adopted here, verified the same way
  ahead       this machine has more: pushed
  new-here    only here: pushed
  diverged    neither history contains the other (rewritten on one side):
              an alarm; neither side is changed, the remote's is kept under
              its tracking ref
  refused     the remote's chain does not verify here: not adopted
  gone-there  the remote had it before (fetched or pushed) and lacks it
              now: an alarm, and it is not pushed again (git lossless push
              sends it back on purpose)
  foreign-append
              the remote extends a writer this clone wrote, or holds one
              named with this clone's id that it never wrote: another clone
              wrote under this clone's name. An alarm; never adopted, this
              clone's writer is not pushed over it, and the remote's head is
              kept under refs/lossless-tracking/<remote id>/alarm/

A clone appends only to its own writers (gitstore FORMAT.md section 2), so
two machines never write the same ref: there is nothing to merge. Alarms
stay open — verify, doctor, seal_status and receipt verify report them —
until a sync no longer finds them. The remote's checkpoints are checked
as verify --anchor does. What is pushed goes through the same gate as git
lossless push: the plan is listed, and content holding secrets or git-ignored
files' content is refused unless allowed. A push that loses a race with
another machine's sync is retried after a new fetch (up to 5 times); it
never forces. After a sync, log, verify and receipt verify see the union.

REMOTE defaults to git config lossless.remote, else origin. Exit 1 on any
alarm or refusal.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			dry := fs.Bool("dry-run", false, "fetch, classify and plan; adopt and push nothing")
			allowSecrets := fs.Bool("allow-secrets", false, "push content holding secrets anyway")
			allowIgnored := fs.Bool("allow-ignored", false, "push file versions git ignores anyway")
			asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return cli.Usagef("usage: git lossless sync [REMOTE]")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				if st.Location().Embedded {
					return cli.WithHint(errors.New("sync needs a repository; this is the embedded archive"), "run it inside the repository whose archive you share")
				}
				remote := st.Config().Get("lossless.remote")
				if len(args) == 1 {
					remote = args[0]
				}
				if remote == "" {
					remote = "origin"
				}
				if err := gitstore.ValidRemote(remote); err != nil {
					return cli.Usagef("%v", err)
				}
				pol, err := gitstore.PushPolicyFromConfig(st.Config())
				if err != nil {
					return cli.WithHint(err, "use true or false")
				}
				cfgSecrets, cfgIgnored := pol.AllowSecrets, pol.AllowIgnored
				pol.AllowSecrets = pol.AllowSecrets || *allowSecrets
				pol.AllowIgnored = pol.AllowIgnored || *allowIgnored
				res, err := anchor.Sync(ctx, st, anchor.SyncOptions{
					Target: anchor.Target{Remote: remote, Mode: anchor.ModeRef, Dir: e.Dir},
					Policy: pol, DryRun: *dry, Now: time.Now(),
				})
				if err != nil {
					return cli.WithHint(fmt.Errorf("sync with %s: %w", remote, err), "`git ls-remote REMOTE` shows whether the remote can be reached")
				}
				if *asJSON {
					enc := json.NewEncoder(e.Stdout)
					enc.SetIndent("", "  ")
					if err := enc.Encode(res); err != nil {
						return err
					}
				} else {
					counts := map[string]int{}
					for _, s := range res.Refs {
						counts[s.State]++
						switch s.State {
						case anchor.StateDiverged, anchor.StateRefused, anchor.StateGoneThere, anchor.StateForeignAppend:
							fmt.Fprintf(e.Stdout, "ALARM  %s %s: %s\n", s.State, s.Ref, s.Detail)
						}
					}
					fmt.Fprintf(e.Stdout, "sync with %s: %d equal, %d adopted (behind %d, new there %d), %d to push (ahead %d, new here %d), %d diverged, %d refused, %d gone there, %d foreign-append\n",
						remote, counts[anchor.StateEqual], res.Adopted, counts[anchor.StateBehind], counts[anchor.StateNewThere],
						counts[anchor.StateAhead]+counts[anchor.StateNewHere], counts[anchor.StateAhead], counts[anchor.StateNewHere],
						counts[anchor.StateDiverged], counts[anchor.StateRefused], counts[anchor.StateGoneThere], counts[anchor.StateForeignAppend])
					printFindings(e.Stdout, res.Anchors)
					if res.Plan != nil && !res.Plan.Empty() {
						printPushPlan(e.Stdout, remote, res.Plan)
						printPushProblems(e.Stdout, res.Problems, pushAllowedBy(*allowSecrets, *allowIgnored, false, cfgSecrets, cfgIgnored))
					}
					if len(res.Pushed) > 0 {
						printPushed(e.Stdout, remote, res.Pushed)
					}
					fmt.Fprintf(e.Stdout, "%s\n", res.Verdict)
				}
				if refused := gitstore.Refused(res.Problems); len(refused) > 0 {
					return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("sync: %d item(s) held back; nothing was pushed", len(refused))}, pushHint(refused))
				}
				if n := res.Alarms(); n > 0 {
					return cli.FailedError{Msg: fmt.Sprintf("sync: %s", cli.Plural(n, "alarm"))}
				}
				return nil
			}
		},
	}
}
