package secrets

import (
	"bytes"
	"math"
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
	cSpecial             // \ [ : — the non-word bytes run looks at
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
		if b == '\\' || b == '[' || b == ':' {
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
	return j
}

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

// nameKind returns the kind of secret a name means, or "". Only the last
// part of the name counts: DB_PASSWORD and githubToken are names of
// secrets; PASSWORD_FILE, token_type, max_tokens and public_key are not.
func nameKind(w []byte) string {
	n := len(w)
	switch tri(lower(w[n-3]), lower(w[n-2]), lower(w[n-1])) {
	case tri('o', 'r', 'd'):
		if hasSuffixFold(w, "password") {
			return "password"
		}
	case tri('s', 'w', 'd'):
		if hasSuffixFold(w, "passwd") {
			return "password"
		}
	case tri('a', 's', 'e'):
		if hasSuffixFold(w, "passphrase") {
			return "password"
		}
	case tri('a', 's', 's'):
		if hasSuffixFold(w, "pass") && partStart(w, n-4) {
			return "password"
		}
	case tri('k', 'e', 'n'):
		if hasSuffixFold(w, "token") {
			return "token"
		}
	case tri('r', 'e', 't'):
		if hasSuffixFold(w, "secret") {
			return "secret"
		}
	case tri('i', 'a', 'l'), tri('a', 'l', 's'):
		if hasSuffixFold(w, "credential") || hasSuffixFold(w, "credentials") {
			return "credential"
		}
	case tri('i', 'o', 'n'):
		if n == 13 && hasSuffixFold(w, "authorization") {
			return "authorization"
		}
	case tri('r', 'e', 'r'):
		if n == 6 && hasSuffixFold(w, "bearer") {
			return "bearer"
		}
	case tri('k', 'e', 'y'):
		// apikey, apiKey, api_key, x-api-key, AWS_SECRET_ACCESS_KEY: the
		// qualifier is the part before "key", with or without a separator.
		k := n - 3
		if k > 0 && (w[k-1] == '_' || w[k-1] == '-' || w[k-1] == '.') {
			k--
		}
		for _, q := range keyQualifiers {
			if k >= len(q) && hasSuffixFold(w[:k], q) && partStart(w, k-len(q)) {
				return "api-key"
			}
		}
	}
	return ""
}

// assignment looks for a value after the secret name t[i:j] and adds it;
// it returns the index after the value, or 0.
func (s *scanner) assignment(i, j int, kind string) int {
	t := s.text
	n := len(t)
	if kind == "bearer" {
		return s.bearer(j)
	}
	k := j
	isFlag := t[i] == '-'
	nq, _, afterName := quoteAt(t, k)
	quotedName := nq == '"' || nq == '\''
	if quotedName {
		k = afterName
	}
	sp := k
	for k < n && (t[k] == ' ' || t[k] == '\t') {
		k++
	}
	spaceBefore := k > sp
	if k >= n {
		return 0
	}
	envStyle, colon := false, false
	switch c := t[k]; {
	case c == '=':
		if k+1 < n && t[k+1] == '=' {
			return 0 // a comparison
		}
		if k+1 < n && t[k+1] == '>' {
			k += 2
		} else {
			k++
			envStyle = !spaceBefore && !quotedName
		}
	case c == ':':
		if k+1 < n && t[k+1] == ':' {
			return 0
		}
		if k+1 < n && t[k+1] == '=' {
			k += 2
		} else {
			k++
			colon = true
		}
	case isFlag && spaceBefore && !quotedName:
		// --password VALUE: the space is the operator.
	default:
		return 0
	}
	opEnd := k
	for k < n && (t[k] == ' ' || t[k] == '\t') {
		k++
	}
	if k > opEnd {
		envStyle = false // NAME= value is not an assignment of value
	}
	if kind == "authorization" {
		return s.authorization(k)
	}

	// The value: quoted (", ', `, or a JSON-escaped \") or bare.
	q, escQuote, after := quoteAt(t, k)
	if q != 0 {
		k = after
	} else if k < n && t[k] == '\\' {
		return 0 // an escape that is not a quote: no value here
	}
	vs := k
	if q != 0 {
		for k < n && t[k] != q && t[k] != '\\' && t[k] != '\n' && t[k] != '\r' {
			k++
		}
		if k >= n {
			return 0
		}
		if escQuote {
			m := k
			for m < n && t[m] == '\\' {
				m++
			}
			if k == m || m >= n || t[m] != '"' {
				return 0
			}
		} else if t[k] != q {
			return 0
		}
	} else {
		for k < n && class[t[k]]&cStop == 0 {
			k++
		}
	}
	ve := k
	lineStart := s.atLineStart(i)
	if kind == "password" && colon && lineStart && q == 0 && !quotedName {
		ve = s.yamlPhrase(ve)
	}
	v := t[vs:ve]
	if len(v) < 4 || notLiteral(v, q != 0) {
		return 0
	}
	yamlStyle := colon && lineStart && q == 0 && !quotedName && s.atLineEnd(ve)
	literalLine := lineStart && (envStyle || yamlStyle)
	ok := false
	switch {
	case kind == "password":
		switch {
		case q != 0:
			ok = !bytes.ContainsAny(v, " \t")
		case envStyle || yamlStyle || isFlag:
			ok = true
		default:
			ok = hasDigitOrSymbol(v) && !dottedIdent(v)
		}
	case literalLine:
		ok = len(v) >= 6
	case q != 0:
		ok = !bytes.ContainsAny(v, " \t") && randomLooking(v)
	default:
		ok = randomLooking(v)
	}
	if !ok {
		return 0
	}
	// A provider key as the value keeps its own, more telling kind.
	if we := wordEnd(t, vs); we-vs >= 8 {
		if e := s.prefixed(vs, we); e > 0 {
			return e
		}
	}
	s.add(vs, ve, kind)
	return ve
}

// yamlPhrase extends a bare YAML password value at e to the end of its
// line ("passphrase: open sesame"), unless the rest of the line reads as
// code (= ; , or brackets) or holds an escape.
func (s *scanner) yamlPhrase(e int) int {
	t := s.text
	end := e
	for k := e; k < len(t); k++ {
		switch c := t[k]; c {
		case '\n', '\r', '"', '\\':
			return end
		case '=', ';', ',', '(', ')', '[', ']', '{', '}', '`', '\'':
			return e
		case '#':
			if t[k-1] == ' ' {
				return end
			}
			end = k + 1
		case ' ', '\t':
		default:
			if c < ' ' {
				return end
			}
			end = k + 1
		}
	}
	return end
}

// quoteAt reports the quote that starts at t[k] — ", ' or `, or a run of
// backslashes before a " (a JSON-escaped quote, esc true) — and the index
// after it; q is 0 when none starts there.
func quoteAt(t []byte, k int) (q byte, esc bool, next int) {
	if k >= len(t) {
		return 0, false, k
	}
	switch c := t[k]; c {
	case '"', '\'', '`':
		return c, false, k + 1
	case '\\':
		m := k
		for m < len(t) && t[m] == '\\' {
			m++
		}
		if m < len(t) && t[m] == '"' {
			return '"', true, m + 1
		}
	}
	return 0, false, k
}

// authorization takes the credentials of an Authorization header from k:
// an optional scheme word (Bearer, Basic, token, …), then a token68.
func (s *scanner) authorization(k int) int {
	t := s.text
	n := len(t)
	if q, _, after := quoteAt(t, k); q == '"' || q == '\'' {
		k = after
	}
	m := k
	for m < n && m-k <= 12 && class[t[m]]&(cUpper|cLower) != 0 {
		m++
	}
	if m > k && m < n && t[m] == ' ' {
		k = m + 1
	}
	return s.token68(k, 8, "authorization")
}

// bearer takes the token after the word Bearer at j (one space between).
func (s *scanner) bearer(j int) int {
	t := s.text
	if j >= len(t) || t[j] != ' ' {
		return 0
	}
	return s.token68(j+1, 16, "authorization")
}

// token68 adds the HTTP token68 at k when it has at least min bytes, is
// not a reference and looks random.
func (s *scanner) token68(k, min int, kind string) int {
	t := s.text
	e := k
	for e < len(t) && class[t[e]]&cTok68 != 0 {
		e++
	}
	v := t[k:e]
	if len(v) < min || notLiteral(v, false) || !randomLooking(v) {
		return 0
	}
	s.add(k, e, kind)
	return e
}

// atLineStart: the word at i is the first thing on its line, after
// indentation and an optional "export ": a .env or YAML line. The start
// of a quoted string counts as a line start (a JSON string's content, an
// echo's argument).
func (s *scanner) atLineStart(i int) bool {
	t := s.text
	p := i
	for {
		for p > 0 && (t[p-1] == ' ' || t[p-1] == '\t') {
			p--
		}
		if p >= 2 && t[p-2] == '\\' && t[p-1] == 't' {
			p -= 2
			continue
		}
		if p >= 7 && string(t[p-7:p]) == "export " {
			p -= 7
			continue
		}
		break
	}
	if p == 0 {
		return true
	}
	switch t[p-1] {
	case '\n', '\r', '"', '\'', '`':
		return true
	}
	return p >= 2 && t[p-2] == '\\' && (t[p-1] == 'n' || t[p-1] == 'r')
}

// atLineEnd: after the value at e come only blanks, a comment and the
// end of the line (raw, JSON-escaped, or the end of a JSON string).
func (s *scanner) atLineEnd(e int) bool {
	t := s.text
	for e < len(t) && (t[e] == ' ' || t[e] == '\t') {
		e++
	}
	if e >= len(t) {
		return true
	}
	switch t[e] {
	case '\n', '\r', '"', '#':
		return true
	case '\\':
		return e+1 < len(t) && (t[e+1] == 'n' || t[e+1] == 'r' || t[e+1] == '"')
	}
	return false
}

// notLiteral: v is not a literal secret but a reference, a mask, a
// keyword, or holds a placeholder of this package (it was redacted). bare is false for a quoted
// value, whose parentheses may be part of a password.
func notLiteral(v []byte, quoted bool) bool {
	switch v[0] {
	case '$', '{', '[', '<', '%', '*':
		return true
	}
	if allSame(v) {
		return true
	}
	if !quoted && bytes.IndexByte(v, '(') >= 0 {
		return true // a call: getToken(), os.getenv("X")
	}
	if len(v) <= 12 {
		var lb [12]byte
		l := lb[:len(v)]
		for i, b := range v {
			l[i] = lower(b)
		}
		switch string(l) {
		case "null", "none", "nil", "true", "false", "undefined", "string", "str", "bytes", "text",
			"int", "integer", "number", "bool", "boolean", "required", "optional", "object",
			"secret", "secrets", "password", "passwd", "token", "redacted", "hidden", "masked",
			"empty", "default", "example", "placeholder", "secretstr", "env":
			return true
		}
	}
	for _, ref := range [][]byte{[]byte(placeholderOpen), []byte("process.env"), []byte("os.environ"), []byte("ENV["), []byte("your"), []byte("YOUR"), []byte("xxxx"), []byte("XXXX")} {
		if bytes.Contains(v, ref) {
			return true
		}
	}
	return false
}

func allSame(v []byte) bool {
	for _, b := range v[1:] {
		if b != v[0] {
			return false
		}
	}
	return true
}

// hasDigitOrSymbol: v holds a digit or a byte that is not a letter.
func hasDigitOrSymbol(v []byte) bool {
	for _, b := range v {
		if class[b]&(cUpper|cLower) == 0 {
			return true
		}
	}
	return false
}

// dottedIdent: v is an identifier path with no digit (config.token,
// this.password): code, not a value.
func dottedIdent(v []byte) bool {
	for _, b := range v {
		if class[b]&(cUpper|cLower) == 0 && b != '_' && b != '.' {
			return false
		}
	}
	return true
}

// randomLooking: v is at least 8 bytes, mixes letters with digits (or
// upper with lower case over 16 bytes or more), is not an identifier
// path, and has at least 3 bits of Shannon entropy per byte.
func randomLooking(v []byte) bool {
	if len(v) < 8 {
		return false
	}
	var all uint16
	for _, b := range v {
		all |= class[b]
	}
	letters := all&(cUpper|cLower) != 0
	mixed := letters && all&cDigit != 0 || len(v) >= 16 && all&cUpper != 0 && all&cLower != 0
	if !mixed || dottedIdent(v) {
		return false
	}
	return entropy(v) >= 3.0
}

// entropy is the Shannon entropy of v's bytes, in bits per byte.
func entropy(v []byte) float64 {
	var counts [256]uint32
	for _, b := range v {
		counts[b]++
	}
	n := float64(len(v))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// awsSecretsBeside adds, within 300 bytes of each access key id, the
// 40-byte mixed-case base64 words that an AWS secret access key is (a
// lower-case hex git sha1 is not one).
func (s *scanner) awsSecretsBeside() {
	t := s.text
	var ids []Finding
	for _, f := range s.out {
		if f.Kind == "aws-access-key-id" {
			ids = append(ids, f)
		}
	}
	for _, id := range ids {
		lo, hi := max(0, id.Start-300), min(len(t), id.End+300)
		for k := lo; k < hi; {
			c := t[k]
			if c == '\\' {
				k = skipEscape(t, k)
				continue
			}
			if class[c]&cB64 == 0 {
				k++
				continue
			}
			e := k
			var all uint16
			for e < len(t) && class[t[e]]&cB64 != 0 {
				all |= class[t[e]]
				e++
			}
			if e-k == 40 && (k == 0 || t[k-1] != '=') && (e == len(t) || t[e] != '=') &&
				all&cUpper != 0 && all&cLower != 0 && all&cDigit != 0 && !s.overlaps(k, e) {
				s.add(k, e, "aws-secret-access-key")
			}
			k = e
		}
	}
}

func (s *scanner) overlaps(a, b int) bool {
	for _, f := range s.out {
		if f.Start < b && a < f.End {
			return true
		}
	}
	return false
}
