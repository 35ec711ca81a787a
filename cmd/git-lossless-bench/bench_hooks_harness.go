package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// The harnesses' hooks side by side: for every registered harness that
// implements hooks.Sampler, its post-tool-use hook (a read of a new file
// that showed its content) and its pre-tool-use hook (an edit of that
// file, which the guard allows: the session read it) as whole processes,
// with payloads the harness itself makes, interleaved sample by sample
// with Claude Code's and with the floors (a Go hello-world process, `git
// --version`), so that every figure sees the same machine. The target:
// each harness within 1.2x of Claude Code's figure of the same run,
// judged on the median of the paired ratios.

// harnessHookRuns are one harness's samples in the side-by-side.
type harnessHookRuns struct {
	h              hooks.Harness
	sampler        hooks.Sampler // nil: the harness has none
	session, trans string
	pre, post      samples
	said           string // the first thing its hooks printed on stderr

}

// hookRatioTarget is how much slower than Claude Code's a harness's hook
// may be.
const hookRatioTarget = 1.2

func (b *hooksBench) benchHarnesses(ctx context.Context) error {
	dir := filepath.Join(b.root, "harnesses")
	repo := filepath.Join(dir, "repo")
	if err := benchdata.GitInit(repo); err != nil {
		return err
	}
	hello, err := buildHello(ctx, filepath.Join(dir, "hello"))
	if err != nil {
		b.note("a Go hello-world process was not measured: %v", err)
	}
	var runs []*harnessHookRuns
	for _, h := range harnesses.All() {
		r := &harnessHookRuns{h: h, session: "bench-" + h.Name()}
		if s, ok := h.(hooks.Sampler); ok {
			r.sampler = s
			// An empty transcript: the hooks read it as they would a new
			// session's, and every harness gets the same.
			r.trans = filepath.Join(dir, "transcripts", h.Name(), r.session+".jsonl")
			if err := os.MkdirAll(filepath.Dir(r.trans), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(r.trans, nil, 0o600); err != nil {
				return err
			}
		}
		runs = append(runs, r)
	}
	def := harnesses.Default()
	var helloS, gitS samples
	n := b.o.samples + 3
	for i := range n {
		// Rotate the order, so no harness always runs first.
		for k := range runs {
			r := runs[(i+k)%len(runs)]
			if r.sampler == nil {
				continue
			}
			file := filepath.Join(repo, "src", r.h.Name(), fmt.Sprintf("file_%03d.go", i))
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				return err
			}
			content := benchdata.Source(71, i)
			if err := os.WriteFile(file, content, 0o600); err != nil {
				return err
			}
			for _, ev := range []hooks.HookEvent{hooks.PostToolUse, hooks.PreToolUse} {
				name, stdin := r.sampler.SamplePayload(ev, r.session, repo, r.trans, file, content)
				if name == "" {
					return fmt.Errorf("%s: no %s payload from its sampler", r.h.Name(), ev)
				}
				args := []string{"hook", r.h.Name(), name}
				if r.h.Name() == def.Name() {
					args = []string{"hook", name} // as install writes the default harness's hooks
				}
				d, stdout, stderr, err := b.timedHook(ctx, repo, stdin, args)
				if err != nil {
					return fmt.Errorf("%s %s: %w", r.h.Name(), name, err)
				}
				if stderr != "" && r.said == "" {
					r.said = fmt.Sprintf("%s %s: %s", r.h.Name(), name, oneLine(stderr))
				}
				if ev == hooks.PreToolUse && strings.Contains(stdout, "deny") && r.said == "" {
					r.said = fmt.Sprintf("%s %s denied an edit of a file its session read: %s", r.h.Name(), name, oneLine(stdout))
				}
				if i < 3 {
					continue
				}
				if ev == hooks.PreToolUse {
					r.pre = append(r.pre, d)
				} else {
					r.post = append(r.post, d)
				}
			}
		}
		dg, _, err := runProc(ctx, dir, nil, "git", "--version")
		if err != nil {
			return err
		}
		var dh time.Duration
		if hello != "" {
			var out []byte
			if dh, out, err = runProc(ctx, dir, nil, hello); err != nil {
				return err
			}
			if string(out) != "hello, world\n" {
				return fmt.Errorf("hello world printed %q", out)
			}
		}
		if i >= 3 {
			gitS = append(gitS, dg)
			if hello != "" {
				helloS = append(helloS, dh)
			}
		}
	}
	if err := b.checkHarnessReads(ctx, repo, runs, n); err != nil {
		return err
	}
	floors := "`git --version` p50 " + ms(gitS.pct(50))
	if len(helloS) > 0 {
		floors = "Go hello world p50 " + ms(helloS.pct(50)) + "; " + floors
	}
	var ref *harnessHookRuns
	for _, r := range runs {
		if r.h.Name() == def.Name() {
			ref = r
		}
	}
	if ref == nil || ref.sampler == nil {
		return fmt.Errorf("the default harness %s has no sampler", def.Name())
	}
	for _, r := range runs {
		for _, side := range []struct {
			what         string
			mine, claude samples
		}{
			{"pre-tool-use (edit of a file its session read: allowed)", r.pre, ref.pre},
			{"post-tool-use (read of a new file, content shown: recorded)", r.post, ref.post},
		} {
			what := fmt.Sprintf("%s %s, whole process (%d)", r.h.Name(), side.what, len(side.mine))
			switch {
			case r.sampler == nil:
				b.harnessRows = append(b.harnessRows, row{what: r.h.Name() + " " + side.what, ours: "no sampler", peer: "-", target: "-"})
			case r == ref:
				b.harnessRows = append(b.harnessRows, row{what: what, ours: side.mine.String(), peer: floors, target: "-"})
			default:
				ratio := pairedRatio(side.mine, side.claude)
				b.harnessRows = append(b.harnessRows, row{
					what:   what,
					ours:   fmt.Sprintf("%s (%.2fx)", side.mine, ratio),
					peer:   fmt.Sprintf("%s p50 %s; %s", ref.h.Name(), ms(side.claude.pct(50)), floors),
					target: fmt.Sprintf("<= %.1fx %s", hookRatioTarget, ref.h.Name()),
					met:    b.judge(ratio <= hookRatioTarget),
				})
			}
		}
		if r.said != "" {
			b.note("%s", r.said)
		}
	}
	b.note("harnesses side by side: each hook run as its harness runs it (`%s hook [HARNESS] EVENT`, the payload its adapter's sampler makes) in one fresh repository, a session per harness with an empty transcript, interleaved sample by sample with the others and with the floors; the ratio is the median of the paired ratios to %s's run of the same sample.", filepath.Base(b.hookExe), ref.h.Name())
	b.logf("harnesses: %s", harnessSummary(runs))
	return nil
}

// timedHook runs the hook program with args on stdin in dir and returns
// its wall time and what it printed; only a failure to run or an exit
// other than 0 is an error (a hook fails open).
func (b *hooksBench) timedHook(ctx context.Context, dir string, stdin []byte, args []string) (time.Duration, string, string, error) {
	cmd := exec.CommandContext(ctx, b.hookExe, args...)
	cmd.Dir = dir
	cmd.Env = append(childEnv(), "LOSSLESS_GUARD=")
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return d, "", "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	return d, out.String(), errb.String(), nil
}

// checkHarnessReads checks that every sampled harness's post-tool-use
// runs recorded their reads, under the harness's name: a hook that did
// nothing would be fast for nothing.
func (b *hooksBench) checkHarnessReads(ctx context.Context, repo string, runs []*harnessHookRuns, n int) error {
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.sampler == nil {
			continue
		}
		evs, err := st.Events(ctx, gitstore.Query{Op: gitstore.OpRead, Session: r.session, Harness: r.h.Name(), HarnessOf: harnesses.WriterHarness()})
		if err != nil {
			return err
		}
		if len(evs) != n {
			msg := fmt.Sprintf("%s: post-tool-use recorded %d reads of %d", r.h.Name(), len(evs), n)
			if r.h.Name() == harnesses.Default().Name() {
				return errors.New(msg)
			}
			b.note("%s: its figures are not of a hook that recorded", msg)
		}
	}
	return nil
}

// pairedRatio is the median of a[i]/b[i].
func pairedRatio(a, b samples) float64 {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	rs := make([]float64, n)
	for i := range n {
		rs[i] = float64(a[i]) / float64(max(b[i], 1))
	}
	sort.Float64s(rs)
	if n%2 == 1 {
		return rs[n/2]
	}
	return (rs[n/2-1] + rs[n/2]) / 2
}

func harnessSummary(runs []*harnessHookRuns) string {
	var parts []string
	for _, r := range runs {
		if r.sampler == nil {
			parts = append(parts, r.h.Name()+" no sampler")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s pre %s post %s", r.h.Name(), r.pre, r.post))
	}
	return strings.Join(parts, "; ")
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// helloSource is the Go hello-world program whose process is the floor
// under any Go program's start.
const helloSource = `package main

import "fmt"

func main() { fmt.Println("hello, world") }
`

// buildHello builds the Go hello-world program in dir with the go
// command on PATH and returns the binary.
func buildHello(ctx context.Context, dir string) (string, error) {
	goExe, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go command on PATH to build it")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(helloSource), 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hello")
	// -buildvcs=false: the binary needs no VCS stamp, and a broken
	// repository in a parent of the bench directory (a stray .git in the
	// temp dir) must not fail the build.
	cmd := exec.CommandContext(ctx, goExe, "build", "-buildvcs=false", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(childEnv(), "GOFLAGS=", "GOWORK=off", "GO111MODULE=on", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, oneLine(string(out)))
	}
	return bin, nil
}
