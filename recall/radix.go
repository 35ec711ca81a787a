package recall

// radixSort sorts keys stably by their bits [lo, hi), least significant
// digit first, 11 bits a pass. The index builds sort millions of packed
// (term, document) and (trigram, term) keys that are already in order
// below lo: a stable sort on the high bits alone is all they need, and
// its passes stream through memory where a comparison sort (or scattering
// into per-term lists) would wander.
func radixSort(keys []uint64, lo, hi uint) {
	if len(keys) < 2 || hi <= lo {
		return
	}
	const digit = 11
	tmp := make([]uint64, len(keys))
	src, dst := keys, tmp
	var count [1 << digit]int
	for shift := lo; shift < hi; shift += digit {
		width := min(uint(digit), hi-shift)
		mask := uint64(1)<<width - 1
		clear(count[:])
		for _, k := range src {
			count[(k>>shift)&mask]++
		}
		sum := 0
		for i := range count[:mask+1] {
			c := count[i]
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := (k >> shift) & mask
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
