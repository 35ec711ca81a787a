package blame

import (
	"bytes"
	"hash/maphash"
)

// A version is one file's content cut into lines, each with a hash, and
// the run hashes that give a line its context (see FORMAT.md, "Matching a
// line"). Lines are cut at '\n' as git cuts them: a last line without a
// newline is a line; the newline is not part of the text.
type version struct {
	lines [][]byte
	hash  []uint64
	up    []uint64 // the line and the lines above it up to the nearest distinctive one
	down  []uint64 // the same, below
	count map[uint64]int32
}

// seed is fixed for the process only: hashes are never stored (the cache
// stores line numbers, not hashes), so a per-process seed is safe and keeps
// crafted content from steering collisions across runs.
type hasher struct{ seed maphash.Seed }

func newHasher() hasher { return hasher{seed: maphash.MakeSeed()} }

// line hashes one line's text as version does.
func (h hasher) line(l []byte) uint64 { return maphash.Bytes(h.seed, l) }

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
	v.count = make(map[uint64]int32, n)
	dist := make([]bool, n)
	for i, l := range v.lines {
		v.hash[i] = maphash.Bytes(h.seed, l)
		v.count[v.hash[i]]++
		dist[i] = distinctive(l)
	}
	// up[i] hashes lines a..i where a is the nearest distinctive line
	// strictly above i (or the file's start); down[i] likewise below.
	// The boundary itself is included, so a brace is tied to the code it
	// closes and a blank line to its neighbours.
	v.up = make([]uint64, n)
	v.down = make([]uint64, n)
	const start, end = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	for i := 0; i < n; i++ {
		acc := uint64(start)
		for j := i; ; j-- {
			acc = mix(acc, v.hash[j])
			if j < i && dist[j] || i-j == maxRun {
				break
			}
			if j == 0 {
				acc = mix(acc, start)
				break
			}
		}
		v.up[i] = acc
	}
	for i := n - 1; i >= 0; i-- {
		acc := uint64(end)
		for j := i; ; j++ {
			acc = mix(acc, v.hash[j])
			if j > i && dist[j] || j-i == maxRun {
				break
			}
			if j == n-1 {
				acc = mix(acc, end)
				break
			}
		}
		v.down[i] = acc
	}
	return v
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
	rest := lcsPairs(a[p:], b[p:], maxD)
	for i := p; i < len(b); i++ {
		out[i] = -1
		if rest != nil && rest[i-p] >= 0 {
			out[i] = rest[i-p] + p
		}
	}
	return out
}
