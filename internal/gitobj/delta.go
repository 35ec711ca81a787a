package gitobj

import "errors"

// maxDeltaReserve bounds what applyDelta reserves before the bytes arrive.
const maxDeltaReserve = 64 << 20

// applyDelta applies a git pack delta to its base (gitformat-pack(5),
// "Deltified representation"). go-git's packfile.PatchDelta, which this
// replaced once and replaces again, reserves at most 64 KiB up front and
// grows its buffer by copying past that: reading a file's history out of a
// pack (blame reads hundreds of 150 KB versions) spent a quarter of its
// time there. Here the result is reserved at the size the delta names, up
// to maxDeltaReserve; a larger claim (a hostile pack can name any size) is
// grown as the bytes actually arrive. On the small deltas of an archive's
// own pack BenchmarkVersusDelta measured it 11% faster than go-git's.
func applyDelta(base, delta []byte) ([]byte, error) {
	bad := errors.New("malformed delta")
	varint := func() (uint64, bool) {
		var v uint64
		for shift := 0; shift < 64; shift += 7 {
			if len(delta) == 0 {
				return 0, false
			}
			c := delta[0]
			delta = delta[1:]
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	srcSize, ok1 := varint()
	dstSize, ok2 := varint()
	if !ok1 || !ok2 || srcSize != uint64(len(base)) || dstSize > 1<<40 {
		return nil, bad
	}
	out := make([]byte, 0, min(dstSize, maxDeltaReserve))
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			var off, n uint64
			for k := 0; k < 4; k++ {
				if op&(1<<k) != 0 {
					if len(delta) == 0 {
						return nil, bad
					}
					off |= uint64(delta[0]) << (8 * k)
					delta = delta[1:]
				}
			}
			for k := 0; k < 3; k++ {
				if op&(0x10<<k) != 0 {
					if len(delta) == 0 {
						return nil, bad
					}
					n |= uint64(delta[0]) << (8 * k)
					delta = delta[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || uint64(len(out))+n > dstSize {
				return nil, bad
			}
			out = append(out, base[off:off+n]...)
		case op != 0:
			n := int(op)
			if n > len(delta) || uint64(len(out)+n) > dstSize {
				return nil, bad
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		default:
			return nil, bad
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, bad
	}
	return out, nil
}
