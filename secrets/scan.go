package secrets

import (
	"bytes"
	"slices"
)

// Byte classes of the scanner's table.
const (
	cWord    = 1 << iota // [A-Za-z0-9_-]: the bytes of a word
	cAlnum               // [A-Za-z0-9]
	cUpper               // [A-Z]
	cLower               // [a-z]
	cDigit               // [0-9]
	cB64                 // [A-Za-z0-9+/]: the bytes of a base64 word
	cTok68               // [A-Za-z0-9._~+/=-]: the bytes of an HTTP token68
	cStop                // ends an unquoted value: space, control, quotes, \ , ; & ) } ] > |
	cSpecial             // \ [ : % — the non-word bytes run looks at
)

// class is the scanner's byte table, computed once; it is never written
// after package initialisation.
var class = func() (t [256]uint16) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		switch {
		case b >= 'A' && b <= 'Z':
			t[c] |= cWord | cAlnum | cUpper | cB64 | cTok68
		case b >= 'a' && b <= 'z':
			t[c] |= cWord | cAlnum | cLower | cB64 | cTok68
		case b >= '0' && b <= '9':
			t[c] |= cWord | cAlnum | cDigit | cB64 | cTok68
		case b == '_' || b == '-':
			t[c] |= cWord | cTok68
		case b == '+' || b == '/':
			t[c] |= cB64 | cTok68
		case b == '.' || b == '~' || b == '=':
			t[c] |= cTok68
		}
		if b == '\\' || b == '[' || b == ':' || b == '%' {
			t[c] |= cSpecial
		}
		if b <= ' ' || b == 0x7f || bytes.IndexByte([]byte("\"'`\\,;&)}]>|"), b) >= 0 {
			t[c] |= cStop
		}
	}
	return t
}()

// scanner holds one Scan's state.
type scanner struct {
	text     []byte
	out      []Finding
	lastEnd  int  // End of the last finding added
	unsorted bool // a finding was added before lastEnd
	awsIDs   bool // an aws-access-key-id was found: look for its secret beside it

	// plain: the text is itself decoded from base64 or percent-encoding
	// (encoded.go): its own encoded runs are not decoded again.
	plain bool
	// names: the text is a name or a field (ScanName): a key may also end
	// a word after a '-' or '_' (embedded).
	names   bool
	b64Done int      // the end of the last base64 run looked at (encoded.go)
	pctDone int      // the end of the last percent-encoded run decoded
	escEnd  int      // the end of the last JSON escape the loop skipped
	buf     []byte   // decode scratch, reused across runs
	sub     *scanner // scans decoded bytes (scanDecoded)
}

func (s *scanner) add(start, end int, kind string) {
	if start < s.lastEnd {
		s.unsorted = true
	}
	s.out = append(s.out, Finding{Start: start, End: end, Kind: kind})
	if end > s.lastEnd {
		s.lastEnd = end
	}
}

// run is the one pass: words are handed to word, "://" to urlPassword,
// JSON escapes are skipped as boundaries.
func (s *scanner) run() {
	t := s.text
	n := len(t)
	for i := 0; i < n; {
		c := t[i]
		if cl := class[c]; cl&cWord == 0 {
			if cl&cSpecial == 0 {
				i++
				continue
			}
			switch c {
			case '\\':
				i = skipEscape(t, i)
				s.escEnd = i
				continue
			case '[':
				if e := placeholderEnd(t, i); e > 0 {
					i = e // "[secret:KIND:ID]": already redacted
					continue
				}
			case ':':
				if i+2 < n && t[i+1] == '/' && t[i+2] == '/' {
					if e := s.urlPassword(i + 3); e > 0 {
						i = e
						continue
					}
				}
			case '%':
				if i >= s.pctDone && !s.plain && i+2 < n && isHex(t[i+1]) && isHex(t[i+2]) {
					s.percentRun(i)
				}
			}
			i++
			continue
		}
		j := i + 1
		for j < n && class[t[j]]&cWord != 0 {
			j++
		}
		// Most words are short and end in no name's last two letters:
		// they cost nothing more.
		if j-i >= 3 && (j-i >= 8 || nameEnd[lower(t[j-1])]&(1<<(lower(t[j-2])&31)) != 0) {
			if e := s.word(i, j); e > j {
				i = e
				continue
			}
		}
		i = j
	}
	if s.awsIDs {
		s.awsSecretsBeside()
	}
	if s.unsorted {
		s.normalise()
	}
}

// normalise sorts the findings and drops any that overlap an earlier one.
func (s *scanner) normalise() {
	slices.SortStableFunc(s.out, func(a, b Finding) int { return a.Start - b.Start })
	keep := s.out[:0]
	end := 0
	for _, f := range s.out {
		if f.Start >= end {
			keep = append(keep, f)
			end = f.End
		}
	}
	s.out = keep
}

// skipEscape returns the index after the JSON escape at t[i] == '\\': two
// bytes, or six for \uXXXX. A backslash before any other byte is one byte
// of plain text.
func skipEscape(t []byte, i int) int {
	if i+1 >= len(t) {
		return i + 1
	}
	switch t[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2
	case 'u':
		if i+6 <= len(t) && isHex(t[i+2]) && isHex(t[i+3]) && isHex(t[i+4]) && isHex(t[i+5]) {
			return i + 6
		}
		return i + 2
	}
	return i + 1
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

// word looks at the word t[i:j] and returns where scanning goes on: j, or
// past the finding it added.
func (s *scanner) word(i, j int) int {
	if j-i >= 8 {
		if e := s.prefixed(i, j); e > 0 {
			return e
		}
	}
	if j-i >= 3 && nameEnd[lower(s.text[j-1])]&(1<<(lower(s.text[j-2])&31)) != 0 {
		if kind := nameKind(s.text[i:j]); kind != "" {
			if e := s.assignment(i, j, kind); e > 0 {
				return e
			}
		}
	}
	// Long words may hold a key after a separator or be part of a base64
	// run (long); most words of 10 to 16 bytes are neither, and cost only
	// this test.
	if t := s.text; j-i >= minB64Run || j-i >= minB64Word && (s.names || j < len(t) && (t[j] == '+' || t[j] == '/') || i > 0 && (t[i-1] == '+' || t[i-1] == '/')) {
		return s.long(i, j)
	}
	return j
}

// long looks at a long word t[i:j] in which word found nothing: a key
// after one of its separators (embedded), or a base64 run it is part of
// (encoded.go). Kept apart from word, which every name-like word pays
// for.
func (s *scanner) long(i, j int) int {
	if isUUID(s.text, i, j) {
		return j // ids on every transcript line: never hold a key, never base64
	}
	if s.names && j-i >= minEmbedded+2 {
		if e := s.embedded(i, j); e > j {
			return e
		}
	}
	if i >= s.b64Done && !s.plain && maybeB64(s.text, i, j) {
		s.base64Run(i)
	}
	return j
}

// embedded looks for a provider key that ends the word t[i:j] and starts
// after one of its '-' or '_' separators: "sess-ghp_…", "MY_AKIA…". A
// key glued to letters ("xghp_…") is still not one: a prefix must start
// a part of the word. It returns where scanning goes on, as word does.
// Only names are scanned this way (ScanName): a name is built by gluing
// parts with separators (cli-<session>, a file name, a ref), text puts
// spaces, quotes or '=' around a key, and every long word of text would
// pay for the search.
func (s *scanner) embedded(i, j int) int {
	t := s.text
	w := t[i+1 : j-minEmbedded] // where a separator before a key can be
	for _, sep := range [2]byte{'-', '_'} {
		for off := 0; off < len(w); {
			p := bytes.IndexByte(w[off:], sep)
			if p < 0 {
				break
			}
			k := i + 1 + off + p + 1 // after the separator
			off += p + 1
			if class[t[k]]&cAlnum != 0 {
				if e := s.prefixed(k, j); e > 0 {
					return e
				}
			}
		}
	}
	return j
}

// isUUID reports whether t[i:j] has a UUID's shape (8-4-4-4-12) with a
// hex digit after each '-': no key starts after one of its separators (a
// prefix starts with a letter that is not a hex digit, or is AKIA/AIza,
// whose length no tail of a UUID has).
func isUUID(t []byte, i, j int) bool {
	return j-i == 36 && t[i+8] == '-' && t[i+13] == '-' && t[i+18] == '-' && t[i+23] == '-' &&
		isHex(t[i+9]) && isHex(t[i+14]) && isHex(t[i+19]) && isHex(t[i+24])
}

// minEmbedded is the shortest key embedded looks for (a slack token).
const minEmbedded = 15

// tail adds t[i:j] as kind when the word's bytes after the prefix of
// length p are all of class cls and number at least min; it returns j, or
// 0 when the word is not one.
func (s *scanner) tail(i, j, p, min int, cls uint16, kind string) int {
	if j-i-p < min {
		return 0
	}
	for _, b := range s.text[i+p : j] {
		if class[b]&cls == 0 {
			return 0
		}
	}
	s.add(i, j, kind)
	return j
}

// prefixed recognises provider keys by prefix at the word t[i:j] (at
// least 8 bytes long).
func (s *scanner) prefixed(i, j int) int {
	t := s.text
	w := t[i:j]
	switch w[0] {
	case 's':
		if w[1] != 'k' {
			return 0
		}
		switch w[2] {
		case '-':
			switch {
			case bytes.HasPrefix(w, []byte("sk-ant-")):
				return s.tail(i, j, 7, 32, cWord, "anthropic-key")
			case bytes.HasPrefix(w, []byte("sk-proj-")):
				return s.tail(i, j, 8, 20, cWord, "openai-key")
			case bytes.HasPrefix(w, []byte("sk-svcacct-")):
				return s.tail(i, j, 11, 20, cWord, "openai-key")
			case bytes.HasPrefix(w, []byte("sk-admin-")):
				return s.tail(i, j, 9, 20, cWord, "openai-key")
			}
			// Legacy and other sk- keys: only a random-looking tail, so
			// that sk-learn-style names are left alone.
			if j-i-3 >= 32 && randomLooking(w[3:]) {
				s.add(i, j, "openai-key")
				return j
			}
		case '_':
			if bytes.HasPrefix(w, []byte("sk_live_")) || bytes.HasPrefix(w, []byte("sk_test_")) {
				return s.tail(i, j, 8, 16, cAlnum, "stripe-key")
			}
		}
	case 'r':
		if bytes.HasPrefix(w, []byte("rk_live_")) || bytes.HasPrefix(w, []byte("rk_test_")) {
			return s.tail(i, j, 8, 16, cAlnum, "stripe-key")
		}
	case 'g':
		if w[1] == 'h' && w[3] == '_' {
			switch w[2] {
			case 'p', 'o', 'u', 's', 'r':
				return s.tail(i, j, 4, 36, cAlnum, "github-token")
			}
		}
		if bytes.HasPrefix(w, []byte("github_pat_")) {
			return s.tail(i, j, 11, 22, cWord, "github-token")
		}
		if bytes.HasPrefix(w, []byte("glpat-")) {
			return s.tail(i, j, 6, 20, cWord, "gitlab-token")
		}
	case 'x':
		if w[1] == 'o' && w[2] == 'x' && w[4] == '-' {
			switch w[3] {
			case 'a', 'b', 'p', 'o', 's', 'r':
				return s.tail(i, j, 5, 10, cWord, "slack-token")
			}
		}
		if bytes.HasPrefix(w, []byte("xapp-")) {
			return s.tail(i, j, 5, 10, cWord, "slack-token")
		}
	case 'A':
		if j-i == 20 && (bytes.HasPrefix(w, []byte("AKIA")) || bytes.HasPrefix(w, []byte("ASIA")) ||
			bytes.HasPrefix(w, []byte("ABIA")) || bytes.HasPrefix(w, []byte("ACCA"))) {
			if e := s.tail(i, j, 4, 16, cUpper|cDigit, "aws-access-key-id"); e > 0 {
				s.awsIDs = true
				return e
			}
			return 0
		}
		if j-i == 39 && bytes.HasPrefix(w, []byte("AIza")) {
			return s.tail(i, j, 4, 35, cWord, "google-api-key")
		}
		if bytes.HasPrefix(w, []byte("AGE-SECRET-KEY-1")) {
			return s.tail(i, j, 16, 50, cUpper|cDigit, "age-secret-key")
		}
	case 'e':
		if w[1] == 'y' && w[2] == 'J' {
			return s.jwt(i, j)
		}
	case 'n':
		if bytes.HasPrefix(w, []byte("npm_")) {
			return s.tail(i, j, 4, 36, cAlnum, "npm-token")
		}
	case 'h':
		if bytes.HasPrefix(w, []byte("hf_")) {
			return s.tail(i, j, 3, 34, cUpper|cLower, "huggingface-token")
		}
	case 'p':
		if bytes.HasPrefix(w, []byte("pypi-AgEIcHlwaS5vcmc")) {
			return s.tail(i, j, 5, 50, cWord, "pypi-token")
		}
	case '-':
		if bytes.Equal(w, []byte("-----BEGIN")) {
			return s.pem(i, j)
		}
	}
	return 0
}

// jwt recognises header.payload.signature from the header word t[i:j]
// (which starts with eyJ, the base64url of `{"`).
func (s *scanner) jwt(i, j int) int {
	t := s.text
	if j-i < 10 || j >= len(t) || t[j] != '.' {
		return 0
	}
	k := wordEnd(t, j+1)
	if k-(j+1) < 10 || k >= len(t) || t[k] != '.' {
		return 0
	}
	e := wordEnd(t, k+1)
	if e-(k+1) < 16 {
		return 0
	}
	s.add(i, e, "jwt")
	return e
}

func wordEnd(t []byte, i int) int {
	for i < len(t) && class[t[i]]&cWord != 0 {
		i++
	}
	return i
}

// pem recognises a private key block from "-----BEGIN" at t[i:j]: its
// label must name a private key; the finding runs to the end of the END
// line, or, with no END line, to the end of the base64 body (a key cut
// off by a `head` is still a key).
func (s *scanner) pem(i, j int) int {
	t := s.text
	if j >= len(t) || t[j] != ' ' {
		return 0
	}
	lim := min(len(t), j+80)
	h := bytes.Index(t[j:lim], []byte("-----"))
	if h < 0 {
		return 0
	}
	label := t[j+1 : j+h]
	if !bytes.Contains(label, []byte("PRIVATE KEY")) {
		return 0
	}
	bodyStart := j + h + 5
	lim = min(len(t), bodyStart+64<<10)
	if e := bytes.Index(t[bodyStart:lim], []byte("-----END ")); e >= 0 {
		e += bodyStart + 9
		if f := bytes.Index(t[e:min(len(t), e+80)], []byte("-----")); f >= 0 {
			end := e + f + 5
			s.add(i, end, "private-key")
			return end
		}
	}
	// No END line: the base64 body, across whitespace and JSON escapes,
	// stopping before anything else (a quote ends a JSON string).
	end := bodyStart
	for k := bodyStart; k < lim; {
		c := t[k]
		switch {
		case class[c]&cB64 != 0 || c == '=':
			k++
			end = k
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':' || c == ',' || c == '-':
			k++ // Proc-Type and DEK-Info header lines hold ':' ',' '-'
		case c == '\\' && k+1 < len(t) && (t[k+1] == 'n' || t[k+1] == 'r' || t[k+1] == 't'):
			k += 2
		default:
			k = lim
		}
	}
	s.add(i, end, "private-key")
	return end
}

// urlPassword recognises the password of scheme://user:password@host,
// p being the index after "://". It returns the index after the '@', or
// 0.
func (s *scanner) urlPassword(p int) int {
	t := s.text
	n := len(t)
	u := p
	for u < n && u-p <= 256 && urlUserByte(t[u]) {
		u++
	}
	if u == p || u >= n || t[u] != ':' {
		return 0
	}
	q := u + 1
	for q < n && q-u <= 256 && urlUserByte(t[q]) {
		q++
	}
	if q >= n || t[q] != '@' || q+1 >= n || !(class[t[q+1]]&cAlnum != 0 || t[q+1] == '[') {
		return 0
	}
	pw := t[u+1 : q]
	if len(pw) < 3 || allSame(pw) || pw[0] == '$' || pw[0] == '{' || pw[0] == '<' || pw[0] == '[' {
		return 0
	}
	s.add(u+1, q, "url-password")
	return q + 1
}

// urlUserByte: a byte of a URL's user or password (no separator, quote,
// space or backslash).
func urlUserByte(b byte) bool {
	if class[b]&cStop != 0 {
		return false
	}
	switch b {
	case '/', ':', '@', '?', '#', '(', '[', '{', '<':
		return false
	}
	return true
}

// nameEnd[c] has bit b&31 set when a secret name may end in the two
// lower-case bytes b, c (…rd of password, …en of token, …ey of key, …):
// run's filter before nameKind.
var nameEnd = func() (t [256]uint32) {
	for _, suf := range []string{"rd", "wd", "se", "ss", "en", "et", "al", "ls", "on", "er", "ey"} {
		t[suf[1]] |= 1 << (suf[0] & 31)
	}
	return t
}()

// tri packs three lower-case bytes for nameKind's switch.
func tri(a, b, c byte) uint32 { return uint32(a)<<16 | uint32(b)<<8 | uint32(c) }

// lower folds an ASCII letter to lower case; other bytes may change too,
// but never into a letter, so comparisons against letters stay right.
func lower(b byte) byte { return b | 0x20 }

// hasSuffixFold: w ends with suf (lower-case letters), ignoring case.
func hasSuffixFold(w []byte, suf string) bool {
	if len(w) < len(suf) {
		return false
	}
	w = w[len(w)-len(suf):]
	for i := 0; i < len(suf); i++ {
		if lower(w[i]) != suf[i] {
			return false
		}
	}
	return true
}

// partStart: w[k] starts a part of the name: k is 0, or follows _ - .,
// or is an upper-case letter after a lower-case one (camelCase).
func partStart(w []byte, k int) bool {
	if k == 0 {
		return true
	}
	p := w[k-1]
	return p == '_' || p == '-' || p == '.' || class[w[k]]&cUpper != 0 && class[p]&cLower != 0
}

// keyQualifiers are the parts that make a "…key" name a secret's name.
var keyQualifiers = []string{"api", "access", "secret", "private", "client", "auth", "app", "master", "signing", "encryption"}
