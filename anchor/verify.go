package anchor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/seal"
)

// Verdict is what one check of the archive found: every writer's report
// and every finding that is not a writer's chain — a notes ref behind its
// anchored head, a local anchor record that no longer checks, and the
// alarms the last sync or remote check of each remote left open.
type Verdict struct {
	Writers  []*seal.Report `json:"writers"`
	Findings []Finding      `json:"findings"`
}

// Broken counts the writers that did not verify.
func (v *Verdict) Broken() int {
	n := 0
	for _, r := range v.Writers {
		if !r.OK() {
			n++
		}
	}
	return n
}

// OK reports whether every writer verified and nothing was found.
func (v *Verdict) OK() bool { return v.Broken() == 0 && len(v.Findings) == 0 }

// Summary is the verdict in one line ("3 writers, 3 ok, 0 broken; 1
// alarm").
func (v *Verdict) Summary() string {
	b := v.Broken()
	s := fmt.Sprintf("%s, %d ok, %d broken", plural(len(v.Writers), "writer"), len(v.Writers)-b, b)
	if len(v.Findings) > 0 {
		s += "; " + plural(len(v.Findings), "alarm")
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// CheckOptions says what Check covers.
type CheckOptions struct {
	// Writers limits the check to these writers and to the findings
	// about them or about the whole archive (a receipt checks the
	// writers it names). Empty: every writer (Scope).
	Writers []string
	// SkipContent checks the chains only, not the blobs.
	SkipContent bool
	// ChainsOnly leaves out the notes heads and the open alarms: the
	// Verdict's Findings hold only what rebuilding the anchored heads
	// found. Anchor push judges the chains it is about to sign and
	// nothing else, and pays for nothing else.
	ChainsOnly bool
}

// Scope lists every writer a full check covers: each writer with a ref,
// and each writer this clone has a memory of (witnessed, owned, or
// anchored by this clone) whether or not its ref still exists — a deleted
// writer is a break, not an absence.
func Scope(ctx context.Context, st *gitstore.Store) ([]string, error) {
	ws, err := st.Writers(ctx)
	if err != nil {
		return nil, err
	}
	known, err := st.KnownWriters(ctx)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, w := range ws {
		set[w.Name] = true
	}
	for _, w := range known {
		set[w] = true
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	sort.Strings(out)
	return out, nil
}

// Check is the one verify policy: `git lossless verify`, doctor, the MCP
// server's seal_status, receipt verify, sync and anchor push all decide
// through it which writers a check covers (Scope) and which heads each
// chain must extend (every store's SeenHeads: the witness and the
// anchored heads, which it first brings up to date from the checkpoints
// this clone anchored or accepted), and all of them report the same
// alarms: notes refs rolled back behind an anchored head, local anchor
// records that no longer check, and the open alarms of remote checks
// (OpenAlarms). Callers differ only in how they print the verdict.
func Check(ctx context.Context, st *gitstore.Store, o CheckOptions) (*Verdict, error) {
	bad, err := recordAnchoredHeads(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("anchored heads: %w", err)
	}
	all := len(o.Writers) == 0
	writers := o.Writers
	if all {
		if writers, err = Scope(ctx, st); err != nil {
			return nil, err
		}
	}
	reps, err := verifyWriters(ctx, st, writers, seal.Options{SkipContent: o.SkipContent})
	if err != nil {
		return nil, err
	}
	v := &Verdict{Writers: reps, Findings: bad}
	if o.ChainsOnly {
		if v.Findings == nil {
			v.Findings = []Finding{}
		}
		return v, nil
	}
	notes, err := CheckNotes(ctx, st)
	if err != nil {
		return nil, err
	}
	v.Findings = append(v.Findings, notes...)
	open, err := OpenAlarms(st)
	if err != nil {
		return nil, err
	}
	for _, f := range open {
		if all || f.Writer == "" || slices.Contains(writers, f.Writer) {
			v.Findings = append(v.Findings, f)
		}
	}
	if v.Findings == nil {
		v.Findings = []Finding{}
	}
	return v, nil
}

// verifyWriters verifies writers on every core, one writer per goroutine
// at a time (a writer's own blob checks are parallel already, but an
// archive of many small writers keeps one core idle otherwise), and
// returns the reports in the writers' order.
func verifyWriters(ctx context.Context, st *gitstore.Store, writers []string, opt seal.Options) ([]*seal.Report, error) {
	reps := make([]*seal.Report, len(writers))
	errs := make([]error, len(writers))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(len(writers), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				reps[i], errs[i] = st.Verify(ctx, writers[i], opt)
			}
		}()
	}
	for i := range writers {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return reps, nil
}
