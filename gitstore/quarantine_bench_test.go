package gitstore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// BenchmarkQuarantine compares Fetch (git fetch --prune straight into the
// archive) with FetchQuarantine + AcceptAll + Discard, on a normal small
// fetch (a remote three writers ahead, about 300 KB of new content, over
// an archive that already holds five writers) and on an up-to-date
// remote, and the two ways Accept could move objects: its own (a rename
// of the quarantine's packs and loose objects, or a pack of the reachable
// ones) against a second `git fetch` from the quarantine into the
// archive.
//
//	go test -run '^$' -bench Quarantine ./gitstore -count 5
func BenchmarkQuarantine(b *testing.B) {
	ctx := context.Background()
	peer := newQPeer(b)
	for i := 0; i < 5; i++ {
		peer.add(fmt.Sprintf("old-%d", i), 20, 2000)
	}
	peer.push()
	// The archive at the remote's first state (tracking refs set).
	base, err := OpenDir(itInit(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	specs := qSpecs("r1")
	r := Remote{URL: peer.remote}
	if err := base.Transport().Fetch(ctx, r, specs, true); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		peer.add(fmt.Sprintf("new-%d", i), 10, 10_000)
	}
	peer.push()
	baseDir := filepath.Dir(base.Location().CommonDir)

	// fresh copies the archive at the first state.
	fresh := func(b *testing.B) *Store {
		b.StopTimer()
		defer b.StartTimer()
		dir := filepath.Join(b.TempDir(), "repo")
		if out, err := exec.Command("cp", "-a", baseDir, dir).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
		s, err := OpenDir(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	quarantine := func(b *testing.B, s *Store) {
		q, err := s.Transport().FetchQuarantine(ctx, r, specs, FetchLimits{})
		if err != nil {
			b.Fatal(err)
		}
		if err := q.AcceptAll(ctx); err != nil {
			b.Fatal(err)
		}
		q.Discard()
	}
	// Old and new alternate within each iteration, on copies of the same
	// archive, so that a shared machine's load falls on both alike; the
	// figures are the mean milliseconds of each (ns/op is their sum).
	// CPU time (this process and its git children) is reported beside
	// the wall clock: it moves far less with the machine's load.
	paired := func(b *testing.B, prepare func(b *testing.B) (*Store, *Store)) {
		var old, new, oldCPU, newCPU time.Duration
		for range b.N {
			so, sn := prepare(b)
			c0, t0 := qCPU(), time.Now()
			if err := so.Transport().Fetch(ctx, r, specs, true); err != nil {
				b.Fatal(err)
			}
			c1, t1 := qCPU(), time.Now()
			quarantine(b, sn)
			c2, t2 := qCPU(), time.Now()
			old, new = old+t1.Sub(t0), new+t2.Sub(t1)
			oldCPU, newCPU = oldCPU+c1-c0, newCPU+c2-c1
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
		b.ReportMetric(ms(old), "old-ms/op")
		b.ReportMetric(ms(new), "new-ms/op")
		b.ReportMetric(ms(oldCPU), "old-cpu-ms/op")
		b.ReportMetric(ms(newCPU), "new-cpu-ms/op")
	}
	b.Run("small", func(b *testing.B) {
		paired(b, func(b *testing.B) (*Store, *Store) { return fresh(b), fresh(b) })
	})
	// Accept alone: its own moving against a second git fetch.
	for _, how := range []string{"move", "git-fetch"} {
		b.Run("small/accept="+how, func(b *testing.B) {
			for range b.N {
				s := fresh(b)
				b.StopTimer()
				q, err := s.Transport().FetchQuarantine(ctx, r, specs, FetchLimits{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if how == "move" {
					err = q.AcceptAll(ctx)
				} else {
					err = qAcceptByGitFetch(ctx, s, q)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				q.Discard()
				b.StartTimer()
			}
		})
	}
	upOld, upNew := fresh(b), fresh(b)
	for _, s := range []*Store{upOld, upNew} {
		if err := s.Transport().Fetch(ctx, r, specs, true); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("uptodate", func(b *testing.B) {
		paired(b, func(b *testing.B) (*Store, *Store) { return upOld, upNew })
	})

	// A fleet: 20,000 writer refs fetched before (packed, as after a gc),
	// three of which moved on the remote.
	fleetRemote := qHostileRemote(b, 0, 20_000, 0, false)
	fleet, err := OpenDir(itInit(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	fr := Remote{URL: fleetRemote}
	if err := fleet.Transport().Fetch(ctx, fr, specs, true); err != nil {
		b.Fatal(err)
	}
	itGit(b, filepath.Dir(fleet.Location().CommonDir), "pack-refs", "--all")
	for i := 0; i < 3; i++ {
		w := fmt.Sprintf("%sw%d", RefPrefix, i*1000)
		c := strings.TrimSpace(itGitIn(b, fleetRemote, []byte("moved\n"), "commit-tree", "-p", w, w+"^{tree}"))
		itGit(b, fleetRemote, "update-ref", w, c)
	}
	fleetDir := filepath.Dir(fleet.Location().CommonDir)
	copyFleet := func(b *testing.B) *Store {
		dir := filepath.Join(b.TempDir(), "repo")
		if out, err := exec.Command("cp", "-a", fleetDir, dir).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
		s, err := OpenDir(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("fleet-3-moved", func(b *testing.B) {
		var old, new, oldCPU, newCPU time.Duration
		for range b.N {
			b.StopTimer()
			so, sn := copyFleet(b), copyFleet(b)
			b.StartTimer()
			c0, t0 := qCPU(), time.Now()
			if err := so.Transport().Fetch(ctx, fr, specs, true); err != nil {
				b.Fatal(err)
			}
			c1, t1 := qCPU(), time.Now()
			q, err := sn.Transport().FetchQuarantine(ctx, fr, specs, FetchLimits{})
			if err != nil {
				b.Fatal(err)
			}
			if err := q.AcceptAll(ctx); err != nil {
				b.Fatal(err)
			}
			q.Discard()
			c2, t2 := qCPU(), time.Now()
			old, new = old+t1.Sub(t0), new+t2.Sub(t1)
			oldCPU, newCPU = oldCPU+c1-c0, newCPU+c2-c1
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
		b.ReportMetric(ms(old), "old-ms/op")
		b.ReportMetric(ms(new), "new-ms/op")
		b.ReportMetric(ms(oldCPU), "old-cpu-ms/op")
		b.ReportMetric(ms(newCPU), "new-cpu-ms/op")
	})
}

// qCPU is the CPU time of this process and its waited-for children.
func qCPU() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// qAcceptByGitFetch is the alternative to Accept's own moving: `git fetch`
// from the quarantine repository (a local path) into the archive of
// exactly the fetched ids, then the tracking refs set as Accept sets
// them.
func qAcceptByGitFetch(ctx context.Context, s *Store, q *Quarantine) error {
	args := []string{"-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "--no-tags", "--no-write-fetch-head", "--quiet", "--no-auto-maintenance", "--", q.Dir()}
	var ups []string
	for name, id := range q.Refs() {
		if q.before[name] != id {
			args = append(args, id)
			ups = append(ups, name)
		}
	}
	if len(ups) == 0 {
		return nil
	}
	// The quarantine serves ids it holds only when it allows it.
	if out, err := exec.Command("git", "--git-dir="+q.Dir(), "config", "uploadpack.allowAnySHA1InWant", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if out, err := s.git(ctx, Remote{}, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("git fetch from the quarantine: %v: %s", err, strings.TrimSpace(string(out)))
	}
	refs := map[string]string{}
	for _, n := range ups {
		refs[n] = q.refs[n]
	}
	return q.accept(ctx, refs, nil) // objects are there: only the refs move
}

// qHostileRemote builds a bare remote with git fast-import: checkpoints
// junk checkpoint refs and writers junk writer refs (each a commit of its
// own small blob) and, when big > 0, a checkpoint holding one blob of big
// bytes, random or zeros.
func qHostileRemote(b *testing.B, checkpoints, writers, big int, random bool) string {
	b.Helper()
	remote := itInit(b, "--bare")
	if random {
		itGit(b, remote, "config", "core.compression", "0") // random bytes do not shrink
	}
	cmd := exec.Command("git", "-C", remote, "fast-import", "--quiet")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	mark := 1
	commit := func(ref string, data []byte) {
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n", mark, len(data))
		w.Write(data)
		fmt.Fprintf(w, "\ncommit %s\nmark :%d\ncommitter x <x@x> 1700000000 +0000\ndata 5\njunk\nM 100644 :%d checkpoint\n\n", ref, mark+1, mark)
		mark += 2
	}
	for i := 0; i < checkpoints; i++ {
		commit(fmt.Sprintf("%sm%d/c%d", AnchorPrefix, i%50, i), []byte(fmt.Sprintf("junk checkpoint %d\n", i)))
	}
	for i := 0; i < writers; i++ {
		commit(fmt.Sprintf("%sw%d", RefPrefix, i), []byte(fmt.Sprintf("junk writer %d\n", i)))
	}
	if big > 0 {
		data := make([]byte, big)
		if random {
			rand.NewChaCha8([32]byte{7}).Read(data)
		}
		commit(AnchorPrefix+"big/c", data)
	}
	w.Flush()
	in.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	return remote
}

// BenchmarkQuarantineHostile measures fetches from hostile remotes, each
// fetch a fresh process (the test binary re-executed) into a fresh
// archive, from a git daemon (so the server's memory is not counted):
// wall time, the peak RSS of the process and its git children, and what
// is left in the archive's object directory (MB) afterwards. "old" is
// Fetch; "new" FetchQuarantine with the default limits and Discard (the
// caller refusing whatever came); "accept" FetchQuarantine and
// AcceptAll. The remotes:
//
//   - issue: the hostile run's: 5,000 junk checkpoint refs, 3,000 junk
//     writer refs and a 60 MB checkpoint blob;
//   - new-refs-at-cap: DefaultFetchMaxNewRefs junk refs, all fetched (at
//     the cap, not over it);
//   - bytes: one random blob of 1.5 times MaxBytes (over it);
//   - object: one 60 MB blob of zeros (over MaxObject, a few KB on the
//     wire).
//
// Run it as
//
//	go test -run '^$' -bench QuarantineHostile -benchtime 1x -count 5 ./gitstore
func BenchmarkQuarantineHostile(b *testing.B) {
	remotes := []struct {
		name string
		url  string
	}{
		{"issue", testkit.ServeDaemon(b, qHostileRemote(b, 5000, 3000, 60_000_000, true))},
		{"new-refs-at-cap", testkit.ServeDaemon(b, qHostileRemote(b, DefaultFetchMaxNewRefs/2, DefaultFetchMaxNewRefs/2, 0, false))},
		{"bytes", testkit.ServeDaemon(b, qHostileRemote(b, 0, 0, DefaultFetchMaxBytes+DefaultFetchMaxBytes/2, true))},
		{"object", testkit.ServeDaemon(b, qHostileRemote(b, 0, 0, 60_000_000, false))},
	}
	for _, rm := range remotes {
		modes := []string{"old", "new"}
		if rm.name == "new-refs-at-cap" {
			modes = append(modes, "accept") // and everything accepted
		}
		for _, mode := range modes {
			b.Run(rm.name+"/"+mode, func(b *testing.B) {
				var wall time.Duration
				var peak, left int64
				var outcome string
				for range b.N {
					b.StopTimer()
					repo := itInit(b)
					child := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
					child.Env = append(os.Environ(), qChildEnv+"=1", "GITSTORE_Q_MODE="+mode, "GITSTORE_Q_DIR="+repo, "GITSTORE_Q_REMOTE="+rm.url)
					var out strings.Builder
					child.Stdout, child.Stderr = &out, &out
					b.StartTimer()
					t0 := time.Now()
					if err := child.Run(); err != nil {
						b.Fatalf("%v: %s", err, out.String())
					}
					wall += time.Since(t0)
					b.StopTimer()
					var kb int64
					if _, err := fmt.Sscanf(out.String(), "peak-kb %d\n", &kb); err != nil {
						b.Fatalf("driver output %q", out.String())
					}
					peak = max(peak, kb*1024)
					st := qObjectState(b, repo)
					s, err := OpenDir(repo, Options{})
					if err != nil {
						b.Fatal(err)
					}
					if d := qDirs(s); len(d) > 0 {
						b.Fatalf("quarantines left: %v", d)
					}
					left = max(left, st.bytes)
					_, outcome, _ = strings.Cut(strings.TrimSpace(out.String()), "\n")
					b.StartTimer()
				}
				b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms/op")
				b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
				b.ReportMetric(float64(left)/(1<<20), "left-MB")
				if len(outcome) > 160 {
					outcome = outcome[:160] + "..."
				}
				b.Logf("%s", outcome)
			})
		}
	}
}
