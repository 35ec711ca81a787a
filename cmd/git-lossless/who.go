package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/guard"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
)

func whoCmd() *command {
	return &command{
		Name:    "who",
		Summary: "which agent contexts hold each file's current or a stale version, and who wrote it last",
		Usage:   "[--json] [PATH...]",
		Long: `Presence, for agents working side by side: for each file (default: every
file an archived context has seen or written; PATH, relative to the current
directory, limits it), the contexts of any harness that hold it and the last
edit or write of it by any context.

A context holds a version as the guard judges its next edit, from the archive:
  current    the last version it saw (read, wrote, edited, had re-attached or
             restored) is the file on disk now: it may edit it
  stale      the last version it saw differs from the disk (or the file is
             gone); SEEN says when it saw it: its next edit is denied
  partial    its last view was part of the file (lines A-B): no version pinned
  accessed   a deny-listed file: accessed, no content archived or hashed
  compacted  seen only before its context's last compaction: not held
The unswept end of a live transcript is not read (post-tool-use sweeps it on
every tool call). Paths are shown relative to the repository's top.
--json prints one document: {"files":[{path, exists, disk_blob, denied,
holders:[{harness, writer, session, agent, state, op, ts, blob}],
last_writer:{harness, writer, session, agent, op, ts, blob, current}}]}.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "one JSON document")
			return func(ctx context.Context, e *env, args []string) error {
				st, err := cli.OpenStore(e)
				if err != nil {
					return err
				}
				opt := hooks.PresenceOptions{HarnessOf: harnesses.WriterHarness()}
				for _, a := range args {
					if !filepath.IsAbs(a) {
						a = filepath.Join(e.Dir, a)
					}
					opt.Paths = append(opt.Paths, filepath.Clean(a))
				}
				fps, err := hooks.Presence(ctx, st, opt)
				if err != nil {
					return err
				}
				bw := bufio.NewWriter(e.Stdout)
				defer bw.Flush()
				if *asJSON {
					if fps == nil {
						fps = []hooks.FilePresence{}
					}
					b, err := json.Marshal(struct {
						Files []hooks.FilePresence `json:"files"`
					}{fps})
					if err != nil {
						return err
					}
					bw.Write(b)
					bw.WriteByte('\n')
					return nil
				}
				printPresence(bw, fps)
				return nil
			}
		},
	}
}

const whoTime = "2006-01-02 15:04:05"

// printPresence writes the table: per file a line naming it, its state on
// disk and its last writer, then one line per holding context.
func printPresence(bw *bufio.Writer, fps []hooks.FilePresence) {
	if len(fps) == 0 {
		fmt.Fprintln(bw, "no archived file")
		return
	}
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	for i, fp := range fps {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		state := "on disk " + short(fp.DiskBlob)
		switch {
		case fp.Denied:
			state = "deny-listed, content not read"
		case !fp.Exists:
			state = "deleted"
		case fp.DiskBlob == "":
			state = "unreadable"
		}
		fmt.Fprintf(tw, "%s  (%s)\n", guard.Printable(fp.Path), state)
		if lw := fp.LastWriter; lw != nil {
			what := "not the version on disk"
			if lw.Current {
				what = "the version on disk"
			}
			fmt.Fprintf(tw, "  last written by %s at %s (%s, %s)\n", lw.Describe(), lw.TS.Local().Format(whoTime), lw.Op, what)
		}
		if len(fp.Holders) == 0 {
			fmt.Fprintln(tw, "  no context has seen it")
			continue
		}
		fmt.Fprintln(tw, "  STATE\tHARNESS\tSESSION\tAGENT\tWRITER\tSEEN\tVIA\tBLOB")
		for _, h := range fp.Holders {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.State, cli.Dash(h.Harness), cli.Dash(guard.Printable(h.Session)), cli.Dash(guard.Printable(h.Agent)),
				guard.Printable(h.Writer), h.TS.Local().Format(whoTime), h.Op, cli.Dash(short(h.Blob)))
		}
	}
	tw.Flush()
}

func short(blob string) string {
	if len(blob) > 12 {
		return blob[:12]
	}
	return blob
}
