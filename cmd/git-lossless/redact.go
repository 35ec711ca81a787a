package main

import (
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

func redactCmd() *command {
	return &command{
		Name:    "redact",
		Summary: "redact secrets in conversation spans archived before redaction, keeping the seal intact",
		Usage:   "[--writer W]... [--identity FILE] [--dry-run]",
		Long: `Scans every archived conversation span (Claude Code transcript spans, proxy
spans) with today's secret scanner. Each span that holds a secret is stored
again through the normal write path — redacted to placeholders such as
[secret:github-token:3f9a2c1d4e5b], its values vaulted to your local
identity, encrypted again when it was encrypted — as an event with
"replaces": <seq of the original>; then the original's content is pruned
with a prune record that says why. Sealed lines are never edited: verify
still passes and reports the originals as pruned (expected). A second run
changes nothing.

Use it on archives written before redaction existed, or with
"git config lossless.redact off", before pushing them. File versions are
not rewritten (they are the bytes the model saw); those holding secrets are
counted, and "git lossless push" holds them back ("git lossless prune
--path" removes them). Encrypted spans need an identity to be checked
(--identity, LOSSLESS_AGE_IDENTITY or git config lossless.identity);
those none opens are counted as locked and left alone. The objects of the
originals leave the disk at the next "git gc --prune=now"; a remote that
received them keeps its copy until it is pruned or rewritten there too
(push with --force).`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			writers := fs.StringArray("writer", nil, "only this writer (repeatable; default all)")
			identity := fs.String("identity", "", "age identity file or unencrypted SSH private key, to check encrypted spans")
			dry := fs.Bool("dry-run", false, "show what would be redacted, change nothing")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("redact takes no arguments")
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				ids, err := st.Crypt().LoadIdentities(ctx, *identity, e.Getenv)
				if err != nil {
					return err
				}
				ws := *writers
				if len(ws) == 0 {
					all, err := st.Writers(ctx)
					if err != nil {
						return err
					}
					for _, w := range all {
						ws = append(ws, w.Name)
					}
				}
				verb := "redacted"
				if *dry {
					verb = "would redact"
				}
				var spans, vals, locked, files int
				for _, w := range ws {
					res, err := st.RedactWriter(ctx, w, ids, *dry)
					if err != nil {
						return fmt.Errorf("writer %s: %w", w, err)
					}
					spans += res.Replaced
					vals += res.Secrets
					locked += res.Locked
					files += res.FileVersions
					if res.Replaced == 0 && res.Locked == 0 && res.FileVersions == 0 && len(res.Prune.Blobs) == 0 {
						continue
					}
					var kinds []string
					for k, n := range res.Kinds {
						kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
					}
					sort.Strings(kinds)
					line := fmt.Sprintf("%s: %s %d of %d spans (%d values", w, verb, res.Replaced, res.Scanned, res.Secrets)
					if len(kinds) > 0 {
						line += ": " + strings.Join(kinds, ", ")
					}
					line += ")"
					if n := len(res.Prune.Blobs); n > 0 {
						line += fmt.Sprintf("; originals' content pruned: %d blobs", n)
					}
					if res.Locked > 0 {
						line += fmt.Sprintf("; %d encrypted spans locked, not checked", res.Locked)
					}
					if res.FileVersions > 0 {
						line += fmt.Sprintf("; %d file versions hold secrets (kept as the model saw them)", res.FileVersions)
					}
					fmt.Fprintln(e.Stdout, line)
				}
				fmt.Fprintf(e.Stdout, "%s %d spans holding %d secret values in %d writers\n", verb, spans, vals, len(ws))
				if locked > 0 {
					return cli.WithHint(cli.FailedError{Msg: fmt.Sprintf("%d encrypted spans could not be checked", locked)}, "give the identity that opens them: --identity FILE")
				}
				if files > 0 {
					fmt.Fprintf(e.Stderr, "git-lossless: hint: %d file versions hold secrets; `git lossless push` holds them back, `git lossless prune --path GLOB --reason ...` removes them\n", files)
				}
				return nil
			}
		},
	}
}
