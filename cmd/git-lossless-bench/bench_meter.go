package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/receiptfixture"
	"github.com/git-lossless/git-lossless/meter"
)

// `git lossless bench meter`: the meter target measured on the
// receipt fixture (package internal/testkit/receiptfixture: 100,000 events
// of 100 Claude Code-like sessions), in this process and as the fresh
// process a user runs, beside the store's own query for the read events
// alone (what metering adds to reading the archive).

const (
	meterTarget       = 300 * time.Millisecond
	meterTargetEvents = 100_000
)

// benchMeterFlags returns the dispatcher of `git lossless bench meter`;
// --events, --keep and --rounds are flags the bench command already has.
func benchMeterFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "meter" {
			return false, nil
		}
		events, rounds, keep := meterTargetEvents, 10, ""
		if f := fs.Lookup("events"); f != nil && f.Changed {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return true, cli.Usagef("--events: %v", err)
			}
			events = n
		}
		if f := fs.Lookup("rounds"); f != nil && f.Changed {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return true, cli.Usagef("--rounds: %v", err)
			}
			rounds = n
		}
		if f := fs.Lookup("keep"); f != nil {
			keep = f.Value.String()
		}
		switch {
		case events < 120:
			return true, cli.Usagef("--events must be at least 120 for bench meter")
		case rounds < 1:
			return true, cli.Usagef("--rounds must be at least 1")
		}
		return true, runBenchMeter(ctx, e, events, rounds, keep)
	}
}

func runBenchMeter(ctx context.Context, e *env, events, rounds int, keep string) error {
	start := time.Now()
	exe, err := productExe()
	if err != nil {
		return fmt.Errorf("bench meter: locate own binary: %w", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(fmt.Errorf("bench needs git on PATH"), "install git; the fixture is built with it")
	}
	root, cleanup, err := benchDir(keep, "meter-", false)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench meter: fixture directory: %w", err)
	}
	fx := receiptfixture.ForEvents(events)
	target := events >= meterTargetEvents
	judge := func(met bool) *bool {
		if !target {
			return nil
		}
		return yes(met)
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(e.Stderr, "  [%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	fmt.Fprintf(e.Stdout, "git lossless bench meter\n")
	fmt.Fprintf(e.Stdout, "  machine  %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(e.Stdout, "  fixture  %d events: %d Claude Code-like sessions over %d files (package internal/testkit/receiptfixture %s)\n",
		fx.Events(), fx.Sessions, fx.Files, receiptfixture.Version)
	fmt.Fprintf(e.Stdout, "  repos    %s%s\n", root, map[bool]string{true: " (kept, reused when complete)", false: " (removed afterwards)"}[keep != ""])
	fmt.Fprintf(e.Stdout, "  load     %s at start (other processes share these CPUs and disk)\n", loadAvg())
	if !target {
		fmt.Fprintf(e.Stdout, "  targets  stated for %d events; this smaller fixture is measured, not judged\n", meterTargetEvents)
	}
	fmt.Fprintln(e.Stdout)

	t0 := time.Now()
	built, err := fx.Cached(ctx, root)
	if err != nil {
		return fmt.Errorf("bench meter: fixture: %w", err)
	}
	logf("fixture: %s ready in %s", built.Dir, time.Since(t0).Round(10*time.Millisecond))
	st, err := gitstore.OpenDir(built.Dir, gitstore.Options{})
	if err != nil {
		return err
	}
	cache := tokens.NewCounter(ctx, st).Dir
	run := func() (*meter.Report, time.Duration, error) {
		t0 := time.Now()
		s, err := gitstore.OpenDir(built.Dir, gitstore.Options{})
		if err != nil {
			return nil, 0, err
		}
		rep, err := meter.Meter(ctx, s, meter.Options{})
		return rep, time.Since(t0), err
	}
	var cold, warm, query, proc, pcold samples
	var first *meter.Report
	var counted int
	for range rounds {
		if err := os.RemoveAll(cache); err != nil {
			return fmt.Errorf("remove the token cache: %w", err)
		}
		rep, d, err := run()
		if err != nil {
			return err
		}
		cold = append(cold, d)
		first, counted = rep, rep.Counts.Counted
	}
	logf("meter in process, cache cold: %s", cold)
	for range rounds {
		rep, d, err := run()
		if err != nil {
			return err
		}
		if rep.Totals != first.Totals || rep.Counts.Counted != 0 {
			return fmt.Errorf("a warm run differs from the cold one or counted %d versions", rep.Counts.Counted)
		}
		warm = append(warm, d)
		t0 := time.Now()
		evs, err := st.Events(ctx, gitstore.Query{Op: gitstore.OpRead})
		if err != nil {
			return err
		}
		query = append(query, time.Since(t0))
		if len(evs) == 0 {
			return fmt.Errorf("the fixture holds no reads")
		}
	}
	logf("meter in process, cache warm: %s", warm)
	// The command a user runs, as a fresh process: the table by default
	// (its totals must be the in-process ones), and --json, every row.
	t := first.Totals
	process := func(asJSON bool) (time.Duration, error) {
		args := []string{"meter"}
		if asJSON {
			args = append(args, "--json")
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Dir = built.Dir
		cmd.Env = childEnv()
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("git lossless meter: %v: %s", err, errb.String())
		}
		d := time.Since(t0)
		if asJSON {
			var got struct {
				Totals meter.Figures `json:"totals"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Totals != t {
				return 0, fmt.Errorf("git lossless meter --json disagrees with the in-process meter (%v)", err)
			}
		} else if !bytes.Contains(out.Bytes(), []byte(" "+cli.Commas(t.Tokens)+" tokens")) || !bytes.Contains(out.Bytes(), []byte(" "+cli.Commas(t.SavedTokens)+" tokens")) {
			return 0, fmt.Errorf("git lossless meter's table disagrees with the in-process meter:\n%s", lastLines(out.Bytes(), 30))
		}
		return d, nil
	}
	var pjson samples
	for range rounds {
		d, err := process(false)
		if err != nil {
			return err
		}
		proc = append(proc, d)
		if d, err = process(true); err != nil {
			return err
		}
		pjson = append(pjson, d)
	}
	logf("meter as a process, cache warm: %s (--json %s)", proc, pjson)
	for range rounds {
		if err := os.RemoveAll(cache); err != nil {
			return fmt.Errorf("remove the token cache: %w", err)
		}
		d, err := process(false)
		if err != nil {
			return err
		}
		pcold = append(pcold, d)
	}
	logf("meter as a process, cache cold: %s", pcold)

	rows, err := first.Rows(meter.ByFile)
	if err != nil {
		return err
	}
	nrows := len(rows)
	table := []row{
		{what: fmt.Sprintf("meter, %s reads of %d events, in process, token cache cold (%d)", cli.Commas(int64(t.Reads)), fx.Events(), len(cold)),
			ours: cold.String(), peer: "-", target: "-"},
		{what: fmt.Sprintf("meter, in process, token cache warm (%d); beside it: the store's query for the reads alone", len(warm)),
			ours: warm.String(), peer: query.String(), target: "p50 <= 300 ms", met: judge(warm.pct(50) <= meterTarget)},
		{what: fmt.Sprintf("`git lossless meter` (the table), fresh process, token cache warm (%d)", len(proc)),
			ours: proc.String(), peer: "-", target: "p50 <= 300 ms", met: judge(proc.pct(50) <= meterTarget)},
		{what: fmt.Sprintf("`git lossless meter --json` (every figure, %s rows), fresh process, token cache warm (%d)", cli.Commas(int64(nrows)), len(pjson)),
			ours: pjson.String(), peer: "-", target: "-"},
		{what: fmt.Sprintf("`git lossless meter`, fresh process, token cache cold (%d)", len(pcold)),
			ours: pcold.String(), peer: "-", target: "-"},
	}
	notes := []string{
		fmt.Sprintf("figures: %s reads, %s tokens (o200k); %s re-reads (%.1f%%), %s arrived changed, %s tokens a restore would have saved",
			cli.Commas(int64(t.Reads)), cli.Commas(t.Tokens), cli.Commas(int64(t.ReReads)), 100*t.ReReadRate, cli.Commas(int64(t.Changed)), cli.Commas(t.SavedTokens)),
		fmt.Sprintf("cold: %d distinct versions counted with the tokenizer per run (the token cache, %s, deleted before each); in process the tokenizer's vocabulary stays loaded after the first round, a fresh process loads it every time", counted, filepath.Base(cache)),
	}
	printBenchTable(e.Stdout, "BESIDE IT", table, "", notes, start)
	return nil
}
