package recall

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Query is a search.
type Query struct {
	// Text is the query: words (stemmed: "compacting" finds "compaction"),
	// fragments of words or paths ("transcr", "eep.g"), with a typo or not.
	// Hits match any of its tokens; more, and rarer, rank higher.
	Text string
	// Limit is the page size (default 10, at most 1000).
	Limit int
	// Session keeps the hits of one session.
	Session string
	// Harness keeps the hits of one agent harness ("claude-code"), as
	// gitstore.HarnessOf tells it with Options.HarnessOf.
	Harness string
	// Kind keeps the hits of one kind: user_prompt, assistant_text,
	// thinking, tool_use, tool_result, compact_summary, proxy or file.
	Kind string
	// Cursor continues a search: the Next of the page before.
	Cursor string
}

// Hit is one search result.
type Hit struct {
	// ID names the span for Span: WRITER#SEQ, or the sp- id of a proxy
	// span.
	ID      string    `json:"id"`
	Writer  string    `json:"writer"`
	Seq     int64     `json:"seq"`
	TS      time.Time `json:"ts"`
	Session string    `json:"session,omitempty"`
	Agent   string    `json:"agent,omitempty"`
	// Harness is the agent harness the span or file version came from
	// (gitstore.HarnessOf); "" for none (a proxy span, an MCP read
	// outside a session).
	Harness string  `json:"harness,omitempty"`
	Source  string  `json:"source"`
	Kind    string  `json:"kind"`
	Tool    string  `json:"tool,omitempty"`
	Path    string  `json:"path,omitempty"`
	Score   float64 `json:"score"`
	// Snippet is one line of at most 200 characters of the span's text
	// around its best match, secrets masked (a window could cut a secret
	// in two, and half a key is still a leak: it is masked before it is
	// cut).
	Snippet string `json:"snippet"`
	// Locked: the span is encrypted and no identity opened it; it was
	// found by its metadata only.
	Locked bool  `json:"locked,omitempty"`
	Bytes  int64 `json:"bytes"`
}

// Results is one page of hits, best first.
type Results struct {
	Hits []Hit `json:"hits"`
	// Next is the cursor of the next page ("" after the last).
	Next string `json:"next,omitempty"`
	// Total is the number of hits of the whole search.
	Total int `json:"total"`
}

// ErrEmptyQuery is returned for a query without a searchable word.
var ErrEmptyQuery = errors.New("recall: the query has no word to search for")

// BM25 parameters, and the weight of the looser matches: a document that
// holds a query word only in other forms of its stem ("compaction" for
// "compacting") scores stemWeight of what it would with the word itself,
// a fragment (a query token inside a longer term) half an exact match, a
// typo (edit distance 1) less still.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	stemWeight = 0.8
	fragWeight = 0.5
	typoWeight = 0.3
	// maxExpand bounds the terms one fragment or typo expands to (the
	// most frequent are kept).
	maxExpand  = 64
	maxLimit   = 1000
	snippetLen = 200
	// minTypoLen is the shortest token a typo is looked for in: one edit
	// of a shorter word is another word ("the", "she").
	minTypoLen = 4
)

// expansion is one dictionary term a query token matches, located in
// each segment.
type expansion struct {
	term   string
	weight float64
	ords   []int32 // term ordinal per segment, -1 where absent
	df     int
	// form, for a stem the query names by a word, tells the documents
	// holding that word itself from those holding only its other forms
	// (which score stemWeight); nil for a term that is not a stem.
	form *formMatch
}

// formMatch locates a query word's exact form (appendForm) in each
// segment: the exact-form terms at ordinals [lo, hi). For a word that is
// not its own stem that is its one term ("=compact=compacting"), or none
// where no document holds it; for a word that is its own stem (self:
// "compact"), every indexed form of the stem ("=compact=" is their
// prefix), and a document holds the word itself when the stem occurs
// there more often than those forms do.
type formMatch struct {
	self   bool
	lo, hi []int32
	all    []bool // per segment: every document holding the stem holds the word
}

// tokenPlan is how one query token is scored: each document scores the
// best of the expansions it holds.
type tokenPlan struct {
	exps []expansion
}

// Search runs a ranked search (see Query).
func (ix *Index) Search(ctx context.Context, q Query) (Results, error) {
	defer runtime.KeepAlive(ix)
	defer ix.damaged(ctx) // pages read for the hits count too
	toks, dropped := parseQuery(q.Text)
	if len(toks) == 0 {
		if dropped {
			return Results{}, nil // only secrets: never indexed, never found
		}
		return Results{}, ErrEmptyQuery
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, maxLimit)
	offset, err := parseCursor(q)
	if err != nil {
		return Results{}, err
	}
	plans, matched := ix.resolve(toks)
	cands := ix.score(ctx, plans, q.Session, q.Kind, q.Harness)
	if err := ctx.Err(); err != nil {
		return Results{}, err
	}
	if ix.damaged(ctx) {
		// What a damaged segment yielded is not to be trusted: its hits
		// are dropped (the index is rebuilt by the next Open).
		cands = slices.DeleteFunc(cands, func(c cand) bool { return ix.segs[c.seg].bad.Load() })
	}
	res := Results{Total: len(cands)}
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.ts != b.ts:
			if a.ts > b.ts {
				return -1
			}
			return 1
		case a.seg != b.seg:
			return int(b.seg - a.seg)
		}
		return int(a.doc - b.doc)
	})
	if offset > len(cands) {
		offset = len(cands)
	}
	end := min(len(cands), offset+limit)
	res.Hits = make([]Hit, 0, end-offset)
	for _, c := range cands[offset:end] {
		res.Hits = append(res.Hits, ix.hit(ctx, ix.segs[c.seg], int(c.doc), float64(c.score), matched))
	}
	if end < len(cands) {
		res.Next = makeCursor(q, end)
	}
	return res, nil
}

// cand is a matching document.
type cand struct {
	seg, doc int32
	score    float32
	ts       int64
}

// score runs the plans over every segment and returns the live documents
// that match and pass the filters.
func (ix *Index) score(ctx context.Context, plans []tokenPlan, session, kind, harness string) []cand {
	var out []cand
	avg := ix.avgLen
	if avg <= 0 {
		avg = 1
	}
	kind = normalizeKind(kind)
	for si, s := range ix.segs {
		if ctx.Err() != nil {
			return nil
		}
		sessIdx, kindIdx := uint32(0), uint32(0)
		if session != "" {
			i, ok := s.findString(session)
			if !ok {
				continue
			}
			sessIdx = i
		}
		if kind != "" {
			i, ok := s.findString(kind)
			if !ok {
				continue
			}
			kindIdx = i
		}
		acc := make([]float32, s.nDocs)
		tok := make([]float32, s.nDocs)
		var touched, tt []int32
		var formTF []uint32 // per document: occurrences of the exact forms (made when needed)
		var formDocs []int32
		for _, p := range plans {
			tt = tt[:0]
			for _, e := range p.exps {
				ord := e.ords[si]
				if ord < 0 {
					continue
				}
				idf := math.Log(1 + (float64(ix.n)-float64(e.df)+0.5)/(float64(e.df)+0.5))
				if idf < 0.01 {
					idf = 0.01
				}
				w := float32(e.weight * idf)
				f := e.form
				if f != nil && f.all[si] {
					f = nil // the word itself wherever its stem is
				}
				if f != nil && f.lo[si] < f.hi[si] {
					if formTF == nil {
						formTF = make([]uint32, s.nDocs)
					}
					for t := f.lo[si]; t < f.hi[si]; t++ {
						s.postings(int(t), func(doc int, tf uint32) {
							if formTF[doc] == 0 {
								formDocs = append(formDocs, int32(doc))
							}
							formTF[doc] += tf
						})
					}
				}
				s.postings(int(ord), func(doc int, tf uint32) {
					dl := float64(s.docLen(doc))
					x := float64(tf)
					sc := w * float32(x*(bm25K1+1)/(x+bm25K1*(1-bm25B+bm25B*dl/avg)))
					if f != nil {
						n := uint32(0)
						if formTF != nil {
							n = formTF[doc]
						}
						// The word itself: its own form's occurrences, or,
						// for a word that is its own stem, the stem's
						// beyond its other forms'.
						if f.self && tf <= n || !f.self && n == 0 {
							sc *= stemWeight
						}
					}
					if tok[doc] == 0 {
						tt = append(tt, int32(doc))
					}
					if sc > tok[doc] {
						tok[doc] = sc
					}
				})
				for _, d := range formDocs {
					formTF[d] = 0
				}
				formDocs = formDocs[:0]
			}
			for _, d := range tt {
				if acc[d] == 0 {
					touched = append(touched, d)
				}
				acc[d] += tok[d]
				tok[d] = 0
			}
		}
		for _, d := range touched {
			if !s.isLive(int(d)) {
				continue
			}
			if session != "" || kind != "" || harness != "" {
				r := s.rec(int(d))
				if session != "" && r.Session != sessIdx || kind != "" && r.Kind != kindIdx ||
					harness != "" && ix.harnessOf(s, r) != harness {
					continue
				}
			}
			out = append(out, cand{seg: int32(si), doc: d, score: acc[d], ts: s.docTS(int(d))})
		}
	}
	return out
}

// harnessOf is the harness of a document record of s.
func (ix *Index) harnessOf(s *segment, r docRec) string {
	return gitstore.HarnessOf(s.str(r.Harness), s.str(r.Writer), ix.opt.HarnessOf)
}

// normalizeKind maps a kind filter to the kind stored.
func normalizeKind(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	switch k {
	case "", KindProxy, KindFile:
		return k
	}
	return canonicalKind(k)
}

// resolve finds, for each query token, the terms it matches: the term
// itself; else the terms it is a fragment of; else the terms one edit
// away; else, for a compound, those of its parts that are terms. It also
// returns every matched term, for the snippets.
func (ix *Index) resolve(toks []queryToken) ([]tokenPlan, map[string]bool) {
	matched := map[string]bool{}
	var plans []tokenPlan
	one := func(qt queryToken) {
		var exps []expansion
		if e, ok := ix.lookup(qt.term); ok {
			e.weight = 1
			e.form = ix.lookupForm(qt.form, e.ords)
			exps = append(exps, e)
		} else if exps = ix.fragments(qt.frag); len(exps) == 0 {
			exps = ix.typos(qt)
		}
		if len(exps) == 0 && len(qt.parts) > 0 {
			// The parts of a compound that matched nothing, exactly
			// only: a fragment or typo of a short part matches noise.
			for i, p := range qt.parts {
				if e, ok := ix.lookup(p); ok {
					e.weight = 1
					e.form = ix.lookupForm(qt.partForms[i], e.ords)
					matched[e.term] = true
					plans = append(plans, tokenPlan{exps: []expansion{e}})
				}
			}
			return
		}
		if len(exps) == 0 {
			return
		}
		for _, e := range exps {
			matched[e.term] = true
		}
		plans = append(plans, tokenPlan{exps: exps})
	}
	for _, qt := range toks {
		one(qt)
	}
	return plans, matched
}

// lookup finds term in every segment.
func (ix *Index) lookup(term string) (expansion, bool) {
	e := expansion{term: term, ords: make([]int32, len(ix.segs))}
	tb := []byte(term)
	for si, s := range ix.segs {
		e.ords[si] = -1
		if t, ok := s.findTerm(tb); ok {
			e.ords[si] = int32(t)
			e.df += s.df(t)
		}
	}
	return e, e.df > 0
}

// lookupForm locates an exact-form key (appendForm) in every segment,
// beside the stem's ordinals there; nil for "" (a term that is not a
// stem).
func (ix *Index) lookupForm(key string, stem []int32) *formMatch {
	if key == "" {
		return nil
	}
	n := len(ix.segs)
	f := &formMatch{self: key[len(key)-1] == formMark, lo: make([]int32, n), hi: make([]int32, n), all: make([]bool, n)}
	kb := []byte(key)
	// The end of a stem's forms: the first term past their prefix
	// ("=compact>": '>' follows the mark).
	end := append(kb[:len(kb)-1:len(kb)-1], formMark+1)
	for si, s := range ix.segs {
		var lo, hi int
		if f.self {
			a, ok1 := s.lowerBound(kb)
			b, ok2 := s.lowerBound(end)
			if ok1 && ok2 {
				lo, hi = a, b
			}
		} else if t, ok := s.findTerm(kb); ok {
			lo, hi = t, t+1
			// Every document of the stem holds the word: nothing to tell
			// apart (and no postings to read for it).
			f.all[si] = stem[si] >= 0 && s.df(t) == s.df(int(stem[si]))
		}
		f.lo[si], f.hi[si] = int32(lo), int32(hi)
	}
	return f
}

// fragments returns the terms that contain frag (of three bytes or more),
// through each segment's trigram index.
func (ix *Index) fragments(frag string) []expansion {
	found := map[string]*expansion{}
	fb := []byte(frag)
	for si, s := range ix.segs {
		add := func(t int) {
			b, ok := s.termAt(t)
			if !ok || !bytes.Contains(b, fb) {
				return
			}
			e := found[string(b)]
			if e == nil {
				e = &expansion{term: string(b), weight: fragWeight, ords: make([]int32, len(ix.segs))}
				for i := range e.ords {
					e.ords[i] = -1
				}
				found[e.term] = e
			}
			e.ords[si] = int32(t)
			e.df += s.df(t)
		}
		if len(fb) < 3 {
			continue // too short to be a fragment of anything in particular
		}
		// The rarest trigram's terms, each checked for the whole fragment.
		best, bestN := uint32(0), -1
		for i := 0; i+3 <= len(fb); i++ {
			g := uint32(fb[i])<<16 | uint32(fb[i+1])<<8 | uint32(fb[i+2])
			n := s.trigramCount(g)
			if bestN < 0 || n < bestN {
				best, bestN = g, n
			}
		}
		if bestN > 0 {
			s.trigramTerms(best, add)
		}
	}
	return topExpansions(found)
}

// typos returns the terms one edit (substitution, insertion, deletion,
// transposition) away from the token, looked up as the analyzer would
// index the edited word.
func (ix *Index) typos(qt queryToken) []expansion {
	w := qt.frag
	if len(w) < minTypoLen || len(w) > 32 {
		return nil
	}
	found := map[string]*expansion{}
	tried := map[string]bool{qt.term: true}
	var a analyzer
	try := func(v string) {
		vb := []byte(v)
		var forms []string
		if isCompound(vb) {
			forms = []string{v}
		} else {
			a.simple(vb, 0, func(t []byte, _, _ int) { forms = append(forms, string(t)) })
		}
		for _, f := range forms {
			if tried[f] {
				continue
			}
			tried[f] = true
			if e, ok := ix.lookup(f); ok {
				e.weight = typoWeight
				found[f] = &e
			}
		}
	}
	eachEdit(w, try)
	return topExpansions(found)
}

// eachEdit calls fn with every string one edit away from w.
func eachEdit(w string, fn func(string)) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 0, len(w)+1)
	for i := range len(w) { // deletion
		fn(w[:i] + w[i+1:])
	}
	for i := 0; i+1 < len(w); i++ { // transposition
		if w[i] != w[i+1] {
			b = append(append(append(b[:0], w[:i]...), w[i+1], w[i]), w[i+2:]...)
			fn(string(b))
		}
	}
	for i := range len(w) { // substitution
		for j := range len(alphabet) {
			if c := alphabet[j]; c != w[i] {
				b = append(append(append(b[:0], w[:i]...), c), w[i+1:]...)
				fn(string(b))
			}
		}
	}
	for i := 0; i <= len(w); i++ { // insertion
		for j := range len(alphabet) {
			b = append(append(append(b[:0], w[:i]...), alphabet[j]), w[i:]...)
			fn(string(b))
		}
	}
}

// topExpansions returns the maxExpand most frequent expansions.
func topExpansions(found map[string]*expansion) []expansion {
	out := make([]expansion, 0, len(found))
	for _, e := range found {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b expansion) int {
		if a.df != b.df {
			return b.df - a.df
		}
		return strings.Compare(a.term, b.term)
	})
	if len(out) > maxExpand {
		out = out[:maxExpand]
	}
	return out
}

// hitID is the id Span reads a document by.
func hitID(m *docMeta) string {
	if m.Kind == KindProxy && m.SpanID != "" {
		return m.SpanID
	}
	return docKey(m.Writer, m.Seq)
}

// hit builds a Hit, reading the span's content for its snippet.
func (ix *Index) hit(ctx context.Context, s *segment, d int, score float64, matched map[string]bool) Hit {
	m := s.meta(d)
	h := Hit{
		ID: hitID(&m), Writer: m.Writer, Seq: m.Seq, TS: time.Unix(0, m.TS).UTC(), Session: m.Session,
		Agent: m.Agent, Harness: gitstore.HarnessOf(m.Harness, m.Writer, ix.opt.HarnessOf), Source: m.Source, Kind: m.Kind, Tool: m.Tool, Path: m.Path, Score: score, Bytes: m.Bytes,
		Locked: m.Flags&flagEncrypted != 0 && m.Flags&flagDecrypted == 0,
	}
	switch {
	case m.Kind == KindFile:
		h.Snippet = string(m.Op) + " " + m.Path
		if m.View != "" && m.View != "full" {
			h.Snippet += " (" + m.View + ")"
		}
	case h.Locked:
		h.Snippet = "[locked: encrypted, " + strconv.FormatInt(m.Bytes, 10) + " bytes]"
	default:
		data, err := ix.content(ctx, &m)
		if err != nil {
			h.Snippet = "[unreadable: " + err.Error() + "]"
			break
		}
		h.Snippet = snippet(strings.Join(renderLines(&m, data), "\n"), matched)
	}
	return h
}

// snippet returns one line of at most snippetLen characters of text,
// around the densest cluster of matched terms (the start when none shows
// in the text), with secrets masked before anything is cut.
func snippet(text string, matched map[string]bool) string {
	text = Mask(text)
	tb := []byte(text)
	type at struct {
		pos  int
		term string
	}
	var hits []at
	var a analyzer
	eachToken(tb, func(s, e int) {
		if len(hits) >= 1000 {
			return
		}
		a.terms(tb[s:e], func(t []byte, from, _ int) {
			if matched[string(t)] {
				hits = append(hits, at{s + from, string(t)})
			}
		})
	})
	start := 0
	if len(hits) > 0 {
		// The window of 120 bytes holding the most distinct matched
		// terms (two pointers: each hit enters and leaves once).
		const span = 120
		best, bestN := 0, 0
		count := map[string]int{}
		j := 0
		for i := range hits {
			for j < len(hits) && hits[j].pos < hits[i].pos+span {
				count[hits[j].term]++
				j++
			}
			if len(count) > bestN {
				best, bestN = i, len(count)
			}
			if count[hits[i].term]--; count[hits[i].term] == 0 {
				delete(count, hits[i].term)
			}
		}
		start = max(0, hits[best].pos-50)
		// Start at a word: after the first space within reach.
		if start > 0 {
			if k := strings.IndexAny(text[start:hits[best].pos], " \t\n"); k >= 0 {
				start += k + 1
			}
		}
		for start > 0 && !utf8.RuneStart(text[start]) {
			start--
		}
	}
	var out []byte
	room := snippetLen
	if start > 0 {
		out = append(out, "…"...)
		room--
	}
	space := false
	i := start
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v' {
			space = true
			i += n
			continue
		}
		need := 1
		if space && len(out) > 0 {
			need = 2
		}
		if room-need < 1 && i+n < len(text) { // keep one for the ellipsis
			break
		}
		if room < need {
			break
		}
		if need == 2 {
			out = append(out, ' ')
			room--
		}
		space = false
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		out = utf8.AppendRune(out, r)
		room--
		i += n
	}
	if i < len(text) && strings.TrimSpace(text[i:]) != "" {
		out = append(out, "…"...)
	}
	return string(out)
}

// makeCursor encodes the offset of the next page, bound to the query.
func makeCursor(q Query, offset int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "r1:%d:%x", offset, queryHash(q)))
}

func parseCursor(q Query) (int, error) {
	if q.Cursor == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
	bad := fmt.Errorf("recall: cursor %.40q is not a cursor of this search", q.Cursor)
	if err != nil {
		return 0, bad
	}
	f := strings.Split(string(raw), ":")
	if len(f) != 3 || f[0] != "r1" || f[2] != fmt.Sprintf("%x", queryHash(q)) {
		return 0, bad
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 {
		return 0, bad
	}
	return n, nil
}

func queryHash(q Query) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%q %q %q %q", q.Text, q.Session, normalizeKind(q.Kind), q.Harness)
	return h.Sum64()
}
