package gitobj

import (
	"encoding/binary"
	"hash/adler32"
	mbits "math/bits"
	"sync"
)

// inflateFast decodes a zlib stream whose output is exactly size bytes,
// from a byte slice into a byte slice: table-driven Huffman decoding with
// a 64-bit bit buffer, no window copy, no interface call per byte. It is
// about twice as fast as compress/flate, which is most of what `verify`
// spends. It returns ok=false on anything it does not decode (a preset
// dictionary, an invalid or truncated stream, the wrong size, a checksum
// mismatch): the caller then decodes with compress/zlib, which is the
// authority on errors. Every output it does return has passed the
// stream's adler32 check.
func inflateFast(src []byte, size int) ([]byte, bool) {
	if len(src) < 6 {
		return nil, false
	}
	cmf, flg := src[0], src[1]
	if cmf&0x0f != 8 || cmf>>4 > 7 || (uint16(cmf)<<8|uint16(flg))%31 != 0 || flg&0x20 != 0 {
		return nil, false
	}
	d, _ := inflaters.Get().(*inflater)
	if d == nil {
		d = new(inflater)
	}
	defer inflaters.Put(d)
	*d = inflater{in: src, pos: 2, out: make([]byte, size), litBuf: d.litBuf, distBuf: d.distBuf}
	if !d.run() || d.n != size {
		return nil, false
	}
	// The bytes after the last block, from the next whole byte: adler32.
	d.bitcnt -= d.bitcnt & 7
	p := d.pos - int(d.bitcnt/8)
	if p < 0 || p+4 > len(src) {
		return nil, false
	}
	if binary.BigEndian.Uint32(src[p:]) != adler32.Checksum(d.out) {
		return nil, false
	}
	return d.out, true
}

// inflaters keeps decoders with their table storage between calls.
var inflaters sync.Pool

type inflater struct {
	in     []byte
	pos    int // next byte of in to load; may pass len(in) (zero padding)
	bitbuf uint64
	bitcnt uint
	out    []byte
	n      int

	lit, dist       []uint32 // the current block's tables
	litBuf, distBuf []uint32 // storage for dynamic blocks' tables
}

// refill loads whole bytes until at least 56 bits are buffered. Past the
// end of the input it loads zeros; run checks at the end that none of
// them was consumed.
func (d *inflater) refill() {
	if d.pos+8 <= len(d.in) {
		d.bitbuf |= binary.LittleEndian.Uint64(d.in[d.pos:]) << d.bitcnt
		d.pos += int((63 - d.bitcnt) >> 3)
		d.bitcnt |= 56
		return
	}
	for d.bitcnt <= 56 {
		if d.pos < len(d.in) {
			d.bitbuf |= uint64(d.in[d.pos]) << d.bitcnt
		}
		d.pos++
		d.bitcnt += 8
	}
}

func (d *inflater) bits(n uint) uint32 {
	if d.bitcnt < n {
		d.refill()
	}
	v := uint32(d.bitbuf & (1<<n - 1))
	d.bitbuf >>= n
	d.bitcnt -= n
	return v
}

// overrun reports whether the decoder consumed bits past the input.
func (d *inflater) overrun() bool { return d.pos-int(d.bitcnt/8) > len(d.in) }

func (d *inflater) run() bool {
	for {
		final := d.bits(1)
		switch d.bits(2) {
		case 0:
			if !d.stored() {
				return false
			}
		case 1:
			f := fixedTables()
			d.lit, d.dist = f.lit, f.dist
			if !d.huffman() {
				return false
			}
		case 2:
			if !d.dynamic() || !d.huffman() {
				return false
			}
		default:
			return false
		}
		if d.overrun() {
			return false
		}
		if final == 1 {
			return true
		}
	}
}

func (d *inflater) stored() bool {
	d.bits(d.bitcnt & 7) // to a byte boundary
	p := d.pos - int(d.bitcnt/8)
	d.bitbuf, d.bitcnt = 0, 0
	if p < 0 || p+4 > len(d.in) {
		return false
	}
	n := int(binary.LittleEndian.Uint16(d.in[p:]))
	if uint16(n) != ^binary.LittleEndian.Uint16(d.in[p+2:]) {
		return false
	}
	p += 4
	if p+n > len(d.in) || d.n+n > len(d.out) {
		return false
	}
	copy(d.out[d.n:], d.in[p:p+n])
	d.n += n
	d.pos = p + n
	return true
}

// Table entries: bits 0-3 the code length to consume (0: invalid code),
// 4-7 extra bits to read after it, bit 8 literal, bit 9 end of block,
// bit 10 subtable pointer, 16-31 the value (literal byte, length or
// distance base, subtable start).
const (
	entLiteral  = 1 << 8
	entEOB      = 1 << 9
	entSubtable = 1 << 10

	litBits  = 10 // main table index bits; longer codes use subtables
	distBits = 8
	maxCode  = 15
)

var (
	lenBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	dstBase  = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	dstExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	clOrder  = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

func litEntry(sym int) uint32 {
	switch {
	case sym < 256:
		return entLiteral | uint32(sym)<<16
	case sym == 256:
		return entEOB
	case sym < 286:
		return uint32(lenExtra[sym-257])<<4 | uint32(lenBase[sym-257])<<16
	}
	return 0 // 286, 287: invalid
}

func distEntry(sym int) uint32 {
	if sym < 30 {
		return uint32(dstExtra[sym])<<4 | uint32(dstBase[sym])<<16
	}
	return 0
}

// buildTable builds a decoding table for the code lengths lens, with
// value(sym) giving each symbol's entry. Over-subscribed and incomplete
// codes are refused, except a single code of length one (as zlib and
// compress/flate accept).
func buildTable(lens []uint8, bits uint, value func(int) uint32, into []uint32) ([]uint32, bool) {
	var count [maxCode + 1]int
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	left := 1
	nonzero := 0
	for l := 1; l <= maxCode; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return nil, false
		}
		nonzero += count[l]
	}
	if left != 0 && !(nonzero == 1 && count[1] == 1) && nonzero != 0 {
		// (No codes at all is accepted too: an all-literal block's
		// distance code; using it is an error.)
		return nil, false
	}
	var next [maxCode + 2]int // first canonical code of each length
	code := 0
	for l := 1; l <= maxCode; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	size := 1 << bits
	subBits := uint(maxCode) - bits
	tab := into[:0]
	if cap(tab) < size {
		tab = make([]uint32, size, size+4<<subBits)
	} else {
		tab = tab[:size]
		clear(tab)
	}
	for sym, l := range lens {
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		rev := uint32(mbits.Reverse16(uint16(c)) >> (16 - l))
		v := value(sym) // 0 for a symbol that must not occur: an invalid entry
		if uint(l) <= bits {
			e := v | uint32(l)
			if v == 0 {
				e = 0
			}
			for i := int(rev); i < size; i += 1 << l {
				tab[i] = e
			}
			continue
		}
		// A long code: a subtable of 2^subBits entries under its first
		// bits-bit prefix.
		prefix := int(rev) & (size - 1)
		if tab[prefix]&entSubtable == 0 {
			start := len(tab)
			tab = append(tab, make([]uint32, 1<<subBits)...)
			tab[prefix] = entSubtable | uint32(bits) | uint32(start)<<16
		}
		start := int(tab[prefix] >> 16)
		rest := uint(l) - bits
		e := v | uint32(rest)
		if v == 0 {
			e = 0
		}
		for i := int(rev >> bits); i < 1<<subBits; i += 1 << rest {
			tab[start+i] = e
		}
	}
	return tab, true
}

type tables struct{ lit, dist []uint32 }

var (
	fixedOnce sync.Once
	fixed     tables
)

func fixedTables() *tables {
	fixedOnce.Do(func() {
		var lens [288]uint8
		for i := range lens {
			switch {
			case i < 144:
				lens[i] = 8
			case i < 256:
				lens[i] = 9
			case i < 280:
				lens[i] = 7
			default:
				lens[i] = 8
			}
		}
		fixed.lit, _ = buildTable(lens[:], litBits, litEntry, nil)
		// 32 codes of 5 bits; 30 and 31 are invalid distances.
		var dl [32]uint8
		for i := range dl {
			dl[i] = 5
		}
		fixed.dist, _ = buildTable(dl[:], distBits, distEntry, nil)
	})
	return &fixed
}

func (d *inflater) dynamic() bool {
	nlit := int(d.bits(5)) + 257
	ndist := int(d.bits(5)) + 1
	nclen := int(d.bits(4)) + 4
	if nlit > 286 || ndist > 30 {
		return false
	}
	var cl [19]uint8
	for i := 0; i < nclen; i++ {
		cl[clOrder[i]] = uint8(d.bits(3))
	}
	var clBuf [1 << 7]uint32
	clTab, ok := buildTable(cl[:], 7, func(sym int) uint32 { return uint32(sym+1) << 16 }, clBuf[:0])
	if !ok {
		return false
	}
	var lens [286 + 30]uint8
	for i := 0; i < nlit+ndist; {
		if d.bitcnt < 16 {
			d.refill()
		}
		e := clTab[d.bitbuf&(1<<7-1)]
		n := uint(e & 15)
		if n == 0 {
			return false
		}
		d.bitbuf >>= n
		d.bitcnt -= n
		sym := int(e>>16) - 1
		switch {
		case sym < 16:
			lens[i] = uint8(sym)
			i++
			continue
		case sym == 16:
			if i == 0 {
				return false
			}
			rep := 3 + int(d.bits(2))
			if i+rep > nlit+ndist {
				return false
			}
			for ; rep > 0; rep-- {
				lens[i] = lens[i-1]
				i++
			}
		default:
			var rep int
			if sym == 17 {
				rep = 3 + int(d.bits(3))
			} else {
				rep = 11 + int(d.bits(7))
			}
			if i+rep > nlit+ndist {
				return false
			}
			i += rep // zeros already
		}
	}
	if lens[256] == 0 {
		return false
	}
	if d.litBuf, ok = buildTable(lens[:nlit], litBits, litEntry, d.litBuf); !ok {
		return false
	}
	if d.distBuf, ok = buildTable(lens[nlit:nlit+ndist], distBits, distEntry, d.distBuf); !ok {
		return false
	}
	d.lit, d.dist = d.litBuf, d.distBuf
	return true
}

func (d *inflater) huffman() bool {
	lit, dist := d.lit, d.dist
	out, n := d.out, d.n
	in := d.in
	bitbuf, bitcnt, pos := d.bitbuf, d.bitcnt, d.pos
	ok := false
	const litMask, distMask = 1<<litBits - 1, 1<<distBits - 1
	const litSubMask, distSubMask = 1<<(maxCode-litBits) - 1, 1<<(maxCode-distBits) - 1
	// The main tables as arrays: index masks below their size need no
	// bounds checks.
	litMain := (*[1 << litBits]uint32)(lit[:1<<litBits])
	distMain := (*[1 << distBits]uint32)(dist[:1<<distBits])
	for {
		if bitcnt < 48 {
			if pos+8 <= len(in) {
				bitbuf |= binary.LittleEndian.Uint64(in[pos:]) << bitcnt
				pos += int((63 - bitcnt) >> 3)
				bitcnt |= 56
			} else {
				for bitcnt <= 56 {
					if pos < len(in) {
						bitbuf |= uint64(in[pos]) << bitcnt
					}
					pos++
					bitcnt += 8
				}
			}
		}
		e := litMain[bitbuf&litMask]
		if e&entSubtable != 0 {
			bitbuf >>= litBits
			bitcnt -= litBits
			e = lit[int(e>>16)+int(bitbuf&litSubMask)]
		}
		cl := uint(e & 15)
		if cl == 0 {
			break
		}
		bitbuf >>= cl
		bitcnt -= cl
		if e&entLiteral != 0 {
			if n >= len(out) {
				break
			}
			out[n] = byte(e >> 16)
			n++
			// A second literal without a refill when the bits are there
			// (at most 15 were used of the 48 or more).
			e = litMain[bitbuf&litMask]
			if e&(entLiteral|entSubtable) == entLiteral {
				cl = uint(e & 15)
				if n >= len(out) {
					break
				}
				bitbuf >>= cl
				bitcnt -= cl
				out[n] = byte(e >> 16)
				n++
			}
			continue
		}
		if e&entEOB != 0 {
			ok = true
			break
		}
		xb := uint(e>>4) & 15
		length := int(e>>16) + int(bitbuf&(1<<xb-1))
		bitbuf >>= xb
		bitcnt -= xb

		de := distMain[bitbuf&distMask]
		if de&entSubtable != 0 {
			bitbuf >>= distBits
			bitcnt -= distBits
			de = dist[int(de>>16)+int(bitbuf&distSubMask)]
		}
		cl = uint(de & 15)
		if cl == 0 {
			break
		}
		bitbuf >>= cl
		bitcnt -= cl
		xb = uint(de>>4) & 15
		dst := int(de>>16) + int(bitbuf&(1<<xb-1))
		bitbuf >>= xb
		bitcnt -= xb

		if dst > n || length > len(out)-n {
			break
		}
		from := n - dst
		switch {
		case dst >= 8 && n+length+8 <= len(out):
			// Eight bytes at a time, possibly past the match's end (the
			// bytes there are written again later): every word read lies
			// before the one being written, so overlaps come out right.
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(out[n+i:], binary.LittleEndian.Uint64(out[from+i:]))
			}
		case dst >= length:
			copy(out[n:n+length], out[from:from+length])
		default:
			for i := 0; i < length; i++ {
				out[n+i] = out[from+i]
			}
		}
		n += length
	}
	d.bitbuf, d.bitcnt, d.pos, d.n = bitbuf, bitcnt, pos, n
	return ok
}
