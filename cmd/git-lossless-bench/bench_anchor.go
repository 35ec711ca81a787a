package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// `git lossless bench anchor`: anchor push, verify --anchor and sync, each
// as the user runs it (a fresh git-lossless process), beside the C git
// commands they amount to, measured in the same run on the same
// repositories: `git push` of one ref, `git fsck`, and `git fetch` + `git
// push` of the same refs.

// anchorBenchOpts configures `git lossless bench anchor`.
type anchorBenchOpts struct {
	dir          string // build the fixtures here and keep them ("" = a temporary directory)
	writers      int    // writers of the anchor push and verify fixtures
	perWriter    int    // events per writer of the anchor push fixture
	verifyEvents int    // events of the verify fixture
	syncEvents   int    // new events of the second clone that syncs
	samples      int    // measured anchor pushes (and git pushes); verify and sync take fewer
	batch        int    // events per batch commit in the imported fixtures
}

func defaultAnchorBenchOpts() anchorBenchOpts {
	return anchorBenchOpts{writers: 1000, perWriter: 3, verifyEvents: 100_000, syncEvents: 10_000, samples: 10, batch: 50}
}

// The sizes the targets are stated for.
const (
	anchorTargetWriters      = 1000
	anchorTargetVerifyEvents = 100_000
	anchorTargetSyncEvents   = 10_000
)

// benchAnchorFlags registers the flags of `git lossless bench anchor` on
// the bench command's flag set and returns its dispatcher: handled is true
// when args select the anchor bench. --keep is the bench command's own
// flag (build the fixtures in DIR and leave them).
func benchAnchorFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	d := defaultAnchorBenchOpts()
	writers := fs.Int("anchor-writers", d.writers, "bench anchor: writers in the anchor push and verify fixtures")
	verifyEvents := fs.Int("verify-events", d.verifyEvents, "bench anchor: events in the verify --anchor fixture (spread over --anchor-writers)")
	syncEvents := fs.Int("sync-events", d.syncEvents, "bench anchor: new events the second clone syncs")
	samples := fs.Int("anchor-samples", d.samples, "bench anchor: measured anchor pushes and git pushes (verify and sync: at most 3)")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "anchor" {
			return false, nil
		}
		o := d
		o.writers, o.verifyEvents, o.syncEvents, o.samples = *writers, *verifyEvents, *syncEvents, *samples
		if f := fs.Lookup("keep"); f != nil {
			o.dir = f.Value.String()
		}
		if f := fs.Lookup("batch"); f != nil && f.Changed {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return true, cli.Usagef("--batch: %v", err)
			}
			o.batch = n
		}
		switch {
		case o.writers < 1:
			return true, cli.Usagef("--anchor-writers must be at least 1")
		case o.verifyEvents < o.writers:
			return true, cli.Usagef("--verify-events must be at least --anchor-writers (%d): one event per writer", o.writers)
		case o.syncEvents < 10:
			return true, cli.Usagef("--sync-events must be at least 10")
		case o.samples < 1:
			return true, cli.Usagef("--anchor-samples must be at least 1")
		case o.batch < 1:
			return true, cli.Usagef("--batch must be at least 1")
		}
		return true, runBenchAnchor(ctx, e, o)
	}
}

// anchorBench is one run of the anchor bench.
type anchorBench struct {
	o     anchorBenchOpts
	e     *env
	exe   string
	root  string
	env   []string // the processes' environment: a temporary HOME and anchor key
	envA  []string // the same, with the other machine's key (the first clone of the sync)
	rows  []row
	notes []string
	start time.Time
}

func runBenchAnchor(ctx context.Context, e *env, o anchorBenchOpts) error {
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(errors.New("bench needs git on PATH"), "install git; the peers are measured with it")
	}
	exe, err := productExe()
	if err != nil {
		return fmt.Errorf("bench anchor: locate own binary: %w", err)
	}
	b := &anchorBench{o: o, e: e, exe: exe, start: time.Now()}
	var cleanup func()
	b.root, cleanup, err = benchDir(o.dir, "anchor-", false)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench anchor: fixture directory: %w", err)
	}
	if b.root, err = filepath.EvalSymlinks(b.root); err != nil {
		return fmt.Errorf("bench anchor: %w", err)
	}
	if err := b.setupEnv(); err != nil {
		return fmt.Errorf("bench anchor: %w", err)
	}
	gitVersion := "git ?"
	if out, err := exec.Command("git", "version").Output(); err == nil {
		gitVersion = strings.TrimSpace(string(out))
	}
	fmt.Fprintf(e.Stdout, "git lossless bench anchor\n")
	fmt.Fprintf(e.Stdout, "  machine   %s/%s, %d CPUs, %s, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), gitVersion)
	fmt.Fprintf(e.Stdout, "  content   source-like text, %d-%d KiB per file; every event archives a new blob\n", benchdata.MinSize>>10, benchdata.MaxSize>>10)
	fmt.Fprintf(e.Stdout, "  fixtures  anchor push: %d writers x %d events; verify: %d events over %d writers; sync: %d new events over %d writers (batches of %d)\n",
		o.writers, o.perWriter, o.verifyEvents, o.writers, o.syncEvents, anchorSyncWriters(o.syncEvents), o.batch)
	fmt.Fprintf(e.Stdout, "  repos     %s%s\n", b.root, map[bool]string{true: " (kept)", false: " (removed afterwards)"}[o.dir != ""])
	fmt.Fprintf(e.Stdout, "  load      %s at start (other processes share these CPUs and disk)\n", loadAvg())
	fmt.Fprintf(e.Stdout, "  disk      %s\n", diskLine(filepath.Join(b.root, "floor")))

	b.note("every figure is a fresh git-lossless (or git) process, run with a temporary HOME, XDG_CONFIG_HOME and LOSSLESS_ANCHOR_KEY_FILE (anchor keys made for this run), GIT_CONFIG_NOSYSTEM, gc.auto=0 and maintenance.auto=false, for us and for C git alike.")
	steps := []benchStep{
		{"anchor push", b.benchPush},
		{"verify --anchor", b.benchVerify},
		{"sync", b.benchSync},
	}
	if err := runBenchSteps(ctx, "bench anchor", steps, b.logf); err != nil {
		return err
	}
	b.print()
	return nil
}

// anchorSyncWriters is how many writers the sync fixture's events are spread
// over: 100 at the target size.
func anchorSyncWriters(events int) int { return min(100, max(1, events/100)) }

func (b *anchorBench) logf(format string, a ...any) {
	fmt.Fprintf(b.e.Stderr, "  [%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, a...))
}

func (b *anchorBench) note(format string, a ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, a...))
}

func (b *anchorBench) add(r row) { b.rows = append(b.rows, r) }

// anchorJudge says whether a target was met, or nothing (the RESULT column's
// "-") when that row's fixture is smaller than the one its target is
// stated for.
func anchorJudge(atSize, met bool) *bool {
	if !atSize {
		return nil
	}
	return yes(met)
}

func (b *anchorBench) pushAtSize() bool { return b.o.writers >= anchorTargetWriters }
func (b *anchorBench) verifyAtSize() bool {
	return b.o.writers >= anchorTargetWriters && b.o.verifyEvents >= anchorTargetVerifyEvents
}
func (b *anchorBench) syncAtSize() bool { return b.o.syncEvents >= anchorTargetSyncEvents }

func (b *anchorBench) print() {
	fmt.Fprintln(b.e.Stdout)
	var small []string
	if !b.pushAtSize() {
		small = append(small, fmt.Sprintf("anchor push (stated for %d writers; this run: %d)", anchorTargetWriters, b.o.writers))
	}
	if !b.verifyAtSize() {
		small = append(small, fmt.Sprintf("verify --anchor (stated for %d events in %d writers; this run: %d in %d)", anchorTargetVerifyEvents, anchorTargetWriters, b.o.verifyEvents, b.o.writers))
	}
	if !b.syncAtSize() {
		small = append(small, fmt.Sprintf("sync (stated for %d new events; this run: %d)", anchorTargetSyncEvents, b.o.syncEvents))
	}
	skipped := ""
	if len(small) > 0 {
		skipped = "targets not judged, the fixture being smaller than stated: " + strings.Join(small, "; ") + "\n"
	}
	printBenchTable(b.e.Stdout, "PEER (C git, this run)", b.rows, skipped, b.notes, b.start)
}

// setupEnv makes the temporary home the processes run with: no real
// anchor key, git config or credential helper of the user's is touched.
// Two anchor keys are made in it: this machine's, and the other machine's
// (the first clone of the sync fixture).
func (b *anchorBench) setupEnv() error {
	home := filepath.Join(b.root, "home")
	cfg := filepath.Join(home, ".config")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		return err
	}
	here, there := filepath.Join(b.root, "keys", "here"), filepath.Join(b.root, "keys", "there")
	if _, err := anchor.LoadKey(here, "bench-here", true); err != nil {
		return err
	}
	if _, err := anchor.LoadKey(there, "bench-there", true); err != nil {
		return err
	}
	var base []string
	for _, kv := range childEnv() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "LOSSLESS_ANCHOR_KEY_FILE", strings.HasPrefix(k, "XDG_"),
			k == "GIT_CONFIG_GLOBAL", k == "GIT_CONFIG_SYSTEM", k == "GIT_CONFIG_NOSYSTEM", strings.HasPrefix(k, "GIT_CONFIG_"):
			continue
		}
		base = append(base, kv)
	}
	base = append(base, "HOME="+home, "XDG_CONFIG_HOME="+cfg, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		// No automatic gc or maintenance behind a measurement's back (a
		// fetch or a receive-pack would start one), for us and the peers.
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false")
	b.env = append(append([]string(nil), base...), "LOSSLESS_ANCHOR_KEY_FILE="+here)
	b.envA = append(append([]string(nil), base...), "LOSSLESS_ANCHOR_KEY_FILE="+there)
	return nil
}

// run runs a process in dir with env and returns its wall time and
// standard output.
func (b *anchorBench) run(ctx context.Context, env []string, dir, name string, args ...string) (time.Duration, []byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return d, out.Bytes(), fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err,
			strings.TrimSpace(lastLines(out.Bytes(), 5)+"\n"+strings.TrimSpace(errb.String())))
	}
	return d, out.Bytes(), nil
}

// ours runs this binary in dir (this machine's key).
func (b *anchorBench) ours(ctx context.Context, dir string, args ...string) (time.Duration, []byte, error) {
	return b.run(ctx, b.env, dir, b.exe, args...)
}

// git runs C git in dir.
func (b *anchorBench) git(ctx context.Context, dir string, args ...string) (time.Duration, []byte, error) {
	return b.run(ctx, b.env, dir, "git", args...)
}

func (b *anchorBench) initBare(ctx context.Context, name string) (string, error) {
	dir := filepath.Join(b.root, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	_, _, err := b.git(ctx, b.root, "init", "-q", "--bare", dir)
	return dir, err
}

// buildWriters makes a repository at dir holding n events per writer for
// each writer name, imported (one pack per writer, fsync off: a fixture is
// rebuilt, never recovered) through a store with the witness wired in, as
// git-lossless opens it: each writer's head is witnessed, as on a machine
// that recorded it. Events name dir as their repository, so that the push
// gate checks their paths against its ignore rules. Fixtures take
// different seeds, so no two share a blob.
func (b *anchorBench) buildWriters(ctx context.Context, dir string, names []string, n []int, seed uint64) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := benchdata.GitInit(dir); err != nil {
		return err
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		return err
	}
	next := 0
	for w, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs := benchdata.Records(seed, w, next, n[w])
		for i := range recs {
			recs[i].Repo = dir
		}
		if _, err := st.Import(ctx, name, recs, b.o.batch); err != nil {
			return fmt.Errorf("import writer %s: %w", name, err)
		}
		next += n[w]
	}
	return nil
}

// anchorSpread returns writers names (prefix + number) and n events spread
// evenly over them.
func anchorSpread(prefix string, writers, events int) ([]string, []int) {
	names, counts := make([]string, writers), make([]int, writers)
	for w := range writers {
		names[w] = fmt.Sprintf("%s%04d", prefix, w)
		counts[w] = events / writers
		if w < events%writers {
			counts[w]++
		}
	}
	return names, counts
}

// benchPush: anchor push of a repository of o.writers writers to a local
// bare repository, a new checkpoint each time (one event appended to one
// writer before each push), beside `git push` of that writer's ref to
// another bare repository; then both with nothing new; then the first
// again after the repository's packs are consolidated into one.
func (b *anchorBench) benchPush(ctx context.Context) error {
	t0 := time.Now()
	repo := filepath.Join(b.root, "push")
	names, counts := anchorSpread("bench-", b.o.writers, b.o.writers*b.o.perWriter)
	if err := b.buildWriters(ctx, repo, names, counts, 71); err != nil {
		return err
	}
	b.logf("push fixture: %d writers x %d events in %s", b.o.writers, b.o.perWriter, time.Since(t0).Round(10*time.Millisecond))
	anchorBare, err := b.initBare(ctx, "push-anchor.git")
	if err != nil {
		return err
	}
	gitBare, err := b.initBare(ctx, "push-git.git")
	if err != nil {
		return err
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		return err
	}
	writer := names[0]
	ref := gitstore.RefPrefix + writer
	appended := 0
	appendOne := func() error {
		recs := benchdata.Records(72, 0, appended, 1)
		recs[0].Repo = repo
		appended++
		_, err := st.Append(ctx, writer, recs)
		return err
	}
	pushOurs := func(wantNew bool) (time.Duration, error) {
		d, out, err := b.ours(ctx, repo, "anchor", "push", anchorBare)
		if err != nil {
			return d, err
		}
		state := "(unchanged since it was made)"
		if wantNew {
			state = "(new, signed)"
		}
		if !bytes.Contains(out, []byte(state)) || !bytes.Contains(out, []byte("anchored on "+anchorBare)) ||
			!bytes.Contains(out, []byte(fmt.Sprintf("%d writers", b.o.writers))) {
			return d, fmt.Errorf("anchor push printed, wanting %s:\n%s", state, out)
		}
		return d, nil
	}
	pushGit := func() (time.Duration, error) {
		d, _, err := b.git(ctx, repo, "push", "-q", "--no-verify", gitBare, ref+":"+ref)
		return d, err
	}
	// measure pushes with both, alternating which goes first so that drift
	// in the machine's load falls on both; with moved, one event is
	// appended to the writer before each pair.
	measure := func(moved bool) (ours, peer samples, err error) {
		for i := range b.o.samples {
			if moved {
				if err := appendOne(); err != nil {
					return nil, nil, err
				}
			}
			for k := range 2 {
				if (i+k)%2 == 0 {
					d, err := pushOurs(moved)
					if err != nil {
						return nil, nil, err
					}
					ours = append(ours, d)
				} else {
					d, err := pushGit()
					if err != nil {
						return nil, nil, err
					}
					peer = append(peer, d)
				}
			}
		}
		return ours, peer, nil
	}
	// The first push of each makes the remote hold the checkpoint chain and
	// the writer's ref, and warms the caches; it is not counted.
	if _, err := pushOurs(true); err != nil {
		return err
	}
	if _, err := pushGit(); err != nil {
		return err
	}
	packs := anchorPackCount(repo)
	ours, peer, err := measure(true)
	if err != nil {
		return err
	}
	ratio := float64(ours.pct(50)) / float64(peer.pct(50))
	b.add(row{
		what:   fmt.Sprintf("anchor push, %d writers, a new checkpoint each (1 event appended before each), whole process (%d)", b.o.writers, len(ours)),
		ours:   ours.String(),
		peer:   fmt.Sprintf("`git push` of that writer's ref (its new batch): %s", peer),
		target: "p50 <= 1 s",
		met:    anchorJudge(b.pushAtSize(), ours.pct(50) <= time.Second),
	})
	b.add(row{
		what:   "  anchor push / `git push` of one ref, p50",
		ours:   fmt.Sprintf("%.2fx", ratio),
		peer:   "-",
		target: "<= 2x",
		met:    anchorJudge(b.pushAtSize(), ratio <= 2),
	})
	b.logf("anchor push: ours %s, git push %s, ratio %.2f (%d packs)", ours, peer, ratio, packs)

	// Nothing moved: the last checkpoint is reused and the remote has it.
	oursSame, peerSame, err := measure(false)
	if err != nil {
		return err
	}
	b.add(row{
		what:   fmt.Sprintf("anchor push, %d writers, nothing moved (checkpoint reused, up to date) (%d)", b.o.writers, len(oursSame)),
		ours:   oursSame.String(),
		peer:   fmt.Sprintf("`git push` of that ref, up to date: %s", peerSame),
		target: "-",
	})
	b.logf("anchor push, nothing new: ours %s, git push %s", oursSame, peerSame)

	// The same repository once git gc has consolidated its packs (without
	// looking for deltas: the objects are copied as they are).
	if _, _, err := b.git(ctx, repo, "-c", "pack.window=0", "repack", "-a", "-d", "-q"); err != nil {
		return err
	}
	oursOne, peerOne, err := measure(true)
	if err != nil {
		return err
	}
	b.add(row{
		what: fmt.Sprintf("  the same as the first, its %d packs repacked into %d (%d)", packs, anchorPackCount(repo), len(oursOne)),
		ours: oursOne.String(),
		peer: fmt.Sprintf("`git push`, the same: %s; ours %.2fx", peerOne,
			float64(oursOne.pct(50))/float64(peerOne.pct(50))),
		target: "-",
	})
	b.logf("anchor push after repack: ours %s, git push %s", oursOne, peerOne)

	// Each push that had something new sent a new checkpoint: the remote's
	// chain holds them all.
	_, out, err := b.git(ctx, anchorBare, "for-each-ref", "--format=%(objectname)", gitstore.AnchorPrefix)
	if err != nil {
		return err
	}
	tip := strings.TrimSpace(string(out))
	if _, out, err = b.git(ctx, anchorBare, "rev-list", "--count", tip); err != nil {
		return err
	}
	if n := strings.TrimSpace(string(out)); n != strconv.Itoa(2*b.o.samples+1) {
		return fmt.Errorf("the anchor remote holds %s checkpoints, want %d", n, 2*b.o.samples+1)
	}
	size := "?"
	if _, out, err := b.git(ctx, anchorBare, "cat-file", "-s", tip+":checkpoint"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			size = fmt.Sprintf("%.0f KB", float64(n)/1e3)
		}
	}
	b.note("anchor push: the checkpoint names %d writers (%s signed). The fixture is imported one pack per writer, as Import leaves it (a sweep of that many old sessions, before git gc runs); the row of it repacked measures it again after `git -c pack.window=0 repack -a -d`. The peer pushes from the same repository, so it pays the same pack layout.", b.o.writers, size)
	return nil
}

// anchorPackCount is the number of packs of the repository at dir.
func anchorPackCount(dir string) int {
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	return len(packs)
}

// benchVerify: verify --anchor REMOTE over o.verifyEvents events in
// o.writers writers whose checkpoint was anchored there, beside git fsck of
// the same repository.
func (b *anchorBench) benchVerify(ctx context.Context) error {
	t0 := time.Now()
	repo := filepath.Join(b.root, "verify")
	names, counts := anchorSpread("bench-", b.o.writers, b.o.verifyEvents)
	if err := b.buildWriters(ctx, repo, names, counts, 81); err != nil {
		return err
	}
	b.logf("verify fixture: %d events over %d writers in %s", b.o.verifyEvents, b.o.writers, time.Since(t0).Round(10*time.Millisecond))
	bare, err := b.initBare(ctx, "verify-anchor.git")
	if err != nil {
		return err
	}
	if _, _, err := b.ours(ctx, repo, "anchor", "push", bare); err != nil {
		return err
	}
	n := min(3, b.o.samples)
	want := fmt.Sprintf("%d writers, %d ok, 0 broken\n", b.o.writers, b.o.writers)
	verify := func(args ...string) (time.Duration, error) {
		d, out, err := b.ours(ctx, repo, append([]string{"verify"}, args...)...)
		if err != nil {
			return d, err
		}
		if !bytes.HasSuffix(out, []byte(want)) || len(args) > 0 && !bytes.Contains(out, []byte("OK     anchor "+bare+": 1 checkpoint chains")) {
			return d, fmt.Errorf("verify %s did not report the anchor OK and %q:\n%s", strings.Join(args, " "), want, lastLines(out, 3))
		}
		return d, nil
	}
	// Interleaved, the order turning, so that drift in the machine's load
	// falls on all three.
	var ours, plain, peer samples
	for i := range n {
		for k := range 3 {
			switch (i + k) % 3 {
			case 0:
				d, err := verify("--anchor", bare)
				if err != nil {
					return err
				}
				ours = append(ours, d)
				if i == 0 {
					b.logf("verify --anchor: first run (accepts the checkpoint) %s", ms(d))
				}
			case 1:
				d, err := verify()
				if err != nil {
					return err
				}
				plain = append(plain, d)
			case 2:
				d, _, err := b.git(ctx, repo, "fsck", "--no-progress")
				if err != nil {
					return err
				}
				peer = append(peer, d)
			}
		}
	}
	b.add(row{
		what:   fmt.Sprintf("verify --anchor, %d events in %d writers, whole process (median of %d)", b.o.verifyEvents, b.o.writers, n),
		ours:   ms(ours.pct(50)),
		peer:   fmt.Sprintf("`git fsck`: %s", ms(peer.pct(50))),
		target: "<= 2.5 s",
		met:    anchorJudge(b.verifyAtSize(), ours.pct(50) <= 2500*time.Millisecond),
	})
	b.add(row{
		what:   fmt.Sprintf("  the same without --anchor (median of %d)", n),
		ours:   ms(plain.pct(50)),
		peer:   "-",
		target: "-",
	})
	b.logf("verify --anchor: ours %s, without --anchor %s, git fsck %s", ours, plain, peer)
	b.note("verify --anchor: the fixture is imported one pack per writer, and its checkpoint anchor-pushed to the bare repo first; the first run accepts it, the others find it as seen. Every run fetches the remote's checkpoints, checks them, and verifies every chain and every blob's sha256 against the witness and the anchored heads.")
	return nil
}

// benchSync: a second clone holding o.syncEvents new events syncs with a
// remote the first clone synced (and anchored) before, beside the `git
// fetch` + `git push` of the same refs, each on fresh copies of the same
// fixtures.
func (b *anchorBench) benchSync(ctx context.Context) error {
	t0 := time.Now()
	sw := anchorSyncWriters(b.o.syncEvents)
	// The first clone (another machine, with its own key): a tenth as many
	// events over as many writers, synced and anchored to the remote.
	first := filepath.Join(b.root, "sync-first")
	tNames, tCounts := anchorSpread("there-", sw, max(sw, b.o.syncEvents/10))
	if err := b.buildWriters(ctx, first, tNames, tCounts, 91); err != nil {
		return err
	}
	remote0, err := b.initBare(ctx, "sync-remote.template")
	if err != nil {
		return err
	}
	if _, _, err := b.run(ctx, b.envA, first, b.exe, "sync", remote0); err != nil {
		return err
	}
	if _, _, err := b.run(ctx, b.envA, first, b.exe, "anchor", "push", remote0); err != nil {
		return err
	}
	// The second clone, at the path it is synced from (its events name it);
	// a template copy is restored there before each run.
	second := filepath.Join(b.root, "sync-second")
	hNames, hCounts := anchorSpread("here-", sw, b.o.syncEvents)
	if err := b.buildWriters(ctx, second, hNames, hCounts, 92); err != nil {
		return err
	}
	second0 := second + ".template"
	if err := os.RemoveAll(second0); err != nil {
		return err
	}
	if err := os.Rename(second, second0); err != nil {
		return err
	}
	remote := filepath.Join(b.root, "sync-remote.git")
	b.logf("sync fixtures: first clone %d events, second clone %d events, over %d writers each, in %s",
		anchorSum(tCounts), anchorSum(hCounts), sw, time.Since(t0).Round(10*time.Millisecond))

	restore := func() error {
		for _, c := range [][2]string{{second0, second}, {remote0, remote}} {
			if err := os.RemoveAll(c[1]); err != nil {
				return err
			}
			if err := anchorCopyTree(c[0], c[1]); err != nil {
				return err
			}
		}
		return nil
	}
	rid := anchor.RemoteID(remote)
	tracking := gitstore.TrackingPrefix + rid + "/"
	specs := []string{
		"+" + gitstore.RefPrefix + "*:" + tracking + "lossless/*",
		"+" + gitstore.NotesPrefix + "*:" + tracking + "notes/*",
		"+" + gitstore.AnchorPrefix + "*:" + tracking + "incoming/anchor/*",
		"+" + gitstore.AnchorTagPrefix + "*:" + tracking + "incoming/tags/*",
	}
	pushSpec := gitstore.RefPrefix + "here-*:" + gitstore.RefPrefix + "here-*"
	n := min(3, b.o.samples)
	var ours, peer, fetch, push samples
	for i := range n {
		for k := range 2 {
			if err := restore(); err != nil {
				return err
			}
			if (i+k)%2 == 0 {
				d, out, err := b.ours(ctx, second, "sync", remote)
				if err != nil {
					return err
				}
				want := fmt.Sprintf("sync with %s: 0 equal, %d adopted (behind 0, new there %d), %d to push (ahead 0, new here %d)", remote, sw, sw, sw, sw)
				if !bytes.Contains(out, []byte(want)) || !bytes.HasSuffix(out, []byte("\npushed\n")) {
					return fmt.Errorf("sync did not report %q and pushed:\n%s", want, out)
				}
				ours = append(ours, d)
			} else {
				df, _, err := b.git(ctx, second, append([]string{"fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--quiet", "--prune", "--", remote}, specs...)...)
				if err != nil {
					return err
				}
				dp, _, err := b.git(ctx, second, "push", "-q", "--no-verify", "--no-recurse-submodules", "--", remote, pushSpec)
				if err != nil {
					return err
				}
				fetch, push, peer = append(fetch, df), append(push, dp), append(peer, df+dp)
			}
			// Either way the remote now holds both clones' writers.
			_, out, err := b.git(ctx, remote, "for-each-ref", "--format=%(refname)", gitstore.RefPrefix)
			if err != nil {
				return err
			}
			if got := bytes.Count(out, []byte("\n")); got != 2*sw {
				return fmt.Errorf("after the sync the remote holds %d writers, want %d", got, 2*sw)
			}
		}
	}
	ratio := float64(ours.pct(50)) / float64(peer.pct(50))
	b.add(row{
		what:   fmt.Sprintf("sync, second clone: %d new events pushed, %d adopted, whole process (median of %d)", anchorSum(hCounts), anchorSum(tCounts), n),
		ours:   ms(ours.pct(50)),
		peer:   fmt.Sprintf("`git fetch` + `git push`, same refs: %s (%s + %s); ours %.2fx", ms(peer.pct(50)), ms(fetch.pct(50)), ms(push.pct(50)), ratio),
		target: "<= 1.5x",
		met:    anchorJudge(b.syncAtSize(), ratio <= 1.5),
	})
	b.logf("sync: ours %s, git fetch + push %s (fetch %s, push %s), ratio %.2f", ours, peer, fetch, push, ratio)
	b.note("sync: the remote holds the first clone's writers and its checkpoint (another machine's key, pinned on first sight), put there by its own sync and anchor push. Each run, ours and the peer's, starts from fresh copies of the second clone and the remote. Ours fetches the writers, notes and checkpoints into tracking refs, checks the checkpoint, verifies each adopted chain (no content) before creating its ref, plans the push, scans the %d outgoing blobs for secrets and checks their paths against the ignore rules, and pushes the writers with a lease each; the peer fetches with the same refspecs and pushes the same refs.", anchorSum(hCounts))
	return nil
}

func anchorSum(s []int) int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// anchorCopyTree copies the directory src to dst (which must not exist): files
// with their modes, directories, symbolic links.
func anchorCopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			return anchorCopyFile(p, to, info.Mode().Perm())
		}
		return fmt.Errorf("copy %s: not a file, directory or symlink", p)
	})
}

func anchorCopyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
