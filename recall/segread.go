package recall

// Reading a segment: opening and checking it (bounds, CRCs), its strings,
// documents, dictionary, postings and trigram lists, and decoding it back
// for a merge.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sync/atomic"

	"github.com/git-lossless/git-lossless/gitstore"
)

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
	Harness                                                                         uint32
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
	r.Harness = le.Uint32(b[100:])
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
		Op: gitstore.Op(s.str(r.Op)), View: s.str(r.View), Head: s.str(r.Head), Harness: s.str(r.Harness),
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
	lo, ok := s.lowerBound(term)
	if !ok {
		return 0, false
	}
	if b, ok := s.termAt(lo); ok && bytes.Equal(b, term) {
		return lo, true
	}
	return 0, false
}

// lowerBound returns the ordinal of the first term not below term
// (nTerms when there is none); false when a dictionary page is damaged.
func (s *segment) lowerBound(term []byte) (int, bool) {
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
	return lo, true
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
