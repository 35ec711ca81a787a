package recall

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// A hand-off is what a new session, or another agent of any harness,
// needs to pick up a session's work, made from the archive alone: the
// session's request, the facts it was asked to keep, what its model said
// last, the files it changed and read, the tool errors it left unfixed,
// and the span ids that hold everything else. Nothing is recorded for it
// beforehand (the proxy and the hooks write nothing extra): it is read
// from the spans, file versions and proxy spans the archive already
// holds, so it works for past sessions and for every harness alike.
//
// The rules (the command's help repeats them, as users must know them):
//
//   - goal: the first user prompt of the session's main context (a
//     subagent's prompt is its parent's instruction, not the user's),
//     and the latest one when it is another. Prompts that are harness
//     markup rather than a request are skipped: text that starts with a
//     tag ("<command-name>", "<task-notification>", "<local-command-
//     stdout>"...), "[Request interrupted" or "Caveat:". A session with
//     no prompt in its main context takes its subagents'. Of a proxy
//     session, the first and last user messages the proxy folded (the
//     proxy archives only what it folds: the latest request is often not
//     in the archive).
//   - pinned facts: the sentences of user prompts that hold a keep phrase
//     (KeepSentences), the "## Must Keep" bullets of compaction summaries
//     (MustKeep), and a proxy span's pins; duplicates once (the first
//     span that said it), the newest maxPins.
//   - latest decisions: the first sentences (two, at most 300
//     characters) of the main context's last assistant texts (3 unless
//     asked). A heuristic: what a model said last is usually what it
//     decided or concluded, but nothing marks a decision as such.
//   - files: every file version of the session (any context): a path
//     with an edit or a write is edited, reported with its last edit or
//     write; the others are read, reported with their last read
//     (re-attached and restored versions count as reads). Each is
//     compared with the disk now (FileVersion's states).
//   - errors still open: a tool result marked is_error is open unless a
//     later result in the session (any context), not an error, answers a
//     call of the same tool on the same target. A call's target is its
//     file (the event's path, else the input's file_path, path,
//     notebook_path or filePath), else its command (the input's command
//     or cmd, an array joined by spaces), else its input as compact JSON.
//     A result is matched with its call by the call's id (the latest
//     call with that id before it); an error whose call is not archived
//     has the result's own tool and path as its target. Repeated failures
//     on one target are one open error, counted. Results the proxy
//     folded count too when their format marks errors (Anthropic's
//     is_error; OpenAI's tool messages carry no such mark).
//   - the rest: one entry per span group (Digests of the session: a
//     context's spans up to its first compaction, then one per
//     compaction; a proxy span alone) with the id of its first span, and
//     the range of span ids of each writer: `recall open ID` reads any
//     of them, `recall search --session S` searches them.
//
// Every text is masked (Mask). Encrypted spans no identity opened are
// counted as locked; one that would have been the goal or a decision is
// reported by its id, marked locked, without text.

// HandoffQuery selects the session a hand-off is made of.
type HandoffQuery struct {
	// Session is the session's id; "" takes the session of the newest
	// span or file version in the archive, whatever its harness.
	Session string
	// Decisions is how many of the last assistant texts are reported
	// (default 3).
	Decisions int
}

// Handoff is a session's hand-off (see the rules above).
type Handoff struct {
	Session string `json:"session"`
	// Harness is the session's agent harness (gitstore.HarnessOf); "" for
	// a proxy session.
	Harness string    `json:"harness,omitempty"`
	Proxy   bool      `json:"proxy,omitempty"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	// Spans counts the session's spans; Locked those no identity opened.
	Spans  int `json:"spans"`
	Locked int `json:"locked,omitempty"`
	// Goal is the first request; Latest the latest when it is another.
	Goal   *Said `json:"goal,omitempty"`
	Latest *Said `json:"latest_request,omitempty"`
	// Summary is the first words of the latest compaction summary (a
	// harness's or the proxy's), for orientation.
	Summary   *Said         `json:"summary,omitempty"`
	Pins      []Said        `json:"pinned_facts"`
	Decisions []Said        `json:"latest_decisions"`
	Edited    []FileTouched `json:"files_edited"`
	Read      []FileTouched `json:"files_read"`
	Errors    []OpenError   `json:"errors_open"`
	// Rest lists the session's span groups, each with its first span's id.
	Rest []Digest `json:"rest"`
	// Ranges are the session's span ids per writer, first to last.
	Ranges []SpanRange `json:"span_ranges"`
}

// Said is something the session's user or model said, and where.
type Said struct {
	ID     string    `json:"id"`
	TS     time.Time `json:"ts"`
	Agent  string    `json:"agent,omitempty"`
	Text   string    `json:"text,omitempty"`
	Locked bool      `json:"locked,omitempty"`
}

// FileTouched is a file the session edited, wrote or read, by its last
// such version.
type FileTouched struct {
	Path string `json:"path"`
	// Op is the last version's op: edit or write for an edited file;
	// read, attach or restore for a read one.
	Op      gitstore.Op `json:"op"`
	ID      string      `json:"id"`
	TS      time.Time   `json:"ts"`
	Agent   string      `json:"agent,omitempty"`
	Blob    string      `json:"blob,omitempty"`
	View    string      `json:"view,omitempty"`
	State   string      `json:"state"`
	Current bool        `json:"current"`
	// Versions counts the session's versions of the file of this kind
	// (edits and writes, or reads).
	Versions int `json:"versions"`
}

// OpenError is a tool error no later success answered.
type OpenError struct {
	// ID is the latest failing result's span; Call its call's, when
	// archived.
	ID     string    `json:"id"`
	Call   string    `json:"call,omitempty"`
	TS     time.Time `json:"ts"`
	Agent  string    `json:"agent,omitempty"`
	Tool   string    `json:"tool"`
	Target string    `json:"target"`
	// Text is the first line of the latest failure's result.
	Text string `json:"text"`
	// Failures counts the failures on this target since the last success.
	Failures int `json:"failures"`
}

// SpanRange is the first and last span of a writer in the session.
type SpanRange struct {
	Writer string `json:"writer"`
	First  int64  `json:"first"`
	Last   int64  `json:"last"`
	Spans  int    `json:"spans"`
}

// ErrNoSession is wrapped by Handoff's error when the archive holds
// nothing of the session.
var ErrNoSession = errors.New("recall: no such session")

// maxPins bounds the pinned facts reported (the newest are kept).
const maxPins = 20

// Handoff makes the hand-off of a session (see HandoffQuery).
func (ix *Index) Handoff(ctx context.Context, q HandoffQuery) (*Handoff, error) {
	defer runtime.KeepAlive(ix)
	defer ix.damaged(ctx)
	if q.Decisions <= 0 {
		q.Decisions = 3
	}
	session := q.Session
	if session == "" {
		var newest *docMeta
		ix.eachDoc(func(s *segment, d int) {
			m := s.meta(d)
			if m.Session != "" && (newest == nil || m.TS > newest.TS || m.TS == newest.TS && m.Seq > newest.Seq) {
				newest = &m
			}
		}, "")
		if newest == nil {
			return nil, fmt.Errorf("%w: the archive holds no session", ErrNoSession)
		}
		session = newest.Session
	}
	var docs []docMeta
	ix.eachDoc(func(s *segment, d int) { docs = append(docs, s.meta(d)) }, session)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w %q: no span or file version of it is archived", ErrNoSession, session)
	}
	slices.SortFunc(docs, func(a, b docMeta) int {
		if a.TS != b.TS {
			return cmpInt(a.TS, b.TS)
		}
		if c := strings.Compare(a.Writer, b.Writer); c != 0 {
			return c
		}
		return cmpInt(a.Seq, b.Seq)
	})
	h := &Handoff{Session: session, First: time.Unix(0, docs[0].TS).UTC(), Last: time.Unix(0, docs[len(docs)-1].TS).UTC(),
		Pins: []Said{}, Decisions: []Said{}, Edited: []FileTouched{}, Read: []FileTouched{}, Errors: []OpenError{}, Ranges: []SpanRange{}}
	var items []hoItem
	var files []docMeta
	ranges := map[string]*SpanRange{}
	proxyOnly := true
	seenMsg := map[int]bool{} // proxy message indices already taken
	for i := range docs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m := &docs[i]
		if m.Kind == KindFile {
			files = append(files, *m)
			continue
		}
		h.Spans++
		r := ranges[m.Writer]
		if r == nil {
			r = &SpanRange{Writer: m.Writer, First: m.Seq}
			ranges[m.Writer] = r
		}
		r.First, r.Last, r.Spans = min(r.First, m.Seq), max(r.Last, m.Seq), r.Spans+1
		if m.Kind != KindProxy {
			proxyOnly = false
			if h.Harness == "" {
				h.Harness = gitstore.HarnessOf(m.Harness, m.Writer, ix.opt.HarnessOf)
			}
		}
		it := hoItem{id: hitID(m), ts: time.Unix(0, m.TS).UTC(), agent: m.Agent, kind: m.Kind, tool: m.Tool, path: m.Path}
		if m.Kind == KindThinking {
			continue // neither a request nor a statement
		}
		if m.Flags&flagEncrypted != 0 && m.Flags&flagDecrypted == 0 {
			h.Locked++
			it.locked = true
			items = append(items, it)
			continue
		}
		if m.Kind == KindAssistantText {
			// Only the last few are read (decisions): a long session
			// holds thousands.
			it.meta = m
			items = append(items, it)
			continue
		}
		data, err := ix.content(ctx, m)
		if errors.Is(err, gitstore.ErrContentLocked) {
			h.Locked++
			it.locked = true
			items = append(items, it)
			continue
		}
		if err != nil {
			continue // pruned or unreadable: recall open says why
		}
		if m.Kind == KindProxy {
			items = append(items, proxyItems(it, data, seenMsg)...)
			continue
		}
		if spanItem(&it, data) {
			items = append(items, it)
		}
	}
	h.Proxy = proxyOnly && h.Spans > 0
	for _, r := range ranges {
		h.Ranges = append(h.Ranges, *r)
	}
	slices.SortFunc(h.Ranges, func(a, b SpanRange) int { return strings.Compare(a.Writer, b.Writer) })
	h.requests(items)
	h.pins(items)
	h.decisions(ctx, ix, items, q.Decisions)
	h.openErrors(items)
	h.files(ix, files)
	ds, err := ix.Digests(ctx, DigestQuery{Session: session})
	if err != nil {
		return nil, err
	}
	for i := range ds {
		ds[i].Words = Mask(ds[i].Words)
	}
	h.Rest = ds
	if h.Rest == nil {
		h.Rest = []Digest{}
	}
	return h, nil
}

// eachDoc calls fn for every live document, of one session when session
// is set.
func (ix *Index) eachDoc(fn func(s *segment, d int), session string) {
	for _, s := range ix.segs {
		sess := uint32(0)
		if session != "" {
			i, ok := s.findString(session)
			if !ok {
				continue
			}
			sess = i
		}
		for d := range s.nDocs {
			if !s.isLive(d) {
				continue
			}
			if session != "" && s.rec(d).Session != sess {
				continue
			}
			fn(s, d)
		}
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// requests sets the goal and the latest request.
func (h *Handoff) requests(items []hoItem) {
	var reqs []*hoItem
	for _, main := range []bool{true, false} {
		for i := range items {
			it := &items[i]
			if it.kind == KindUserPrompt && (it.agent == "") == main && (it.locked || !isMarkup(it.text)) {
				reqs = append(reqs, it)
			}
		}
		if len(reqs) > 0 {
			break
		}
	}
	if len(reqs) == 0 {
		return
	}
	h.Goal = said(reqs[0], 2000)
	if last := reqs[len(reqs)-1]; last != reqs[0] {
		h.Latest = said(last, 2000)
	}
}

// isMarkup reports whether a user prompt is harness markup rather than a
// request (see the rules).
func isMarkup(text string) bool {
	t := strings.TrimSpace(text)
	if t == "" {
		return true
	}
	if len(t) > 1 && t[0] == '<' && (t[1] >= 'a' && t[1] <= 'z' || t[1] >= 'A' && t[1] <= 'Z') {
		return true
	}
	return strings.HasPrefix(t, "[Request interrupted") || strings.HasPrefix(t, "Caveat:")
}

// said reports an item, its text masked and cut to max bytes.
func said(it *hoItem, max int) *Said {
	s := &Said{ID: it.id, TS: it.ts, Agent: it.agent, Locked: it.locked}
	if !it.locked {
		s.Text = Mask(cut(strings.TrimSpace(it.text), max))
	}
	return s
}

// pins collects the pinned facts and the latest summary.
func (h *Handoff) pins(items []hoItem) {
	seen := map[string]bool{}
	add := func(it *hoItem, fact string) {
		if n := normFact(fact); n != "" && !seen[n] {
			seen[n] = true
			h.Pins = append(h.Pins, Said{ID: it.id, TS: it.ts, Agent: it.agent, Text: Mask(cut(fact, 400))})
		}
	}
	for i := range items {
		it := &items[i]
		switch {
		case it.locked:
		case it.kind == KindUserPrompt && !isMarkup(it.text):
			for _, s := range KeepSentences(it.text) {
				add(it, s)
			}
		case it.kind == KindCompactSummary:
			body, bullets := MustKeep(it.text)
			for _, b := range bullets {
				add(it, b)
			}
			h.Summary = said(&hoItem{id: it.id, ts: it.ts, agent: it.agent, text: body}, 400)
		case it.kind == kindPins:
			for _, p := range it.pins {
				add(it, p)
			}
		}
	}
	if len(h.Pins) > maxPins {
		h.Pins = h.Pins[len(h.Pins)-maxPins:]
	}
}

// decisions takes the first sentences of the last assistant texts of the
// main context (of any context when it has none).
func (h *Handoff) decisions(ctx context.Context, ix *Index, items []hoItem, n int) {
	for _, main := range []bool{true, false} {
		for i := len(items) - 1; i >= 0 && len(h.Decisions) < n; i-- {
			it := &items[i]
			if it.kind != KindAssistantText || (it.agent == "") != main {
				continue
			}
			if !ix.loadItem(ctx, it) {
				continue
			}
			s := said(it, 4000)
			if !s.Locked {
				if s.Text = firstSentences(s.Text, 2, 300); s.Text == "" {
					continue
				}
			}
			h.Decisions = append(h.Decisions, *s)
		}
		if len(h.Decisions) > 0 {
			break
		}
	}
	slices.Reverse(h.Decisions)
}

// loadItem reads a lazily read item's content (see Handoff); false when it
// cannot be read (pruned). A locked span counts as read, and locked.
func (ix *Index) loadItem(ctx context.Context, it *hoItem) bool {
	m := it.meta
	if m == nil {
		return true
	}
	it.meta = nil
	if m.Flags&flagEncrypted != 0 && m.Flags&flagDecrypted == 0 {
		it.locked = true
		return true
	}
	data, err := ix.content(ctx, m)
	if errors.Is(err, gitstore.ErrContentLocked) {
		it.locked = true
		return true
	}
	return err == nil && spanItem(it, data)
}

// firstSentences returns the first n sentences of text (a sentence ends
// at ".", "!" or "?" before a space, or at a newline), on one line, cut
// to max bytes.
func firstSentences(text string, n, max int) string {
	text = strings.TrimSpace(text)
	end := len(text)
	for _, loc := range sentenceEndRe().FindAllStringIndex(text, -1) {
		if n--; n == 0 {
			end = loc[0] + 1
			if text[loc[0]] == '\n' {
				end = loc[0]
			}
			break
		}
	}
	return cut(strings.Join(strings.Fields(text[:end]), " "), max)
}

// cut cuts s to at most max bytes at a rune boundary, marking the cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// openErrors applies the rule of errors still open.
func (h *Handoff) openErrors(items []hoItem) {
	calls := map[string]*hoItem{}
	open := map[string]*OpenError{}
	var order []string
	for i := range items {
		it := &items[i]
		switch it.kind {
		case KindToolUse:
			if it.callID != "" {
				calls[it.callID] = it
			}
		case KindToolResult:
			if it.locked {
				continue
			}
			tool, target, callID := it.tool, it.path, ""
			if c := calls[it.callID]; c != nil && it.callID != "" {
				tool, target, callID = c.tool, c.target, c.id
				if c.locked {
					tool, target = it.tool, it.path
				}
			}
			key := tool + "\x00" + target
			if !it.isError {
				delete(open, key)
				continue
			}
			e := open[key]
			if e == nil {
				e = &OpenError{Tool: tool, Target: target}
				open[key] = e
			}
			order = append(order, key)
			e.ID, e.Call, e.TS, e.Agent, e.Failures = it.id, callID, it.ts, it.agent, e.Failures+1
			e.Text = Mask(cut(firstLine(it.text), 300))
			e.Target = Mask(cut(target, 300))
		}
	}
	done := map[string]bool{}
	for i := len(order) - 1; i >= 0; i-- {
		if e := open[order[i]]; e != nil && !done[order[i]] {
			done[order[i]] = true
			h.Errors = append(h.Errors, *e)
		}
	}
	slices.Reverse(h.Errors)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// files reports the session's files: edited (by their last edit or
// write) and read (by their last read, attach or restore).
func (h *Handoff) files(ix *Index, files []docMeta) {
	type acc struct {
		last   *docMeta
		n      int
		edited bool
	}
	edits, reads := map[string]*acc{}, map[string]*acc{}
	for i := range files {
		m := &files[i]
		into := reads
		if m.Op == gitstore.OpEdit || m.Op == gitstore.OpWrite {
			into = edits
		}
		a := into[m.Path]
		if a == nil {
			a = &acc{}
			into[m.Path] = a
		}
		a.last, a.n = m, a.n+1
	}
	touched := func(p string, a *acc) FileTouched {
		m := a.last
		f := FileTouched{Path: p, Op: m.Op, ID: docKey(m.Writer, m.Seq), TS: time.Unix(0, m.TS).UTC(), Agent: m.Agent,
			Blob: blobHex(m), View: m.View, Versions: a.n}
		disk, state := ix.diskBlob(p)
		switch {
		case f.Blob == "" && ix.denied(p):
			f.State = StateExcluded
		case f.Blob == "":
			f.State = StateUnknown
		case state != "":
			f.State = state
		case f.Blob == disk:
			f.State = StateCurrent
		default:
			f.State = StateChanged
		}
		f.Current = f.State == StateCurrent
		return f
	}
	for p, a := range edits {
		h.Edited = append(h.Edited, touched(p, a))
	}
	for p, a := range reads {
		if edits[p] == nil {
			h.Read = append(h.Read, touched(p, a))
		}
	}
	byPath := func(a, b FileTouched) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(h.Edited, byPath)
	slices.SortFunc(h.Read, byPath)
}

// denied reports whether a recorded path is on the deny list.
func (ix *Index) denied(rel string) bool {
	abs := rel
	if !filepath.IsAbs(rel) {
		wt := ix.st.Location().WorkTree
		if wt == "" {
			return false
		}
		abs = filepath.Join(wt, filepath.FromSlash(rel))
	}
	_, _, denied := ix.st.Deny().Check(abs)
	return denied
}
