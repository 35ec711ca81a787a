package recall

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/git-lossless/git-lossless/secrets"
)

// LineIndex is a small in-memory index of text lines, each tagged with
// the reference (a span id) of the document it came from. It is the
// recall index's analysis (tokens, stemmed terms, compounds and their
// parts, trigrams of the term dictionary, secrets never indexed) over
// lines instead of documents, for a caller that wants the lines
// themselves: the compacting proxy keeps one per session over the spans
// it folded away, and quotes the lines a new message names (package
// proxy, stale recall). Nothing of it reaches the disk, so it may hold
// the plaintext of spans archived encrypted.
//
// It is safe for concurrent use. It keeps at most its byte cap of line
// text: past it, the oldest half of the lines is dropped.
type LineIndex struct {
	mu    sync.RWMutex
	max   int
	size  int
	lines []indexedLine
	post  map[string][]int32 // term -> ids of the lines holding it, ascending
	grams map[uint32][]string
	a     analyzer
}

type indexedLine struct {
	ref, text string
}

// DefaultLineIndexBytes is the cap NewLineIndex uses for 0.
const DefaultLineIndexBytes = 4 << 20

// maxIndexedLine is the longest line indexed, in bytes; longer ones (a
// minified file, a base64 run) are skipped.
const maxIndexedLine = 4096

// NewLineIndex returns an empty index keeping at most maxBytes of line
// text (0: DefaultLineIndexBytes).
func NewLineIndex(maxBytes int) *LineIndex {
	if maxBytes <= 0 {
		maxBytes = DefaultLineIndexBytes
	}
	return &LineIndex{max: maxBytes, post: map[string][]int32{}, grams: map[uint32][]string{}}
}

// Len returns the number of lines indexed.
func (x *LineIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.lines)
}

// Add indexes every line of text that holds a token, under ref. A token
// that is (part of) a secret the scanner finds is not indexed (the line
// is kept: callers mask what they quote).
func (x *LineIndex) Add(ref, text string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.add(ref, text)
	if x.size > x.max {
		x.trim()
	}
}

func (x *LineIndex) add(ref, text string) {
	b := []byte(text)
	fs := secrets.Scan(b)
	fi := 0
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += off
		}
		ls, le := off, end
		off = end + 1
		for ls < le && (b[ls] == ' ' || b[ls] == '\t' || b[ls] == '\r') {
			ls++
		}
		for le > ls && (b[le-1] == ' ' || b[le-1] == '\t' || b[le-1] == '\r') {
			le--
		}
		if le-ls == 0 || le-ls > maxIndexedLine {
			continue
		}
		id := int32(len(x.lines))
		has := false
		eachToken(b[ls:le], func(s, e int) {
			s, e = s+ls, e+ls
			for fi < len(fs) && fs[fi].End <= s {
				fi++
			}
			if fi < len(fs) && fs[fi].Start < e {
				return
			}
			tok := b[s:e]
			compound := isCompound(tok)
			x.a.terms(tok, func(t []byte, from, to int) {
				if !indexable(t, tok[from:to], compound && from == 0 && to == len(tok)) {
					return // Match never looks it up
				}
				p := x.post[string(t)]
				if n := len(p); n > 0 && p[n-1] == id {
					return
				}
				if p == nil {
					x.addGrams(string(t))
				}
				x.post[string(t)] = append(p, id)
				has = true
			})
		})
		if has {
			x.lines = append(x.lines, indexedLine{ref: ref, text: string(b[ls:le])})
			x.size += le - ls + len(ref)
		}
	}
}

// addGrams files a new term under each of its trigrams.
func (x *LineIndex) addGrams(t string) {
	var seen [8]uint32
	n := 0
	for i := 0; i+3 <= len(t); i++ {
		g := uint32(t[i])<<16 | uint32(t[i+1])<<8 | uint32(t[i+2])
		if n < len(seen) && slices.Contains(seen[:n], g) {
			continue
		}
		if n < len(seen) {
			seen[n] = g
			n++
		}
		x.grams[g] = append(x.grams[g], t)
	}
}

// trim drops the oldest half of the lines and indexes the rest again.
func (x *LineIndex) trim() {
	keep := x.lines[len(x.lines)/2:]
	x.lines, x.size = nil, 0
	x.post, x.grams = map[string][]int32{}, map[uint32][]string{}
	for _, l := range keep {
		x.add(l.ref, l.text)
	}
}

// LineQuery asks a LineIndex for the lines a text names.
type LineQuery struct {
	// Text is what names them: a user's message.
	Text string
	// Max is the most lines returned (default 3).
	Max int
	// Absent, when set, is asked about each distinctive word of Text that
	// the index holds, lower-cased, with its term (stemmed for a plain
	// word, whole for a compound): a word for which it returns false is
	// not looked up. The proxy answers whether the forwarded request
	// lacks the word.
	Absent func(word, term string) bool
}

// LineMatch is one line a query named.
type LineMatch struct {
	Ref  string // the reference it was added under
	Line string // the line, trimmed, as added (not masked)
	// Words are the query's words it matched, lower-cased.
	Words []string
	// At is the byte offset in Line of the first matched word (-1 when
	// the match was by stem only).
	At    int
	Score float64
}

// Limits of a line query: the distinctive words looked at, those asked
// about (Absent), and those looked up as fragments.
const (
	lineQueryWords   = 64
	lineQueryAbsent  = 24
	lineQueryFrags   = 16
	lineFragMinBytes = 4
	lineWordMaxDF    = 8
)

// indexable reports whether a term (of surface form part, the whole of
// a compound token or not) is one Match can look up: distinctive's rule
// on the index side, which keeps the common words out of the postings.
func indexable(term, part []byte, whole bool) bool {
	if whole || bytes.ContainsAny(part, "0123456789") {
		return len(part) >= 3
	}
	if len(part) < 4 {
		return false
	}
	if len(part) <= 9 {
		var buf [9]byte
		low := buf[:0]
		for _, c := range part {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			low = append(low, c)
		}
		if lineStop()[string(low)] {
			return false
		}
	}
	return !lineStop()[string(term)]
}

func hasDigit(w string) bool { return strings.ContainsAny(w, "0123456789") }

// lineStop are plain words too common in talk about code to name
// anything by themselves.
var lineStop = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`about above after again against also another anything back been before being
below between both called cannot change changed could does doing done down during each earlier either else
every file files first from function have here into just know last later like line lines look make many
might more most much must need next none only other over please said same should show since some still
such sure than that their them then there these they thing things this those though through told under
until used using value very want were what when where which while will with would your code again fine
okay right thanks thank still said tell`) {
		m[w] = true
	}
	return m
})

// distinctive reports whether a query token can name something by
// itself: an identifier or path part (a compound), a number or a word
// with digits of three bytes or more, a plain word of four or more that
// is not a common one.
func distinctive(qt queryToken) bool {
	w := qt.frag
	if len(qt.parts) > 0 {
		return len(w) >= 3
	}
	if hasDigit(w) {
		return len(w) >= 3
	}
	return len(w) >= 4 && !lineStop()[w] && !lineStop()[qt.term]
}

// Word is a distinctive word of a text: lower-cased, and the term Match
// looks it up by (stemmed for a plain word, whole for a compound).
type Word struct{ Word, Term string }

// DistinctiveWords returns the words of text that Match would look up,
// in order, without repeats: identifiers and path components
// (compounds), numbers and words with digits of three bytes or more,
// plain words of four or more that are not common ones; secrets
// excluded.
func DistinctiveWords(text string) []Word {
	toks, _ := parseQuery(text)
	var out []Word
	for _, qt := range toks {
		if distinctive(qt) {
			out = append(out, Word{Word: qt.frag, Term: qt.term})
			if len(out) >= lineQueryWords {
				break
			}
		}
	}
	return out
}

// Match returns the lines that q's distinctive words name, best first:
// a word matches the lines holding its term (a plain word by its stem, a
// compound whole) or, when it is no term, the terms it is a fragment of
// (four bytes or more, at half weight). A plain word held by more than
// eight lines, or an identifier or number held by more than an eighth of
// them (and more than eight), names nothing in particular and is
// skipped. Lines score the sum of their words' inverse document
// frequencies; ties go to the newer line. Lines with the same text count
// once.
func (x *LineIndex) Match(q LineQuery) []LineMatch {
	if q.Max <= 0 {
		q.Max = 3
	}
	toks, _ := parseQuery(q.Text)
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.lines)
	if n == 0 {
		return nil
	}
	// An identifier, path or number may recur in up to an eighth of the
	// lines and still name a thing; a plain word that recurs names a
	// topic, not a detail.
	maxDF := max(lineWordMaxDF, n/8)
	type hitWord struct {
		word   string
		weight float64
		ids    []int32
	}
	var words []hitWord
	looked, asked, frags := 0, 0, 0
	for _, qt := range toks {
		if !distinctive(qt) {
			continue
		}
		if looked++; looked > lineQueryWords {
			break
		}
		var ids []int32
		weight := 1.0
		if p, ok := x.post[qt.term]; ok {
			ids = p
		} else if len(qt.frag) >= lineFragMinBytes && frags < lineQueryFrags {
			frags++
			ids = x.fragmentLines(qt.frag, maxDF)
			weight = fragWeight
		}
		if len(ids) == 0 || len(ids) > maxDF || len(qt.parts) == 0 && !hasDigit(qt.frag) && len(ids) > lineWordMaxDF {
			continue
		}
		if q.Absent != nil {
			if asked++; asked > lineQueryAbsent {
				break
			}
			if !q.Absent(qt.frag, qt.term) {
				continue
			}
		}
		idf := math.Log(1 + float64(n)/float64(len(ids)))
		words = append(words, hitWord{word: qt.frag, weight: weight * idf, ids: ids})
	}
	if len(words) == 0 {
		return nil
	}
	score := map[int32]float64{}
	matched := map[int32][]string{}
	for _, w := range words {
		for _, id := range w.ids {
			score[id] += w.weight
			matched[id] = append(matched[id], w.word)
		}
	}
	ids := make([]int32, 0, len(score))
	for id := range score {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return int(b - a) // newer first
	})
	var out []LineMatch
	seen := map[string]bool{}
	for _, id := range ids {
		l := x.lines[id]
		if seen[l.text] {
			continue
		}
		seen[l.text] = true
		m := LineMatch{Ref: l.ref, Line: l.text, Words: matched[id], Score: score[id], At: -1}
		low := strings.ToLower(l.text)
		for _, w := range m.Words {
			if i := strings.Index(low, w); i >= 0 && (m.At < 0 || i < m.At) {
				m.At = i
			}
		}
		out = append(out, m)
		if len(out) >= q.Max {
			break
		}
	}
	return out
}

// fragmentLines returns the lines holding a term that contains frag,
// through the rarest of its trigrams; nil past maxDF lines.
func (x *LineIndex) fragmentLines(frag string, maxDF int) []int32 {
	var best []string
	found := false
	for i := 0; i+3 <= len(frag); i++ {
		g := uint32(frag[i])<<16 | uint32(frag[i+1])<<8 | uint32(frag[i+2])
		ts := x.grams[g]
		if len(ts) == 0 {
			return nil // no term holds this trigram, so none holds frag
		}
		if !found || len(ts) < len(best) {
			best, found = ts, true
		}
	}
	set := map[int32]bool{}
	for _, t := range best {
		if !strings.Contains(t, frag) {
			continue
		}
		for _, id := range x.post[t] {
			set[id] = true
		}
		if len(set) > maxDF {
			return nil
		}
	}
	out := make([]int32, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
