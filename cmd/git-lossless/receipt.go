package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

func receiptCmd() *command {
	return &command{
		Name:    "receipt",
		Summary: "build, show and verify signed receipts: what the model saw for a commit",
		Usage:   "[REV] [--refresh] [--json] | show REV [--json] | verify [REV | --all] [--json] [--keyring FILE] | list [--json] | carry OLD..NEW [--force] [--json]",
		Long: `A receipt answers, for one commit, which model contexts touched the files it
changes, what exactly they saw (blob ids), whether they edited from a current
or a stale view, and who changed things after them. It is stored as a
clear-signed git note on refs/notes/lossless/receipts-<key id>, in a notes
commit signed by the same key; the package doc of ./receipt specifies it.

  git lossless receipt [REV]         build the receipt of REV (default HEAD),
                                     store it and print it; if one is stored
                                     already, print that (--refresh rebuilds)
  git lossless receipt show REV      print the stored receipts of REV
  git lossless receipt verify REV    verify them; --all verifies every receipt
  git lossless receipt list          list every stored receipt
  git lossless receipt carry OLD..NEW
                                     after a rewrite git ran no hook for (a
                                     host's squash or rebase merge,
                                     filter-branch): give each commit of
                                     OLD..NEW that replaces commits of
                                     NEW..OLD with receipts a carried receipt

A rewritten commit (amend, rebase, cherry-pick) gets a receipt of its own,
rebuilt and signed for it, whose "carried" lines name the commits it
replaces and whose window is theirs: ` + "`git lossless install git-hooks`" + ` adds
post-rewrite and post-commit hooks that do this as git rewrites. carry
matches a new commit to an old one by ` + "`git patch-id --stable`" + `, or to a
run of consecutive old commits whose net change is exactly the new commit's
change (a squash: same paths, same resulting blobs and modes). It prints
what it matched and the old receipts nothing matched; it never replaces a
receipt a commit has unless --force, so a second run adds nothing.
--rewritten HOW reads git's post-rewrite input on stdin; --cherry-pick
carries HEAD from CHERRY_PICK_HEAD (the hooks use these).

Signing needs a key: ` + "`git lossless key generate`" + `, or git config
lossless.signingKey naming an armored secret key file. Verify trusts that
key, the public key files in git config lossless.trustedKeys (multi-valued)
and --keyring files. Plain git and gpg read the same notes:

  git notes --ref=lossless/receipts-<key id> show HEAD | gpg --verify
  git verify-commit refs/notes/lossless/receipts-<key id>
  git log --notes='lossless/*'

Share receipts with: git push origin '+refs/notes/lossless/*:refs/notes/lossless/*' 'refs/lossless/*:refs/lossless/*'
Exit 1 when verify finds a problem or there is no receipt to show.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			refresh := fs.Bool("refresh", false, "build the receipt anew even when one is stored")
			asJSON := fs.Bool("json", false, "print JSON")
			all := fs.Bool("all", false, "verify: every stored receipt")
			keyrings := fs.StringArray("keyring", nil, "verify: also trust the public keys in this file (repeatable)")
			noTokens := fs.Bool("no-tokens", false, "build without counting tokens")
			force := fs.Bool("force", false, "carry: replace a receipt the new commit already has")
			fromHook := fs.Bool("from-hook", false, "carry: run from a git hook: quiet, one stderr line on failure, exit 0")
			rewritten := fs.String("rewritten", "", "carry: read git's post-rewrite input (OLD NEW lines) on stdin; the value is git's argument (amend, rebase)")
			cherry := fs.Bool("cherry-pick", false, "carry: carry HEAD from CHERRY_PICK_HEAD (the post-commit hook)")
			return func(ctx context.Context, e *env, args []string) error {
				sub := ""
				if len(args) > 0 {
					switch args[0] {
					case "show", "verify", "list", "carry":
						sub, args = args[0], args[1:]
					}
				}
				o := receiptOpts{refresh: *refresh, json: *asJSON, all: *all, keyrings: *keyrings, noTokens: *noTokens}
				switch sub {
				case "":
					if o.all {
						return cli.Usagef("--all goes with `receipt verify`")
					}
					if len(args) > 1 {
						return cli.Usagef("receipt takes at most one revision")
					}
					return runReceipt(ctx, e, firstArg(args), o)
				case "show":
					if len(args) != 1 {
						return cli.Usagef("receipt show needs one revision")
					}
					return runReceiptShow(ctx, e, args[0], o)
				case "verify":
					if o.all == (len(args) > 0) && len(args) > 0 {
						return cli.Usagef("give REV or --all, not both")
					}
					if len(args) > 1 {
						return cli.Usagef("receipt verify takes one revision")
					}
					return runReceiptVerify(ctx, e, firstArg(args), o)
				case "carry":
					co := carryOpts{force: *force, fromHook: *fromHook, rewritten: *rewritten, cherry: *cherry, json: *asJSON, noTokens: *noTokens}
					if (len(args) == 1) == (co.rewritten != "" || co.cherry) || len(args) > 1 {
						return cli.Usagef("receipt carry takes OLD..NEW, or --rewritten / --cherry-pick")
					}
					return runReceiptCarry(ctx, e, firstArg(args), co)
				case "list":
					if len(args) > 0 {
						return cli.Usagef("receipt list takes no arguments")
					}
					return runReceiptList(ctx, e, o)
				}
				return nil
			}
		},
	}
}

type receiptOpts struct {
	refresh, json, all, noTokens bool
	keyrings                     []string
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// openRepoStore opens the archive and insists on a repository.
func openRepoStore(e *env) (*gitstore.Store, error) {
	st, err := cli.OpenStore(e)
	if err != nil {
		return nil, err
	}
	if st.Location().Embedded {
		return nil, cli.WithHint(errors.New("receipts describe commits, and this is not a git repository"), "run it inside the repository (or use -C DIR)")
	}
	return st, nil
}

func resolve(ctx context.Context, e *env, st *gitstore.Store, rev string) (string, error) {
	dir := st.Location().WorkTree
	if dir == "" {
		dir = st.Location().GitDir
	}
	id, err := receipt.ResolveRev(ctx, dir, rev)
	if errors.Is(err, receipt.ErrNoRevision) {
		return "", cli.Usagef("%v", err)
	}
	return id, err
}

// signingKeyPath is lossless.signingKey (relative paths against the work
// tree, ~ expanded) or the default key file.
func signingKeyPath(st *gitstore.Store) (path string, configured bool, err error) {
	if p := st.Config().Get("lossless.signingKey"); p != "" {
		return expandPath(st, p), true, nil
	}
	p, err := receipt.DefaultKeyPath()
	return p, false, err
}

func expandPath(st *gitstore.Store, p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		base := st.Location().WorkTree
		if base == "" {
			base = st.Location().CommonDir
		}
		return filepath.Join(base, p)
	}
	return p
}

func loadSigningKey(st *gitstore.Store) (*receipt.Key, error) {
	p, configured, err := signingKeyPath(st)
	if err != nil {
		return nil, err
	}
	k, err := receipt.LoadKey(p)
	if errors.Is(err, os.ErrNotExist) {
		if configured {
			return nil, cli.WithHint(fmt.Errorf("signing key %s (git config lossless.signingKey) does not exist", p), "fix the path, or unset it to use the default key")
		}
		return nil, cli.WithHint(fmt.Errorf("no signing key at %s", p), "create one with `git lossless key generate`, or point git config lossless.signingKey at an armored secret key")
	}
	return k, err
}

// trustedKeyring: the signing key's public part (when there is one), the
// lossless.trustedKeys files and --keyring files.
func trustedKeyring(st *gitstore.Store, extra []string) (*receipt.Keyring, error) {
	kr := &receipt.Keyring{}
	if k, err := loadSigningKey(st); err == nil {
		if err := kr.Add(k); err != nil {
			return nil, err
		}
	}
	for _, p := range st.Config().GetAll("lossless.trustedKeys") {
		if err := kr.AddFile(expandPath(st, p)); err != nil {
			return nil, fmt.Errorf("git config lossless.trustedKeys: %w", err)
		}
	}
	for _, p := range extra {
		if err := kr.AddFile(p); err != nil {
			return nil, fmt.Errorf("--keyring: %w", err)
		}
	}
	return kr, nil
}

func runReceipt(ctx context.Context, e *env, rev string, o receiptOpts) error {
	st, err := openRepoStore(e)
	if err != nil {
		return err
	}
	commit, err := resolve(ctx, e, st, rev)
	if err != nil {
		return err
	}
	k, err := loadSigningKey(st)
	if err != nil {
		return err
	}
	if !o.refresh {
		s, err := receipt.Load(ctx, st, k.Writer(), commit)
		switch {
		case err == nil && s.Parsed != nil:
			return printStored(e, s, o.json, "stored")
		case err == nil:
			return cli.WithHint(fmt.Errorf("the stored receipt of %s does not parse: %v", cli.Short12(commit), s.Err), "`git lossless receipt --refresh` replaces it")
		case !errors.Is(err, gitstore.ErrNoNote):
			return err
		}
	}
	r, err := receipt.Build(ctx, st, commit, receipt.Options{NoTokens: o.noTokens, HarnessOf: harnesses.WriterHarness()})
	if err != nil {
		return err
	}
	notesCommit, note, err := receipt.Save(ctx, st, r, k)
	if err != nil {
		return fmt.Errorf("store receipt: %w", err)
	}
	n := gitstore.Note{Writer: k.Writer(), Target: commit}
	s := receipt.Stored{Writer: k.Writer(), Note: n, Text: note, Parsed: r}
	what := "built and stored in notes commit " + cli.Short12(notesCommit)
	return printStored(e, s, o.json, what)
}

func runReceiptShow(ctx context.Context, e *env, rev string, o receiptOpts) error {
	st, err := openRepoStore(e)
	if err != nil {
		return err
	}
	commit, err := resolve(ctx, e, st, rev)
	if err != nil {
		return err
	}
	found, err := receipt.Find(ctx, st, commit)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("no receipt for %s", cli.Short12(commit))}, "build one with `git lossless receipt "+rev+"`; receipts of other machines arrive with git fetch origin '+refs/notes/lossless/*:refs/notes/lossless/*'")
	}
	for i, s := range found {
		if s.Parsed == nil {
			return cli.FailedError{Msg: fmt.Sprintf("the receipt of %s on %s does not parse: %v", cli.Short12(commit), s.Writer, s.Err)}
		}
		if i > 0 && !o.json {
			fmt.Fprintln(e.Stdout)
		}
		if err := printStored(e, s, o.json, "stored"); err != nil {
			return err
		}
	}
	return nil
}

func runReceiptVerify(ctx context.Context, e *env, rev string, o receiptOpts) error {
	st, err := openRepoStore(e)
	if err != nil {
		return err
	}
	var found []receipt.Stored
	if o.all {
		if found, err = receipt.All(ctx, st); err != nil {
			return err
		}
		if len(found) == 0 {
			return cli.FailedError{Msg: "no receipts in this repository"}
		}
	} else {
		commit, err := resolve(ctx, e, st, rev)
		if err != nil {
			return err
		}
		if found, err = receipt.Find(ctx, st, commit); err != nil {
			return err
		}
		if len(found) == 0 {
			return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("no receipt for %s", cli.Short12(commit))}, "build one with `git lossless receipt`, or fetch refs/notes/lossless/*")
		}
	}
	kr, err := trustedKeyring(st, o.keyrings)
	if err != nil {
		return err
	}
	bad := 0
	enc := json.NewEncoder(e.Stdout)
	for _, s := range found {
		res := receipt.Verify(ctx, st, s, kr)
		if !res.OK() {
			bad++
		}
		if o.json {
			out := struct {
				*receipt.Result
				OK bool `json:"ok"`
			}{res, res.OK()}
			if err := enc.Encode(out); err != nil {
				return err
			}
			continue
		}
		cli.PrintVerify(e.Stdout, res)
	}
	if !o.json {
		fmt.Fprintf(e.Stdout, "%s, %d ok, %d failed\n", cli.Plural(len(found), "receipt"), len(found)-bad, bad)
	}
	if bad > 0 {
		return cli.FailedError{Msg: fmt.Sprintf("%d of %d receipts failed verification", bad, len(found))}
	}
	return nil
}

func runReceiptList(ctx context.Context, e *env, o receiptOpts) error {
	st, err := openRepoStore(e)
	if err != nil {
		return err
	}
	all, err := receipt.All(ctx, st)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(e.Stdout)
		for _, s := range all {
			item := map[string]any{"commit": s.Note.Target, "ref": gitstore.NotesPrefix + s.Writer, "note": s.Note.Blob}
			if s.Parsed != nil {
				c := s.Parsed.Coverage
				item["issued"] = s.Parsed.Issued.Format(time.RFC3339)
				item["paths"] = len(s.Parsed.Paths)
				item["statuses"] = map[string]int{note.Written: c.Written, note.Seen: c.Seen, note.ChangedAfter: c.ChangedAfter, note.Unseen: c.Unseen, note.Excluded: c.Excluded}
				item["contexts"] = len(s.Parsed.Contexts)
			} else {
				item["error"] = fmt.Sprint(s.Err)
			}
			if err := enc.Encode(item); err != nil {
				return err
			}
		}
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintln(e.Stdout, "no receipts")
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMIT\tISSUED\tKEY\tPATHS\tWRITTEN\tSEEN\tCHANGED-AFTER\tUNSEEN\tEXCLUDED\tCONTEXTS")
	for _, s := range all {
		key := strings.ToUpper(receipt.KeyIDOfWriter(s.Writer))
		if s.Parsed == nil {
			fmt.Fprintf(tw, "%s\t(unreadable: %v)\t%s\n", cli.Short12(s.Note.Target), s.Err, key)
			continue
		}
		r, c := s.Parsed, s.Parsed.Coverage
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", cli.Short12(s.Note.Target), r.Issued.Format("2006-01-02 15:04"), key,
			len(r.Paths), c.Written, c.Seen, c.ChangedAfter, c.Unseen, c.Excluded, len(r.Contexts))
	}
	return tw.Flush()
}

// printStored prints a receipt readably, or as JSON.
func printStored(e *env, s receipt.Stored, asJSON bool, how string) error {
	r := s.Parsed
	if asJSON {
		v := receiptJSON(r)
		v["ref"] = gitstore.NotesPrefix + s.Writer
		v["key"] = strings.ToUpper(receipt.KeyIDOfWriter(s.Writer))
		enc := json.NewEncoder(e.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	bw := bufio.NewWriter(e.Stdout)
	defer bw.Flush()
	cli.WriteReceipt(bw, r, s.Writer, how)
	return nil
}

// receiptJSON is the JSON form: the receipt with references resolved to
// writer names.
func receiptJSON(r *note.Receipt) map[string]any {
	ref := func(x note.Ref) any {
		if x.IsZero() {
			return nil
		}
		return map[string]any{"writer": r.Writers[x.W-1].Name, "seq": x.Seq}
	}
	var paths []any
	for _, p := range r.Paths {
		paths = append(paths, map[string]any{"path": p.Path, "change": p.Change, "status": p.Status, "mode": p.Mode, "blob": p.Blob, "evidence": ref(p.Evidence)})
	}
	var ctxs []any
	for i, c := range r.Contexts {
		var spans []any
		for _, s := range c.Spans {
			spans = append(spans, ref(s))
		}
		agent := c.Agent
		if agent == "" {
			agent = "main"
		}
		var hs []string // the context's harnesses ([] when none is known)
		if c.Harness != "" {
			hs = strings.Split(c.Harness, ",")
		}
		ctxs = append(ctxs, map[string]any{"id": note.ContextID(i), "session": c.Session, "agent": agent, "harness": append([]string{}, hs...), "events": c.Events,
			"first": c.First.Format(time.RFC3339), "last": c.Last.Format(time.RFC3339), "spans": spans,
			"tokens": map[string]int64{"files": c.FileTokens, "spans": c.SpanTokens}})
	}
	var reads []any
	for _, rd := range r.Reads {
		reads = append(reads, map[string]any{"context": note.ContextID(rd.Context - 1), "state": rd.State, "ops": rd.Ops, "blob": rd.Blob, "view": rd.View, "evidence": ref(rd.Evidence), "path": rd.Path})
	}
	var writers []any
	for _, w := range r.Writers {
		writers = append(writers, map[string]any{"writer": w.Name, "from": w.From, "to": w.To, "head_seq": w.HeadSeq, "head_seal": w.HeadSeal})
	}
	var window any = map[string]any{"to": r.WindowEnd()}
	if r.HasFrom {
		window = map[string]any{"from": r.From, "to": r.WindowEnd()}
	}
	c := r.Coverage
	var carried []any // absent from JSON unless carried
	for _, cs := range r.Carried {
		src := map[string]any{"commit": cs.Commit, "to": cs.To}
		if cs.HasFrom {
			src["from"] = cs.From
		}
		carried = append(carried, src)
	}
	out := map[string]any{
		"format": note.Header, "commit": r.Commit, "tree": r.Tree, "parents": r.Parents, "committed": r.Committed,
		"window": window, "issued": r.Issued.Format(time.RFC3339), "tokenizer": note.Tokenizer,
		"paths": paths, "contexts": ctxs, "reads": reads, "writers": writers,
		"tokens": map[string]int64{"files": r.FileTokens(), "spans": r.SpanTokens()},
		"coverage": map[string]any{"written": c.Written, "seen": c.Seen, "changed_after": c.ChangedAfter, "unseen": c.Unseen,
			"excluded": c.Excluded, "events": c.Events, "sources": c.Sources},
		"notes": r.Notes,
	}
	if len(carried) > 0 {
		out["carried_from"] = carried
	}
	return out
}

func keyCmd() *command {
	return &command{
		Name:    "key",
		Summary: "create or export the key receipts are signed with",
		Usage:   "generate [--name N] [--email E] [--force] | export",
		Long: `Receipts are clear-signed with an OpenPGP key of their own:

  git lossless key generate   create an Ed25519 (v4) OpenPGP signing key at
                              os.UserConfigDir()/git-lossless/signing-key.asc
                              (mode 0600), or at git config lossless.signingKey
  git lossless key export     print its armored public key: give it to whoever
                              verifies your receipts (gpg --import, or git config
                              lossless.trustedKeys FILE)

The secret key is stored without a passphrase: protect the file. Receipts it
signs are stored on refs/notes/lossless/receipts-<key id>.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			name := fs.String("name", "", "user id name (default: git config user.name, else git-lossless receipts)")
			email := fs.String("email", "", "user id email (default: git config user.email)")
			force := fs.Bool("force", false, "generate: replace an existing key file")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 || (args[0] != "generate" && args[0] != "export") {
					return cli.Usagef("key needs generate or export")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				if args[0] == "export" {
					k, err := loadSigningKey(st)
					if err != nil {
						return err
					}
					pub, err := k.ArmoredPublic()
					if err != nil {
						return err
					}
					_, err = io.WriteString(e.Stdout, pub)
					return err
				}
				p, _, err := signingKeyPath(st)
				if err != nil {
					return err
				}
				n, m := *name, *email
				if n == "" {
					n = st.Config().Get("user.name")
				}
				if n == "" {
					n = "git-lossless receipts"
				}
				if m == "" {
					m = st.Config().Get("user.email")
				}
				if strings.ContainsAny(n+m, "()<>\x00") {
					return cli.Usagef("--name and --email must not contain ( ) < >")
				}
				if _, err := os.Stat(p); err == nil && !*force {
					return cli.WithHint(fmt.Errorf("a key exists at %s", p), "keep using it, or replace it with --force (receipts it signed stay verifiable only with its public key: export it first)")
				}
				k, err := receipt.GenerateKey(n, m)
				if err != nil {
					return err
				}
				if err := k.WriteFile(p, *force); err != nil {
					return err
				}
				fmt.Fprintf(e.Stdout, "created an Ed25519 signing key at %s (mode 0600)\n", p)
				fmt.Fprintf(e.Stdout, "  key id      %s\n  fingerprint %s\n  user id     %s\n", strings.ToUpper(k.ID()), receipt.Fingerprint(k.Entity), receipt.UserID(k.Entity))
				fmt.Fprintf(e.Stdout, "receipts will be stored on %s%s\n", gitstore.NotesPrefix, k.Writer())
				fmt.Fprintf(e.Stdout, "for plain gpg: git lossless key export | gpg --import\n")
				return nil
			}
		},
	}
}
