package gitobj

import (
	"path/filepath"
)

// FastDeflaterForTest exposes the pack encoder to the external test
// package, whose benchmarks use internal/testkit/benchdata (which imports
// gitstore).
type FastDeflaterForTest struct{ e fastDeflater }

func NewFastDeflaterForTest() *FastDeflaterForTest { return new(FastDeflaterForTest) }

func (f *FastDeflaterForTest) AppendZlib(dst, src []byte) []byte { return f.e.appendZlib(dst, src) }

// ApplyDeltaForTest exposes the delta decoder to the benchmarks that
// compare it with go-git's packfile.PatchDelta.
func ApplyDeltaForTest(base, delta []byte) ([]byte, error) { return applyDelta(base, delta) }

// PackDeltasForTest returns every ofs-delta of the packs of the
// repository whose common dir is commonDir, each with its resolved base.
func PackDeltasForTest(commonDir string) (bases, deltas [][]byte, err error) {
	r := newPackReader(filepath.Join(commonDir, "objects"))
	for _, p := range r.packs(listAlways).packs {
		if err := p.load(); err != nil {
			return nil, nil, err
		}
		if err := p.open(); err != nil {
			return nil, nil, err
		}
		for k := range p.n {
			off := p.offset(k)
			end := p.end(off)
			buf := make([]byte, end-off)
			if _, err := p.f.ReadAt(buf, int64(off)); err != nil {
				return nil, nil, err
			}
			c := buf[0]
			typ := (c >> 4) & 7
			size := uint64(c & 15)
			i, shift := 1, 4
			for c&0x80 != 0 {
				c = buf[i]
				size |= uint64(c&0x7f) << shift
				shift += 7
				i++
			}
			if typ != 6 {
				continue
			}
			c = buf[i]
			i++
			rel := uint64(c & 0x7f)
			for c&0x80 != 0 {
				c = buf[i]
				i++
				rel = (rel+1)<<7 | uint64(c&0x7f)
			}
			_, base, err := r.readAt(p, off-rel, 1)
			if err != nil {
				return nil, nil, err
			}
			delta, err := inflateExact(buf[i:], size)
			if err != nil {
				return nil, nil, err
			}
			bases, deltas = append(bases, base), append(deltas, delta)
		}
	}
	return bases, deltas, nil
}

// IdxLookupForTest opens the packs of commonDir afresh, as a new process
// does, and finds ids in their indexes; it returns how many it found.
func IdxLookupForTest(commonDir string, ids [][20]byte) int {
	r := newPackReader(filepath.Join(commonDir, "objects"))
	n := 0
	for _, id := range ids {
		if p, _, ok := r.find(id, listCached); ok && p != nil {
			n++
		}
	}
	return n
}
