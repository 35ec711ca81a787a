package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
)

func importCmd() *command {
	return &command{
		Name:    "import",
		Summary: "archive agent harnesses' past transcripts (every session and subagent)",
		Usage:   "[--harness NAME] [--quiet] [--dry-run] [--json] [--workers N] [DIR...]",
		Long: `Archives every session and subagent transcript of a harness under each
DIR (a DIR may also be one project's directory or one transcript; its
harness is --harness, default claude-code), or, without DIR, every
session each harness keeps where it keeps them (--harness: that harness's
only; Claude Code: its projects directory, $CLAUDE_CONFIG_DIR/projects or
~/.claude/projects), the way the hooks would have: the same sweep, deny
list and secret redaction. The harnesses are ` + harnessList() + `. Each session goes into the repository its cwd (the
first "cwd" its lines carry) belongs to; a cwd outside any repository,
or no longer on this machine, goes to the embedded archive.

Resumable and idempotent: each transcript's sweep cursor moves only after
the archive accepted its events, and events are deduped by key, so an
interrupted import run again goes on where it stopped and a second import
adds nothing. Safe while Claude Code runs: the hooks of a live session
sweep the same transcripts through the same cursors and writer lock; the
line Claude Code is still writing is left for the next sweep.

Progress goes to stderr (one redrawn line on a terminal, plain lines
otherwise, none with --quiet); the summary to stdout: sessions, archives,
events, bytes, and what was skipped and why (with --json one object per
harness, naming it). Exit 3 when some transcript could not be archived
(the others are).`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
			dry := fs.Bool("dry-run", false, "find the transcripts and where each session would go; store nothing")
			asJSON := fs.Bool("json", false, "print the summary as JSON")
			workers := fs.Int("workers", 0, "sessions swept at once (default: one per CPU)")
			harness := fs.String("harness", "", "import this harness's sessions only: "+harnessList())
			return func(ctx context.Context, e *env, args []string) error {
				if *workers < 0 {
					return cli.Usagef("--workers must not be negative")
				}
				if e.Getenv("GIT_DIR") != "" {
					// Repository discovery would send every session to
					// that one repository, whatever its cwd.
					return cli.WithHint(errors.New("GIT_DIR is set: import places each session by its own cwd"), "unset GIT_DIR (and GIT_WORK_TREE) and run it again")
				}
				runs, err := importRuns(e, *harness, args)
				if err != nil {
					return err
				}
				var firstErr error
				for i, r := range runs {
					pr := newImportProgress(e.Stderr, *quiet)
					opt := hooks.ImportOptions{DryRun: *dry, Workers: *workers, Warn: pr.warn}
					if !*quiet {
						opt.Progress = pr.update
					}
					stats, err := hooks.Import(ctx, r.h, r.dirs, opt)
					pr.finish()
					if errors.Is(err, context.Canceled) {
						return err
					}
					stats.Harness = r.h.Name()
					if *asJSON {
						enc := json.NewEncoder(e.Stdout)
						enc.SetIndent("", "  ")
						if jerr := enc.Encode(stats); jerr != nil {
							return jerr
						}
					} else {
						if len(runs) > 1 {
							if i > 0 {
								fmt.Fprintln(e.Stdout)
							}
							fmt.Fprintf(e.Stdout, "%s:\n", r.h.Name())
						}
						printImportSummary(e.Stdout, stats, *dry)
					}
					if firstErr == nil {
						firstErr = err
					}
				}
				return firstErr
			}
		},
	}
}

// importRun is one harness's import: where its sessions are.
type importRun struct {
	h    hooks.Harness
	dirs []string
}

// importRuns are the imports to run: the arguments (relative to -C), of
// the harness --harness names (default the first); or, without
// arguments, each harness's own directories (only --harness's when
// given) that exist, which must be at least one.
func importRuns(e *env, harness string, args []string) ([]importRun, error) {
	if len(args) > 0 {
		h, err := harnessFlag(harness)
		if err != nil {
			return nil, err
		}
		dirs := make([]string, len(args))
		for i, a := range args {
			dirs[i] = joinDir(e.Dir, a)
		}
		return []importRun{{h, dirs}}, nil
	}
	hs := harnesses.All()
	if harness != "" {
		h, err := harnessFlag(harness)
		if err != nil {
			return nil, err
		}
		hs = []hooks.Harness{h}
	}
	var runs []importRun
	var missing []string
	for _, h := range hs {
		ds, err := h.ImportDirs(e.Dir, e.Getenv)
		if err != nil {
			return nil, err
		}
		var found []string
		for _, d := range ds {
			if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, d)
				continue
			}
			found = append(found, d)
		}
		if len(found) > 0 {
			runs = append(runs, importRun{h, found})
		}
	}
	if len(runs) == 0 {
		return nil, cli.WithHint(fmt.Errorf("no sessions of %s at %s", strings.Join(names(hs), " or "), strings.Join(missing, ", ")),
			"name the directory: git lossless import [--harness NAME] DIR (or set CLAUDE_CONFIG_DIR)")
	}
	return runs, nil
}

func names(hs []hooks.Harness) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name()
	}
	return out
}

// importProgress renders hooks.ImportProgress on stderr: one line redrawn
// in place on a terminal (at most 10 times a second), plain lines
// otherwise, printed as the files done cross each whole percent (every
// file, up to 100 files) and at least every 2 s while something moves.
type importProgress struct {
	mu       sync.Mutex
	w        io.Writer
	quiet    bool
	tty      bool
	drawn    bool // a redrawn line is on screen
	last     time.Time
	lastPct  int
	lastDone int
	warned   map[string]bool
}

func newImportProgress(w io.Writer, quiet bool) *importProgress {
	r := &importProgress{w: w, quiet: quiet, lastPct: -1, lastDone: -1, warned: map[string]bool{}}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			r.tty = true
		}
	}
	return r
}

func (r *importProgress) update(p hooks.ImportProgress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	done := p.FilesDone == p.Files
	if r.tty {
		if !done && now.Sub(r.last) < 100*time.Millisecond {
			return
		}
		fmt.Fprintf(r.w, "\r%s %s\x1b[K", progressBar(p), progressLine(p))
		r.drawn, r.last = true, now
		return
	}
	pct := 100
	if p.Files > 0 {
		pct = p.FilesDone * 100 / p.Files
	}
	if pct == r.lastPct && !(p.FilesDone != r.lastDone && now.Sub(r.last) >= 2*time.Second) {
		return
	}
	fmt.Fprintln(r.w, progressLine(p))
	r.lastPct, r.lastDone, r.last = pct, p.FilesDone, now
}

// progressBar is a 20-cell bar of the bytes done, for the terminal.
func progressBar(p hooks.ImportProgress) string {
	const cells = 20
	n := cells
	if p.Bytes > 0 {
		n = int(p.BytesDone * cells / p.Bytes)
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", cells-n) + "]"
}

// progressLine is one progress report: files, MB, events, speed, ETA.
func progressLine(p hooks.ImportProgress) string {
	s := fmt.Sprintf("import: %d/%d files, %.1f/%.1f MB, %d events", p.FilesDone, p.Files,
		float64(p.BytesDone)/(1<<20), float64(p.Bytes)/(1<<20), p.Events)
	if p.BytesDone > 0 && p.Elapsed > 0 {
		// The speed is of what was read (a transcript up to date costs a
		// stat); the ETA assumes the rest goes as the part done went.
		rate := float64(p.Read) / p.Elapsed.Seconds()
		eta := time.Duration(float64(p.Bytes-p.BytesDone) / float64(p.BytesDone) * float64(p.Elapsed))
		s += fmt.Sprintf(", %.0f MB/s, ETA %s", rate/(1<<20), eta.Round(time.Second))
	}
	return s
}

// warn prints a warning of the import (a repository that cannot be
// written), each once, on its own line.
func (r *importProgress) warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warned[msg] {
		return
	}
	r.warned[msg] = true
	if r.drawn {
		fmt.Fprint(r.w, "\r\x1b[K")
		r.drawn = false
	}
	fmt.Fprintf(r.w, "git-lossless: warning: %s\n", hooks.LogLine(msg))
}

// finish ends a redrawn line.
func (r *importProgress) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drawn {
		fmt.Fprintln(r.w)
		r.drawn = false
	}
}

// printImportSummary prints what an import did (or, dry, would do): the
// totals, a row per archive, what was skipped and what failed. Paths are
// escaped (hooks.LogLine): they come from the file system.
func printImportSummary(w io.Writer, s hooks.ImportStats, dry bool) {
	mb := cli.MiB
	if dry {
		var total int64
		for _, a := range s.Stores {
			total += a.Bytes
		}
		fmt.Fprintf(w, "would import %s (%s, %s) into %s (dry run: nothing stored)\n",
			cli.Plural(s.Sessions, "session"), cli.Plural(s.Transcripts, "transcript"), mb(total), cli.Plural(len(s.Stores), "archive"))
	} else {
		fmt.Fprintf(w, "imported %s (%s, %d already up to date; %s read) in %s: %s stored, %d already archived\n",
			cli.Plural(s.Sessions, "session"), cli.Plural(s.Transcripts, "transcript"), s.UpToDate, mb(s.Bytes),
			s.Elapsed.Round(10*time.Millisecond), cli.Plural(s.Events, "event"), s.Deduped)
	}
	if len(s.Stores) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ARCHIVE\tSESSIONS\tTRANSCRIPTS\tREAD\tEVENTS")
		for _, a := range s.Stores {
			name := hooks.LogLine(a.Archive)
			if a.Embedded {
				name += " (embedded archive)"
			}
			events := fmt.Sprint(a.Events)
			if dry {
				events = "-"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\n", name, a.Sessions, a.Transcripts, mb(a.Bytes), events)
		}
		tw.Flush()
	}
	printSkips(w, "skipped", s.Skipped)
	printSkips(w, "failed", s.Failed)
}

// printSkips prints skips grouped by reason, naming up to three files of
// each (--json lists them all).
func printSkips(w io.Writer, label string, skips []hooks.ImportSkip) {
	if len(skips) == 0 {
		return
	}
	fmt.Fprintf(w, "%s %s:\n", label, cli.Plural(len(skips), "file"))
	var order []string
	by := map[string][]hooks.ImportSkip{}
	for _, k := range skips {
		if by[k.Reason] == nil {
			order = append(order, k.Reason)
		}
		by[k.Reason] = append(by[k.Reason], k)
	}
	for _, reason := range order {
		ks := by[reason]
		fmt.Fprintf(w, "  %d %s\n", len(ks), reason)
		for i, k := range ks {
			if i == 3 {
				fmt.Fprintf(w, "      ... and %d more (--json lists them all)\n", len(ks)-3)
				break
			}
			line := hooks.LogLine(k.Path)
			if k.Detail != "" {
				line += ": " + hooks.LogLine(k.Detail)
			}
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}
