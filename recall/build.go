package recall

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/git-lossless/git-lossless/secrets"
)

// Kinds, as Hit.Kind reports them and Query.Kind filters on. A harness's
// spans keep the kind the sweep stored, except that "user" and
// "assistant" read as user_prompt and assistant_text.
const (
	KindUserPrompt     = "user_prompt"
	KindAssistantText  = "assistant_text"
	KindThinking       = "thinking"
	KindToolUse        = "tool_use"
	KindToolResult     = "tool_result"
	KindCompactSummary = "compact_summary"
	KindProxy          = "proxy" // a proxy span (summary or spill)
	KindFile           = "file"  // a file version (read, edit, write, ...)
)

// canonicalKind maps a stored span kind (and the aliases a user may type)
// to the kind recall reports.
func canonicalKind(k string) string {
	switch k {
	case "user", "prompt", "user_prompt":
		return KindUserPrompt
	case "assistant", "assistant_text", "text":
		return KindAssistantText
	case "":
		return "span"
	}
	return k
}

// builder accumulates documents into an in-memory inverted index. Each
// build worker has its own; finish merges them.
//
// It is the hot path of a rebuild, so it avoids per-token allocation and
// per-term slices: a token is looked up in an open-addressed table of the
// raw tokens seen (one hash, one compare) that yields its term ids; a
// document's term ids are collected in a list and counted at its end; the
// postings of all documents go, packed, into fixed-size blocks, grouped
// by term only when the builder is finalized.
type builder struct {
	dict  tokTable // term -> local id
	terms []string
	df    []uint32 // per term: documents holding it
	form  []bool   // per term: an exact form (not counted in a document's length)
	toks  tokTable
	arena []uint32 // term ids of the cached tokens
	an    analyzer

	// the document being built
	ids   []uint32 // its term ids, one per occurrence
	skip  []secrets.Finding
	fi    int
	stamp int32
	last  []int32  // per term: stamp of the last document counted
	pos   []int32  // per term: its index in pairs for that document
	pairs []uint32 // term, tf pairs of the document

	// every posting, in document order, packed as term id << 36 |
	// document << 12 | tf, in fixed-size blocks: a growing array would be
	// copied again and again, and fresh memory is what a build pays most
	// for (every page is a fault)
	blocks [][]uint64
	nPt    int
	err    error
	docs   []docMeta
	text   []byte // scratch for unescaped strings

	// set by finalize: the terms sorted, and the postings grouped by term
	// rank, rank r's at keys[start[r]:start[r+1]]
	sorted []termRef
	keys   []uint64 // document << 12 | tf
	start  []int32
}

// newBuilder returns a builder for about docs documents: its tables start
// at a size that suits them (a one-span update must not pay for a
// rebuild's tables: fresh memory is not free).
func newBuilder(docs int) *builder {
	size := 1 << 10
	for size < 1<<16 && size < 64*docs {
		size <<= 1
	}
	b := &builder{
		terms: make([]string, 0, size/2),
		df:    make([]uint32, 0, size/2),
		form:  make([]bool, 0, size/2),
		last:  make([]int32, 0, size/2),
		pos:   make([]int32, 0, size/2),
		docs:  make([]docMeta, 0, docs+docs/8+1),
	}
	b.toks.init(size)
	b.dict.init(size)
	b.an.forms = true
	return b
}

func (b *builder) intern(term []byte) uint32 {
	h := hashBytes(term)
	if id, ok := b.dict.get(h, term); ok {
		return uint32(id)
	}
	id := uint32(len(b.terms))
	b.dict.put(h, term, uint64(id))
	b.terms = append(b.terms, string(term))
	b.df = append(b.df, 0)
	b.form = append(b.form, isForm(term))
	b.last = append(b.last, -1)
	b.pos = append(b.pos, 0)
	return id
}

// token adds the terms of the raw token t[s:e] to the document, unless it
// overlaps a secret.
func (b *builder) token(t []byte, s, e int) {
	for b.fi < len(b.skip) && b.skip[b.fi].End <= s {
		b.fi++
	}
	if b.fi < len(b.skip) && b.skip[b.fi].Start < e {
		return // part of a secret: never indexed
	}
	tok := t[s:e]
	h := hashBytes(tok)
	if v, ok := b.toks.get(h, tok); ok {
		off := v >> 32
		b.ids = append(b.ids, b.arena[off:off+v&0xffffffff]...)
		return
	}
	off := len(b.arena)
	b.an.terms(tok, func(term []byte, _, _ int) { b.arena = append(b.arena, b.intern(term)) })
	b.toks.put(h, tok, uint64(off)<<32|uint64(len(b.arena)-off))
	b.ids = append(b.ids, b.arena[off:]...)
}

// scan tokenizes t[i:]. In a JSON string (str) it stops at the closing
// quote, returning its index, and takes backslash escapes for
// separators; it returns slow at a \u escape, which only the unescaped
// string tokenizes right.
func (b *builder) scan(t []byte, i int, str bool) (end int, slow bool) {
	n := len(t)
	for i < n {
		c := t[i]
		if class[c]&cWord == 0 {
			if str {
				switch c {
				case '"':
					return i, false
				case '\\':
					if i+1 < n && t[i+1] == 'u' {
						return i, true
					}
					i += 2
					continue
				}
			}
			i++
			continue
		}
		start := i
		i++
		for i < n {
			k := class[t[i]]
			if k&cWord != 0 {
				i++
				continue
			}
			if k == cJoin && i+1 < n && class[t[i+1]]&cWord != 0 {
				i += 2
				continue
			}
			break
		}
		if i-start <= maxToken {
			b.token(t, start, i)
		}
	}
	return i, false
}

// plain tokenizes plain text into the document, skipping the secret
// findings fs (sorted) of it.
func (b *builder) plain(t []byte, fs []secrets.Finding) {
	skip, fi := b.skip, b.fi
	b.skip, b.fi = fs, 0
	b.scan(t, 0, false)
	b.skip, b.fi = skip, fi
}

// json tokenizes the indexed string values of a JSON document (see
// skipKeys) straight from its bytes, secrets found in them (b.skip) left
// out. It returns false for a document that is not JSON; the caller then
// drops what it added.
func (b *builder) json(t []byte, i int, key []byte, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
		i++
	}
	if i >= len(t) {
		return i, false
	}
	switch t[i] {
	case '"':
		if key != nil && skipKeys[string(key)] {
			w := jsonText{b: t, i: i}
			ok := w.skipString()
			return w.i, ok
		}
		mark := len(b.ids)
		end, slow := b.scan(t, i+1, true)
		if !slow {
			if end >= len(t) {
				return end, false
			}
			return end + 1, true
		}
		// A \u escape: tokenize the unescaped string instead.
		b.ids = b.ids[:mark]
		j := i
		var ok bool
		if b.text, ok = unquote(b.text[:0], t, &j); !ok {
			return j, false
		}
		b.plain(b.text, secrets.Scan(b.text))
		return j, true
	case '{', '[':
		obj := t[i] == '{'
		closer := byte(']')
		if obj {
			closer = '}'
		}
		i++
		first := true
		for {
			for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
				i++
			}
			if i >= len(t) {
				return i, false
			}
			if t[i] == closer && first {
				return i + 1, true
			}
			first = false
			var k []byte
			if obj {
				if t[i] != '"' {
					return i, false
				}
				w := jsonText{b: t, i: i}
				var ok bool
				if k, ok = w.rawKey(); !ok {
					return i, false
				}
				i = w.i
				for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
					i++
				}
				if i >= len(t) || t[i] != ':' {
					return i, false
				}
				i++
			}
			var ok bool
			if i, ok = b.json(t, i, k, depth+1); !ok {
				return i, false
			}
			for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
				i++
			}
			if i >= len(t) {
				return i, false
			}
			if t[i] == ',' {
				i++
				continue
			}
			if t[i] == closer {
				return i + 1, true
			}
			return i, false
		}
	default:
		j := i
		for j < len(t) && t[j] != ',' && t[j] != '}' && t[j] != ']' && t[j] != ' ' && t[j] != '\t' && t[j] != '\n' && t[j] != '\r' {
			j++
		}
		return j, j > i
	}
}

// addDoc indexes one document: the content (a JSON span document, or
// plain text when it is not JSON), secrets in it left out, and the
// metadata strings extra (tool name, path).
func (b *builder) addDoc(m docMeta, content []byte, isJSON bool, extra ...string) {
	b.ids = b.ids[:0]
	if len(content) > 0 {
		b.skip, b.fi = secrets.Scan(content), 0
		if isJSON {
			if end, ok := b.json(content, 0, nil, 0); !ok || !onlySpace(content[end:]) {
				b.ids = b.ids[:0]
				isJSON = false
			}
		}
		if !isJSON {
			b.fi = 0
			b.scan(content, 0, false)
		}
		b.skip = nil
	}
	for _, x := range extra {
		b.plain([]byte(x), nil)
	}
	b.endDoc(m)
}

func onlySpace(t []byte) bool {
	for _, c := range t {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// endDoc counts the document's term ids into postings.
func (b *builder) endDoc(m docMeta) {
	b.stamp++
	doc := uint32(len(b.docs))
	b.pairs = b.pairs[:0]
	forms := 0
	for _, id := range b.ids {
		if b.form[id] {
			forms++
		}
		if b.last[id] != b.stamp {
			b.last[id] = b.stamp
			b.pos[id] = int32(len(b.pairs))
			b.pairs = append(b.pairs, id, 1)
		} else {
			b.pairs[b.pos[id]+1]++
		}
	}
	if doc > maxBuilderDocs || len(b.terms) > maxBuilderTerms {
		b.err = errors.New("recall: too many documents or terms for one build")
	}
	for k := 0; k < len(b.pairs); k += 2 {
		id := b.pairs[k]
		i := b.nPt % ptBlockSize
		if i == 0 {
			b.blocks = append(b.blocks, make([]uint64, ptBlockSize))
		}
		b.blocks[len(b.blocks)-1][i] = uint64(id)<<36 | uint64(doc)<<12 | uint64(min(b.pairs[k+1], maxTF))
		b.nPt++
		b.df[id]++
	}
	m.Len = uint32(len(b.ids) - forms) // a word's exact form is the same occurrence as its stem
	b.docs = append(b.docs, m)
}

// finalize sorts the builder's dictionary and groups its postings by
// term (a counting sort: each term's df is known, so each posting goes
// straight to its place). Workers finalize their own builder,
// concurrently; finish then only merges.
func (b *builder) finalize() error {
	if b.err != nil {
		return b.err
	}
	rs := make([]termRef, len(b.terms))
	for lid, t := range b.terms {
		rs[lid] = termRef{pfx: prefix8(t), t: t, lid: int32(lid)}
	}
	slices.SortFunc(rs, compareRefs)
	// next[lid]: where the term's next posting goes
	next := make([]int32, len(b.terms))
	b.start = make([]int32, len(rs)+1)
	at := int32(0)
	for i := range rs {
		rs[i].rank = int32(i)
		b.start[i] = at
		next[rs[i].lid] = at
		at += int32(b.df[rs[i].lid])
	}
	b.start[len(rs)] = at
	keys := make([]uint64, b.nPt)
	left := b.nPt
	for _, blk := range b.blocks {
		n := min(left, ptBlockSize)
		left -= n
		for _, p := range blk[:n] {
			lid := p >> 36
			keys[next[lid]] = p & (1<<36 - 1) // document and tf
			next[lid]++
		}
	}
	b.sorted, b.keys = rs, keys
	// What only the building needed goes: the encoding that follows
	// allocates, and a smaller heap is fewer fresh pages.
	b.blocks, b.toks, b.dict, b.arena = nil, tokTable{}, tokTable{}, nil
	b.last, b.pos, b.ids, b.pairs, b.text = nil, nil, nil, nil, nil
	return nil
}

// Limits of the packed postings of one build: 16M documents, 256M terms,
// and tf counted up to 4095 (BM25 saturates long before).
const (
	maxBuilderDocs  = 1<<24 - 1
	maxBuilderTerms = 1<<28 - 1
	maxTF           = 1<<12 - 1
)

// finish merges finalized builders into one segData: the documents of
// each builder in turn, and one sorted dictionary whose postings are read
// from the builders' sorted keys when the segment is encoded.
func finish(bs []*builder) *segData {
	lists := make([][]termRef, len(bs))
	for bi, b := range bs {
		for i := range b.sorted {
			b.sorted[i].b = int32(bi)
		}
		lists[bi] = b.sorted
	}
	refs := mergeRefs(lists)
	n := 0
	for _, b := range bs {
		n += len(b.docs)
	}
	out := &segData{docs: make([]docMeta, 0, n)}
	bp := &builtPostings{bs: bs, base: make([]uint32, len(bs)), refs: refs}
	for bi, b := range bs {
		bp.base[bi] = uint32(len(out.docs))
		out.docs = append(out.docs, b.docs...)
	}
	out.terms = make([]string, 0, len(refs))
	bp.grp = make([]int32, 0, len(refs)+1)
	for i := 0; i < len(refs); {
		j := i + 1
		for j < len(refs) && refs[j].t == refs[i].t {
			j++
		}
		out.terms = append(out.terms, refs[i].t)
		bp.grp = append(bp.grp, int32(i))
		i = j
	}
	bp.grp = append(bp.grp, int32(len(refs)))
	out.built = bp
	return out
}

// builtPostings are the postings of a build, still in the builders.
type builtPostings struct {
	bs   []*builder
	base []uint32  // each builder's first document in the segment
	refs []termRef // every builder's terms, merged in term order
	grp  []int32   // term t's refs are refs[grp[t]:grp[t+1]]
}

// termRef is a builder's term in the sort of the dictionary; pfx, its
// first eight bytes big-endian, decides most comparisons without touching
// the string.
type termRef struct {
	pfx          uint64
	t            string
	b, lid, rank int32
}

func prefix8(s string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(s) {
			p |= uint64(s[i])
		}
	}
	return p
}

func compareRefs(x, y termRef) int {
	switch {
	case x.pfx < y.pfx:
		return -1
	case x.pfx > y.pfx:
		return 1
	}
	if c := strings.Compare(x.t, y.t); c != 0 {
		return c
	}
	return int(x.b - y.b)
}

// mergeRefs merges sorted lists into one.
func mergeRefs(lists [][]termRef) []termRef {
	if len(lists) == 1 {
		return lists[0]
	}
	for len(lists) > 1 {
		var next [][]termRef
		for i := 0; i+1 < len(lists); i += 2 {
			a, b := lists[i], lists[i+1]
			out := make([]termRef, 0, len(a)+len(b))
			for len(a) > 0 && len(b) > 0 {
				if compareRefs(a[0], b[0]) <= 0 {
					out = append(out, a[0])
					a = a[1:]
				} else {
					out = append(out, b[0])
					b = b[1:]
				}
			}
			out = append(append(out, a...), b...)
			next = append(next, out)
		}
		if len(lists)%2 == 1 {
			next = append(next, lists[len(lists)-1])
		}
		lists = next
	}
	return lists[0]
}

// ptBlockSize is the number of postings per block.
const ptBlockSize = 1 << 15

// tokTable is an open-addressed hash table from byte strings (raw tokens,
// terms) to a uint64 (an arena offset and count of term ids; a term id).
// The probed array holds 8-byte slots (a tag from the hash, and the entry
// index), so the common tokens' slots stay in cache; the entry, with the
// key's first 8 bytes inline, is read only on a tag match.
type tokTable struct {
	slots []tokSlot
	mask  uint64
	ents  []tokEntry
	keys  []byte // keys longer than 8 bytes
}

type tokSlot struct {
	tag uint32 // high bits of the hash, never 0; 0: empty
	ent uint32
}

type tokEntry struct {
	pfx  uint64 // the key's first 8 bytes
	koff uint32
	klen uint32
	val  uint64
}

func (t *tokTable) init(size int) {
	t.slots = make([]tokSlot, size)
	t.mask = uint64(size - 1)
}

// keyPrefix packs a key's first 8 bytes.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.LittleEndian.Uint64(key)
	}
	var p uint64
	for i, c := range key {
		p |= uint64(c) << (8 * i)
	}
	return p
}

func tagOf(h uint64) uint32 { return uint32(h>>32) | 1 }

func (t *tokTable) get(h uint64, key []byte) (uint64, bool) {
	tag := tagOf(h)
	pfx := keyPrefix(key)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s.tag == 0 {
			return 0, false
		}
		if s.tag != tag {
			continue
		}
		e := &t.ents[s.ent]
		if e.pfx == pfx && int(e.klen) == len(key) && (len(key) <= 8 || string(t.keys[e.koff:e.koff+e.klen]) == string(key)) {
			return e.val, true
		}
	}
}

func (t *tokTable) put(h uint64, key []byte, val uint64) {
	if 2*(len(t.ents)+1) > len(t.slots) {
		old := t.slots
		t.init(2 * len(old))
		for _, s := range old {
			if s.tag != 0 {
				t.insert(t.ents[s.ent].hash(t), s)
			}
		}
	}
	e := tokEntry{pfx: keyPrefix(key), klen: uint32(len(key)), val: val}
	if len(key) > 8 {
		e.koff = uint32(len(t.keys))
		t.keys = append(t.keys, key...)
	}
	t.ents = append(t.ents, e)
	t.insert(h, tokSlot{tag: tagOf(h), ent: uint32(len(t.ents) - 1)})
}

// hash recomputes an entry's key hash (when the table grows).
func (e *tokEntry) hash(t *tokTable) uint64 {
	if e.klen > 8 {
		return hashBytes(t.keys[e.koff : e.koff+e.klen])
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], e.pfx)
	return hashBytes(b[:e.klen])
}

func (t *tokTable) insert(h uint64, s tokSlot) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		if t.slots[i].tag == 0 {
			t.slots[i] = s
			return
		}
	}
}

// hashBytes is a fast non-cryptographic hash of a short byte string,
// never 0.
func hashBytes(b []byte) uint64 {
	h := uint64(len(b)) * 0x9e3779b97f4a7c15
	for len(b) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(b)) * 0xff51afd7ed558ccd
		h ^= h >> 32
		b = b[8:]
	}
	var tail uint64
	for i, c := range b {
		tail |= uint64(c) << (8 * i)
	}
	h = (h ^ tail) * 0xc4ceb9fe1a85ec53
	h ^= h >> 29
	return h | 1
}
