package recall

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"slices"
	"sync"

	"github.com/git-lossless/git-lossless/gitstore"
)

// A segment is one immutable file of the index (FORMAT.md describes its
// bytes): a table of documents, a sorted term dictionary with each term's
// postings, a trigram index over the dictionary, and a table of the
// writers whose documents it holds. Readers map it and binary-search the
// dictionary: opening one reads the footer, the writer table and a table
// of page checksums, nothing else, so a fresh process pays for the pages
// a search touches, not for the size of the index. Each 4 KiB page is
// checked against its CRC the first time it is read; every access is
// bounds-checked, so a damaged file is an error or a miss, never a panic.

const (
	segMagic    = "RCLSEG01"
	segEndMagic = "RCLEND01"
	segVersion  = 3
	docRecSize  = 104
	dictEntSize = 12
	triEntSize  = 12
	writerSize  = 24
	pageShift   = 12 // pages of 4 KiB are checked one by one
	nSections   = 10
	footerSize  = 4*6 + 8 + nSections*8 + 4 + 8
)

// sections, in file order
const (
	secStrOffs = iota
	secStrBytes
	secDocs
	secDict
	secTermBytes
	secPostings
	secTriEnts
	secTriLists
	secWriters
	secPageCRCs // CRC32C of each page of the file before this section
)

// castagnoli is the CRC32C table, built on first use: building it costs
// about a million instructions (hash/crc32's SSE4.2 setup), a quarter of
// what a `git-lossless` process that never opens a segment (every hook,
// --version) spends before main.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// errCorrupt is wrapped by every decoding error.
var errCorrupt = errors.New("recall: corrupt segment")

// Document flags.
const (
	flagEncrypted = 1 << 0 // the content is age ciphertext: on disk, only metadata is indexed
	flagDecrypted = 1 << 1 // indexed from decrypted plaintext (in-memory segments only)
	flagSidechain = 1 << 2 // a subagent's event
	flagBlob      = 1 << 3 // Blob is set
	flagJournal   = 1 << 4 // a proxy journal span (full capture: one message as sent)
)

// docMeta is what the index keeps of one document: a span or a file
// version event.
type docMeta struct {
	Writer, Session, Agent, Source, Kind, Tool, Path, SpanID, View string
	Op                                                             gitstore.Op
	// Harness is the event's own "harness" field ("" when it has none:
	// the harness of such an event is told by its writer at search time,
	// gitstore.HarnessOf, so the index never depends on the list of
	// harnesses).
	Harness string
	// Head is the first words of a user prompt, compaction summary or
	// proxy summary (masked; empty for other kinds, and on disk for
	// encrypted spans).
	Head  string
	Seq   int64
	TS    int64 // unix nanoseconds
	Bytes int64
	Blob  [20]byte
	Epoch uint32 // the writer's index epoch (see manifest)
	Len   uint32 // number of terms
	Flags uint32
}

// segData is a segment before encoding: documents, and the sorted
// dictionary with each term's postings (doc, tf pairs, doc ascending).
type segData struct {
	docs  []docMeta
	terms []string
	// the postings: doc, tf pairs per term (merges), or a build's
	post  [][]uint32
	built *builtPostings
}

// appendPostings appends term t's postings, encoded (document deltas and
// tfs as uvarints), to dst, and returns it with the term's df.
func (d *segData) appendPostings(dst []byte, t int) ([]byte, int) {
	if d.built == nil {
		p := d.post[t]
		prev := uint32(0)
		for k := 0; k+1 < len(p); k += 2 {
			dst = binary.AppendUvarint(dst, uint64(p[k]-prev))
			dst = binary.AppendUvarint(dst, uint64(p[k+1]))
			prev = p[k]
		}
		return dst, len(p) / 2
	}
	bp := d.built
	prev := uint32(0)
	df := 0
	for _, r := range bp.refs[bp.grp[t]:bp.grp[t+1]] {
		b := bp.bs[r.b]
		base := bp.base[r.b]
		for _, k := range b.keys[b.start[r.rank]:b.start[r.rank+1]] {
			doc := uint32(k>>12) + base
			dst = binary.AppendUvarint(dst, uint64(doc-prev))
			dst = binary.AppendUvarint(dst, k&maxTF)
			prev = doc
			df++
		}
	}
	return dst, df
}

// postingCount returns the number of postings of d.
func (d *segData) postingCount() int {
	if d.built == nil {
		n := 0
		for _, p := range d.post {
			n += len(p) / 2
		}
		return n
	}
	n := 0
	for _, b := range d.built.bs {
		n += len(b.keys)
	}
	return n
}

// encodeSegmentParts writes d in the segment format: the file's bytes
// are the concatenation of the parts.
func encodeSegmentParts(d *segData) ([][]byte, error) {
	// String table: every distinct string of the documents, sorted, ""
	// first.
	strs := []string{""}
	seen := map[string]uint32{"": 0}
	for i := range d.docs {
		m := &d.docs[i]
		for _, s := range [...]string{m.Writer, m.Session, m.Agent, m.Source, m.Kind, m.Tool, m.Path, m.SpanID, string(m.Op), m.View, m.Head, m.Harness} {
			if _, ok := seen[s]; !ok {
				seen[s] = 0
				strs = append(strs, s)
			}
		}
	}
	slices.Sort(strs)
	for i, s := range strs {
		seen[s] = uint32(i)
	}
	var sec [nSections][]byte // the sections made whole here
	var strOffs, strBytes []byte
	for _, s := range strs {
		strOffs = binary.LittleEndian.AppendUint32(strOffs, uint32(len(strBytes)))
		strBytes = append(strBytes, s...)
	}
	strOffs = binary.LittleEndian.AppendUint32(strOffs, uint32(len(strBytes)))
	sec[secStrOffs], sec[secStrBytes] = strOffs, strBytes

	docs := make([]byte, 0, len(d.docs)*docRecSize)
	var totalLen uint64
	for i := range d.docs {
		m := &d.docs[i]
		le := binary.LittleEndian
		docs = le.AppendUint64(docs, uint64(m.Seq))
		docs = le.AppendUint64(docs, uint64(m.TS))
		docs = le.AppendUint64(docs, uint64(m.Bytes))
		docs = append(docs, m.Blob[:]...)
		for _, v := range [...]uint32{seen[m.Writer], m.Epoch, seen[m.Session], seen[m.Agent], seen[m.Source], seen[m.Kind],
			seen[m.Tool], seen[m.Path], seen[m.SpanID], seen[string(m.Op)], seen[m.View], seen[m.Head], m.Len, m.Flags, seen[m.Harness]} {
			docs = le.AppendUint32(docs, v)
		}
		totalLen += uint64(m.Len)
	}
	sec[secDocs] = docs

	// The trigram index is built while the postings are encoded.
	var triEnts, triLists []byte
	triDone := make(chan struct{})
	go func() {
		defer close(triDone)
		triEnts, triLists = trigramIndex(d.terms)
	}()
	// Dictionary and postings, in two halves encoded concurrently (the
	// second half's offsets are shifted when they are joined).
	type half struct {
		dict, termBytes, post []byte
	}
	encodeHalf := func(lo, hi int, h *half) {
		np := d.postingCount() * (hi - lo) / max(1, len(d.terms))
		h.dict = make([]byte, 0, (hi-lo)*dictEntSize)
		h.post = make([]byte, 0, 4*np+64)
		for t := lo; t < hi; t++ {
			h.dict = binary.LittleEndian.AppendUint32(h.dict, uint32(len(h.termBytes)))
			h.dict = binary.LittleEndian.AppendUint32(h.dict, uint32(len(h.post)))
			var df int
			h.post, df = d.appendPostings(h.post, t)
			h.dict = binary.LittleEndian.AppendUint32(h.dict, uint32(df))
			h.termBytes = append(h.termBytes, d.terms[t]...)
		}
	}
	mid := len(d.terms) / 2
	var h1, h2 half
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		encodeHalf(mid, len(d.terms), &h2)
	}()
	encodeHalf(0, mid, &h1)
	<-done2
	if len(h1.post)+len(h2.post) > math.MaxUint32 || len(h1.termBytes)+len(h2.termBytes) > math.MaxUint32 {
		<-triDone
		return nil, errors.New("recall: segment too large (4 GiB)")
	}
	// The second half's offsets are relative to it.
	le := binary.LittleEndian
	for i := 0; i < len(h2.dict); i += dictEntSize {
		le.PutUint32(h2.dict[i:], le.Uint32(h2.dict[i:])+uint32(len(h1.termBytes)))
		le.PutUint32(h2.dict[i+4:], le.Uint32(h2.dict[i+4:])+uint32(len(h1.post)))
	}
	<-triDone
	writers := writerTable(d.docs, seen)
	// Sections made of two halves are copied into place half by half.
	parts := [nSections][][]byte{
		secStrOffs: {sec[secStrOffs]}, secStrBytes: {sec[secStrBytes]}, secDocs: {sec[secDocs]},
		secDict: {h1.dict, h2.dict}, secTermBytes: {h1.termBytes, h2.termBytes}, secPostings: {h1.post, h2.post},
		secTriEnts: {triEnts}, secTriLists: {triLists}, secWriters: {writers},
	}
	total := len(segMagic) + footerSize
	for _, ps := range parts {
		for _, p := range ps {
			total += len(p)
		}
	}
	total += 4 * (total>>pageShift + 2)
	if total > math.MaxUint32 {
		return nil, errors.New("recall: segment too large (4 GiB)")
	}
	// The file is returned as the parts it is made of (written out one
	// by one: a rebuild's segment is megabytes, and copying it into one
	// buffer costs a fresh allocation and a pass over it).
	out := [][]byte{[]byte(segMagic)}
	var offs [nSections][2]uint32
	at := len(segMagic)
	for i, ps := range parts[:secPageCRCs] {
		start := at
		for _, p := range ps {
			if len(p) > 0 {
				out = append(out, p)
				at += len(p)
			}
		}
		offs[i] = [2]uint32{uint32(start), uint32(at - start)}
	}
	crcStart := at
	pageCRCs := make([]byte, 0, 4*(crcStart>>pageShift+1))
	var crc uint32
	fill := 0 // bytes of the current page summed so far
	for _, p := range out {
		for len(p) > 0 {
			n := min(len(p), 1<<pageShift-fill)
			crc = crc32.Update(crc, castagnoli(), p[:n])
			fill += n
			p = p[n:]
			if fill == 1<<pageShift {
				pageCRCs = le.AppendUint32(pageCRCs, crc)
				crc, fill = 0, 0
			}
		}
	}
	if fill > 0 {
		pageCRCs = le.AppendUint32(pageCRCs, crc)
	}
	offs[secPageCRCs] = [2]uint32{uint32(crcStart), uint32(len(pageCRCs))}
	foot := make([]byte, 0, len(pageCRCs)+footerSize)
	foot = append(foot, pageCRCs...)
	foot = le.AppendUint32(foot, segVersion)
	foot = le.AppendUint32(foot, uint32(len(d.docs)))
	foot = le.AppendUint32(foot, uint32(len(strs)))
	foot = le.AppendUint32(foot, uint32(len(d.terms)))
	foot = le.AppendUint32(foot, uint32(len(triEnts)/triEntSize))
	foot = le.AppendUint32(foot, uint32(len(writers)/writerSize))
	foot = le.AppendUint64(foot, totalLen)
	for _, o := range offs {
		foot = le.AppendUint32(foot, o[0])
		foot = le.AppendUint32(foot, o[1])
	}
	// The footer's CRC covers the page checksums and the footer.
	foot = le.AppendUint32(foot, crc32.Checksum(foot, castagnoli()))
	foot = append(foot, segEndMagic...)
	return append(out, foot), nil
}

// encodeSegment writes d in the segment format, in one buffer.
func encodeSegment(d *segData) ([]byte, error) {
	parts, err := encodeSegmentParts(d)
	if err != nil {
		return nil, err
	}
	return bytes.Join(parts, nil), nil
}

// writerTable returns the writer section of docs: one row per writer and
// epoch (writer string, epoch, documents, encrypted documents, total
// length), so that an open computes liveness and collection statistics
// from the writers, not from every document.
func writerTable(docs []docMeta, str map[string]uint32) []byte {
	type key struct{ w, ep uint32 }
	type row struct {
		docs, enc uint32
		length    uint64
	}
	rows := map[key]*row{}
	var keys []key
	for i := range docs {
		m := &docs[i]
		k := key{str[m.Writer], m.Epoch}
		r := rows[k]
		if r == nil {
			r = &row{}
			rows[k] = r
			keys = append(keys, k)
		}
		r.docs++
		r.length += uint64(m.Len)
		if m.Flags&flagEncrypted != 0 {
			r.enc++
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.w != b.w {
			return int(a.w) - int(b.w)
		}
		return int(a.ep) - int(b.ep)
	})
	out := make([]byte, 0, len(keys)*writerSize)
	le := binary.LittleEndian
	for _, k := range keys {
		r := rows[k]
		out = le.AppendUint32(out, k.w)
		out = le.AppendUint32(out, k.ep)
		out = le.AppendUint32(out, r.docs)
		out = le.AppendUint32(out, r.enc)
		out = le.AppendUint64(out, r.length)
	}
	return out
}

// trigramIndex returns the trigram entries and lists of a sorted
// dictionary: for each distinct byte trigram, the ordinals of the terms
// holding it. Exact-form terms are left out: a fragment is looked for in
// stems and whole tokens, as before they were indexed, and the trigram
// index stays the size it was.
func trigramIndex(terms []string) (ents, lists []byte) {
	// (trigram << 32 | term) pairs, made in term order and sorted by
	// trigram: one stable radix sort, no map.
	n := 0
	for _, s := range terms {
		if len(s) == 0 || s[0] != formMark {
			n += max(0, len(s)-2)
		}
	}
	pairs := make([]uint64, 0, n)
	for t, s := range terms {
		if len(s) > 0 && s[0] == formMark {
			continue
		}
		first := len(pairs)
	tri:
		for i := 0; i+3 <= len(s); i++ {
			g := uint64(s[i])<<16 | uint64(s[i+1])<<8 | uint64(s[i+2])
			v := g<<32 | uint64(t)
			for _, p := range pairs[first:] {
				if p == v {
					continue tri
				}
			}
			pairs = append(pairs, v)
		}
	}
	radixSort(pairs, 32, 56)
	le := binary.LittleEndian
	ents = make([]byte, 0, 3*4*min(len(pairs), 1<<16))
	lists = make([]byte, 0, len(pairs)+len(pairs)/4)
	for i := 0; i < len(pairs); {
		g := pairs[i] >> 32
		j := i
		off := len(lists)
		prev := uint32(0)
		for j < len(pairs) && pairs[j]>>32 == g {
			t := uint32(pairs[j])
			lists = binary.AppendUvarint(lists, uint64(t-prev))
			prev = t
			j++
		}
		ents = le.AppendUint32(ents, uint32(g))
		ents = le.AppendUint32(ents, uint32(off))
		ents = le.AppendUint32(ents, uint32(j-i))
		i = j
	}
	return ents, lists
}
