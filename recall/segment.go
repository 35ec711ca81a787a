package recall

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sync"
	"sync/atomic"
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
	segVersion  = 1
	docRecSize  = 100
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
)

// docMeta is what the index keeps of one document: a span or a file
// version event.
type docMeta struct {
	Writer, Session, Agent, Source, Kind, Tool, Path, SpanID, Op, View string
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
		for _, s := range [...]string{m.Writer, m.Session, m.Agent, m.Source, m.Kind, m.Tool, m.Path, m.SpanID, m.Op, m.View, m.Head} {
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
			seen[m.Tool], seen[m.Path], seen[m.SpanID], seen[m.Op], seen[m.View], seen[m.Head], m.Len, m.Flags} {
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
// holding it.
func trigramIndex(terms []string) (ents, lists []byte) {
	// (trigram << 32 | term) pairs, made in term order and sorted by
	// trigram: one stable radix sort, no map.
	n := 0
	for _, s := range terms {
		n += max(0, len(s)-2)
	}
	pairs := make([]uint64, 0, n)
	for t, s := range terms {
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

// segment is an opened segment: its bytes (mapped or in memory) and the
// sections found through its footer.
type segment struct {
	name     string // file name; "" for a segment that lives only in memory
	size     int64
	data     []byte
	release  func() // unmaps data (nil for heap bytes)
	nDocs    int
	nStrs    int
	nTerms   int
	nTris    int
	nWriters int
	totalLen uint64
	sec      [nSections][]byte
	secOff   [nSections]uint64 // each section's offset in data

	// verified is a bitset of the pages whose CRC was checked; nil when
	// the bytes are trusted (a segment this process just encoded).
	verified []atomic.Uint64
	bad      atomic.Bool // a page failed its check
	reported atomic.Bool // the damage was reported (see Index.damaged)

	// Set when the segment joins a snapshot (setLive):
	epochOf  map[uint32]uint32 // writer string -> its live epoch (writers absent are gone)
	liveDocs int
	liveLen  uint64
	liveEnc  int    // live encrypted documents (on disk: indexed by metadata only)
	hidden   []bool // encrypted documents an in-memory segment has decrypted
	mem      bool   // the in-memory segment of decrypted spans
}

// openSegment validates data's framing (and, when verify is set, the
// checksum of its footer and page table; pages are checked when read)
// and returns the segment over it. Without verify the bytes are trusted:
// they were encoded by this process.
func openSegment(name string, data []byte, verify bool) (*segment, error) {
	bad := func(what string) error { return fmt.Errorf("%w %s: %s", errCorrupt, name, what) }
	if len(data) < len(segMagic)+footerSize || string(data[:len(segMagic)]) != segMagic {
		return nil, bad("no segment header")
	}
	f := data[len(data)-footerSize:]
	if string(f[footerSize-len(segEndMagic):]) != segEndMagic {
		return nil, bad("no segment footer")
	}
	le := binary.LittleEndian
	if le.Uint32(f) != segVersion {
		return nil, bad("unknown segment version")
	}
	s := &segment{name: name, size: int64(len(data)), data: data}
	s.nDocs = int(le.Uint32(f[4:]))
	s.nStrs = int(le.Uint32(f[8:]))
	s.nTerms = int(le.Uint32(f[12:]))
	s.nTris = int(le.Uint32(f[16:]))
	s.nWriters = int(le.Uint32(f[20:]))
	s.totalLen = le.Uint64(f[24:])
	body := len(data) - footerSize
	prevEnd := uint64(len(segMagic))
	for i := range nSections {
		off := uint64(le.Uint32(f[32+8*i:]))
		n := uint64(le.Uint32(f[36+8*i:]))
		if off != prevEnd || off+n > uint64(body) {
			return nil, bad("section out of bounds")
		}
		s.sec[i] = data[off : off+n : off+n]
		s.secOff[i] = off
		prevEnd = off + n
	}
	if prevEnd != uint64(body) {
		return nil, bad("bytes between the sections and the footer")
	}
	crcStart := s.secOff[secPageCRCs]
	crcAt := len(data) - len(segEndMagic) - 4
	if verify && crc32.Checksum(data[crcStart:crcAt], castagnoli()) != le.Uint32(data[crcAt:]) {
		return nil, bad("checksum mismatch")
	}
	pages := (crcStart + 1<<pageShift - 1) >> pageShift
	switch {
	case uint64(len(s.sec[secPageCRCs])) != 4*pages:
		return nil, bad("page table size")
	case uint64(len(s.sec[secStrOffs])) != 4*(uint64(s.nStrs)+1) || s.nStrs == 0:
		return nil, bad("string table size")
	case uint64(len(s.sec[secDocs])) != docRecSize*uint64(s.nDocs):
		return nil, bad("document table size")
	case uint64(len(s.sec[secDict])) != dictEntSize*uint64(s.nTerms):
		return nil, bad("dictionary size")
	case uint64(len(s.sec[secTriEnts])) != triEntSize*uint64(s.nTris):
		return nil, bad("trigram table size")
	case uint64(len(s.sec[secWriters])) != writerSize*uint64(s.nWriters):
		return nil, bad("writer table size")
	}
	if verify {
		s.verified = make([]atomic.Uint64, (pages+63)/64)
		if !s.check(secWriters, 0, uint64(len(s.sec[secWriters]))) {
			return nil, bad("writer table checksum mismatch")
		}
	}
	return s, nil
}

// check verifies, once, the pages under n bytes of section sec at off,
// and reports whether they are intact (and in bounds). A damaged page
// marks the segment bad.
func (s *segment) check(sec int, off, n uint64) bool {
	if off+n > uint64(len(s.sec[sec])) {
		return false
	}
	if s.verified == nil || n == 0 {
		return true
	}
	a := s.secOff[sec] + off
	for p := a >> pageShift; p <= (a+n-1)>>pageShift; p++ {
		w := &s.verified[p>>6]
		bit := uint64(1) << (p & 63)
		if w.Load()&bit != 0 {
			continue
		}
		lo := p << pageShift
		hi := min(lo+1<<pageShift, s.secOff[secPageCRCs])
		want := binary.LittleEndian.Uint32(s.sec[secPageCRCs][4*p:])
		if lo >= hi || crc32.Checksum(s.data[lo:hi], castagnoli()) != want {
			s.bad.Store(true)
			return false
		}
		w.Or(bit)
	}
	return true
}

// close releases a mapped segment's memory. The segment must not be used
// afterwards.
func (s *segment) close() {
	if s.release != nil {
		s.release()
		s.release = nil
	}
	s.data = nil
	s.sec = [nSections][]byte{}
	s.nDocs, s.nTerms, s.nTris, s.nStrs, s.nWriters = 0, 0, 0, 0, 0
}

// u32 reads a little-endian uint32 of section sec at off, checked.
func (s *segment) u32(sec int, off uint64) (uint32, bool) {
	if !s.check(sec, off, 4) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(s.sec[sec][off:]), true
}

// strAt returns string i of the string table, aliasing the segment.
func (s *segment) strAt(i uint32) ([]byte, bool) {
	if uint64(i) >= uint64(s.nStrs) {
		return nil, false
	}
	a, ok1 := s.u32(secStrOffs, 4*uint64(i))
	b, ok2 := s.u32(secStrOffs, 4*uint64(i)+4)
	if !ok1 || !ok2 || a > b || !s.check(secStrBytes, uint64(a), uint64(b-a)) {
		return nil, false
	}
	return s.sec[secStrBytes][a:b], true
}

// str returns string i as a Go string (a copy: nothing returned to a
// caller aliases a mapping).
func (s *segment) str(i uint32) string {
	b, _ := s.strAt(i)
	return string(b)
}

// findString returns the index of str in the sorted string table.
func (s *segment) findString(str string) (uint32, bool) {
	lo, hi := 0, s.nStrs
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		b, ok := s.strAt(uint32(m))
		if !ok {
			return 0, false
		}
		if string(b) < str {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if b, ok := s.strAt(uint32(lo)); ok && string(b) == str {
		return uint32(lo), true
	}
	return 0, false
}

// docRec is a document's fixed-size record, string fields as indexes.
type docRec struct {
	Seq, TS, Bytes                                                                  int64
	Blob                                                                            [20]byte
	Writer, Epoch, Session, Agent, Source, Kind, Tool, Path, SpanID, Op, View, Head uint32
	Len, Flags                                                                      uint32
}

// docBytes returns document d's record bytes, checked (nil when d is out
// of range or its page is damaged).
func (s *segment) docBytes(d int) []byte {
	if d < 0 || d >= s.nDocs || !s.check(secDocs, uint64(d)*docRecSize, docRecSize) {
		return nil
	}
	return s.sec[secDocs][d*docRecSize : (d+1)*docRecSize]
}

// rec returns document d's record (the zero record when d is out of
// range or damaged).
func (s *segment) rec(d int) docRec {
	var r docRec
	b := s.docBytes(d)
	if b == nil {
		return r
	}
	le := binary.LittleEndian
	r.Seq = int64(le.Uint64(b))
	r.TS = int64(le.Uint64(b[8:]))
	r.Bytes = int64(le.Uint64(b[16:]))
	copy(r.Blob[:], b[24:44])
	r.Writer = le.Uint32(b[44:])
	r.Epoch = le.Uint32(b[48:])
	r.Session = le.Uint32(b[52:])
	r.Agent = le.Uint32(b[56:])
	r.Source = le.Uint32(b[60:])
	r.Kind = le.Uint32(b[64:])
	r.Tool = le.Uint32(b[68:])
	r.Path = le.Uint32(b[72:])
	r.SpanID = le.Uint32(b[76:])
	r.Op = le.Uint32(b[80:])
	r.View = le.Uint32(b[84:])
	r.Head = le.Uint32(b[88:])
	r.Len = le.Uint32(b[92:])
	r.Flags = le.Uint32(b[96:])
	return r
}

// docLen returns document d's length in terms.
func (s *segment) docLen(d int) uint32 {
	if b := s.docBytes(d); b != nil {
		return binary.LittleEndian.Uint32(b[92:])
	}
	return 0
}

// docTS returns document d's time (unix nanoseconds).
func (s *segment) docTS(d int) int64 {
	if b := s.docBytes(d); b != nil {
		return int64(binary.LittleEndian.Uint64(b[8:]))
	}
	return 0
}

// isLive reports whether document d belongs to its writer's current
// epoch (and is intact), and is not hidden by a decrypted copy.
func (s *segment) isLive(d int) bool {
	b := s.docBytes(d)
	if b == nil || s.hidden != nil && s.hidden[d] {
		return false
	}
	ep, ok := s.epochOf[binary.LittleEndian.Uint32(b[44:])]
	return ok && ep == binary.LittleEndian.Uint32(b[48:])
}

// meta returns document d with its strings.
func (s *segment) meta(d int) docMeta {
	r := s.rec(d)
	return docMeta{
		Writer: s.str(r.Writer), Session: s.str(r.Session), Agent: s.str(r.Agent), Source: s.str(r.Source),
		Kind: s.str(r.Kind), Tool: s.str(r.Tool), Path: s.str(r.Path), SpanID: s.str(r.SpanID),
		Op: s.str(r.Op), View: s.str(r.View), Head: s.str(r.Head),
		Seq: r.Seq, TS: r.TS, Bytes: r.Bytes, Blob: r.Blob, Epoch: r.Epoch, Len: r.Len, Flags: r.Flags,
	}
}

// writerRow is one row of the writer table.
type writerRow struct {
	writer, epoch, docs, enc uint32
	length                   uint64
}

// writerRows returns the writer table (checked when the segment opened).
func (s *segment) writerRows() []writerRow {
	rows := make([]writerRow, 0, s.nWriters)
	le := binary.LittleEndian
	for i := range s.nWriters {
		b := s.sec[secWriters][i*writerSize:]
		rows = append(rows, writerRow{le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:]), le.Uint32(b[12:]), le.Uint64(b[16:])})
	}
	return rows
}

// dictEnt returns term t's dictionary entry.
func (s *segment) dictEnt(t int) (termOff, postOff, df uint32, ok bool) {
	if t < 0 || t >= s.nTerms || !s.check(secDict, uint64(t)*dictEntSize, dictEntSize) {
		return 0, 0, 0, false
	}
	b := s.sec[secDict][t*dictEntSize:]
	le := binary.LittleEndian
	return le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:]), true
}

// termAt returns term t, aliasing the segment.
func (s *segment) termAt(t int) ([]byte, bool) {
	a, _, _, ok := s.dictEnt(t)
	if !ok {
		return nil, false
	}
	b := uint32(len(s.sec[secTermBytes]))
	if t+1 < s.nTerms {
		if b, _, _, ok = s.dictEnt(t + 1); !ok {
			return nil, false
		}
	}
	if a > b || !s.check(secTermBytes, uint64(a), uint64(b-a)) {
		return nil, false
	}
	return s.sec[secTermBytes][a:b], true
}

// findTerm binary-searches the dictionary for term.
func (s *segment) findTerm(term []byte) (int, bool) {
	lo, hi := 0, s.nTerms
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		b, ok := s.termAt(m)
		if !ok {
			return 0, false
		}
		if bytes.Compare(b, term) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if b, ok := s.termAt(lo); ok && bytes.Equal(b, term) {
		return lo, true
	}
	return 0, false
}

// df returns term t's document frequency.
func (s *segment) df(t int) int {
	_, _, df, _ := s.dictEnt(t)
	return int(df)
}

// postings calls fn with each (doc, tf) of term t, docs ascending. It
// returns false when the postings are damaged (fn has then seen a prefix).
func (s *segment) postings(t int, fn func(doc int, tf uint32)) bool {
	_, off, df, ok := s.dictEnt(t)
	if !ok {
		return false
	}
	end := uint32(len(s.sec[secPostings]))
	if t+1 < s.nTerms {
		if _, end, _, ok = s.dictEnt(t + 1); !ok {
			return false
		}
	}
	if off > end || !s.check(secPostings, uint64(off), uint64(end-off)) {
		return false
	}
	p := s.sec[secPostings][off:end]
	if uint64(df) > uint64(len(p))/2 {
		return false
	}
	doc := uint64(0)
	for k := uint32(0); k < df; k++ {
		delta, n := binary.Uvarint(p)
		if n <= 0 {
			return false
		}
		p = p[n:]
		tf, n := binary.Uvarint(p)
		if n <= 0 || tf > math.MaxUint32 {
			return false
		}
		p = p[n:]
		doc += delta
		if doc >= uint64(s.nDocs) || k > 0 && delta == 0 {
			return false
		}
		fn(int(doc), uint32(tf))
	}
	return true
}

// triEnt returns trigram entry i.
func (s *segment) triEnt(i int) (g, off, n uint32, ok bool) {
	if i < 0 || i >= s.nTris || !s.check(secTriEnts, uint64(i)*triEntSize, triEntSize) {
		return 0, 0, 0, false
	}
	b := s.sec[secTriEnts][i*triEntSize:]
	le := binary.LittleEndian
	return le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:]), true
}

// findTrigram returns the entry of trigram g.
func (s *segment) findTrigram(g uint32) (int, bool) {
	lo, hi := 0, s.nTris
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		v, _, _, ok := s.triEnt(m)
		if !ok {
			return 0, false
		}
		if v < g {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if v, _, _, ok := s.triEnt(lo); ok && v == g {
		return lo, true
	}
	return 0, false
}

// trigramCount returns how many terms hold trigram g.
func (s *segment) trigramCount(g uint32) int {
	i, ok := s.findTrigram(g)
	if !ok {
		return 0
	}
	_, _, n, _ := s.triEnt(i)
	return int(n)
}

// trigramTerms calls fn with the ordinal of every term holding trigram g.
func (s *segment) trigramTerms(g uint32, fn func(t int)) bool {
	i, ok := s.findTrigram(g)
	if !ok {
		return true
	}
	_, off, n, _ := s.triEnt(i)
	end := uint32(len(s.sec[secTriLists]))
	if i+1 < s.nTris {
		if _, end, _, ok = s.triEnt(i + 1); !ok {
			return false
		}
	}
	if off > end || !s.check(secTriLists, uint64(off), uint64(end-off)) {
		return false
	}
	p := s.sec[secTriLists][off:end]
	if uint64(n) > uint64(len(p)) {
		return false
	}
	t := uint64(0)
	for k := uint32(0); k < n; k++ {
		d, w := binary.Uvarint(p)
		if w <= 0 {
			return false
		}
		p = p[w:]
		t += d
		if t >= uint64(s.nTerms) {
			return false
		}
		fn(int(t))
	}
	return true
}

// decode reads the whole segment back into segData (for merges), keeping
// only the documents keep allows, renumbered. It fails on any damage.
func (s *segment) decode(keep func(d int) bool) (*segData, error) {
	out := &segData{}
	remap := make([]int32, s.nDocs)
	for d := range s.nDocs {
		remap[d] = -1
		if keep(d) {
			remap[d] = int32(len(out.docs))
			out.docs = append(out.docs, s.meta(d))
		}
	}
	var prev []byte
	for t := range s.nTerms {
		b, ok := s.termAt(t)
		if !ok || t > 0 && bytes.Compare(prev, b) >= 0 {
			return nil, fmt.Errorf("%w %s: term %d", errCorrupt, s.name, t)
		}
		prev = b
		var p []uint32
		if !s.postings(t, func(doc int, tf uint32) {
			if nd := remap[doc]; nd >= 0 {
				p = append(p, uint32(nd), tf)
			}
		}) {
			return nil, fmt.Errorf("%w %s: postings of term %d", errCorrupt, s.name, t)
		}
		if len(p) > 0 {
			out.terms = append(out.terms, string(b))
			out.post = append(out.post, p)
		}
	}
	if s.bad.Load() {
		return nil, fmt.Errorf("%w %s: checksum mismatch", errCorrupt, s.name)
	}
	return out, nil
}
