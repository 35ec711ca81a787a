package blame

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// A version is one file's content cut into lines, each with a hash, and
// the run hashes that give a line its context (see FORMAT.md, "Matching a
// line"). Lines are cut at '\n' as git cuts them: a last line without a
// newline is a line; the newline is not part of the text.
type version struct {
	lines [][]byte
	hash  []uint64
	// The rest is filled on first use (upAt, downAt, dist, countOf). A
	// version is used by one goroutine at a time.
	up, down         []uint64
	upDone, downDone []bool
	distK            []int8
	count            map[uint64]int32
}

// hasher hashes lines with a fixed function, so the hashes can be kept in
// the cache of added lines (cache.go). A hash only finds candidates: every
// match is confirmed on the line's text, so a collision, crafted or not,
// costs a comparison and never attributes a line whose text differs. What a
// crafted context hash could do is make a line with an agent's exact text
// count as that agent's where it stands, which moving the line there does
// anyway.
type hasher struct{}

func newHasher() hasher { return hasher{} }

// line hashes one line's text: 8 bytes at a time, multiply and rotate.
func (hasher) line(l []byte) uint64 {
	const k1, k2 = 0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9
	h := uint64(len(l)) * k1
	for len(l) >= 8 {
		v := binary.LittleEndian.Uint64(l)
		h = bits.RotateLeft64(h^(v*k2), 29) * k1
		l = l[8:]
	}
	var tail uint64
	for i, c := range l {
		tail |= uint64(c) << (8 * i)
	}
	h = bits.RotateLeft64(h^(tail*k2), 29) * k1
	h ^= h >> 32
	h *= k2
	return h ^ h>>29
}

func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	n := bytes.Count(b, []byte{'\n'})
	if b[len(b)-1] != '\n' {
		n++
	}
	out := make([][]byte, 0, n)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i])
		b = b[i+1:]
	}
	return out
}

// distinctive reports whether a line can stand for itself: it holds a run
// of at least four letters, digits or underscores. Lines without one
// (blank lines, braces, "end", "i++") are matched only together with the
// lines around them up to a distinctive one.
func distinctive(l []byte) bool {
	run := 0
	for _, c := range l {
		if c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 {
			run++
			if run >= 4 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

func (h hasher) version(content []byte) *version {
	v := &version{lines: splitLines(content)}
	n := len(v.lines)
	v.hash = make([]uint64, n)
	for i, l := range v.lines {
		v.hash[i] = h.line(l)
	}
	return v
}

// Run hashes and counts are computed on first use: most lines of most
// versions a blame reads are never asked for.
const (
	runStart, runEnd = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
)

// upAt hashes lines a..i where a is the nearest distinctive line strictly
// above i (at most maxRun lines up, or the file's start); downAt likewise
// below. The boundary itself is included, so a brace is tied to the code
// it closes and a blank line to its neighbours.
func (v *version) upAt(i int) uint64 {
	if v.up == nil {
		v.up, v.upDone = make([]uint64, len(v.hash)), make([]bool, len(v.hash))
	}
	if v.upDone[i] {
		return v.up[i]
	}
	acc := uint64(runStart)
	for j := i; ; j-- {
		acc = mix(acc, v.hash[j])
		if j < i && v.dist(j) || i-j == maxRun {
			break
		}
		if j == 0 {
			acc = mix(acc, runStart)
			break
		}
	}
	v.up[i], v.upDone[i] = acc, true
	return acc
}

func (v *version) downAt(i int) uint64 {
	if v.down == nil {
		v.down, v.downDone = make([]uint64, len(v.hash)), make([]bool, len(v.hash))
	}
	if v.downDone[i] {
		return v.down[i]
	}
	n := len(v.hash)
	acc := uint64(runEnd)
	for j := i; ; j++ {
		acc = mix(acc, v.hash[j])
		if j > i && v.dist(j) || j-i == maxRun {
			break
		}
		if j == n-1 {
			acc = mix(acc, runEnd)
			break
		}
	}
	v.down[i], v.downDone[i] = acc, true
	return acc
}

// dist is distinctive(line j), memoised.
func (v *version) dist(j int) bool {
	if v.distK == nil {
		v.distK = make([]int8, len(v.lines))
	}
	switch v.distK[j] {
	case 1:
		return true
	case -1:
		return false
	}
	d := distinctive(v.lines[j])
	v.distK[j] = -1
	if d {
		v.distK[j] = 1
	}
	return d
}

// countOf is how many lines of the version have hash h.
func (v *version) countOf(h uint64) int32 {
	if v.count == nil {
		v.count = make(map[uint64]int32, len(v.hash))
		for _, x := range v.hash {
			v.count[x]++
		}
	}
	return v.count[h]
}

// maxRun bounds a context run, so a file of lines none of which is
// distinctive (a column of numbers) costs linear time.
const maxRun = 8

func mix(a, b uint64) uint64 {
	a ^= b + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2)
	a *= 0xff51afd7ed558ccd
	return a ^ (a >> 33)
}

// added returns the indexes of the lines of post that a line diff from
// pre does not match: the lines the change from pre to post introduced.
// The common prefix and suffix are trimmed first; the middle is diffed
// with Myers' algorithm on line hashes (O((N+M)·D)), so a small edit of a
// large file costs a pass over it.
func added(pre, post []uint64) []int {
	p := 0
	for p < len(pre) && p < len(post) && pre[p] == post[p] {
		p++
	}
	s := 0
	for s < len(pre)-p && s < len(post)-p && pre[len(pre)-1-s] == post[len(post)-1-s] {
		s++
	}
	a, b := pre[p:len(pre)-s], post[p:len(post)-s]
	if len(a) == 0 {
		out := make([]int, len(b))
		for i := range b {
			out[i] = p + i
		}
		return out
	}
	if len(b) == 0 {
		return nil
	}
	matched := lcsMatched(a, b, maxD)
	if matched == nil {
		// A rewrite too large to diff cheaply: a line is added when
		// pre does not hold it anywhere (as many times).
		have := make(map[uint64]int, len(a))
		for _, h := range a {
			have[h]++
		}
		matched = make([]bool, len(b))
		for i, h := range b {
			if have[h] > 0 {
				have[h]--
				matched[i] = true
			}
		}
	}
	var out []int
	for i, m := range matched {
		if !m {
			out = append(out, p+i)
		}
	}
	return out
}

// maxD bounds the edit distance diffed exactly: the trace Myers keeps to
// recover the matching grows as D², about 8 MB at this bound.
const maxD = 1000

// lcsMatched runs Myers' O(ND) diff of a and b and reports, for each
// element of b, whether it is matched (part of the common subsequence);
// nil when the edit distance exceeds limit.
func lcsMatched(a, b []uint64, limit int) []bool {
	pairs := lcsPairs(a, b, limit)
	if pairs == nil {
		return nil
	}
	out := make([]bool, len(b))
	for i, j := range pairs {
		out[i] = j >= 0
	}
	return out
}

// lcsPairs is lcsMatched giving, for each element of b, the index of the
// element of a it is matched with (-1: none).
func lcsPairs(a, b []uint64, limit int) []int {
	n, m := len(a), len(b)
	max := n + m
	if max > limit {
		max = limit
	}
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	dEnd := -1
	for d := 0; d <= max; d++ {
		snap := make([]int, 2*d+3)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				dEnd = d
			}
		}
		for k := -d - 1; k <= d+1; k++ {
			snap[k+d+1] = v[off+k]
		}
		trace = append(trace, snap)
		if dEnd >= 0 {
			break
		}
	}
	if dEnd < 0 {
		return nil
	}
	matched := make([]int, m)
	for i := range matched {
		matched[i] = -1
	}
	x, y := n, m
	for d := dEnd; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return prev[k+(d-1)+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			matched[y] = x
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x--
		y--
		matched[y] = x
	}
	return matched
}

// maxAlignD bounds the diffs rule 3 runs: a write whose version is that
// far from the version a line is looked up in is no guide to where its
// lines went.
const maxAlignD = 200

// align matches the lines of b (a version a line is looked up in) to the
// lines of a (an archived write's version): for each line of b the index
// of its line in a, -1 when the diff does not match it. The common prefix
// is matched first and the rest diffed; the suffix is not trimmed, so where
// a line could match either of two equal lines (a closing brace, a blank
// line) the earlier one wins: code appended after a block leaves the
// block's own last lines matched.
func align(a, b []uint64) []int {
	out := make([]int, len(b))
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		out[p] = p
		p++
	}
	rest := lcsPairs(a[p:], b[p:], maxAlignD)
	for i := p; i < len(b); i++ {
		out[i] = -1
		if rest != nil && rest[i-p] >= 0 {
			out[i] = rest[i-p] + p
		}
	}
	return out
}
