package main

import (
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode/replay"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
)

// `git lossless bench replay [DIR...]`: the two figures the first tool
// this project replaces published, measured on transcripts (package
// hooks/claudecode/replay says exactly what is compared and what "sent" means):
// losslessness — every file operation of every session given back by the
// archive byte for byte, one divergence fails the run (exit 1) and is
// named — and savings of restore and of packs against re-reading, with the
// synthetic floor (every file read once) and ceiling (an edit loop)
// replayed by the same code beside the realistic case, and the seed's
// published figures beside ours.
//
// Input: DIR... are transcripts or directories holding them (a Claude
// Code projects directory, one project's). They are swept into a scratch
// repository under the user cache dir (removed afterwards unless --keep),
// never into this repository's archive: the transcripts of other projects
// do not belong there. Without DIR the sessions this repository's sweeps
// have read (its sweep cursors name their transcripts) are replayed in
// place (the embedded archive outside a repository, when there is one),
// after the same catch-up sweep the hooks run; with none, generated
// sessions (transcriptgen), labelled as such: not a realistic figure.

// replayBenchOpts configures `git lossless bench replay`.
type replayBenchOpts struct {
	args   []string // DIR...
	keep   string   // scratch directory to keep ("" = temporary)
	rounds int      // edit-loop rounds of the ceiling
	files  int      // files of the floor
	genMB  int      // generated sessions' size without input
}

// replayTargetMBs is the replay speed target, MB of transcript per second;
// it is judged from replayJudgeBytes of transcript on (below that the
// archive's fixed costs — opening, reading a writer's index — dominate).
const (
	replayTargetMBs  = 50
	replayJudgeBytes = 4_000_000
)

// judged is yes(met) when the figure is judged, nil ("-") otherwise.
func judged(judge, met bool) *bool {
	if !judge {
		return nil
	}
	return yes(met)
}

// benchReplayFlags registers the flags of `git lossless bench replay` on
// the bench command's flag set and returns its dispatcher.
func benchReplayFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	rounds := fs.Int("replay-rounds", 20, "bench replay: edit and re-read rounds of the synthetic ceiling")
	files := fs.Int("replay-files", 20, "bench replay: files of the synthetic floor, each read once")
	genMB := fs.Int("replay-mb", 16, "bench replay: MB of generated sessions when there is no input")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) == 0 || args[0] != "replay" {
			return false, nil
		}
		o := replayBenchOpts{args: args[1:], rounds: *rounds, files: *files, genMB: *genMB}
		if f := fs.Lookup("keep"); f != nil {
			o.keep = f.Value.String()
		}
		switch {
		case o.rounds < 1:
			return true, cli.Usagef("--replay-rounds must be at least 1")
		case o.files < 1:
			return true, cli.Usagef("--replay-files must be at least 1")
		case o.genMB < 1:
			return true, cli.Usagef("--replay-mb must be at least 1")
		}
		return true, runBenchReplay(ctx, e, o)
	}
}

type replayBench struct {
	o     replayBenchOpts
	e     *env
	root  string // scratch directory
	start time.Time
	rows  []row
	notes []string
}

func (b *replayBench) logf(format string, a ...any) {
	fmt.Fprintf(b.e.Stderr, "  [%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, a...))
}

// scratchRepo makes a repository under the scratch directory. Redaction
// is off there: it applies to spans, which the replay does not read, and
// on it would create a local identity in the user's config dir for a
// repository that is removed afterwards.
func (b *replayBench) scratchRepo(name string) (*gitstore.Store, string, error) {
	dir := filepath.Join(b.root, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	if err := benchdata.GitInit(dir); err != nil {
		return nil, "", err
	}
	cfg, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, "", err
	}
	_, err = cfg.WriteString("[lossless]\n\tredact = off\n")
	if cerr := cfg.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, "", err
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	return st, dir, err
}

// input finds the realistic case's sessions and the store holding them.
func (b *replayBench) input(ctx context.Context) (st *gitstore.Store, sessions []replay.Session, label string, err error) {
	if len(b.o.args) > 0 {
		if sessions, err = replay.FindSessions(b.o.args); err != nil {
			return nil, nil, "", err
		}
		if len(sessions) == 0 {
			return nil, nil, "", cli.WithHint(fmt.Errorf("no transcript (*.jsonl) under %s", strings.Join(b.o.args, " ")),
				"name Claude Code transcripts or a projects directory (~/.claude/projects/<project>)")
		}
		if st, _, err = b.scratchRepo("archive"); err != nil {
			return nil, nil, "", err
		}
		return st, sessions, "from " + strings.Join(b.o.args, " ") + ", swept into a scratch repository", nil
	}
	// The archive of this directory: its repository's, or the embedded
	// one when it exists (opening it would create it).
	_, rerr := gitstore.FindRepository(b.e.Dir)
	emb, eerr := gitstore.EmbeddedDir()
	if _, serr := os.Stat(emb); rerr == nil || (eerr == nil && serr == nil) {
		if here, err := cli.OpenStore(b.e); err == nil {
			if sessions, err = replay.ArchivedSessions(ctx, here); err == nil && len(sessions) > 0 {
				return here, sessions, "archived in this directory's archive (the transcripts its sweep cursors name), replayed in place", nil
			}
		}
	}
	if st, _, err = b.scratchRepo("generated"); err != nil {
		return nil, nil, "", err
	}
	dir := filepath.Join(b.root, "transcripts")
	per := 4 << 20
	for seed := int64(1); int64(per)*(seed-1) < int64(b.o.genMB)<<20; seed++ {
		main, err := generateSession(dir, seed, min(per, max(64<<10, b.o.genMB<<20)))
		if err != nil {
			return nil, nil, "", err
		}
		s, err := replay.FindSessions([]string{main})
		if err != nil {
			return nil, nil, "", err
		}
		sessions = append(sessions, s...)
	}
	return st, sessions, "GENERATED (transcriptgen), not real transcripts: no DIR given and no session archived here", nil
}

// generateSession writes a transcriptgen session (main and subagent) under
// dir and returns its main transcript.
func generateSession(dir string, seed int64, size int) (string, error) {
	sid := fmt.Sprintf("replay-bench-%04d", seed)
	main := filepath.Join(dir, sid+".jsonl")
	subDir := filepath.Join(dir, sid, "subagents")
	if err := os.MkdirAll(subDir, 0o700); err != nil {
		return "", err
	}
	mf, err := os.OpenFile(main, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	defer mf.Close()
	sf, err := os.OpenFile(filepath.Join(subDir, "agent-"+transcriptgen.SubagentID(seed)+".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	defer sf.Close()
	err = transcriptgen.GenerateWith(mf, transcriptgen.Options{Seed: seed, TargetBytes: size, Root: "/home/dev/project", SessionID: sid, Subagent: sf})
	return main, err
}

func runBenchReplay(ctx context.Context, e *env, o replayBenchOpts) error {
	b := &replayBench{o: o, e: e, start: time.Now()}
	var cleanup func()
	var err error
	b.root, cleanup, err = benchDir(o.keep, "replay-", false)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench replay: %w", err)
	}
	fmt.Fprintf(e.Stdout, "git lossless bench replay\n")
	fmt.Fprintf(e.Stdout, "  machine  %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(e.Stdout, "  load     %s at start (other processes share these CPUs and disk)\n", loadAvg())

	st, sessions, label, err := b.input(ctx)
	if err != nil {
		return fmt.Errorf("bench replay: %w", err)
	}
	t0 := time.Now()
	sw, err := replay.Archive(ctx, st, sessions, hooks.SweepOptions{})
	if err != nil {
		return fmt.Errorf("bench replay: %w", err)
	}
	sweep := time.Since(t0)
	b.logf("archive: %d transcripts, %d new events, in %s", sw.Transcripts, sw.Appended, ms(sweep))

	// The o200k codec is built once per process (tens of ms): a cost of
	// the process, not of the megabytes replayed, paid before timing.
	if _, err := tokens.CountText("warm"); err != nil {
		return fmt.Errorf("bench replay: %w", err)
	}
	t0 = time.Now()
	rep, err := replay.Replay(ctx, st, sessions, replay.Options{})
	if err != nil {
		return fmt.Errorf("bench replay: %w", err)
	}
	first := time.Since(t0)
	t0 = time.Now()
	if _, err := replay.Replay(ctx, st, sessions, replay.Options{}); err != nil {
		return fmt.Errorf("bench replay: %w", err)
	}
	second := time.Since(t0)
	b.logf("replay: %s, again %s", ms(first), ms(second))
	tot := rep.Total
	fmt.Fprintf(e.Stdout, "  input    %d sessions, %d transcripts, %.1f MB, %s\n", len(sessions), tot.Transcripts, mb(int(tot.Bytes)), label)
	where := " (scratch, removed afterwards)"
	switch {
	case strings.HasPrefix(st.Location().CommonDir, b.root) && o.keep != "":
		where = " (scratch, kept)"
	case !strings.HasPrefix(st.Location().CommonDir, b.root):
		where = " (this directory's archive)"
	}
	fmt.Fprintf(e.Stdout, "  archive  %s%s\n\n", st.Location().CommonDir, where)

	floor, ceil, err := b.synthetic(ctx)
	if err != nil {
		return fmt.Errorf("bench replay: %w", err)
	}
	b.figures(rep, floor, ceil, first, second, sweep)
	skipped := ""
	if tot.Bytes < replayJudgeBytes {
		skipped = fmt.Sprintf("speed not judged: the target is stated for at least %.0f MB of transcript (this run: %.1f MB)\n", mb(replayJudgeBytes), mb(int(tot.Bytes)))
	}
	printBenchTable(e.Stdout, "BESIDE IT (seed, published; or this run)", b.rows, skipped, b.notes, b.start)
	printReplaySessions(e.Stdout, rep)
	if !rep.Lossless() {
		fmt.Fprintf(e.Stdout, "\nDIVERGENCES (%d; the archive does not give back what the transcript shows):\n", tot.Divergences)
		for i, d := range rep.Divergences {
			if i == 20 {
				fmt.Fprintf(e.Stdout, "  ... and %d more\n", tot.Divergences-20)
				break
			}
			fmt.Fprintf(e.Stdout, "  %s\n", d)
		}
		return cli.FailedError{Msg: fmt.Sprintf("losslessness failed: %d divergences (first: %s)", tot.Divergences, rep.Divergences[0])}
	}
	return nil
}

// synthetic replays the floor and the ceiling in a scratch repository of
// their own, on source-like files.
func (b *replayBench) synthetic(ctx context.Context) (floor, ceil *replay.Report, err error) {
	st, repo, err := b.scratchRepo("synthetic")
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(b.root, "synthetic-transcripts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	s := replay.Synthetic{Root: repo, Rounds: b.o.rounds}
	for i := range b.o.files {
		s.Files = append(s.Files, replay.SyntheticFile{Path: benchdata.Path(benchSeed, i), Content: string(benchdata.Source(benchSeed, i))})
	}
	s.SessionID = "replay-floor"
	if floor, err = replay.ReplaySynthetic(ctx, st, dir, s, replay.WriteReadOnce, replay.Options{}); err != nil {
		return nil, nil, err
	}
	s.SessionID = "replay-ceiling"
	if ceil, err = replay.ReplaySynthetic(ctx, st, dir, s, replay.WriteEditLoop, replay.Options{}); err != nil {
		return nil, nil, err
	}
	b.logf("synthetic: floor %d reads, ceiling %d reads", floor.Total.Reads, ceil.Total.Reads)
	return floor, ceil, nil
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func (b *replayBench) figures(rep, floor, ceil *replay.Report, first, second, sweep time.Duration) {
	t := rep.Total
	lossless := func(what string, r *replay.Report) {
		c := r.Total
		b.rows = append(b.rows, row{
			what: fmt.Sprintf("losslessness, %s (%d file operations)", what, c.Ops),
			ours: fmt.Sprintf("%d divergences; %d compared byte for byte (%d shown texts too), %d withheld by the deny list, %d unverifiable, %d reused ids",
				c.Divergences, c.Compared, c.ShownCompared, c.Withheld, c.Unverifiable, c.ReusedKeys),
			peer: "seed: one divergence fails the run", target: "0 divergences", met: yes(c.Divergences == 0),
		})
	}
	lossless("realistic", rep)
	lossless("floor and ceiling", &replay.Report{Total: sum(floor.Total, ceil.Total)})

	b.rows = append(b.rows,
		row{what: fmt.Sprintf("savings, restore, realistic (%d reads, %d re-reads)", t.Reads, t.ReReads),
			ours: fmt.Sprintf("%s (%d -> %d tokens; %d re-reads unchanged, %d by a diff; %d answered file_unchanged by Claude Code)",
				pct(t.RestoreSavings()), t.Baseline, t.Restore, t.ReReadsUnchanged, t.DiffCheaper, t.UnchangedByCC),
			peer: "seed: -1.4% (1,839 transcripts, 16,823 reads); -2.6% (3,363, 26,041)", target: "-"},
		row{what: "savings, packs, realistic",
			ours: fmt.Sprintf("%s (%d -> %d tokens; pack of %d versions, %d tokens, chosen with hindsight)",
				pct(t.PackSavings()), t.Baseline, t.Packs, len(rep.Pack.Entries), rep.Pack.Tokens),
			peer: "seed: 46.55% cheaper in a fleet's system prompt; 19.6% worse per task", target: "-"},
		row{what: fmt.Sprintf("savings, restore, ceiling (edit loop, %d re-reads)", ceil.Total.ReReads),
			ours: fmt.Sprintf("%s (%d -> %d tokens); packs %s", pct(ceil.Total.RestoreSavings()), ceil.Total.Baseline, ceil.Total.Restore, pct(ceil.Total.PackSavings())),
			peer: "seed: 72.1%", target: "> 0", met: yes(ceil.Total.RestoreSavings() > 0)},
		row{what: fmt.Sprintf("savings, restore, floor (%d files read once)", floor.Total.Reads),
			ours: fmt.Sprintf("%s (%d -> %d tokens); packs %s", pct(floor.Total.RestoreSavings()), floor.Total.Baseline, floor.Total.Restore, pct(floor.Total.PackSavings())),
			peer: "seed: 0.0%", target: "exactly 0", met: yes(floor.Total.Restore == floor.Total.Baseline && floor.Total.Packs == floor.Total.Baseline)},
	)
	rate := func(d time.Duration) float64 { return mb(int(t.Bytes)) / max(d.Seconds(), 1e-9) }
	b.rows = append(b.rows,
		row{what: fmt.Sprintf("replay speed, %.1f MB of transcript, first run", mb(int(t.Bytes))),
			ours:   fmt.Sprintf("%.0f MB/s (%s)", rate(first), ms(first)),
			peer:   fmt.Sprintf("the sweep before it, this run: %.0f MB/s (%s)", rate(sweep), ms(sweep)),
			target: fmt.Sprintf(">= %d MB/s", replayTargetMBs), met: judged(t.Bytes >= replayJudgeBytes, rate(first) >= replayTargetMBs)},
		row{what: "replay speed, second run (token counts cached)",
			ours: fmt.Sprintf("%.0f MB/s (%s)", rate(second), ms(second)), peer: "-", target: "-"},
	)
	b.notes = append(b.notes,
		"compared: at every Read, Write, Edit/MultiEdit (the file after it) and re-attachment, the archived blob of the event with the same key must equal the transcript's text byte for byte, and a Read's numbered result text must be those bytes numbered (package hooks/claudecode/replay)",
		"savings = 1 - sent/baseline in o200k tokens over Read results; baseline re-reads; restore sends a one-line reference for a re-read the context holds unchanged, the cheaper of a diff and the text for a changed one; packs send the pack once per context and a reference for a packed version",
		"floor and ceiling: synthetic sessions (every file read once; one file read then edited and re-read each round), swept and replayed by the same code",
	)
}

func sum(a, b replay.Counts) replay.Counts {
	var c replay.Counts
	c.Ops, c.Compared, c.ShownCompared = a.Ops+b.Ops, a.Compared+b.Compared, a.ShownCompared+b.ShownCompared
	c.Withheld, c.Unverifiable, c.ReusedKeys = a.Withheld+b.Withheld, a.Unverifiable+b.Unverifiable, a.ReusedKeys+b.ReusedKeys
	c.Divergences = a.Divergences + b.Divergences
	return c
}

// printReplaySessions prints the per-session figures (the first 30).
func printReplaySessions(out io.Writer, rep *replay.Report) {
	fmt.Fprintln(out, "\nSESSIONS")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "SESSION\tTRANSCRIPTS\tMB\tOPS\tCOMPARED\tREADS\tRE-READS\tBASELINE\tRESTORE\tPACKS\tDIVERGENCES\n")
	for i, s := range rep.Sessions {
		if i == 30 {
			fmt.Fprintf(w, "... %d more\n", len(rep.Sessions)-30)
			break
		}
		c := s.Counts
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\n", s.Session.ID, c.Transcripts, mb(int(c.Bytes)), c.Ops, c.Compared,
			c.Reads, c.ReReads, c.Baseline, pct(c.RestoreSavings()), pct(c.PackSavings()), c.Divergences)
	}
	c := rep.Total
	fmt.Fprintf(w, "TOTAL\t%d\t%.2f\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\n", c.Transcripts, mb(int(c.Bytes)), c.Ops, c.Compared,
		c.Reads, c.ReReads, c.Baseline, pct(c.RestoreSavings()), pct(c.PackSavings()), c.Divergences)
	w.Flush()
}
