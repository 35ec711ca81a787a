package recall

// Porter's stemmer (M. F. Porter, "An algorithm for suffix stripping",
// Program 14(3), 1980), as in his reference C implementation, including
// its two published departures (-bli -> -ble, -logi -> -log); it stems
// all 23,531 words of Porter's published sample vocabulary as his output
// does (TestPorterVocabulary, testdata/porter). It maps
// "compacting", "compaction" and "compacted" to "compact", so a query
// finds the span that says the word in another form. It works on lower-case
// ASCII letters only; callers pass anything else through unstemmed.

// stemmer holds the word being stemmed: b[:k+1] is the current word, j an
// offset the suffix tests set.
type stemmer struct {
	b    []byte
	k, j int
}

// stem returns the stem of word (lower-case ASCII letters), appended to
// dst. Words of one or two letters are their own stem. z's buffer is
// reused from call to call.
func stem(dst, word []byte, z *stemmer) []byte {
	if len(word) <= 2 {
		return append(dst, word...)
	}
	z.b = append(z.b[:0], word...)
	z.k = len(word) - 1
	z.step1ab()
	if z.k > 0 {
		z.step1c()
		z.step2()
		z.step3()
		z.step4()
		z.step5()
	}
	return append(dst, z.b[:z.k+1]...)
}

// stemmable reports whether w is lower-case ASCII letters only, long
// enough for a suffix to come off.
func stemmable(w []byte) bool {
	if len(w) < 3 {
		return false
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// cons reports whether b[i] is a consonant.
func (z *stemmer) cons(i int) bool {
	switch z.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !z.cons(i-1)
	}
	return true
}

// m counts the consonant-vowel sequences in b[:j+1]: <c>(vc)^m<v>.
func (z *stemmer) m() int {
	n, i, j := 0, 0, z.j
	for {
		if i > j {
			return n
		}
		if !z.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i > j {
				return n
			}
			if z.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i > j {
				return n
			}
			if !z.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

// vowelInStem reports whether b[:j+1] holds a vowel.
func (z *stemmer) vowelInStem() bool {
	for i := 0; i <= z.j; i++ {
		if !z.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[j-1:j+1] is a double consonant.
func (z *stemmer) doublec(j int) bool {
	return j >= 1 && z.b[j] == z.b[j-1] && z.cons(j)
}

// cvc reports whether b[i-2:i+1] is consonant-vowel-consonant and the
// last is not w, x or y: -wil, -hop, but not -snow, -box, -tray.
func (z *stemmer) cvc(i int) bool {
	if i < 2 || !z.cons(i) || z.cons(i-1) || !z.cons(i-2) {
		return false
	}
	c := z.b[i]
	return c != 'w' && c != 'x' && c != 'y'
}

// ends reports whether b[:k+1] ends with s, setting j before it.
func (z *stemmer) ends(s string) bool {
	n := len(s)
	if n > z.k+1 || s[n-1] != z.b[z.k] || string(z.b[z.k-n+1:z.k+1]) != s {
		return false
	}
	z.j = z.k - n
	return true
}

// setTo replaces b[j+1:k+1] with s.
func (z *stemmer) setTo(s string) {
	need := z.j + 1 + len(s)
	if need > len(z.b) {
		z.b = append(z.b, make([]byte, need-len(z.b))...)
	}
	copy(z.b[z.j+1:], s)
	z.k = z.j + len(s)
}

// r replaces the suffix with s when the stem before it has m > 0.
func (z *stemmer) r(s string) {
	if z.m() > 0 {
		z.setTo(s)
	}
}

// step1ab removes plurals and -ed, -ing.
func (z *stemmer) step1ab() {
	if z.b[z.k] == 's' {
		switch {
		case z.ends("sses"):
			z.k -= 2
		case z.ends("ies"):
			z.setTo("i")
		case z.b[z.k-1] != 's':
			z.k--
		}
	}
	if z.ends("eed") {
		if z.m() > 0 {
			z.k--
		}
		return
	}
	if (z.ends("ed") || z.ends("ing")) && z.vowelInStem() {
		z.k = z.j
		switch {
		case z.ends("at"):
			z.setTo("ate")
		case z.ends("bl"):
			z.setTo("ble")
		case z.ends("iz"):
			z.setTo("ize")
		case z.doublec(z.k):
			z.k--
			if c := z.b[z.k]; c == 'l' || c == 's' || c == 'z' {
				z.k++
			}
		default:
			z.j = z.k
			if z.m() == 1 && z.cvc(z.k) {
				z.setTo("e")
			}
		}
	}
}

// step1c turns a final y into i when the stem has another vowel.
func (z *stemmer) step1c() {
	if z.ends("y") && z.vowelInStem() {
		z.b[z.k] = 'i'
	}
}

// step2 maps double suffixes to single ones: -ization -> -ize, ...
func (z *stemmer) step2() {
	switch z.b[z.k-1] {
	case 'a':
		if z.ends("ational") {
			z.r("ate")
		} else if z.ends("tional") {
			z.r("tion")
		}
	case 'c':
		if z.ends("enci") {
			z.r("ence")
		} else if z.ends("anci") {
			z.r("ance")
		}
	case 'e':
		if z.ends("izer") {
			z.r("ize")
		}
	case 'l':
		switch {
		case z.ends("bli"):
			z.r("ble")
		case z.ends("alli"):
			z.r("al")
		case z.ends("entli"):
			z.r("ent")
		case z.ends("eli"):
			z.r("e")
		case z.ends("ousli"):
			z.r("ous")
		}
	case 'o':
		switch {
		case z.ends("ization"):
			z.r("ize")
		case z.ends("ation"):
			z.r("ate")
		case z.ends("ator"):
			z.r("ate")
		}
	case 's':
		switch {
		case z.ends("alism"):
			z.r("al")
		case z.ends("iveness"):
			z.r("ive")
		case z.ends("fulness"):
			z.r("ful")
		case z.ends("ousness"):
			z.r("ous")
		}
	case 't':
		switch {
		case z.ends("aliti"):
			z.r("al")
		case z.ends("iviti"):
			z.r("ive")
		case z.ends("biliti"):
			z.r("ble")
		}
	case 'g':
		if z.ends("logi") {
			z.r("log")
		}
	}
}

// step3 handles -ic-, -full, -ness and the like.
func (z *stemmer) step3() {
	switch z.b[z.k] {
	case 'e':
		switch {
		case z.ends("icate"):
			z.r("ic")
		case z.ends("ative"):
			z.r("")
		case z.ends("alize"):
			z.r("al")
		}
	case 'i':
		if z.ends("iciti") {
			z.r("ic")
		}
	case 'l':
		if z.ends("ical") {
			z.r("ic")
		} else if z.ends("ful") {
			z.r("")
		}
	case 's':
		if z.ends("ness") {
			z.r("")
		}
	}
}

// step4 takes off -ant, -ence and the like in context <c>vcvc<v>.
func (z *stemmer) step4() {
	ok := false
	switch z.b[z.k-1] {
	case 'a':
		ok = z.ends("al")
	case 'c':
		ok = z.ends("ance") || z.ends("ence")
	case 'e':
		ok = z.ends("er")
	case 'i':
		ok = z.ends("ic")
	case 'l':
		ok = z.ends("able") || z.ends("ible")
	case 'n':
		ok = z.ends("ant") || z.ends("ement") || z.ends("ment") || z.ends("ent")
	case 'o':
		ok = z.ends("ion") && z.j >= 0 && (z.b[z.j] == 's' || z.b[z.j] == 't') || z.ends("ou")
	case 's':
		ok = z.ends("ism")
	case 't':
		ok = z.ends("ate") || z.ends("iti")
	case 'u':
		ok = z.ends("ous")
	case 'v':
		ok = z.ends("ive")
	case 'z':
		ok = z.ends("ize")
	}
	if ok && z.m() > 1 {
		z.k = z.j
	}
}

// step5 removes a final -e when m > 1 (or m == 1 and not *o), and -ll ->
// -l when m > 1.
func (z *stemmer) step5() {
	z.j = z.k
	if z.b[z.k] == 'e' {
		if a := z.m(); a > 1 || a == 1 && !z.cvc(z.k-1) {
			z.k--
		}
	}
	if z.b[z.k] == 'l' && z.doublec(z.k) && z.m() > 1 {
		z.k--
	}
}
