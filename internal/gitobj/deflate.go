package gitobj

import (
	"encoding/binary"
	"hash/adler32"
	"math"
	mbits "math/bits"
	"slices"
)

// fastDeflater is the zlib encoder of pack entries. It finds matches the
// way compress/flate's BestSpeed does (LZ77 with a one-entry hash table,
// after Snappy), checking two positions per step and extending matches
// backwards too, and writes each block of tokens in whichever of the three
// deflate encodings (RFC 1951) is smallest for it: stored, fixed Huffman
// (BTYPE=01) or dynamic Huffman (BTYPE=10), between the zlib header 78 01
// and the Adler-32 trailer.
//
// Why not compress/flate: each git object is its own zlib stream, and a
// sweep writes thousands of objects of a few KiB. At BestSpeed,
// compress/flate builds a dynamic Huffman code for every one of them (a
// sort.Sort over an interface, a generic length limiter, the code-length
// code) and also sizes the fixed and stored encodings: on such objects
// that is about two thirds of its time. A fixed block needs no code at
// all, which was the first version of this encoder; but literals then take
// 8 or 9 bits whatever their entropy, and packs came out a quarter larger.
// This encoder builds dynamic codes too, cheaply: frequencies counted as
// the matcher runs, a radix sort, Moffat–Katajainen's in-place
// construction, miniz's length limiting, codes only for the blocks of at
// least fdDynMinTokens tokens, and the sizes of the three encodings
// compared from the frequencies before anything is written. On the 2138
// objects (5.2 MB) of the 14 MB benchmark sweep (BenchmarkDeflateRepo,
// CPU time on one core of the 2-core benchmark machine, medians):
//
//	compress/flate BestSpeed          81 ms   2.13 MB
//	fixed Huffman blocks only         26 ms   2.62 MB
//	this encoder, fdDynMinTokens 96   43 ms   2.07 MB
//	this encoder, fdDynMinTokens 160  40 ms   2.08 MB
//	this encoder, fdDynMinTokens 256  36 ms   2.10 MB
//
// and on internal/testkit/benchdata's 1 to 8 KiB sources (BenchmarkDeflate) 140
// MB/s and 37.9 % of the input against compress/flate's 68 MB/s and 39.5 %.
//
// Its table holds positions offset by base, so it is never cleared
// between streams: an entry below base belongs to an earlier stream and
// is ignored. A fastDeflater is not safe for concurrent use; the zero
// value is ready.
type fastDeflater struct {
	table [1 << fdMaxHashBits]int32
	base  int32

	// The current block: its tokens (see fdMatch) and their symbol
	// frequencies, 0-255 literals, 256 end of block, 257-285 lengths.
	tokens   []uint32
	litFreq  [286]uint32
	distFreq [30]uint32

	w fdWriter

	// Dynamic codes of the block being written.
	litLens   [286]uint8
	distLens  [30]uint8
	clLens    [19]uint8
	litCount  [16]uint32 // codes per length
	distCount [16]uint32
	clCount   [16]uint32
	dynLit    [286]fdCode
	dynDist   [30]fdCode
	clCodes   [19]fdCode
	rle       []uint16 // code-length symbols: symbol | extra value << 5
	sortBuf   [2][286]uint64
	numCodes  [64]int32
}

const (
	fdMaxHashBits = 14
	fdMinHashBits = 9
	fdMaxOffset   = 1 << 15 // the deflate window
	fdMaxMatch    = 258
	// fdMargin: the matcher loads 8 bytes at a time, and stops looking
	// for matches that many bytes before the end.
	fdMargin = 8
	// fdMaxInput bounds what one stream may hold, so that positions plus
	// base stay in an int32; larger inputs are written as stored blocks
	// (Store.Import gives them to compress/flate).
	fdMaxInput = 1 << 30
	// fdBlockTokens is the most tokens a block holds.
	fdBlockTokens = 1 << 15
	// fdDynMinTokens: blocks of fewer tokens are not tried with a dynamic
	// code, whose header (40 to 80 bytes for text) they seldom repay:
	// building it costs 3 to 5 µs (see the figures above).
	fdDynMinTokens = 160
	// storedMax is the most a stored block holds.
	storedMax = 65535
)

// fdMatch marks a match token: bits 0-15 the distance, 16-23 the length
// minus 3, 24-28 the distance code. A literal token is the byte.
const fdMatch = 1 << 31

// zlibBound is the most appendZlib adds to dst for n input bytes, and 16
// bytes of slack for the bit writer's whole-word stores: a block is stored
// when nothing else is smaller, and it then costs 5 bytes per 65535; blocks
// end at fdBlockTokens tokens, hence at most every fdBlockTokens bytes of
// stored data.
func zlibBound(n int) int {
	blocks := 1 + n/fdBlockTokens + n/storedMax
	return 2 + 5*blocks + n + 4 + 16
}

// fdCode is a bit string to write LSB first: bits 0-23 the bits, 24-31
// how many.
type fdCode uint32

func (c fdCode) bits() uint64 { return uint64(c & 0xffffff) }
func (c fdCode) n() uint      { return uint(c >> 24) }

// The fixed Huffman code (RFC 1951, 3.2.6), bit-reversed for LSB-first
// output: fdLit[sym] for literals, end of block and length symbols,
// fdDist[code] for distances, and fdFixedLens the literal/length code's
// lengths. fdLenSym[l-3] is match length l's symbol minus 257. Computed
// once, read-only after.
var (
	fdFixedLens = fixedLitLens()
	fdLit       = fixedLitCodes()
	fdLenSym    = lengthSymbols()
	fdDist      = fixedDistCodes()
)

// fixedLitLens returns the fixed code's lengths: all 288 symbols, as
// the canonical code is built over all of them (286 and 287 never occur).
func fixedLitLens() (lens [288]uint8) {
	for sym := range lens {
		switch {
		case sym < 144:
			lens[sym] = 8
		case sym < 256:
			lens[sym] = 9
		case sym < 280:
			lens[sym] = 7
		default:
			lens[sym] = 8
		}
	}
	return lens
}

func fixedLitCodes() (codes [286]fdCode) {
	lens := fixedLitLens()
	var all [288]fdCode
	canonicalCodes(lens[:], all[:], lengthCounts(lens[:]))
	copy(codes[:], all[:286])
	return codes
}

func lengthSymbols() (t [fdMaxMatch - 2]uint8) {
	for l := 3; l <= fdMaxMatch; l++ {
		code := 28
		for code > 0 && int(lenBase[code]) > l {
			code--
		}
		t[l-3] = uint8(code)
	}
	return t
}

// lengthCounts counts the codes of each length in lens.
func lengthCounts(lens []uint8) *[16]uint32 {
	var count [16]uint32
	for _, l := range lens {
		count[l]++
	}
	return &count
}

func fixedDistCodes() (t [30]fdCode) {
	var lens [30]uint8
	for i := range lens {
		lens[i] = 5
	}
	canonicalCodes(lens[:], t[:], lengthCounts(lens[:]))
	return t
}

// canonicalCodes assigns the canonical Huffman code of lengths lens (RFC
// 1951, 3.2.2), bit-reversed, to codes; a zero length gets no code. count
// holds how many codes each length has.
func canonicalCodes(lens []uint8, codes []fdCode, count *[16]uint32) {
	var next [16]uint32
	code := uint32(0)
	for l := 1; l < 16; l++ {
		c := count[l-1]
		if l == 1 {
			c = 0 // zero lengths are no codes
		}
		code = (code + c) << 1
		next[l] = code
	}
	for i, l := range lens {
		if l == 0 {
			codes[i] = 0
			continue
		}
		c := next[l]
		next[l]++
		codes[i] = fdCode(uint32(mbits.Reverse16(uint16(c))>>(16-l)) | uint32(l)<<24)
	}
}

// distCode returns the distance code of distance d (1..32768).
func distCode(d int) int {
	d--
	if d < 4 {
		return d
	}
	// Two codes per power of two: the highest bit's position and the
	// bit below it.
	hb := mbits.Len32(uint32(d)) - 1
	return 2*hb + int(d>>(hb-1))&1
}

func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }
func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

// fdWriter is the output: buf[:o] is written, bits holds n more bits.
// buf is kept at full length; room is made before each block for all of
// it plus 8 bytes, so that the writer stores whole words unchecked.
type fdWriter struct {
	buf  []byte
	o    int
	bits uint64
	n    uint
}

// grow makes room for n more bytes and 8 of slack.
func (w *fdWriter) grow(n int) {
	if w.o+n+8 <= len(w.buf) {
		return
	}
	nb := make([]byte, max(2*len(w.buf), w.o+n+8))
	copy(nb, w.buf[:w.o])
	w.buf = nb
}

// add writes the n low bits of v; n+w.n must not pass 64.
func (w *fdWriter) add(v uint64, n uint) {
	w.bits |= v << w.n
	w.n += n
	if w.n >= 32 {
		binary.LittleEndian.PutUint32(w.buf[w.o:], uint32(w.bits))
		w.o += 4
		w.bits >>= 32
		w.n -= 32
	}
}

// align pads to a byte boundary and writes out the pending bits.
func (w *fdWriter) align() {
	binary.LittleEndian.PutUint64(w.buf[w.o:], w.bits)
	w.o += int(w.n+7) >> 3
	w.bits, w.n = 0, 0
}

// appendZlib appends src as a zlib stream to dst.
func (e *fastDeflater) appendZlib(dst, src []byte) []byte {
	dst = append(dst, 0x78, 0x01) // deflate, 32 KiB window, fastest; 0x7801 % 31 == 0
	e.w = fdWriter{buf: dst[:cap(dst)], o: len(dst)}
	e.w.grow(zlibBound(len(src)))
	if len(src) > fdMaxInput {
		e.stored(src, true)
	} else {
		e.compress(src)
	}
	e.w.align()
	e.w.grow(4)
	out := binary.BigEndian.AppendUint32(e.w.buf[:e.w.o], adler32.Checksum(src))
	e.w = fdWriter{}
	return out
}

// compress runs the matcher over src, writing a block whenever
// fdBlockTokens tokens are gathered, and the last block final.
func (e *fastDeflater) compress(src []byte) {
	if int64(e.base)+int64(len(src))+2 > math.MaxInt32 {
		clear(e.table[:])
		e.base = 0
	}
	// Positions are stored as base+s, base above every position of the
	// streams before (and above the zero table).
	base := e.base + 1
	e.base += int32(len(src)) + 1
	hashBits := uint(min(fdMaxHashBits, max(fdMinHashBits, mbits.Len(uint(len(src))))))
	shift := 32 - hashBits
	table := e.table[:1<<hashBits]
	if cap(e.tokens) < fdBlockTokens {
		e.tokens = make([]uint32, 0, fdBlockTokens)
	}
	toks := e.tokens[:0]
	litFreq := &e.litFreq

	blockStart, nextEmit := 0, 0
	sLimit := len(src) - fdMargin
	for s := 0; s < sLimit; {
		// Two positions per step, from one load: s and s+1.
		x := load64(src, s)
		cv := uint32(x)
		h0 := (cv * 0x1e35a7bd) >> shift & (1<<fdMaxHashBits - 1)
		h1 := (uint32(x>>8) * 0x1e35a7bd) >> shift & (1<<fdMaxHashBits - 1)
		c0, c1 := int(table[h0]-base), int(table[h1]-base)
		table[h0] = base + int32(s)
		table[h1] = base + int32(s+1)
		cand := c0
		if cand < 0 || s-cand > fdMaxOffset || load32(src, cand) != cv {
			cand = c1
			s++
			cv = uint32(x >> 8)
			if cand < 0 || s-cand > fdMaxOffset || load32(src, cand) != cv {
				// No match: step on, faster the longer it has been since
				// the last one (Snappy's heuristic: incompressible data is
				// passed over quickly).
				s += 1 + (s-nextEmit)>>5
				continue
			}
		}
		// Extend the match backwards over bytes not yet emitted, then
		// forwards, 8 bytes at a time.
		for s > nextEmit && cand > 0 && src[s-1] == src[cand-1] {
			s--
			cand--
		}
		if len(toks)+(s-nextEmit) >= fdBlockTokens {
			toks, blockStart = e.literals(src, toks, blockStart, nextEmit, s)
		} else {
			for _, b := range src[nextEmit:s] {
				toks = append(toks, uint32(b))
				litFreq[b]++
			}
		}
		l := 4
		for maxL := min(fdMaxMatch, len(src)-s); l < maxL; {
			if s+l+8 <= len(src) {
				x := load64(src, s+l) ^ load64(src, cand+l)
				if x != 0 {
					l += mbits.TrailingZeros64(x) >> 3
					break
				}
				l += 8
				continue
			}
			if src[s+l] != src[cand+l] {
				break
			}
			l++
		}
		l = min(l, fdMaxMatch, len(src)-s)
		if len(toks) == fdBlockTokens {
			e.block(src[blockStart:s], toks, false)
			toks, blockStart = toks[:0], s
		}
		dist := s - cand
		dc := distCode(dist)
		ls := fdLenSym[l-3]
		toks = append(toks, fdMatch|uint32(dc)<<24|uint32(l-3)<<16|uint32(dist))
		litFreq[257+int(ls)]++
		e.distFreq[dc]++
		s += l
		nextEmit = s
		// Index the position just before the match's end, so that the
		// next repeat of it is found.
		if s-1 < sLimit {
			table[((load32(src, s-1)*0x1e35a7bd)>>shift)&(1<<fdMaxHashBits-1)] = base + int32(s-1)
		}
	}
	toks, blockStart = e.literals(src, toks, blockStart, nextEmit, len(src))
	e.block(src[blockStart:], toks, true)
	e.tokens = toks[:0]
}

// literals adds src[from:to] to toks (which encode src[blockStart:from])
// as literal tokens, writing blocks as they fill, and returns the tokens
// and the start of the block they are in.
func (e *fastDeflater) literals(src []byte, toks []uint32, blockStart, from, to int) ([]uint32, int) {
	for from < to {
		if len(toks) == fdBlockTokens {
			e.block(src[blockStart:from], toks, false)
			toks, blockStart = toks[:0], from
		}
		n := min(to-from, fdBlockTokens-len(toks))
		for _, b := range src[from : from+n] {
			toks = append(toks, uint32(b))
			e.litFreq[b]++
		}
		from += n
	}
	return toks, blockStart
}

// block writes the tokens toks, which encode raw, as one block in the
// smallest of the three encodings, and clears the frequencies.
func (e *fastDeflater) block(raw []byte, toks []uint32, final bool) {
	e.litFreq[256] = 1 // end of block
	// Bits both Huffman encodings spend alike: the extra bits.
	extra := 0
	for i, f := range e.litFreq[257:] {
		extra += int(f) * int(lenExtra[i])
	}
	for i, f := range e.distFreq {
		extra += int(f) * int(dstExtra[i])
	}
	fixedBits := 3 + extra
	for i, f := range e.litFreq {
		fixedBits += int(f) * int(fdFixedLens[i])
	}
	for _, f := range e.distFreq {
		fixedBits += int(f) * 5
	}
	dynBits := math.MaxInt
	if len(toks) >= fdDynMinTokens {
		dynBits = 3 + extra + e.buildDynamic()
	}
	// Compare where each encoding would end, from the n bits pending: a
	// stored block's 3 header bits are padded to a byte, and each block
	// of up to 65535 bytes then takes 4 more (and the next ones a byte of
	// header); the last block of the stream ends on a byte too.
	n0 := int(e.w.n)
	storedEnd := (n0+3+7)&^7 + 32 + 8*len(raw) + 40*((len(raw)-1)/storedMax)
	codedEnd := n0 + min(fixedBits, dynBits)
	if final {
		codedEnd = (codedEnd + 7) &^ 7
	}
	switch {
	case storedEnd <= codedEnd:
		e.stored(raw, final)
	case dynBits < fixedBits:
		e.w.grow(dynBits/8 + 1)
		e.writeDynamicHeader(final)
		e.emit(toks, &e.dynLit, &e.dynDist)
	default:
		e.w.grow(fixedBits/8 + 1)
		e.w.add(uint64(b2u(final))|1<<1, 3)
		e.emit(toks, &fdLit, &fdDist)
	}
	clear(e.litFreq[:])
	clear(e.distFreq[:])
}

func b2u(b bool) uint {
	if b {
		return 1
	}
	return 0
}

// stored writes raw as stored blocks, the last one final if final is.
func (e *fastDeflater) stored(raw []byte, final bool) {
	for first := true; first || len(raw) > 0; first = false {
		n := min(len(raw), storedMax)
		last := n == len(raw)
		e.w.grow(n + 8)
		e.w.add(uint64(b2u(last && final)), 3)
		e.w.align()
		w := &e.w
		binary.LittleEndian.PutUint32(w.buf[w.o:], uint32(n)|uint32(^uint16(n))<<16)
		w.o += 4
		w.o += copy(w.buf[w.o:], raw[:n])
		raw = raw[n:]
	}
}

// emit writes toks with the given codes, and the end of block.
func (e *fastDeflater) emit(toks []uint32, lit *[286]fdCode, dist *[30]fdCode) {
	// The writer in locals, flushed by hand: every addition keeps the
	// pending bits under 64 (a literal is at most 15 bits, two 30; a
	// length 20; a distance 28), and four bytes go out at 32. A length's
	// code and extra bits are put together here rather than tabled per
	// block: 256 entries cost more to build than most blocks have matches.
	buf, o, bits, n := e.w.buf, e.w.o, e.w.bits, e.w.n
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t < 256 {
			c := lit[t]
			bits |= c.bits() << n
			n += c.n()
			if i+1 < len(toks) && toks[i+1] < 256 {
				i++
				c := lit[toks[i]]
				bits |= c.bits() << n
				n += c.n()
			}
		} else {
			l3 := t >> 16 & 0xff
			sym := fdLenSym[l3]
			c := lit[257+int(sym)]
			bits |= (c.bits() | uint64(l3+3-uint32(lenBase[sym]))<<c.n()) << n
			n += c.n() + uint(lenExtra[sym])
			if n >= 32 {
				binary.LittleEndian.PutUint32(buf[o:], uint32(bits))
				o += 4
				bits >>= 32
				n -= 32
			}
			dc := t >> 24 & 31
			d := dist[dc]
			bits |= (d.bits() | uint64(t&0xffff-uint32(dstBase[dc]))<<d.n()) << n
			n += d.n() + uint(dstExtra[dc])
		}
		if n >= 32 {
			binary.LittleEndian.PutUint32(buf[o:], uint32(bits))
			o += 4
			bits >>= 32
			n -= 32
		}
	}
	e.w.o, e.w.bits, e.w.n = o, bits, n
	c := lit[256]
	e.w.add(c.bits(), c.n())
}

// buildDynamic builds the block's dynamic codes from its frequencies and
// returns how many bits the block takes with them, but for its first 3
// and the extra bits.
func (e *fastDeflater) buildDynamic() int {
	e.huffLengths(e.litFreq[:], e.litLens[:], 15, &e.litCount)
	e.huffLengths(e.distFreq[:], e.distLens[:], 15, &e.distCount)
	nlit := 286
	for nlit > 257 && e.litLens[nlit-1] == 0 {
		nlit--
	}
	ndist := 30
	for ndist > 1 && e.distLens[ndist-1] == 0 {
		ndist--
	}
	if e.distLens[0] == 0 && ndist == 1 {
		// No distances: one code of one bit, never used (as zlib and
		// compress/flate write it).
		e.distLens[0] = 1
		e.distCount[1] = 1
	}
	// The code lengths, run-length encoded (3.2.7) as one sequence.
	var clFreq [19]uint32
	e.rle = e.rle[:0]
	var all [286 + 30]uint8
	copy(all[:], e.litLens[:nlit])
	copy(all[nlit:], e.distLens[:ndist])
	seq := all[:nlit+ndist]
	for i := 0; i < len(seq); {
		l := seq[i]
		run := 1
		for i+run < len(seq) && seq[i+run] == l {
			run++
		}
		i += run
		if l == 0 {
			for run >= 11 {
				r := min(run, 138)
				e.rle = append(e.rle, 18|uint16(r-11)<<5)
				clFreq[18]++
				run -= r
			}
			if run >= 3 {
				e.rle = append(e.rle, 17|uint16(run-3)<<5)
				clFreq[17]++
				run = 0
			}
		} else {
			e.rle = append(e.rle, uint16(l))
			clFreq[l]++
			run--
			for run >= 3 {
				r := min(run, 6)
				e.rle = append(e.rle, 16|uint16(r-3)<<5)
				clFreq[16]++
				run -= r
			}
		}
		for ; run > 0; run-- {
			e.rle = append(e.rle, uint16(l))
			clFreq[l]++
		}
	}
	used := 0
	for _, f := range clFreq {
		used += int(b2u(f != 0))
	}
	if used == 1 {
		// zlib refuses an incomplete code-length code, even of one
		// symbol: give it a second one, unused.
		if clFreq[0] == 0 {
			clFreq[0] = 1
		} else {
			clFreq[1] = 1
		}
	}
	e.huffLengths(clFreq[:], e.clLens[:], 7, &e.clCount)
	ncl := 19
	for ncl > 4 && e.clLens[clOrder[ncl-1]] == 0 {
		ncl--
	}
	bits := 5 + 5 + 4 + 3*ncl + 2*int(clFreq[16]) + 3*int(clFreq[17]) + 7*int(clFreq[18])
	for i, f := range clFreq {
		bits += int(f) * int(e.clLens[i])
	}
	for i, f := range e.litFreq {
		bits += int(f) * int(e.litLens[i])
	}
	for i, f := range e.distFreq {
		bits += int(f) * int(e.distLens[i])
	}
	return bits
}

// writeDynamicHeader writes the header of a dynamic block with the codes
// buildDynamic built, and makes the codes the emitter uses.
func (e *fastDeflater) writeDynamicHeader(final bool) {
	canonicalCodes(e.litLens[:], e.dynLit[:], &e.litCount)
	canonicalCodes(e.distLens[:], e.dynDist[:], &e.distCount)
	canonicalCodes(e.clLens[:], e.clCodes[:], &e.clCount)
	nlit := 286
	for nlit > 257 && e.litLens[nlit-1] == 0 {
		nlit--
	}
	ndist := 30
	for ndist > 1 && e.distLens[ndist-1] == 0 {
		ndist--
	}
	ncl := 19
	for ncl > 4 && e.clLens[clOrder[ncl-1]] == 0 {
		ncl--
	}
	w := &e.w
	w.add(uint64(b2u(final))|2<<1, 3)
	w.add(uint64(nlit-257)|uint64(ndist-1)<<5|uint64(ncl-4)<<10, 14)
	for _, sym := range clOrder[:ncl] {
		w.add(uint64(e.clLens[sym]), 3)
	}
	for _, r := range e.rle {
		sym := r & 31
		c := e.clCodes[sym]
		w.add(c.bits(), c.n())
		switch sym {
		case 16:
			w.add(uint64(r>>5), 2)
		case 17:
			w.add(uint64(r>>5), 3)
		case 18:
			w.add(uint64(r>>5), 7)
		}
	}
}

// huffLengths sets lens to the lengths of a Huffman code for freq whose
// codes are at most maxBits long (0 for a symbol of frequency 0). One
// symbol used gets a code of one bit. The construction is
// Moffat–Katajainen's in place on the frequencies sorted by a radix sort,
// and lengths over maxBits are folded back as miniz folds them: optimal
// without the limit, close to it with it.
func (e *fastDeflater) huffLengths(freq []uint32, lens []uint8, maxBits int, count *[16]uint32) {
	// Sort keys: frequency above, symbol below (9 bits).
	keys := e.sortBuf[0][:0]
	var maxF uint32
	for sym, f := range freq {
		if f != 0 {
			keys = append(keys, uint64(f)<<9|uint64(sym))
			maxF = max(maxF, f)
		}
	}
	clear(lens)
	clear(count[:])
	switch len(keys) {
	case 0:
		return
	case 1:
		lens[keys[0]&511] = 1
		count[1] = 1
		return
	}
	keys = radixSort(keys, e.sortBuf[1][:len(keys)], maxF)
	n := len(keys)
	// A[i]: the frequencies, then parent pointers, then depths, then
	// lengths (Moffat and Katajainen, "In-place calculation of
	// minimum-redundancy codes", 1995).
	var abuf [286]uint32
	A := abuf[:n]
	for i, k := range keys {
		A[i] = uint32(k >> 9)
	}
	A[0] += A[1]
	root, leaf := 0, 2
	for next := 1; next < n-1; next++ {
		if leaf >= n || A[root] < A[leaf] {
			A[next] = A[root]
			A[root] = uint32(next)
			root++
		} else {
			A[next] = A[leaf]
			leaf++
		}
		if leaf >= n || (root < next && A[root] < A[leaf]) {
			A[next] += A[root]
			A[root] = uint32(next)
			root++
		} else {
			A[next] += A[leaf]
			leaf++
		}
	}
	A[n-2] = 0
	for next := n - 3; next >= 0; next-- {
		A[next] = A[A[next]] + 1
	}
	avail, used, depth := 1, 0, uint32(0)
	root, next := n-2, n-1
	for avail > 0 {
		for root >= 0 && A[root] == depth {
			used++
			root--
		}
		for avail > used {
			A[next] = depth
			next--
			avail--
		}
		avail, depth, used = 2*used, depth+1, 0
	}
	// Count codes per length, fold the long ones to maxBits, and give
	// the shortest lengths to the most frequent symbols.
	nc := &e.numCodes
	clear(nc[:])
	for _, l := range A {
		nc[min(int(l), len(nc)-1)]++
	}
	for l := maxBits + 1; l < len(nc); l++ {
		nc[maxBits] += nc[l]
		nc[l] = 0
	}
	total := uint32(0)
	for l := maxBits; l > 0; l-- {
		total += uint32(nc[l]) << (maxBits - l)
	}
	for total != 1<<maxBits {
		nc[maxBits]--
		for l := maxBits - 1; l > 0; l-- {
			if nc[l] != 0 {
				nc[l]--
				nc[l+1] += 2
				break
			}
		}
		total--
	}
	j := n
	for l := 1; l <= maxBits; l++ {
		count[l] = uint32(nc[l])
		for c := nc[l]; c > 0; c-- {
			j--
			lens[keys[j]&511] = uint8(l)
		}
	}
}

// radixSort sorts keys (frequency<<9 | symbol, frequencies at most maxF)
// by 8-bit digits of the frequency, tmp being scratch of the same length,
// and returns the sorted slice (keys or tmp). Symbols are already in
// order, and the sort is stable.
func radixSort(keys, tmp []uint64, maxF uint32) []uint64 {
	if len(keys) <= 24 {
		slices.Sort(keys)
		return keys
	}
	for shift := uint(9); maxF > 0; shift, maxF = shift+8, maxF>>8 {
		var count [257]int
		for _, k := range keys {
			count[1+int(k>>shift&0xff)]++
		}
		for i := 1; i < 257; i++ {
			count[i] += count[i-1]
		}
		for _, k := range keys {
			d := k >> shift & 0xff
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}
