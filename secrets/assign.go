package secrets

// Secret-named assignments (name = value, name: value, quoted or not,
// YAML phrases, Authorization headers) and the heuristics that tell a
// secret value from a literal, an identifier or a placeholder.

import (
	"bytes"
	"math"
)

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
