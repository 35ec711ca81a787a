package note

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Change is one path a commit changes against its first parent.
type Change struct {
	Path   string // repository-relative, as git names it
	Change string // Added, Modified, Deleted
	Mode   string // the mode in the commit ("" when deleted)
	Blob   string // the object in the commit ("" when deleted)
}

// Input is everything Compute needs: the commit, its changes, candidate
// events and a few callbacks. Compute applies the membership rule itself,
// so Events may hold more than belongs (a superset is fine; Build passes
// the events on the changed paths and every event of the sessions that
// touched them).
type Input struct {
	Commit    string
	Tree      string
	Parents   []string
	Committed int64 // committer time, Unix seconds
	From      int64 // first parent's committer time
	HasFrom   bool
	// Carried, when set, makes this a carried receipt: the window is the
	// union of these sources' windows (From and HasFrom are then ignored;
	// Compute sets them from Carried).
	Carried []Carried
	Changes []Change
	Events  []gitstore.Event
	// Heads holds every writer's head (seq and seal) when the events were
	// read; writers of belonging events must be present.
	Heads map[string]gitstore.WriterInfo
	// TreeBlob returns the blob at a repository-relative path in the
	// commit's tree (ok false when the path is not there).
	TreeBlob func(p string) (blob string, ok bool)
	// Denied reports whether a path is on the deny list.
	Denied func(p string) bool
	// Tokens counts the o200k tokens of each event's content as the model
	// saw it (see tokens.ModelText and tokens.Counter.CountAll); -1 marks a count
	// that failed, which is left out and reported in the notes. Nil counts
	// nothing.
	Tokens func(evs []*gitstore.Event) []int64
	Issued time.Time
	// HarnessOf maps a writer to its agent harness's name, for events
	// that do not name theirs (gitstore.HarnessOf): each context's
	// harness. The commands pass harnesses.WriterHarness (neither this
	// package nor receipt may import the adapters); nil: only the events'
	// own field counts.
	HarnessOf func(writer string) string
}

// HasHarness reports whether a context's harness field (one name, or
// several comma-separated) names h.
func HasHarness(field, h string) bool {
	for _, n := range strings.Split(field, ",") {
		if n == h {
			return true
		}
	}
	return false
}

// joinHarness adds h to a context's harness field, the names kept in
// byte order.
func joinHarness(field, h string) string {
	if field == "" {
		return h
	}
	ns := append(strings.Split(field, ","), h)
	sort.Strings(ns)
	return strings.Join(ns, ",")
}

// fileOps are the ops that touch a file (as opposed to spans, compaction
// marks and prune records).
var fileOps = map[gitstore.Op]bool{gitstore.OpRead: true, gitstore.OpWrite: true, gitstore.OpEdit: true, gitstore.OpAttach: true, gitstore.OpRestore: true, gitstore.OpDeny: true}

// wroteOps are the ops by which a model produced the content.
var wroteOps = map[gitstore.Op]bool{gitstore.OpWrite: true, gitstore.OpEdit: true}

type ctxKey struct{ session, agent string }

func keyOf(e *gitstore.Event) ctxKey { return ctxKey{e.Session, e.Agent} }

// sec is an event's time in whole seconds, the resolution of git's
// committer time.
func sec(e *gitstore.Event) int64 { return e.TS.Unix() }

func evLess(a, b *gitstore.Event) bool {
	if !a.TS.Equal(b.TS) {
		return a.TS.Before(b.TS)
	}
	if a.Writer != b.Writer {
		return a.Writer < b.Writer
	}
	return a.Seq < b.Seq
}

// partialView reports whether an event showed only part of a file.
func partialView(e *gitstore.Event) bool { return e.View != "" && e.View != "full" }

// version returns the blob an event put into a context ("" for none), and
// the disk blob recorded beside a read (Claude Code shows CRLF files with
// LF: the disk version then differs from what was shown, byte for byte).
func version(e *gitstore.Event) (blob, disk string) {
	if e.Excluded || !e.Op.IsFileVersion() {
		return "", ""
	}
	if raw, ok := e.Extra["disk_blob"]; ok {
		_ = json.Unmarshal(raw, &disk)
	}
	return e.Blob, disk
}

// Touches reports whether e touches the commit: a file event (op read,
// write, edit, attach, restore or deny) on one of the changed paths, timed
// in the window. The contexts of such events are the ones whose every
// event belongs to the commit; a reader that preselects events (Build
// does, in two passes over the archive) uses it to find those contexts
// with the rule's own definition.
func (in *Input) Touches(e *gitstore.Event, changed map[string]bool) bool {
	return fileOps[e.Op] && changed[e.RawPath()] && in.inWindow(e)
}

// windowEnd is the window's end: the committer time, or the latest end of
// the carried sources' windows.
func (in *Input) windowEnd() int64 {
	if len(in.Carried) == 0 {
		return in.Committed
	}
	_, _, to := carriedWindow(in.Carried)
	return to
}

// inWindow reports whether e falls in the commit's window.
func (in *Input) inWindow(e *gitstore.Event) bool {
	s := sec(e)
	return s <= in.windowEnd() && (!in.HasFrom || s >= in.From)
}

// Compute applies the membership rule and builds the receipt (without
// signing it). It is pure: the same input gives the same receipt.
func Compute(in Input) (*Receipt, error) {
	if len(in.Carried) > 0 {
		in.Carried = append([]Carried(nil), in.Carried...)
		sort.Slice(in.Carried, func(i, j int) bool { return in.Carried[i].Commit < in.Carried[j].Commit })
		in.From, in.HasFrom, _ = carriedWindow(in.Carried)
	}
	r := &Receipt{Carried: in.Carried,
		Commit: in.Commit, Tree: in.Tree, Parents: append([]string(nil), in.Parents...),
		Committed: in.Committed, From: in.From, HasFrom: in.HasFrom,
		Issued: in.Issued.UTC().Truncate(time.Second),
	}
	changed := map[string]*Change{}
	for i := range in.Changes {
		changed[in.Changes[i].Path] = &in.Changes[i]
	}

	// 1. The contexts that touched a changed path within the window.
	evs := make([]*gitstore.Event, 0, len(in.Events))
	for i := range in.Events {
		evs = append(evs, &in.Events[i])
	}
	sort.Slice(evs, func(i, j int) bool { return evLess(evs[i], evs[j]) })
	touching := map[ctxKey]bool{}
	for _, e := range evs {
		if fileOps[e.Op] && changed[e.RawPath()] != nil && in.inWindow(e) {
			touching[keyOf(e)] = true
		}
	}
	// 2. Belonging events: every event of those contexts up to the commit.
	var own []*gitstore.Event
	seenEv := map[string]bool{}
	for _, e := range evs {
		if !touching[keyOf(e)] || sec(e) > in.windowEnd() {
			continue
		}
		id := e.Writer + "#" + fmt.Sprint(e.Seq)
		if seenEv[id] {
			continue // the same event passed twice
		}
		seenEv[id] = true
		own = append(own, e)
	}
	r.Coverage.Events = int64(len(own))

	// Writers: every writer holding a belonging event.
	wr := map[string]*Writer{}
	sources := map[string]bool{}
	for _, e := range own {
		w := wr[e.Writer]
		if w == nil {
			h, ok := in.Heads[e.Writer]
			if !ok || h.Err != "" {
				return nil, fmt.Errorf("no sealed head for writer %s", e.Writer)
			}
			w = &Writer{Name: e.Writer, From: e.Seq, To: e.Seq, HeadSeq: h.Seq, HeadSeal: h.Seal}
			wr[e.Writer] = w
		}
		w.From, w.To = min(w.From, e.Seq), max(w.To, e.Seq)
		if e.Seq > w.HeadSeq {
			return nil, fmt.Errorf("event %s#%d is past the writer's head %d", e.Writer, e.Seq, w.HeadSeq)
		}
		if e.Source != "" {
			sources[e.Source] = true
		}
	}
	names := make([]string, 0, len(wr))
	for n := range wr {
		names = append(names, n)
	}
	sort.Strings(names)
	windex := map[string]int{}
	for i, n := range names {
		r.Writers = append(r.Writers, *wr[n])
		windex[n] = i + 1
	}
	refOf := func(e *gitstore.Event) Ref { return Ref{W: windex[e.Writer], Seq: e.Seq} }
	for s := range sources {
		if bareOK(s) && !strings.Contains(s, ",") {
			r.Coverage.Sources = append(r.Coverage.Sources, s)
		}
	}
	sort.Strings(r.Coverage.Sources)

	// Contexts, numbered by their first event.
	cindex := map[ctxKey]int{}
	for _, e := range own {
		k := keyOf(e)
		i, ok := cindex[k]
		if !ok {
			r.Contexts = append(r.Contexts, Context{Session: e.Session, Agent: e.Agent, First: e.TS.UTC().Truncate(time.Second)})
			i = len(r.Contexts)
			cindex[k] = i
		}
		c := &r.Contexts[i-1]
		c.Events++
		c.Last = e.TS.UTC().Truncate(time.Second)
		if h := gitstore.HarnessOf(e.Harness, e.Writer, in.HarnessOf); h != "" && !HasHarness(c.Harness, h) {
			c.Harness = joinHarness(c.Harness, h)
		}
	}

	// Token counts are gathered as jobs and counted in one batch at the end.
	type job struct {
		ev   *gitstore.Event
		ctx  int
		span bool
	}
	var jobs []job

	// 3. Path statuses.
	partialPaths, versionless := 0, 0
	byPath := map[string][]*gitstore.Event{}
	for _, e := range own {
		if fileOps[e.Op] {
			byPath[e.RawPath()] = append(byPath[e.RawPath()], e)
		}
	}
	for _, ch := range in.Changes {
		pe := PathEntry{Change: ch.Change, Mode: ch.Mode, Blob: ch.Blob, Path: ch.Path}
		var b basis
		pe.Status, pe.Evidence, b = status(ch, byPath[ch.Path], in.Denied, refOf)
		switch b {
		case basisPartial:
			partialPaths++
		case basisNone:
			versionless++
		}
		if pe.Status == Excluded {
			pe.Blob = ""
		}
		r.Paths = append(r.Paths, pe)
		switch pe.Status {
		case Written:
			r.Coverage.Written++
		case Seen:
			r.Coverage.Seen++
		case ChangedAfter:
			r.Coverage.ChangedAfter++
		case Unseen:
			r.Coverage.Unseen++
		case Excluded:
			r.Coverage.Excluded++
		}
	}
	sort.Slice(r.Paths, func(i, j int) bool { return r.Paths[i].Path < r.Paths[j].Path })

	// 4. Read sets: one row per context, path and version.
	type rkey struct {
		ctx        int
		path, blob string
		excluded   bool
	}
	type rowState struct {
		row     ReadEntry
		anyFull bool
		last    *gitstore.Event
	}
	rows := map[rkey]*rowState{}
	var order []rkey
	lastFull := map[string]string{} // "ctx path" -> blob of the context's last whole version
	blobless := 0
	for _, e := range own {
		p := e.RawPath()
		if !e.Op.IsFileVersion() || p == "" {
			continue
		}
		if !e.Excluded && e.Blob == "" {
			blobless++ // an image, a notebook, an edit recorded without content
			continue
		}
		ci := cindex[keyOf(e)]
		k := rkey{ctx: ci, path: p, blob: e.Blob, excluded: e.Excluded}
		rs := rows[k]
		if rs == nil {
			rs = &rowState{row: ReadEntry{Context: ci, Blob: e.Blob, Path: p}}
			rows[k] = rs
			order = append(order, k)
		}
		rs.row.Ops = addOp(rs.row.Ops, string(e.Op))
		rs.row.Evidence = refOf(e)
		rs.last = e
		if partialView(e) {
			if !rs.anyFull {
				rs.row.View = e.View
			}
		} else {
			rs.anyFull = true
			rs.row.View = "full"
			if !e.Excluded {
				lastFull[fmt.Sprint(ci, " ", p)] = e.Blob
			}
		}
	}
	for _, k := range order {
		rs := rows[k]
		row := &rs.row
		switch {
		case k.excluded:
			row.State, row.Blob = Withheld, ""
		case !rs.anyFull:
			row.State = Partial
		default:
			row.State = readState(in, k.path, k.blob, lastFull[fmt.Sprint(k.ctx, " ", k.path)])
		}
		if row.State != Withheld {
			jobs = append(jobs, job{ev: rs.last, ctx: k.ctx})
		}
		r.Reads = append(r.Reads, *row)
	}
	sort.SliceStable(r.Reads, func(i, j int) bool {
		a, b := &r.Reads[i], &r.Reads[j]
		if a.Context != b.Context {
			return a.Context < b.Context
		}
		return a.Path < b.Path
	})

	// 5. Spans.
	for _, e := range own {
		if e.Op != gitstore.OpSpan {
			continue
		}
		c := &r.Contexts[cindex[keyOf(e)]-1]
		c.Spans = append(c.Spans, refOf(e))
		jobs = append(jobs, job{ev: e, ctx: cindex[keyOf(e)], span: true})
	}
	tokenErrs := 0
	if in.Tokens != nil && len(jobs) > 0 {
		evs := make([]*gitstore.Event, len(jobs))
		for i, j := range jobs {
			evs[i] = j.ev
		}
		counts := in.Tokens(evs)
		for i, j := range jobs {
			n := counts[i]
			if n < 0 {
				tokenErrs++
				continue
			}
			if j.span {
				r.Contexts[j.ctx-1].SpanTokens += n
			} else {
				r.Contexts[j.ctx-1].FileTokens += n
			}
		}
	}
	for i := range r.Contexts {
		sp := r.Contexts[i].Spans
		sort.Slice(sp, func(a, b int) bool { return refLess(sp[a], sp[b]) })
	}

	r.Notes = coverageNotes(r, coverageFacts{blobless: blobless, tokenErrs: tokenErrs, partialPaths: partialPaths, versionless: versionless})
	if _, err := r.Marshal(); err != nil {
		return nil, err
	}
	return r, nil
}

func addOp(ops []string, op string) []string {
	for _, o := range ops {
		if o == op {
			return ops
		}
	}
	ops = append(ops, op)
	sort.Strings(ops)
	return ops
}

// readState compares a version a context saw with the commit's tree.
func readState(in Input, p, blob, last string) string {
	if path.IsAbs(p) || strings.HasPrefix(p, "../") {
		return Outside
	}
	t, ok := "", false
	if in.TreeBlob != nil {
		t, ok = in.TreeBlob(p)
	}
	switch {
	case !ok:
		return Absent
	case t == blob:
		return Current
	case last == blob:
		return Stale
	default:
		return Superseded
	}
}

// status decides one changed path's status from the belonging file events
// on it (time order). See the package documentation for the rule: unseen
// only when no context touched the path; otherwise the decisive version —
// the last whole version, or failing one the last partial view that names
// a version — is compared with the committed blob, and a touch that
// recorded no version at all is changed-after.
// basis is what a path's status rests on: a whole version (or nothing to
// decide: unseen, excluded), a partial view only, or a touch without any
// recorded version. The coverage notes say when it is not a whole version.
type basis int

const (
	basisWhole basis = iota
	basisPartial
	basisNone
)

func status(ch Change, evs []*gitstore.Event, denied func(string) bool, refOf func(*gitstore.Event) Ref) (string, Ref, basis) {
	var lastTouch *gitstore.Event
	anyExcluded := false
	for _, e := range evs {
		lastTouch = e
		if e.Excluded {
			anyExcluded = true
		}
	}
	if anyExcluded || (denied != nil && denied(ch.Path)) {
		if lastTouch != nil {
			return Excluded, refOf(lastTouch), basisWhole
		}
		return Excluded, Ref{}, basisWhole
	}
	if lastTouch == nil {
		return Unseen, Ref{}, basisWhole
	}
	// The decisive version: the agents' last whole version of the file,
	// else their last partial view of one.
	var last, lastPartial *gitstore.Event
	for _, e := range evs {
		if b, _ := version(e); b != "" {
			if partialView(e) {
				lastPartial = e
			} else {
				last = e
			}
		}
	}
	b := basisWhole
	if last == nil {
		last, b = lastPartial, basisPartial
	}
	if last == nil {
		// Touched (a denied edit, an edit or read without content), but
		// no version of theirs is on record to equal the commit.
		return ChangedAfter, refOf(lastTouch), basisNone
	}
	lb, ld := version(last)
	if ch.Change == Deleted || (lb != ch.Blob && ld != ch.Blob) {
		return ChangedAfter, refOf(last), b
	}
	// The decisive version is the committed one: written when a model
	// wrote exactly this content, else seen.
	var wrote *gitstore.Event
	for _, e := range evs {
		if wroteOps[e.Op] && e.Blob == ch.Blob && !partialView(e) {
			wrote = e
		}
	}
	if wrote != nil {
		return Written, refOf(wrote), b
	}
	return Seen, refOf(last), b
}

// coverageFacts are the counts the coverage notes report.
type coverageFacts struct {
	blobless     int // file events without text content
	tokenErrs    int // contents that could not be counted
	partialPaths int // changed paths whose status rests on a partial view
	versionless  int // changed paths touched without any recorded version
}

// coverageNotes is the coverage statement: what could and could not be
// observed for this commit, as sentences.
func coverageNotes(r *Receipt, f coverageFacts) []string {
	var n []string
	if len(r.Contexts) == 0 {
		n = append(n, "No recorded agent context touched the paths of this commit between its parent's commit time and its own.")
	} else {
		n = append(n, fmt.Sprintf("Observed: what %s read, edited and wrote through recorded tool calls, and the conversation spans of those whose transcripts were swept.", plural(len(r.Contexts), "agent context", "agent contexts")))
	}
	n = append(n, "Not observed: changes made outside the agents' file tools (shell commands, editors, git itself); they show only as changed-after or unseen.")
	if r.Coverage.Excluded > 0 || hasWithheld(r) {
		n = append(n, "Withheld: the content of deny-listed paths; their access is recorded, their content is in no object and no blob id is named.")
	}
	if hasPartial(r) || f.partialPaths > 0 {
		n = append(n, "Partial: some versions were shown only in part (view lines:A-B); the read set does not compare them with the tree, a path the agents saw only in part is seen only if the archived version is the committed blob, and their tokens count the lines shown.")
	}
	if f.versionless > 0 {
		verb := "are"
		if f.versionless == 1 {
			verb = "is"
		}
		n = append(n, fmt.Sprintf("No version: %s touched by agents without any recorded version (a denied edit, an edit or read recorded without content) %s changed-after, since nothing on record equals the commit.", plural(f.versionless, "path", "paths"), verb))
	}
	noSpans := 0
	for _, c := range r.Contexts {
		if len(c.Spans) == 0 {
			noSpans++
		}
	}
	if noSpans > 0 {
		n = append(n, fmt.Sprintf("No conversation spans are archived for %s: no transcript of theirs was swept before the commit.", plural(noSpans, "context", "contexts")))
	}
	if f.blobless > 0 {
		n = append(n, fmt.Sprintf("%s carried no text content (images, notebooks, edits recorded without content) and are not listed as reads.", plural(f.blobless, "file event", "file events")))
	}
	if f.tokenErrs > 0 {
		n = append(n, fmt.Sprintf("%s could not be read for token counting (pruned or missing) and are not counted.", plural(f.tokenErrs, "content", "contents")))
	}
	n = append(n, "Events recorded after this receipt was issued, or timed after the commit, are not part of it.")
	return n
}

func hasWithheld(r *Receipt) bool {
	for _, e := range r.Reads {
		if e.State == Withheld {
			return true
		}
	}
	return false
}

func hasPartial(r *Receipt) bool {
	for _, e := range r.Reads {
		if e.State == Partial {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// PathEvidence says why e does not support p's status in a receipt of a
// commit with committer time committed ("" when it does): the check a
// verifier makes of each path row against the event it names, by the
// rule that gave the status.
func PathEvidence(p PathEntry, e *gitstore.Event, committed int64) string {
	if e.RawPath() != p.Path {
		return fmt.Sprintf("is about %s, not this path", Token(e.RawPath()))
	}
	if !fileOps[e.Op] {
		return fmt.Sprintf("is a %s event, not a file event", e.Op)
	}
	if sec(e) > committed {
		return "is timed after the commit"
	}
	blob, disk := version(e)
	isCommitted := blob != "" && (blob == p.Blob || disk == p.Blob)
	switch p.Status {
	case Written:
		if !wroteOps[e.Op] || e.Blob != p.Blob || partialView(e) {
			return "does not show a model writing the committed blob"
		}
	case Seen:
		if !isCommitted {
			return "does not show a context seeing the committed blob"
		}
	case ChangedAfter:
		if p.Change != Deleted && isCommitted {
			return "shows the committed version, so the path did not change after the agents"
		}
	case Unseen:
		return "is a touch of the path, so the path is not unseen"
	case Excluded:
	}
	return ""
}

// ReadEvidence says why e does not support the read-set row rd (""
// when it does). treeBlob returns the blob at a path of the receipt's
// commit (ok false when the path is not in its tree), for the rows whose
// state compares the version with the commit.
func ReadEvidence(rd ReadEntry, e *gitstore.Event, treeBlob func(p string) (blob string, ok bool, err error)) string {
	if e.RawPath() != rd.Path {
		return fmt.Sprintf("is about %s, not this path", Token(e.RawPath()))
	}
	found := false
	for _, op := range rd.Ops {
		if gitstore.Op(op) == e.Op {
			found = true
		}
	}
	if !found {
		return fmt.Sprintf("is a %s, not one of %s", e.Op, strings.Join(rd.Ops, ","))
	}
	if e.Excluded != (rd.State == Withheld) {
		return "disagrees on exclusion"
	}
	if rd.State == Withheld {
		return ""
	}
	if e.Blob != rd.Blob {
		return fmt.Sprintf("names blob %s, not %s", e.Blob, rd.Blob)
	}
	if (rd.State == Partial) != (rd.View != "full") || (rd.State == Partial && !partialView(e)) {
		return "disagrees on the view"
	}
	if rd.State == Partial {
		return ""
	}
	if path.IsAbs(rd.Path) || strings.HasPrefix(rd.Path, "../") {
		if rd.State != Outside {
			return "is outside the repository"
		}
		return ""
	}
	blob, ok, err := treeBlob(rd.Path)
	if err != nil {
		return "cannot be compared with the tree: " + err.Error()
	}
	switch {
	case !ok && rd.State != Absent:
		return "is about a path that is not in the commit's tree"
	case ok && rd.State == Absent:
		return "is about a path that is in the commit's tree"
	case ok && (blob == rd.Blob) != (rd.State == Current):
		return "disagrees with the tree on whether this version is current"
	}
	return ""
}
