package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
)

func pushCmd() *command {
	return &command{
		Name:    "push",
		Summary: "send the archive to a remote, holding back secrets and git-ignored files",
		Usage:   "[REMOTE] [--dry-run] [--allow-secrets] [--allow-ignored] [--force] [--json]",
		Long: `Sends refs/lossless/* (every writer's events and the content they archive)
and refs/notes/lossless/* (receipts) to REMOTE — a remote name, URL or
path; default: git config lossless.remote, else origin — with your own git
(your SSH config and credential helpers), after checking what would leave.

First it asks the remote what it has (git ls-remote) and plans, per writer,
the batches it lacks: their commits, trees, events and the content blobs
their trees list (content removed by git lossless prune is not sent), and
per receipts' notes ref the commits, trees and notes it lacks. It prints
that plan — new events, spans, file versions, vault entries, encrypted
items and bytes per writer, notes and their bytes per notes ref, and every
object — then checks everything that would leave and refuses the whole
push (exit 1, nothing sent) when:

  secret            something that leaves holds a secret: content (the
                    scanner finds one, or the file version was marked holding
                    one when it was recorded), a field of an event (session,
                    agent, path, real_path, tool, ...), a commit message, a
                    tree entry's name, a ref name or a receipt (note); shown
                    by writer, entry and field, the secret masked
                    (--allow-secrets sends it anyway);
  ignored           a file version's path is ignored by git there (nested
                    .gitignore files, .git/info/exclude, core.excludesFile;
                    a tracked file is not ignored), or a span names such a
                    path — judged by the file it was read from: a symlink by
                    its target (the recorded real_path, and where it leads
                    now), a hard link by its other names (--allow-ignored);
  outside           the path, or the file it was read from, is outside the
                    repository, in another one, or in .git: git would never
                    commit it (--allow-ignored);
  ignore-unknown    the recording repository is not on this machine any
                    more, or git check-ignore failed there (--allow-ignored);
  non-fast-forward  the remote's ref is not an ancestor of this one (after
                    prune or redact rewrote the writer, or the remote holds
                    batches this machine lacks): --force replaces it.

Age-encrypted content (spans with lossless.encrypt, vault entries) cannot be
scanned: it is counted and listed as encrypted and sent as ciphertext.
Problems name the writer, entry, op and path, and a secret only by its kind
and a masked form (ghp****WXYZ), never its value.

To make a refused push safe instead of allowing it: git lossless redact
(secrets in spans), git lossless prune --path GLOB --reason TEXT (a file
version), then push again (with --force: pruning rewrites history).

Otherwise it runs git push with one explicit refspec per planned ref
(CHECKED-COMMIT:refs/lossless/W, never a '+': batches a writer appends
while the push runs wait for the next push), each as a compare-and-swap
(--force-with-lease=REF:VALUE-PLANNED-FROM): a remote that changed since
the plan refuses the update, so what is sent is what was checked. --force
lets non-fast-forward updates through the same way. It never prompts and
never reads standard input.

git config:
  lossless.remote              the default REMOTE
  lossless.push.allowSecrets   true: as --allow-secrets, always
  lossless.push.allowIgnored   true: as --allow-ignored, always

Exit status: 0 pushed (or nothing to push, or --dry-run found nothing
refused), 1 refused (nothing pushed) or git push rejected a ref, 2 usage,
3 the remote could not be reached or the archive read.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			dry := fs.Bool("dry-run", false, "print the plan and the verdict, push nothing")
			allowSecrets := fs.Bool("allow-secrets", false, "send content holding secrets anyway")
			allowIgnored := fs.Bool("allow-ignored", false, "send file versions git ignores, outside the repository, or whose ignore rules are unknown")
			force := fs.Bool("force", false, "replace the remote's refs where the update is not a fast-forward")
			asJSON := fs.Bool("json", false, "print the plan, the problems and the outcome as one JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return cli.Usagef("push takes at most one REMOTE; got %d arguments", len(args))
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				remote, from := "", "argument"
				if len(args) == 1 {
					remote = args[0]
				} else if v := st.Config().Get("lossless.remote"); v != "" {
					remote, from = v, "git config lossless.remote"
				} else {
					remote, from = "origin", "default"
				}
				if err := gitstore.ValidRemote(remote); err != nil {
					if from == "argument" {
						return cli.Usagef("%v", err)
					}
					return fmt.Errorf("%s: %w", from, err)
				}
				pol, err := gitstore.PushPolicyFromConfig(st.Config())
				if err != nil {
					return cli.WithHint(err, "use true or false")
				}
				cfgSecrets, cfgIgnored := pol.AllowSecrets, pol.AllowIgnored
				pol.AllowSecrets = pol.AllowSecrets || *allowSecrets
				pol.AllowIgnored = pol.AllowIgnored || *allowIgnored
				pol.Force = *force
				r := gitstore.Remote{URL: remote, Dir: e.Dir}
				refs, err := st.Transport().LsRemote(ctx, r)
				if err != nil {
					return cli.WithHint(err, "`git remote -v` lists this repository's remotes; name one, give a URL or path, or set `git config lossless.remote NAME`")
				}
				plan, err := st.Outgoing(ctx, refs)
				if err != nil {
					return err
				}
				probs, err := plan.Check(ctx, pol)
				if err != nil {
					return err
				}
				refused := gitstore.Refused(probs)
				rep := pushReport{Remote: remote, Plan: plan, Problems: probs, Refused: len(refused), DryRun: *dry}
				if rep.Problems == nil {
					rep.Problems = []gitstore.PushProblem{}
				}
				allowedBy := pushAllowedBy(*allowSecrets, *allowIgnored, *force, cfgSecrets, cfgIgnored)
				switch {
				case plan.Empty():
					rep.Verdict = "nothing to push"
				case len(refused) > 0:
					rep.Verdict = "refused"
				case *dry:
					rep.Verdict = "would push"
				default:
					rep.Verdict = "push"
				}
				if !*asJSON {
					printPushPlan(e.Stdout, remote, plan)
					printPushProblems(e.Stdout, probs, allowedBy)
				}
				if rep.Verdict == "push" {
					pushed, perr := st.Transport().Push(ctx, r, plan, *force)
					rep.Pushed = pushed
					if perr == nil {
						rep.Verdict = "pushed"
					} else {
						rep.Verdict = "failed"
					}
					if !*asJSON {
						printPushed(e.Stdout, remote, pushed)
					}
					if perr != nil {
						if *asJSON {
							printPushJSON(e.Stdout, rep)
						}
						return cli.WithHint(cli.FailedError{Msg: perr.Error()}, "the remote changed since the plan, or refused the update: run `git lossless push` again to re-plan against it")
					}
				}
				if *asJSON {
					if err := printPushJSON(e.Stdout, rep); err != nil {
						return err
					}
				} else {
					switch rep.Verdict {
					case "nothing to push":
						fmt.Fprintf(e.Stdout, "nothing to push: %s has everything (%d refs up to date)\n", remote, plan.UpToDate)
					case "would push":
						fmt.Fprintf(e.Stdout, "dry run: the push would go through; nothing was pushed\n")
					}
				}
				if len(refused) > 0 && !plan.Empty() {
					verb := "refused"
					if *dry {
						verb = "would be refused"
					}
					return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("push %s: %d item(s) held back; nothing was pushed", verb, len(refused))}, pushHint(refused))
				}
				return nil
			}
		},
	}
}

// pushReport is the --json output.
type pushReport struct {
	Remote   string                 `json:"remote"`
	Verdict  string                 `json:"verdict"` // nothing to push, refused, would push, pushed, failed
	DryRun   bool                   `json:"dry_run"`
	Refused  int                    `json:"refused"`
	Plan     *gitstore.Outgoing     `json:"plan"`
	Problems []gitstore.PushProblem `json:"problems"`
	Pushed   []gitstore.PushedRef   `json:"pushed,omitempty"`
}

func printPushJSON(w io.Writer, rep pushReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// pushAllowedBy names what allows each kind of problem, for the listing.
func pushAllowedBy(flagSecrets, flagIgnored, force, cfgSecrets, cfgIgnored bool) map[gitstore.ProblemKind]string {
	m := map[gitstore.ProblemKind]string{}
	sec := ""
	switch {
	case flagSecrets:
		sec = "--allow-secrets"
	case cfgSecrets:
		sec = "git config lossless.push.allowSecrets"
	}
	ign := ""
	switch {
	case flagIgnored:
		ign = "--allow-ignored"
	case cfgIgnored:
		ign = "git config lossless.push.allowIgnored"
	}
	m[gitstore.ProblemSecret] = sec
	m[gitstore.ProblemIgnored], m[gitstore.ProblemOutside], m[gitstore.ProblemIgnoreUnknown] = ign, ign, ign
	if force {
		m[gitstore.ProblemNonFastForward] = "--force"
	}
	return m
}

func printPushPlan(w io.Writer, remote string, o *gitstore.Outgoing) {
	if o.Empty() {
		return
	}
	o = o.Display() // names holding a secret are shown masked
	fmt.Fprintf(w, "to %s:\n", gitstore.QuotePath(remote))
	if len(o.Writers) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WRITER\tENTRIES\tBATCHES\tEVENTS\tSPANS\tFILES\tVAULT\tENCRYPTED\tBYTES\tUPDATE")
		for _, u := range o.Writers {
			c := u.Counts
			entries := "-"
			if u.ToSeq > 0 {
				entries = fmt.Sprintf("%d-%d", u.FromSeq, u.ToSeq)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", u.Name, entries, c.Batches, c.Events,
				c.Spans, c.FileVersions, c.Vault, c.Encrypted, pushBytes(c.Bytes), pushUpdate(u))
		}
		tw.Flush()
	}
	if len(o.Notes) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NOTES REF (receipts)\tCOMMITS\tNOTES\tBYTES\tUPDATE")
		for _, u := range o.Notes {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", u.Ref, u.Counts.Batches, u.Counts.Blobs, pushBytes(u.Counts.Bytes), pushUpdate(u))
		}
		tw.Flush()
	}
	t := o.Total
	fmt.Fprintf(w, "total: %s, %s, %s (%s, %s, %s), %d encrypted, %s, %s; %s; %s, %s",
		cli.Plural(len(o.Writers), "writer"), cli.Plural(t.Batches, "batch"), cli.Plural(t.Events, "event"), cli.Plural(t.Spans, "span"),
		cli.Plural(t.FileVersions, "file version"), cli.Plural(t.Vault, "vault entry"), t.Encrypted, cli.Plural(t.Blobs, "blob"),
		pushBytes(t.Bytes), cli.Plural(len(o.Notes), "notes ref"), cli.Plural(t.Objects, "object"), pushBytes(t.ObjectBytes))
	if t.Pruned > 0 {
		fmt.Fprintf(w, "; %d events' content pruned, not sent", t.Pruned)
	}
	fmt.Fprintln(w)
	if enc := pushEncrypted(o.Items); len(enc) > 0 {
		fmt.Fprintf(w, "encrypted, not scanned (sent as age ciphertext): %s\n", strings.Join(enc, "; "))
	}
	for _, s := range o.Skipped {
		fmt.Fprintf(w, "not pushed: %s is not a valid writer name\n", gitstore.QuotePath(s))
	}
}

func pushUpdate(u gitstore.RefUpdate) string {
	switch {
	case u.Err != "":
		return "unreadable"
	case u.Remote == "":
		return "new"
	case u.RemoteMissing:
		return "non-fast-forward (the remote has history this machine lacks)"
	case u.NonFastForward:
		return "non-fast-forward (rewritten here)"
	}
	return "fast-forward"
}

// pushEncrypted lists the encrypted items as "writer #a-b, #c" per writer.
func pushEncrypted(items []gitstore.OutgoingItem) []string {
	by := map[string][]int64{}
	var names []string
	for _, it := range items {
		if !it.Encrypted {
			continue
		}
		if _, ok := by[it.Writer]; !ok {
			names = append(names, it.Writer)
		}
		by[it.Writer] = append(by[it.Writer], it.Seq)
	}
	sort.Strings(names)
	var out []string
	for _, w := range names {
		seqs := by[w]
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		var runs []string
		for i := 0; i < len(seqs); {
			j := i
			for j+1 < len(seqs) && seqs[j+1] <= seqs[j]+1 {
				j++
			}
			if seqs[i] == seqs[j] {
				runs = append(runs, fmt.Sprintf("#%d", seqs[i]))
			} else {
				runs = append(runs, fmt.Sprintf("#%d-%d", seqs[i], seqs[j]))
			}
			i = j + 1
		}
		out = append(out, w+" "+strings.Join(runs, ", "))
	}
	return out
}

func printPushProblems(w io.Writer, probs []gitstore.PushProblem, allowedBy map[gitstore.ProblemKind]string) {
	var refused, allowed []gitstore.PushProblem
	for _, p := range probs {
		if p.Allowed {
			allowed = append(allowed, p)
		} else {
			refused = append(refused, p)
		}
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "refused (%d):\n", len(refused))
		for _, p := range refused {
			fmt.Fprintf(w, "  %-16s %s\n", p.Kind, p.String())
		}
	}
	if len(allowed) > 0 {
		fmt.Fprintf(w, "allowed (%d):\n", len(allowed))
		for _, p := range allowed {
			by := allowedBy[p.Kind]
			if by != "" {
				by = " [" + by + "]"
			}
			fmt.Fprintf(w, "  %-16s %s%s\n", p.Kind, p.String(), by)
		}
	}
}

func printPushed(w io.Writer, remote string, pushed []gitstore.PushedRef) {
	if len(pushed) == 0 {
		return
	}
	fmt.Fprintf(w, "pushed to %s:\n", gitstore.QuotePath(remote))
	for _, p := range pushed {
		state := "ok"
		if !p.OK {
			state = "REJECTED"
		}
		fmt.Fprintf(w, "  %-8s %s %s\n", state, gitstore.QuotePath(p.Ref), pushText(p.Summary))
	}
}

// pushHint says how to get a refused push through, by kind.
func pushHint(refused []gitstore.PushProblem) string {
	has := map[gitstore.ProblemKind]bool{}
	spans, meta := false, false
	for _, p := range refused {
		has[p.Kind] = true
		if p.Kind == gitstore.ProblemSecret && p.Content == gitstore.ContentSpan {
			spans = true
		}
		if p.Kind == gitstore.ProblemSecret && p.Field != "" || p.Content == gitstore.ContentNote || p.Content == gitstore.ContentUnnamed {
			meta = true
		}
	}
	var parts []string
	if has[gitstore.ProblemSecret] {
		h := "secrets: remove them with `git lossless prune --path GLOB --reason TEXT`"
		if spans {
			h = "secrets: `git lossless redact` redacts spans, `git lossless prune --path GLOB --reason TEXT` removes file versions"
		}
		if meta {
			h += " (a secret in an event's fields, a commit, a tree, a ref name or a receipt is no file version: prune keeps events, so only --allow-secrets, to a remote you trust, sends it)"
		}
		parts = append(parts, h+", or send them with --allow-secrets")
	}
	if has[gitstore.ProblemIgnored] || has[gitstore.ProblemOutside] || has[gitstore.ProblemIgnoreUnknown] {
		parts = append(parts, "paths git would not commit: `git lossless prune --path GLOB --reason TEXT`, or --allow-ignored")
	}
	if has[gitstore.ProblemNonFastForward] {
		parts = append(parts, "non-fast-forward: --force replaces the remote's copy")
	}
	if has[gitstore.ProblemUnreadable] {
		parts = append(parts, "unreadable: `git lossless verify` shows the damage")
	}
	return strings.Join(parts, "; ")
}

// pushText is git's text as it is when it holds no control character,
// else quoted.
func pushText(s string) string {
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return gitstore.QuotePath(s)
		}
	}
	return s
}

func pushBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	case n < 1024*1024*1024:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1024*1024*1024))
}
