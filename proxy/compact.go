package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// failOpen is a compaction that gave up: the client's exact bytes go
// upstream instead. reason is one of the documented fail-open reasons.
type failOpen struct {
	reason string
	err    error
}

func (f *failOpen) Error() string {
	if f.err != nil {
		return f.reason + ": " + f.err.Error()
	}
	return f.reason
}

func (f *failOpen) Unwrap() error { return f.err }

func failf(reason, format string, a ...any) error {
	return &failOpen{reason: reason, err: fmt.Errorf(format, a...)}
}

// compaction is one request being compacted.
type compaction struct {
	p      *Proxy
	r      *request
	s      *session
	ms     *modelState
	hdr    http.Header
	path   string
	kind   string
	window int
	budget int
	before int
	exact  bool // count the result with the backend's tokenizer

	tok    []int // estimated tokens per message
	fixed  int   // estimated tokens outside messages
	chains [][32]byte

	// insert, when set, is placed before message insertAt by assemble
	// (a stale recall and its acknowledgement).
	insert   [][]byte
	insertAt int
}

// compactResult is a compacted request, ready to forward.
type compactResult struct {
	body       []byte
	chars      int // estimate basis of the forwarded request
	after      int
	afterSrc   string
	spans      []string // spans this request wrote
	reused     bool     // the memo alone was enough: no summary call
	summarised bool     // a new summary was written
	spills     int
	calls      int // summary calls
	callChars  int // summariser input characters
	folded     int // messages folded by this request
	// spanWrite is the time the durable span write took: the part of a
	// compaction's added latency that belongs to the archive.
	spanWrite time.Duration
	// Stale recall (recall.go): lines quoted, the spans they came from,
	// and the error that made it fail open.
	recallLines int
	recallSpans []string
	recallErr   error
}

type group struct{ start, end int }

// groups partitions msgs into units that are kept or folded whole: an
// assistant message with tool calls together with the results that
// answer it, every other message alone.
func groupsOf(msgs []message, d dialect) []group {
	if d == responses {
		return responsesGroups(msgs)
	}
	var out []group
	for i := 0; i < len(msgs); {
		j := i + 1
		if msgs[i].calls {
			if d == openAI {
				for j < len(msgs) && msgs[j].results && (msgs[j].role == "tool" || msgs[j].role == "function") {
					j++
				}
			} else if j < len(msgs) && msgs[j].role == "user" && msgs[j].results {
				j++
			}
		}
		out = append(out, group{i, j})
		i = j
	}
	return out
}

// chainAt returns the memo chain over messages [0, n).
func (c *compaction) chainAt(n int) [32]byte {
	for len(c.chains) < n {
		var prev [32]byte
		if i := len(c.chains); i > 0 {
			prev = c.chains[i-1]
		}
		c.chains = append(c.chains, chainHash(prev, msgHash(c.r.msgs[len(c.chains)].raw)))
	}
	if n == 0 {
		return [32]byte{}
	}
	return c.chains[n-1]
}

// run compacts the request. Errors are *failOpen or *summaryError.
func (c *compaction) run(ctx context.Context) (*compactResult, error) {
	runHook(c.p.hooks.compact)
	msgs := c.r.msgs
	d := c.r.d
	margin := c.p.cfg.Margin
	c.tok = make([]int, len(msgs))
	perChar := c.ms.perChar(margin)
	for i := range msgs {
		if !msgs[i].classify(d) {
			return nil, failf("unparsable", "message %d is not a chat message", i)
		}
		c.tok[i] = int(math.Ceil(float64(msgs[i].chars+msgOverheadChars) * perChar))
	}
	c.fixed = c.ms.estimate(c.r.fixedChars, margin)
	groups := groupsOf(msgs, d)
	boundary := map[int]bool{len(msgs): true}
	for _, g := range groups {
		boundary[g.start] = true
	}

	c.s.mu.Lock()
	mm := c.s.memo
	pins := append([]string(nil), c.s.pins...)
	spilled := map[[32]byte]string{}
	for k, v := range c.s.spilled {
		spilled[k] = v
	}
	c.s.mu.Unlock()

	res := &compactResult{}
	k := 0
	summary := ""
	var spans []string
	folded := 0
	if mm != nil && mm.k < len(msgs) && boundary[mm.k] && c.chainAt(mm.k) == mm.chain {
		k, summary, spans, folded = mm.k, mm.summary, append([]string(nil), mm.spans...), mm.folded
	} else {
		mm = nil
	}
	var pending []*Span
	cuts := map[int][]byte{}

	// The memo alone may be enough.
	T := k
	var body, array []byte
	var chars, n int
	var src string
	fits := false
	if mm != nil {
		body, array, chars = c.assemble(T, summary, spans, pins, folded, cuts)
		n, src = c.count(ctx, array, chars)
		fits = n <= c.budget
	}
	if !fits {
		if t := c.chooseTail(groups, k, pins, spans); t > T {
			T = t
		}
		for round := 0; ; round++ {
			if T > k {
				var fold []*message
				var idx []int
				for i := k; i < T; i++ {
					if !msgs[i].isSystem() {
						if !msgs[i].parse(d) {
							return res, failf("unparsable", "message %d does not decode", i)
						}
						fold = append(fold, &msgs[i])
						idx = append(idx, i)
					}
				}
				if len(fold) > 0 {
					out, err := c.p.summarise(ctx, summaryJob{
						r: c.r, prev: summary, msgs: fold, first: idx[0], hdr: c.hdr, path: c.path,
						model: c.r.model, window: c.window, ms: c.ms,
					})
					res.calls += out.calls
					res.callChars += out.chars
					if err != nil {
						return res, err
					}
					text, bullets := splitMustKeep(out.text)
					var facts []string
					for _, m := range fold {
						if m.role == "user" {
							facts = append(facts, keepSentences(m.text)...)
						}
					}
					pins = addPins(pins, append(facts, bullets...), c.p.cfg.PinCap)
					summary = text
					sp := &Span{
						ID: NewSpanID(), Kind: "summary", Summary: text, Pins: append([]string(nil), pins...),
					}
					if len(spans) > 0 {
						sp.Extends = spans[len(spans)-1]
					}
					for j, m := range fold {
						if id, ok := spilled[msgHash(m.raw)]; ok {
							sp.Messages = append(sp.Messages, SpanMessage{Index: idx[j], ArchivedIn: id})
						} else {
							sp.Messages = append(sp.Messages, SpanMessage{Index: idx[j], Message: json.RawMessage(m.raw)})
						}
					}
					pending = append(pending, sp)
					spans = append(spans, sp.ID)
					folded += len(fold)
					res.folded += len(fold)
					res.summarised = true
				}
				k = T
			}
			body, array, chars = c.assemble(T, summary, spans, pins, folded, cuts)
			n, src = c.count(ctx, array, chars)
			if n <= c.budget || round >= 3 {
				break
			}
			nt := c.advance(groups, T, n-c.budget)
			if nt <= T {
				break
			}
			T = nt
		}
	}

	// Oversized messages: cut the largest kept one to head + tail.
	for attempt := 0; n > c.budget; attempt++ {
		if attempt >= 3 {
			return res, failf("too-large", "%d tokens after compaction, budget %d", n, c.budget)
		}
		i := c.largestCuttable(T, cuts)
		if i < 0 {
			return res, failf("too-large", "%d tokens after compaction, budget %d, nothing left to cut", n, c.budget)
		}
		ratio, _ := c.ms.calibration()
		removeTok := n - c.budget + c.budget/50 + 60
		removeChars := int(float64(removeTok) * charsPerToken / ratio / margin)
		h := msgHash(msgs[i].raw)
		id, seen := spilled[h]
		if !seen {
			id = NewSpanID()
		}
		cut, ok := cutMessage(msgs[i].raw, removeChars, id)
		if !ok {
			cuts[i] = msgs[i].raw // not cuttable: do not pick it again
			continue
		}
		cuts[i] = cut
		if !seen {
			spilled[h] = id
			pending = append(pending, &Span{ID: id, Kind: "spill", Messages: []SpanMessage{{Index: i, Message: json.RawMessage(msgs[i].raw)}}})
		}
		res.spills++
		body, array, chars = c.assemble(T, summary, spans, pins, folded, cuts)
		n, src = c.count(ctx, array, chars)
	}

	// Archive everything folded away, durably, before the request that
	// names it is sent.
	if len(pending) > 0 {
		now := c.p.now()
		for _, sp := range pending {
			sp.Format, sp.Session, sp.Model, sp.Route, sp.TS = SpanFormat, c.s.key, c.r.model, d.String(), now
			sp.Window, sp.TokensBefore, sp.TokensAfter, sp.CountSource = c.window, c.before, n, src
		}
		t0 := time.Now()
		err := c.p.writeSpans(ctx, pending)
		res.spanWrite = time.Since(t0)
		if err != nil {
			return res, &failOpen{reason: "span-write", err: err}
		}
	}
	for _, sp := range pending {
		res.spans = append(res.spans, sp.ID)
	}
	c.indexSpans(pending)
	if ro, err := c.stale(ctx, body, n); err != nil {
		res.recallErr = err
	} else if ro.lines > 0 {
		c.insert, c.insertAt = ro.msgs, len(msgs)-1
		body, _, chars = c.assemble(T, summary, spans, pins, folded, cuts)
		n += ro.tokens
		res.recallLines, res.recallSpans = ro.lines, ro.spans
	}
	res.reused = mm != nil && !res.summarised
	res.body = body
	res.chars, res.after, res.afterSrc = chars, n, src

	c.s.mu.Lock()
	if T > 0 && summary != "" {
		c.s.memo = &memo{k: T, chain: c.chainAt(T), summary: summary, spans: spans, folded: folded}
	}
	c.s.pins = pins
	c.s.spilled = spilled
	c.s.mu.Unlock()
	return res, nil
}

// chooseTail picks where the verbatim tail starts: at a group boundary
// at or after k, keeping about TailShare of the budget and at least
// MinTail messages (always the last group), within what fits beside the
// system messages, the summary and the pins.
func (c *compaction) chooseTail(groups []group, k int, pins, spans []string) int {
	msgs := c.r.msgs
	sys := 0
	for i := range msgs {
		if msgs[i].isSystem() {
			sys += c.tok[i]
		}
	}
	pinChars := 0
	for _, p := range pins {
		pinChars += len(p) + 3
	}
	reserve := c.p.summaryMaxTokens(c.window) + 120 + c.ms.estimate(pinChars+len(spans)*24, c.p.cfg.Margin)
	hard := c.budget - c.fixed - sys - reserve
	target := int(c.p.cfg.TailShare * float64(c.budget))
	gtok := func(g group) (t, n int) {
		for i := g.start; i < g.end; i++ {
			if !msgs[i].isSystem() {
				t += c.tok[i]
				n++
			}
		}
		return t, n
	}
	T, tail, count := len(msgs), 0, 0
	gi := len(groups) - 1
	for ; gi >= 0; gi-- {
		g := groups[gi]
		if g.start < k {
			break
		}
		t, n := gtok(g)
		if count > 0 && tail+t > hard {
			break
		}
		if count >= c.p.cfg.MinTail && tail+t > target {
			break
		}
		T, tail, count = g.start, tail+t, count+n
	}
	// Prefer a tail that starts with a user's turn, when one is near
	// enough to fit.
	if T < len(msgs) && !isUserTurn(&msgs[T]) {
		extra := tail
		for j := gi; j >= 0 && groups[j].start >= k; j-- {
			t, _ := gtok(groups[j])
			extra += t
			if extra > hard || extra > target*3/2 {
				break
			}
			if isUserTurn(&msgs[groups[j].start]) {
				T = groups[j].start
				break
			}
		}
	}
	return T
}

func isUserTurn(m *message) bool { return m.role == "user" && !m.results }

// advance moves the tail start later by whole groups until about over
// tokens more are folded, always keeping the last group.
func (c *compaction) advance(groups []group, T, over int) int {
	removed := 0
	nt := T
	for gi, g := range groups {
		if g.start < T {
			continue
		}
		if gi == len(groups)-1 || removed >= over+c.budget/50 {
			break
		}
		for i := g.start; i < g.end; i++ {
			removed += c.tok[i]
		}
		nt = g.end
	}
	return nt
}

// largestCuttable returns the largest non-system message at or after T
// that is not cut yet, or -1.
func (c *compaction) largestCuttable(T int, cuts map[int][]byte) int {
	best := -1
	for i := T; i < len(c.r.msgs); i++ {
		if c.r.msgs[i].isSystem() || cuts[i] != nil {
			continue
		}
		if best < 0 || c.tok[i] > c.tok[best] {
			best = i
		}
	}
	if best >= 0 && c.tok[best] < 300 {
		return -1 // cutting small messages cannot help
	}
	return best
}

// assemble builds the forwarded request: the client's body with its
// messages array replaced. Messages before T become one summary message at
// the place of the first of them (system messages stay where they are);
// messages from T on are kept, with cuts applied. It returns the whole
// body, the messages array within it, and the estimate basis.
func (c *compaction) assemble(T int, summary string, spans, pins []string, folded int, cuts map[int][]byte) (body, array []byte, chars int) {
	msgs := c.r.msgs
	parts := make([][]byte, 0, len(msgs)-T+8)
	chars = c.r.fixedChars
	add := func(raw []byte, ch int) {
		parts = append(parts, raw)
		chars += ch + msgOverheadChars
	}
	placed := false
	for i := 0; i < T; i++ {
		if msgs[i].isSystem() {
			add(msgs[i].raw, msgs[i].chars)
			continue
		}
		if !placed {
			placed = true
			sm := asItem(c.r.d, summaryMessage(summary, spans, pins, folded))
			add(sm, len(sm))
			if first := firstNonSystem(msgs, T); first < 0 || msgs[first].role == "user" {
				ack := asItem(c.r.d, ackMessage())
				add(ack, len(ack))
			}
		}
	}
	for i := T; i < len(msgs); i++ {
		if c.insert != nil && i == c.insertAt {
			for _, m := range c.insert {
				add(m, len(m))
			}
		}
		if cut := cuts[i]; cut != nil {
			add(cut, contentChars(cut))
			continue
		}
		add(msgs[i].raw, msgs[i].chars)
	}
	prefix, suffix := c.r.body[:c.r.msgsAt.start], c.r.body[c.r.msgsAt.end:]
	size := len(prefix) + len(suffix) + 2 + len(parts)
	for _, p := range parts {
		size += len(p)
	}
	out := make([]byte, 0, size)
	out = append(out, prefix...)
	start := len(out)
	out = append(out, '[')
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	out = append(out, ']')
	end := len(out)
	out = append(out, suffix...)
	return out, out[start:end], chars
}

func firstNonSystem(msgs []message, from int) int {
	for i := from; i < len(msgs); i++ {
		if !msgs[i].isSystem() {
			return i
		}
	}
	return -1
}

// count returns the forwarded request's tokens: exact when the backend
// counted the original, else the calibrated estimate.
func (c *compaction) count(ctx context.Context, msgsJSON []byte, chars int) (int, string) {
	if c.exact {
		if n, _, ok := c.p.up.countExact(ctx, c.kind, c.r, msgsJSON, c.hdr); ok {
			c.ms.observe(chars, n)
			return n, sourceExact
		}
	}
	return c.ms.estimate(chars, c.p.cfg.Margin), sourceEstimate
}

// summaryMessage is the user message standing in for the folded ones. It
// names spans, never paths.
func summaryMessage(summary string, spans, pins []string, folded int) []byte {
	var b strings.Builder
	b.WriteString("[git-lossless: the first ")
	b.WriteString(itoa(folded))
	b.WriteString(" messages of this conversation were folded into the summary below to fit the context window. The originals are archived as ")
	if len(spans) == 1 {
		b.WriteString("span " + spans[0])
	} else {
		shown := spans
		if len(shown) > 6 {
			shown = shown[len(shown)-6:]
		}
		b.WriteString("spans " + strings.Join(shown, ", "))
		if len(spans) > len(shown) {
			b.WriteString(" and " + itoa(len(spans)-len(shown)) + " earlier")
		}
	}
	b.WriteString(" (`git lossless span ID` prints one). This summary is context, not a new instruction.]\n\n")
	b.WriteString(summary)
	if len(pins) > 0 {
		b.WriteString("\n\n## Pinned facts (verbatim)\n")
		for _, p := range pins {
			b.WriteString("- " + p + "\n")
		}
	}
	m, _ := marshalNoEscape(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{"user", strings.TrimRight(b.String(), "\n")})
	return m
}

// ackMessage keeps user and assistant turns alternating after the summary.
func ackMessage() []byte {
	return []byte(`{"role":"assistant","content":"Understood: I have the summary of the earlier conversation and will continue from it."}`)
}

// cutMessage shortens the largest text of a message by about remove
// characters, keeping head and tail (2:1, cut at line boundaries) around
// one pointer line naming the span that holds the whole message.
func cutMessage(raw []byte, remove int, spanID string) ([]byte, bool) {
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil, false
	}
	// Find the largest string among the places text lives.
	var best *string
	var set func(string)
	consider := func(s string, setter func(string)) {
		if best == nil || len(s) > len(*best) {
			c := s
			best = &c
			set = setter
		}
	}
	var walkParts func(parts []any)
	walkParts = func(parts []any) {
		for _, p := range parts {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if t, ok := pm["text"].(string); ok {
				consider(t, func(s string) { pm["text"] = s })
			}
			switch c := pm["content"].(type) {
			case string:
				consider(c, func(s string) { pm["content"] = s })
			case []any:
				walkParts(c)
			}
		}
	}
	switch c := v["content"].(type) {
	case string:
		consider(c, func(s string) { v["content"] = s })
	case []any:
		walkParts(c)
	}
	// A Responses tool output keeps its text in "output".
	switch o := v["output"].(type) {
	case string:
		consider(o, func(s string) { v["output"] = s })
	case []any:
		walkParts(o)
	}
	if best == nil {
		return nil, false
	}
	s := *best
	keep := len(s) - remove
	if keep < 200 || remove <= 0 {
		return nil, false
	}
	set(cutText(s, keep, spanID))
	out, err := marshalNoEscape(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

// cutText keeps about keep bytes of s: two thirds from the head, one third
// from the tail, cut at line boundaries when one is near.
func cutText(s string, keep int, spanID string) string {
	head := keep * 2 / 3
	tailLen := keep - head
	if nl := strings.LastIndexByte(s[:head], '\n'); nl > head/2 {
		head = nl + 1
	}
	ts := len(s) - tailLen
	if nl := strings.IndexByte(s[ts:], '\n'); nl >= 0 && nl < tailLen/2 {
		ts += nl + 1
	}
	if ts < head {
		ts = head
	}
	omitted := s[head:ts]
	lines := strings.Count(omitted, "\n")
	pointer := fmt.Sprintf("[git-lossless: %d lines (%d characters) of this message were cut here to fit the context window; the whole message is archived as span %s]", lines, len(omitted), spanID)
	h := validPrefix(s[:head])
	t := validSuffix(s[ts:])
	sep1, sep2 := "\n", "\n"
	if strings.HasSuffix(h, "\n") || h == "" {
		sep1 = ""
	}
	return h + sep1 + pointer + sep2 + t
}
