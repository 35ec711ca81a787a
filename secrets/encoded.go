package secrets

// Encoded secrets: a base64 run or a percent-encoded run is decoded and
// the decoded bytes are scanned with the same rules (once: what they
// decode to is not decoded again). A finding in the decoded bytes is
// reported on the encoded bytes that hold it, with the kind prefixed by
// the encoding ("base64-github-token", "urlencoded-anthropic-key").
//
// Decoding costs, so a run is decoded only when it can hold a secret and
// has the shape of its encoding:
//
//   - base64: looked at from a word of at least minB64Run bytes, or of
//     minB64Word beside a '+' or '/' (the main loop's words are
//     [A-Za-z0-9_-]; a key's encoding nearly always holds such a word);
//     the run around it is at least minB64Run characters of one alphabet
//     (standard "+/" or URL-safe "-_", never both), with upper- and
//     lower-case letters (hex digests, UUIDs and lower-case words are not
//     base64 of anything a scanner could find), at most maxB64Run. Lines
//     of a wrapped encoding (`base64` wraps at 76, PEM at 64) are joined
//     when each full line is a multiple of 4 characters long. The run is
//     decoded from its first character; a run up to maxB64Aligned long is
//     also decoded from after each separator of its first 64 bytes, for a
//     run glued to text before it ("https://host/api/" + encoding,
//     "sess-" + encoding). Decoded bytes
//     with no run of minTextRun printable ASCII bytes (what decoding an
//     identifier gives) are not scanned: every finding is longer.
//   - percent-encoding: a run of URL query bytes ([A-Za-z0-9._~%+=&!*-])
//     holding a %XX escape, decoded once per run; a decoded finding counts
//     only when the bytes it covers held an escape (one without is found
//     in the text itself). A userinfo whose ':' is encoded too
//     ("://user%3Apass@") gives its password as url-password.

import (
	"encoding/base64"
)

const (
	// minB64Word: a word this long beside a '+' or '/' is looked at as
	// part of a possible base64 run.
	minB64Word = 10
	// minB64Run: the shortest run decoded (18 bytes: "password=hunter2x").
	minB64Run = 24
	// maxB64Run: longer runs (images, archives) are not decoded.
	maxB64Run = 1 << 20
	// maxB64Aligned: runs up to this long are also decoded from after
	// each of the separators ('+' '/' '-' '_') of their first 64 bytes, at
	// most maxB64Starts starts in all.
	maxB64Aligned = 4096
	maxB64Starts  = 8
	// minB64Line: a line of a wrapped encoding is at least this long.
	minB64Line = 48
	// minTextRun: decoded bytes without this many printable ASCII bytes
	// in a row are not scanned.
	minTextRun = 8
	// maxPctRun bounds a percent-encoded run.
	maxPctRun = 64 << 10
)

// b64seg is one line of a base64 run: text[text:text+n] is joined[joined:joined+n].
type b64seg struct{ text, joined, n int }

// maybeB64 reports whether the word t[i:j] the main loop is at may be
// part of a base64 run worth decoding: long enough alone, or long and
// beside a '+' or '/'. Most words fail at the first comparison. A run of
// random base64 of a key's length almost always holds such a word; one
// that does not is missed (a documented limit).
func maybeB64(t []byte, i, j int) bool {
	if j-i >= minB64Run {
		return true
	}
	if j-i < minB64Word {
		return false
	}
	return j < len(t) && (t[j] == '+' || t[j] == '/') || i > 0 && (t[i-1] == '+' || t[i-1] == '/')
}

// base64Run looks at the base64 run that holds the word at t[i] and adds
// what its decoded bytes hold. The run is every byte of
// [A-Za-z0-9+/_-] around it (never back into a JSON escape, a finding or
// the last run), and the next lines of a wrapped encoding; it is looked
// at once.
func (s *scanner) base64Run(i int) {
	t := s.text
	n := len(t)
	st := i
	for fl := max(s.b64Done, s.floor()); st > fl && isB64Byte(t[st-1]); {
		st--
	}
	var segArr [4]b64seg
	segs := segArr[:0]
	joined := 0
	var all uint16 // the classes of its bytes, and '+' '/' (cStd) or '-' '_' (cURL)
	e := st
	for {
		k := e
		for e < n {
			c := b64class[t[e]]
			if c == 0 {
				break
			}
			all |= c
			e++
		}
		segs = append(segs, b64seg{text: k, joined: joined, n: e - k})
		joined += e - k
		if joined > maxB64Run {
			s.b64Done = e
			return
		}
		// A wrapped encoding goes on after a line break when this line
		// is full: a multiple of 4, long enough.
		next := -1
		if ln := e - k; ln >= minB64Line && ln%4 == 0 {
			switch {
			case e < n && t[e] == '\n':
				next = e + 1
			case e+1 < n && t[e] == '\r' && t[e+1] == '\n':
				next = e + 2
			case e+1 < n && t[e] == '\\' && t[e+1] == 'n':
				next = e + 2
			case e+3 < n && t[e] == '\\' && t[e+1] == 'r' && t[e+2] == '\\' && t[e+3] == 'n':
				next = e + 4
			}
		}
		if next < 0 || next >= n || b64class[t[next]] == 0 {
			break
		}
		e = next
	}
	s.b64Done = e
	url := all&b64URL != 0
	if joined < minB64Run || url && all&b64Std != 0 || all&b64Upper == 0 || all&b64Lower == 0 {
		return
	}
	src := t[st:e]
	if len(segs) > 1 {
		src = make([]byte, 0, joined)
		for _, g := range segs {
			src = append(src, t[g.text:g.text+g.n]...)
		}
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	// Where the encoding may start: the run's start, or, in a run glued
	// to text before it ("https://host/api/" + encoding, "sess-" +
	// encoding), just after one of the separators of its first bytes.
	var startArr [maxB64Starts]int
	starts := startArr[:1]
	if joined <= maxB64Aligned {
		for k := 0; k < min(len(src), 64) && len(starts) < maxB64Starts; k++ {
			if b64class[src[k]]&(b64Std|b64URL) != 0 && len(src)-k-1 >= minB64Run {
				starts = append(starts, k+1)
			}
		}
	}
	for _, a := range starts {
		part := src[a:]
		if len(part)%4 == 1 {
			part = part[:len(part)-1]
		}
		if cap(s.buf) < enc.DecodedLen(len(part)) {
			s.buf = make([]byte, enc.DecodedLen(len(part)))
		}
		dn, err := enc.Decode(s.buf[:cap(s.buf)], part)
		if err != nil {
			continue
		}
		if !textLike(s.buf[:dn]) {
			continue
		}
		fs := s.scanDecoded(s.buf[:dn])
		if len(fs) == 0 {
			continue
		}
		for _, f := range fs {
			es := a + f.Start/3*4
			ee := min(a+(f.End+2)/3*4, len(src))
			s.add(segPos(segs, es, false), segPos(segs, ee, true), "base64-"+f.Kind)
		}
		return
	}
}

// b64class sorts the bytes of a base64 run: 0 for a byte that is not
// one, else its letter case and alphabet.
var b64class = func() (t [256]uint16) {
	for c := 0; c < 256; c++ {
		switch b := byte(c); {
		case b >= 'A' && b <= 'Z':
			t[c] = b64Upper
		case b >= 'a' && b <= 'z':
			t[c] = b64Lower
		case b >= '0' && b <= '9':
			t[c] = b64Digit
		case b == '+' || b == '/':
			t[c] = b64Std
		case b == '-' || b == '_':
			t[c] = b64URL
		}
	}
	return t
}()

const (
	b64Upper = 1 << iota
	b64Lower
	b64Digit
	b64Std // '+' or '/': the standard alphabet
	b64URL // '-' or '_': the URL-safe alphabet
)

// textLike reports whether decoded bytes hold a run of minTextRun
// printable ASCII bytes, as any secret the rules find does; the decoding
// of an identifier or a digest that is no base64 of anything rarely
// does, and is not scanned.
func textLike(b []byte) bool {
	r := 0
	for _, c := range b {
		if c > ' ' && c < 0x7f {
			r++
			if r >= minTextRun {
				return true
			}
		} else {
			r = 0
		}
	}
	return false
}

func isB64Byte(c byte) bool { return b64class[c] != 0 }

// floor is how far back a run may start: after the last JSON escape the
// main loop skipped and the last finding.
func (s *scanner) floor() int { return max(s.escEnd, s.lastEnd) }

// segPos maps an index into the joined run to an index into the text; an
// end index (exclusive) maps to just after its last byte.
func segPos(segs []b64seg, x int, isEnd bool) int {
	for _, g := range segs {
		if x < g.joined+g.n || isEnd && x == g.joined+g.n {
			return g.text + (x - g.joined)
		}
	}
	last := segs[len(segs)-1]
	return last.text + last.n
}

// scanDecoded scans decoded bytes with the rules, without decoding
// again; the findings are valid until its next call.
func (s *scanner) scanDecoded(text []byte) []Finding {
	if s.sub == nil {
		s.sub = &scanner{plain: true}
	}
	sub := s.sub
	*sub = scanner{text: text, plain: true, out: sub.out[:0]}
	sub.run()
	return sub.out
}

// isPctByte: a byte of a percent-encoded run (a URL query or form body).
func isPctByte(c byte) bool {
	if class[c]&cWord != 0 {
		return true
	}
	switch c {
	case '.', '~', '%', '+', '=', '&', '!', '*':
		return true
	}
	return false
}

// percentRun decodes the percent-encoded run around the escape at t[i]
// and adds what the decoded bytes hold that only the decoding shows.
func (s *scanner) percentRun(i int) {
	t := s.text
	n := len(t)
	rs := i
	// Back to the run's start, never into a JSON escape ("\n" is no 'n')
	// or a finding.
	for rs > max(s.pctDone, s.floor()) && i-rs < maxPctRun && isPctByte(t[rs-1]) {
		rs--
	}
	re := i
	for re < n && re-rs < maxPctRun && isPctByte(t[re]) {
		re++
	}
	s.pctDone = re
	if re-rs < 8 {
		return
	}
	// Decode, remembering where each decoded byte came from.
	dec := make([]byte, 0, re-rs)
	from := make([]int, 0, re-rs+1)
	for k := rs; k < re; {
		if t[k] == '%' && k+2 < re && isHex(t[k+1]) && isHex(t[k+2]) {
			dec = append(dec, unhex(t[k+1])<<4|unhex(t[k+2]))
			from = append(from, k)
			k += 3
			continue
		}
		dec = append(dec, t[k])
		from = append(from, k)
		k++
	}
	from = append(from, re)
	for _, f := range s.scanDecoded(dec) {
		ts, te := from[f.Start], from[f.End]
		if te-ts == f.End-f.Start {
			continue // no escape inside: the text itself shows it
		}
		s.add(ts, te, "urlencoded-"+f.Kind)
	}
	// "scheme://user%3Apassword@host": the password after the encoded ':'.
	if rs >= 3 && string(t[rs-3:rs]) == "://" && re < n && t[re] == '@' {
		for d, c := range dec {
			if c != ':' || t[from[d]] != '%' {
				continue
			}
			ps, pe := from[d+1], re
			if pe-ps >= 3 && !s.overlaps(ps, pe) {
				s.add(ps, pe, "url-password")
			}
			break
		}
	}
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
