package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/rescan"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
	"github.com/git-lossless/git-lossless/secrets"
)

// `git lossless bench secrets`: the secret scanner's throughput on one
// core over a generated Claude Code transcript that holds made-up
// credentials, beside a regexp-only scanner of the same rules
// (internal/rescan) measured in the same run, and beside gitleaks when a
// gitleaks binary is on PATH (or named by --gitleaks): `go install
// github.com/zricethezav/gitleaks/v8@v8.30.1` builds it. gitleaks is
// timed as a whole process (`gitleaks stdin`, JSON report), which adds its
// start-up — tens of milliseconds against seconds of scanning — and its
// findings are counted on the transcript with and without the planted
// credentials, beside ours.

type secretsBenchOpts struct {
	scanBytes     int // size of the generated transcript
	baselineBytes int // bytes of it the (slow) regexp peer scans
	rounds        int
	gitleaks      string // path of a gitleaks binary, "" to look it up on PATH, "-" for none
}

const secretsTargetMBs = 200

func benchSecretsFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	scan := fs.Int("scan-bytes", 14_000_000, "bench secrets: size of the generated transcript scanned")
	base := fs.Int("baseline-bytes", 1_000_000, "bench secrets: bytes of it the regexp-only peer scans (it is slow)")
	gl := fs.String("gitleaks", "", "bench secrets: gitleaks binary to measure beside ours (default: gitleaks on PATH; - for none)")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "secrets" {
			return false, nil
		}
		o := secretsBenchOpts{scanBytes: *scan, baselineBytes: *base, rounds: 5, gitleaks: *gl}
		if f := fs.Lookup("rounds"); f != nil && f.Changed {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return true, cli.Usagef("--rounds: %v", err)
			}
			o.rounds = n
		}
		switch {
		case o.scanBytes < 10_000:
			return true, cli.Usagef("--scan-bytes must be at least 10000")
		case o.baselineBytes < 1000:
			return true, cli.Usagef("--baseline-bytes must be at least 1000")
		case o.rounds < 1:
			return true, cli.Usagef("--rounds must be at least 1")
		}
		return true, runBenchSecrets(ctx, e, o)
	}
}

func runBenchSecrets(ctx context.Context, e *env, o secretsBenchOpts) error {
	start := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(e.Stderr, "  [%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	fmt.Fprintf(e.Stdout, "git lossless bench secrets\n")
	fmt.Fprintf(e.Stdout, "  machine  %s/%s, %d CPUs, %s; the scanner runs on one core\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(e.Stdout, "  load     %s at start (other processes share these CPUs)\n\n", loadAvg())

	gen := func(withSecrets bool) ([]byte, error) {
		var main, sub bytes.Buffer
		err := transcriptgen.GenerateWith(&main, transcriptgen.Options{Seed: 1, TargetBytes: o.scanBytes,
			Root: "/home/dev/project", SessionID: "bench-secrets", Subagent: &sub, Secrets: withSecrets})
		return append(main.Bytes(), sub.Bytes()...), err
	}
	text, err := gen(true)
	if err != nil {
		return fmt.Errorf("bench secrets: transcript: %w", err)
	}
	clean, err := gen(false)
	if err != nil {
		return fmt.Errorf("bench secrets: transcript: %w", err)
	}
	logf("transcript: %.1f MB with planted credentials, %.1f MB without", mb(len(text)), mb(len(clean)))

	var findings int
	ours, err := timeRounds(ctx, o.rounds, func() { findings = len(secrets.Scan(text)) })
	if err != nil {
		return err
	}
	logf("scanner: %s", ours)
	falsePos := len(secrets.Scan(clean))

	var redacted []byte
	red, err := timeRounds(ctx, o.rounds, func() {
		fs := secrets.Scan(text)
		redacted, _ = secrets.Redact(text, fs, func(string, []byte) string { return "0123456789ab" })
	})
	if err != nil {
		return err
	}
	logf("scan and redact: %s", red)
	left := len(secrets.Scan(redacted))

	part := text[:min(len(text), o.baselineBytes)]
	rules := rescan.Rules()
	var peerFound, oursOnPart int
	peer, err := timeRounds(ctx, max(1, min(o.rounds, 3)), func() { peerFound = rescan.Count(rules, part) })
	if err != nil {
		return err
	}
	oursPart, err := timeRounds(ctx, o.rounds, func() { oursOnPart = len(secrets.Scan(part)) })
	if err != nil {
		return err
	}
	logf("regexp peer on %.1f MB: %s", mb(len(part)), peer)

	rate := func(n int, d time.Duration) float64 { return mb(n) / d.Seconds() }
	glRows, glNote, err := benchGitleaks(ctx, o, text, clean, rate, ours.pct(50), logf)
	if err != nil {
		return err
	}
	oursRate := rate(len(text), ours.pct(50))
	rows := []row{
		{what: fmt.Sprintf("scan, %.1f MB transcript, one core (median of %d)", mb(len(text)), o.rounds),
			ours: fmt.Sprintf("%.0f MB/s (%s, %d findings)", oursRate, ms(ours.pct(50)), findings), peer: "-",
			target: fmt.Sprintf(">= %d MB/s", secretsTargetMBs), met: yes(oursRate >= secretsTargetMBs)},
		{what: fmt.Sprintf("scan, first %.1f MB, beside the regexp-only peer", mb(len(part))),
			ours:   fmt.Sprintf("%.0f MB/s (%d findings)", rate(len(part), oursPart.pct(50)), oursOnPart),
			peer:   fmt.Sprintf("%.1f MB/s (%d matches): ours %.0fx", rate(len(part), peer.pct(50)), peerFound, float64(peer.pct(50))/float64(oursPart.pct(50))),
			target: "-"},
	}
	rows = append(rows, glRows...)
	rows = append(rows, []row{
		{what: "scan and redact to placeholders", ours: fmt.Sprintf("%.0f MB/s", rate(len(text), red.pct(50))), peer: "-", target: "-"},
		{what: "findings left after redaction", ours: strconv.Itoa(left), peer: "-", target: "0", met: yes(left == 0)},
		{what: fmt.Sprintf("findings in the same transcript without planted credentials (%.1f MB)", mb(len(clean))),
			ours: strconv.Itoa(falsePos), peer: "-", target: "0", met: yes(falsePos == 0)},
	}...)
	printBenchTable(e.Stdout, "PEER (this run)", rows, "", []string{
		glNote,
		"the transcript is generated (transcriptgen.GenerateWith, seed 1): tool calls, file contents, prompts; `env` outputs hold a GitHub token, an AWS key pair and a password",
		"the regexp-only peer is internal/rescan: the same prefixes and names as RE2 expressions, one pass per rule, without JSON-escape handling or reference filters, so its match count differs",
	}, start)
	return nil
}

func mb(n int) float64 { return float64(n) / 1e6 }

// timeRounds runs f rounds times and returns the durations.
func timeRounds(ctx context.Context, rounds int, f func()) (samples, error) {
	var s samples
	for range rounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		f()
		s = append(s, time.Since(t0))
	}
	return s, nil
}

// benchGitleaks times gitleaks over the same transcripts, when it is at
// hand; without it, one note says so and how to get it.
func benchGitleaks(ctx context.Context, o secretsBenchOpts, text, clean []byte, rate func(int, time.Duration) float64,
	oursP50 time.Duration, logf func(string, ...any)) ([]row, string, error) {
	bin := o.gitleaks
	if bin == "-" {
		return nil, "gitleaks not measured (--gitleaks -)", nil
	}
	if bin == "" {
		p, err := exec.LookPath("gitleaks")
		if err != nil {
			return nil, "gitleaks not on PATH, not measured: `go install github.com/zricethezav/gitleaks/v8@v8.30.1` puts it there", nil
		}
		bin = p
	}
	run := func(in []byte) (int, error) {
		cmd := exec.CommandContext(ctx, bin, "stdin", "--no-banner", "--log-level", "error", "--exit-code", "0",
			"--report-format", "json", "--report-path", "-")
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("bench secrets: %s stdin: %w", bin, err)
		}
		var found []json.RawMessage
		if err := json.Unmarshal(out, &found); err != nil {
			return 0, fmt.Errorf("bench secrets: %s report: %w", bin, err)
		}
		return len(found), nil
	}
	var found int
	var runErr error
	rounds := max(1, min(o.rounds, 3))
	d, err := timeRounds(ctx, rounds, func() {
		if n, err := run(text); err != nil {
			runErr = err
		} else {
			found = n
		}
	})
	if err == nil {
		err = runErr
	}
	if err != nil {
		return nil, "", err
	}
	falsePos, err := run(clean)
	if err != nil {
		return nil, "", err
	}
	logf("gitleaks: %s", d)
	ver := "gitleaks"
	if out, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil && len(out) > 1 && out[0] == 'v' && out[1] >= '0' && out[1] <= '9' {
		ver += " " + strings.TrimSpace(string(out)) // a `go install` build says "version is set by build process"
	}
	return []row{
			{what: fmt.Sprintf("scan, %.1f MB transcript, beside %s (whole process, median of %d)", mb(len(text)), ver, rounds),
				ours:   fmt.Sprintf("%.0f MB/s", rate(len(text), oursP50)),
				peer:   fmt.Sprintf("%.1f MB/s (%s, %d findings): ours %.0fx", rate(len(text), d.pct(50)), ms(d.pct(50)), found, float64(d.pct(50))/float64(oursP50)),
				target: "-"},
			{what: "  its findings in the transcript without planted credentials", ours: "-", peer: strconv.Itoa(falsePos), target: "-"},
		}, fmt.Sprintf("%s at %s, default rules, `stdin` with a JSON report; its time includes its process start", ver, bin),
		nil
}
