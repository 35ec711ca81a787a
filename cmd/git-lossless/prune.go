package main

import (
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
)

func pruneCmd() *command {
	return &command{
		Name:    "prune",
		Summary: "remove archived content on purpose, keeping the seal intact",
		Usage:   "[--writer W]... [--path GLOB] [--session S] [--before TIME] [--dry-run] --reason TEXT",
		Long: `Removes the content (blobs) of the selected events from each writer's
history and appends a prune record naming what was removed. The events stay,
every seal stays valid, and verify reports those entries as "pruned"
(expected) instead of blob-missing. The objects are deleted from disk by the
next ` + "`git gc --prune=now`" + ` unless another writer still references them.
A remote that already received the archive keeps its copy: prune there too.
At least one of --path, --session, --before is required.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			writers := fs.StringArray("writer", nil, "only this writer (repeatable; default all)")
			path := fs.String("path", "", "events whose path matches this glob")
			session := fs.String("session", "", "events of this session")
			before := fs.String("before", "", "events older than: RFC 3339 time or age (30m, 24h, 7d, 2w)")
			reason := fs.String("reason", "", "why, recorded in the prune record (required)")
			dry := fs.Bool("dry-run", false, "show what would be pruned, change nothing")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return cli.Usagef("prune takes no arguments")
				}
				if *path == "" && *session == "" && *before == "" {
					return cli.Usagef("prune needs a selection: --path, --session or --before")
				}
				if *reason == "" && !*dry {
					return cli.Usagef("--reason is required: it is recorded in the prune record")
				}
				if err := refuseSecretFlags("--reason", *reason); err != nil {
					return err
				}
				if *path != "" && !doublestar.ValidatePattern(*path) {
					return cli.Usagef("--path %q is not a valid glob", *path)
				}
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				cut, err := parseWhen(*before, st.Now())
				if err != nil {
					return cli.Usagef("--before: %v", err)
				}
				match := func(ev *gitstore.Event) bool {
					if *path != "" {
						if ok, _ := doublestar.Match(*path, ev.Path); !ok && ev.Path != *path {
							return false
						}
					}
					if *session != "" && ev.Session != *session {
						return false
					}
					if !cut.IsZero() && !ev.TS.Before(cut) {
						return false
					}
					return true
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
				total := 0
				for _, w := range ws {
					res, err := st.Prune(ctx, w, match, *reason, *dry)
					if err != nil {
						return fmt.Errorf("prune %s: %w", w, err)
					}
					if len(res.Blobs) == 0 {
						continue
					}
					total += len(res.Blobs)
					verb := "pruned"
					if *dry {
						verb = "would prune"
					}
					fmt.Fprintf(e.Stdout, "%s %s: %d blobs of %d events", verb, w, len(res.Blobs), res.Events)
					if !*dry {
						fmt.Fprintf(e.Stdout, ", %d batch commits rewritten, prune record #%d", res.Rewrote, res.Recorded.Seq)
					}
					fmt.Fprintln(e.Stdout)
				}
				if total == 0 {
					fmt.Fprintln(e.Stdout, "nothing to prune")
				} else if !*dry {
					fmt.Fprintln(e.Stdout, "run `git gc --prune=now` to delete the objects from disk")
				}
				return nil
			}
		},
	}
}
