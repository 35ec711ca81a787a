package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/receiptfixture"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// `git lossless bench receipt`: the receipt targets measured on
// the receipt fixture (package internal/testkit/receiptfixture: a commit
// changing 50 files in a repository of 100,000 events), in this process and as the
// fresh processes a user runs, beside plain git and gpg doing the parts of
// the work they can do on the same note.

// Targets of the receipt issue.
const (
	receiptBuildTarget  = 200 * time.Millisecond
	receiptVerifyTarget = 100 * time.Millisecond
	// receiptTargetEvents is the repository size the targets are stated
	// for; a smaller fixture neither meets nor misses them.
	receiptTargetEvents = 100_000
)

// receiptBenchOpts configures `git lossless bench receipt`.
type receiptBenchOpts struct {
	keep   string // fixture root, kept and reused ("" = a temporary directory under the user cache dir)
	events int    // events in the fixture
	rounds int    // measured runs per figure
	exe    string // the git-lossless binary for process figures ("" = this one)
}

func defaultReceiptBenchOpts() receiptBenchOpts {
	return receiptBenchOpts{events: receiptTargetEvents, rounds: 10}
}

// benchReceiptFlags registers the flags of `git lossless bench receipt` on
// the bench command's flag set and returns its dispatcher: handled is true
// when args select the receipt bench. --events and --keep are the bench
// command's own flags (--keep DIR: build the fixture in DIR, or reuse the
// one there, and leave it).
func benchReceiptFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	d := defaultReceiptBenchOpts()
	rounds := fs.Int("rounds", d.rounds, "bench receipt: measured runs per figure")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "receipt" {
			return false, nil
		}
		o := d
		o.rounds = *rounds
		if f := fs.Lookup("events"); f != nil && f.Changed {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return true, cli.Usagef("--events: %v", err)
			}
			o.events = n
		}
		if f := fs.Lookup("keep"); f != nil {
			o.keep = f.Value.String()
		}
		switch {
		case o.events < 120:
			return true, cli.Usagef("--events must be at least 120 for bench receipt")
		case o.rounds < 1:
			return true, cli.Usagef("--rounds must be at least 1")
		}
		return true, runBenchReceipt(ctx, e, o)
	}
}

// receiptBench is one run of the receipt bench.
type receiptBench struct {
	o      receiptBenchOpts
	e      *env
	exe    string
	root   string // where the fixture, the key and the gpg home live
	fx     receiptfixture.Built
	st     *gitstore.Store
	key    *receipt.Key
	env    []string // of the processes measured
	gnupg  string   // GNUPGHOME of the gpg peer ("" without gpg)
	rows   []row
	notes  []string
	start  time.Time
	target bool // the fixture is the size the targets are stated for
}

func runBenchReceipt(ctx context.Context, e *env, o receiptBenchOpts) (err error) {
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(errors.New("bench needs git on PATH"), "install git; the fixture is built and the peers are measured with it")
	}
	b := &receiptBench{o: o, e: e, exe: o.exe, start: time.Now(), target: o.events >= receiptTargetEvents}
	if b.exe == "" {
		if b.exe, err = productExe(); err != nil {
			return fmt.Errorf("bench receipt: locate own binary: %w", err)
		}
	}
	var cleanup func()
	b.root, cleanup, err = benchDir(o.keep, "receipt-", false)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench receipt: fixture directory: %w", err)
	}
	defer b.stopGPG()

	gitVersion := "git ?"
	if out, err := exec.CommandContext(ctx, "git", "version").Output(); err == nil {
		gitVersion = strings.TrimSpace(string(out))
	}
	fx := receiptfixture.ForEvents(o.events)
	fmt.Fprintf(e.Stdout, "git lossless bench receipt\n")
	fmt.Fprintf(e.Stdout, "  machine  %s/%s, %d CPUs, %s, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), gitVersion)
	fmt.Fprintf(e.Stdout, "  fixture  %d events: %d Claude Code-like sessions over %d files; commit C changes 50 files (package internal/testkit/receiptfixture %s)\n",
		fx.Events(), fx.Sessions, fx.Files, receiptfixture.Version)
	fmt.Fprintf(e.Stdout, "  repos    %s%s\n", b.root, map[bool]string{true: " (kept, reused when complete)", false: " (removed afterwards)"}[o.keep != ""])
	fmt.Fprintf(e.Stdout, "  load     %s at start (other processes share these CPUs and disk)\n", loadAvg())
	fmt.Fprintf(e.Stdout, "  disk     %s\n", diskLine(filepath.Join(b.root, "floor")))
	if !b.target {
		fmt.Fprintf(e.Stdout, "  targets  stated for %d events; this smaller fixture is measured, not judged\n", receiptTargetEvents)
	}
	fmt.Fprintln(e.Stdout)

	steps := []benchStep{
		{"fixture", func(ctx context.Context) error { return b.setup(ctx, fx) }},
		{"build", b.benchBuild},
		{"store", b.benchStore},
		{"verify", b.benchVerify},
	}
	if err := runBenchSteps(ctx, "bench receipt", steps, b.logf); err != nil {
		return err
	}
	b.print()
	return nil
}

func (b *receiptBench) logf(format string, a ...any) {
	fmt.Fprintf(b.e.Stderr, "  [%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, a...))
}

func (b *receiptBench) note(format string, a ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, a...))
}

// judge says whether a target was met, or nothing when the fixture is
// smaller than the one the targets are stated for.
func (b *receiptBench) judge(met bool) *bool {
	if !b.target {
		return nil
	}
	return yes(met)
}

// setup builds (or reuses) the fixture, and a signing key the measured
// processes use through git config lossless.signingKey, and imports its
// public part into a gpg home of the bench's own for the gpg peer.
func (b *receiptBench) setup(ctx context.Context, fx receiptfixture.Fixture) error {
	t0 := time.Now()
	var err error
	if b.fx, err = fx.Cached(ctx, b.root); err != nil {
		return err
	}
	b.logf("fixture: %s ready in %s", b.fx.Dir, time.Since(t0).Round(10*time.Millisecond))
	// One key per fixture directory, reused by later runs: receipts of a
	// key this run does not know would fail `receipt verify`.
	keyFile := filepath.Join(b.root, "bench-signing-key.asc")
	if b.key, err = receipt.LoadKey(keyFile); errors.Is(err, os.ErrNotExist) {
		if b.key, err = receipt.GenerateKey("git-lossless bench", "bench@localhost"); err == nil {
			err = b.key.WriteFile(keyFile, false)
		}
	}
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	cfgHome := filepath.Join(b.root, "config") // no user key, no user config
	if err := os.MkdirAll(cfgHome, 0o700); err != nil {
		return err
	}
	b.env = append(childEnv(), "XDG_CONFIG_HOME="+cfgHome, "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	if _, _, err := b.proc(ctx, nil, "git", "config", "lossless.signingKey", keyFile); err != nil {
		return err
	}
	// Opened after the config is written: the store reads it when opened.
	if b.st, err = gitstore.OpenDir(b.fx.Dir, gitstore.Options{}); err != nil {
		return err
	}
	if _, err := exec.LookPath("gpg"); err != nil {
		b.note("gpg is not on PATH: the plain `git notes show | gpg --verify` peer was not measured.")
		return nil
	}
	home := filepath.Join(b.root, "gnupg")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	b.gnupg = home
	b.env = append(b.env, "GNUPGHOME="+home)
	pub, err := b.key.ArmoredPublic()
	if err != nil {
		return err
	}
	if _, _, err := b.proc(ctx, []byte(pub), "gpg", "--batch", "--no-autostart", "--import"); err != nil {
		return err
	}
	return nil
}

// stopGPG ends the gpg agent of the bench's gpg home, if one started.
func (b *receiptBench) stopGPG() {
	if b.gnupg == "" {
		return
	}
	kill := exec.Command("gpgconf", "--kill", "all")
	kill.Env = append(os.Environ(), "GNUPGHOME="+b.gnupg)
	kill.Run()
}

// proc runs a process in the fixture repository with the bench's
// environment and returns its wall time and standard output.
func (b *receiptBench) proc(ctx context.Context, stdin []byte, name string, args ...string) (time.Duration, []byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = b.fx.Dir
	cmd.Env = b.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return d, out.Bytes(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()+" "+out.String()))
	}
	return d, out.Bytes(), nil
}

// tokenCache is the directory of the repository's token count cache:
// removed, every count is new.
func (b *receiptBench) tokenCache(ctx context.Context) string {
	return tokens.NewCounter(ctx, b.st).Dir
}

func (b *receiptBench) dropTokenCache(ctx context.Context) error {
	if err := os.RemoveAll(b.tokenCache(ctx)); err != nil {
		return fmt.Errorf("remove the token cache: %w", err)
	}
	return nil
}

// benchBuild: Build in this process with the token cache cold and warm,
// and `git lossless receipt --refresh` as fresh processes, cold and warm.
func (b *receiptBench) benchBuild(ctx context.Context) error {
	var cold, warm samples
	var stats tokens.Stats
	var r *note.Receipt
	for i := range b.o.rounds {
		if err := b.dropTokenCache(ctx); err != nil {
			return err
		}
		tc := tokens.NewCounter(ctx, b.st)
		t0 := time.Now()
		got, err := receipt.Build(ctx, b.st, b.fx.Commit, receipt.Options{Counter: tc})
		if err != nil {
			return err
		}
		cold = append(cold, time.Since(t0))
		if i == 0 {
			r, stats = got, tc.Stats()
		}
	}
	if len(r.Paths) != 50 {
		return fmt.Errorf("the receipt of C lists %d paths, want 50", len(r.Paths))
	}
	for range b.o.rounds {
		t0 := time.Now()
		if _, err := receipt.Build(ctx, b.st, b.fx.Commit, receipt.Options{}); err != nil {
			return err
		}
		warm = append(warm, time.Since(t0))
	}
	what := fmt.Sprintf("build, %d paths, %d events, %d read-set rows", len(r.Paths), r.Coverage.Events, len(r.Reads))
	b.rows = append(b.rows,
		row{what: "receipt " + what + ", in process, token cache cold (" + strconv.Itoa(len(cold)) + ")", ours: cold.String(), peer: "-",
			target: "p50 <= 200 ms", met: b.judge(cold.pct(50) <= receiptBuildTarget)},
		row{what: "receipt build, in process, token cache warm (" + strconv.Itoa(len(warm)) + ")", ours: warm.String(), peer: "-",
			target: "p50 <= 200 ms", met: b.judge(warm.pct(50) <= receiptBuildTarget)})
	b.note("cold build: %d distinct versions and spans counted (%d distinct lines tokenized, %d line counts reused) for %d read-set rows and spans; the first round also loads the tokenizer's vocabulary, later rounds find it loaded.",
		stats.Counted, stats.Chunks, stats.Reused, stats.Events)
	b.logf("build in process: cold %s, warm %s", cold, warm)

	// The command a user runs: a fresh process that builds, signs, stores
	// and prints.
	var pcold, pwarm, diff samples
	for range b.o.rounds {
		if err := b.dropTokenCache(ctx); err != nil {
			return err
		}
		d, out, err := b.proc(ctx, nil, b.exe, "receipt", b.fx.Commit, "--refresh")
		if err != nil {
			return err
		}
		if !bytes.Contains(out, []byte("built and stored")) {
			return fmt.Errorf("receipt --refresh did not store a receipt:\n%s", lastLines(out, 5))
		}
		pcold = append(pcold, d)
	}
	for range b.o.rounds {
		d, _, err := b.proc(ctx, nil, b.exe, "receipt", b.fx.Commit, "--refresh")
		if err != nil {
			return err
		}
		pwarm = append(pwarm, d)
		d, out, err := b.proc(ctx, nil, "git", "diff-tree", "-r", "--no-commit-id", b.fx.Parent, b.fx.Commit)
		if err != nil {
			return err
		}
		if n := bytes.Count(out, []byte("\n")); n != 50 {
			return fmt.Errorf("git diff-tree lists %d paths, want 50", n)
		}
		diff = append(diff, d)
	}
	peer := fmt.Sprintf("`git diff-tree -r P C` (the diff alone): %s", diff)
	b.rows = append(b.rows,
		row{what: "`git lossless receipt C --refresh`, fresh process, token cache cold (" + strconv.Itoa(len(pcold)) + ")", ours: pcold.String(), peer: peer,
			target: "p50 <= 200 ms", met: b.judge(pcold.pct(50) <= receiptBuildTarget)},
		row{what: "`git lossless receipt C --refresh`, fresh process, token cache warm (" + strconv.Itoa(len(pwarm)) + ")", ours: pwarm.String(), peer: peer,
			target: "p50 <= 200 ms", met: b.judge(pwarm.pct(50) <= receiptBuildTarget)})
	b.note("receipt --refresh: process start, build, clear-sign, a signed notes commit with fsync, the ref under its lock, and printing; the build target is held to the whole command.")
	b.logf("receipt process: cold %s, warm %s; git diff-tree %s", pcold, pwarm, diff)
	return nil
}

// benchStore: sign and store a receipt in this process, beside plain git
// storing the same text as an (unsigned) note.
func (b *receiptBench) benchStore(ctx context.Context) error {
	r, err := receipt.Build(ctx, b.st, b.fx.Commit, receipt.Options{})
	if err != nil {
		return err
	}
	var ours, peer samples
	var note []byte
	for range b.o.rounds {
		t0 := time.Now()
		_, n, err := receipt.Save(ctx, b.st, r, b.key)
		if err != nil {
			return err
		}
		ours = append(ours, time.Since(t0))
		note = n
	}
	noteFile := filepath.Join(b.root, "note.txt")
	if err := os.WriteFile(noteFile, note, 0o644); err != nil {
		return err
	}
	for range b.o.rounds {
		d, _, err := b.proc(ctx, nil, "git", "notes", "--ref=lossless-bench-peer", "add", "-f", "-F", noteFile, b.fx.Commit)
		if err != nil {
			return err
		}
		peer = append(peer, d)
	}
	if _, _, err := b.proc(ctx, nil, "git", "update-ref", "-d", "refs/notes/lossless-bench-peer"); err != nil {
		return err
	}
	b.rows = append(b.rows, row{what: "sign + store the receipt as a signed note, in process (" + strconv.Itoa(len(ours)) + ")", ours: ours.String(),
		peer: fmt.Sprintf("`git notes add -f -F` (unsigned): %s", peer), target: "-"})
	b.logf("store: ours %s, git notes add %s", ours, peer)
	return nil
}

// benchVerify: verify the stored receipt in this process and as `git
// lossless receipt verify C`, beside plain git and gpg checking the note's
// and the notes commit's signatures.
func (b *receiptBench) benchVerify(ctx context.Context) error {
	s, err := receipt.Load(ctx, b.st, b.key.Writer(), b.fx.Commit)
	if err != nil {
		return err
	}
	kr := &receipt.Keyring{}
	if err := kr.Add(b.key); err != nil {
		return err
	}
	var ours, proc samples
	var res *receipt.Result
	for range b.o.rounds {
		t0 := time.Now()
		res = receipt.Verify(ctx, b.st, s, kr)
		ours = append(ours, time.Since(t0))
		if !res.OK() {
			return fmt.Errorf("the receipt does not verify: %+v", res.Problems)
		}
	}
	for range b.o.rounds {
		d, out, err := b.proc(ctx, nil, b.exe, "receipt", "verify", b.fx.Commit)
		if err != nil {
			return err
		}
		if !bytes.Contains(out, []byte("1 receipt, 1 ok")) {
			return fmt.Errorf("receipt verify did not pass:\n%s", lastLines(out, 5))
		}
		proc = append(proc, d)
	}
	peer := "-"
	if b.gnupg != "" {
		var gpgNote, gpgCommit samples
		ref := gitstore.NotesPrefix + b.key.Writer()
		for range b.o.rounds {
			d1, note, err := b.proc(ctx, nil, "git", "notes", "--ref=lossless/"+b.key.Writer(), "show", b.fx.Commit)
			if err != nil {
				return err
			}
			d2, _, err := b.proc(ctx, note, "gpg", "--batch", "--verify")
			if err != nil {
				return fmt.Errorf("plain gpg rejects the note: %w", err)
			}
			gpgNote = append(gpgNote, d1+d2)
			d3, _, err := b.proc(ctx, nil, "git", "verify-commit", ref)
			if err != nil {
				return fmt.Errorf("plain git rejects the notes commit: %w", err)
			}
			gpgCommit = append(gpgCommit, d3)
		}
		peer = fmt.Sprintf("`git notes show C | gpg --verify` (2 processes, signature only): %s; `git verify-commit <notes ref>`: %s", gpgNote, gpgCommit)
	}
	checked := fmt.Sprintf("%d paths, %d events in %d writers, %d blobs", res.Checked.Paths, res.Checked.Events, res.Checked.Writers, res.Checked.Blobs)
	b.rows = append(b.rows,
		row{what: "receipt verify, in process: signatures, " + checked + " (" + strconv.Itoa(len(ours)) + ")", ours: ours.String(), peer: peer,
			target: "p50 <= 100 ms", met: b.judge(ours.pct(50) <= receiptVerifyTarget)},
		row{what: "`git lossless receipt verify C`, fresh process (" + strconv.Itoa(len(proc)) + ")", ours: proc.String(), peer: "same as above",
			target: "p50 <= 100 ms", met: b.judge(proc.pct(50) <= receiptVerifyTarget)})
	b.note("verify: both signatures, the commit's facts and diff, every writer's chain re-verified up to the recorded seal, every referenced event and every named blob re-hashed; gpg checks the note's signature only.")
	b.logf("verify: in process %s, process %s", ours, proc)
	return nil
}

func (b *receiptBench) print() {
	printBenchTable(b.e.Stdout, "PEER (plain git and gpg, this run)", b.rows, "", b.notes, b.start)
}
