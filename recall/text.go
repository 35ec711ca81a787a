package recall

import (
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/secrets"
)

// What is indexed of a span document: every JSON string value, unescaped,
// one per line, except the values of members that name rather than say
// (skipKeys: kinds, roles, ids, the proxy document's bookkeeping, and
// base64 payloads such as images and thinking signatures). Keys and
// numbers are not indexed. A document that is not valid JSON is indexed
// as the bytes it is.

// skipKeys are the members whose string values are not indexed.
var skipKeys = map[string]bool{
	"kind": true, "role": true, "id": true, "tool_use_id": true, "type": true,
	"format": true, "session": true, "model": true, "route": true, "ts": true,
	"count_source": true, "extends": true, "archived_in": true, "span": true,
	"uuid": true, "signature": true, "data": true, "media_type": true,
	"cache_control": true,
}

// maxDepth bounds the nesting the walker follows; deeper documents are
// indexed as raw bytes.
const maxDepth = 256

// jsonText walks a JSON document and appends its indexed string values,
// each followed by '\n', to out.
type jsonText struct {
	b   []byte
	i   int
	out []byte
	// summary is the range in out of the top-level "summary" member's
	// value (a proxy span's summary), when there is one.
	sumFrom, sumTo int
	hasSum         bool
}

// extractText appends the indexed text of doc to out and returns it, with
// the range of a top-level "summary" value in it (from == to == -1 when
// none).
func extractText(out, doc []byte) (text []byte, sumFrom, sumTo int) {
	w := jsonText{b: doc, out: out}
	if w.value(nil, 0) {
		w.ws()
		if w.i == len(w.b) {
			if w.hasSum {
				return w.out, w.sumFrom, w.sumTo
			}
			return w.out, -1, -1
		}
	}
	// Not JSON (or too deep): the bytes as they are.
	return append(out, doc...), -1, -1
}

func (w *jsonText) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value parses one value; key is the member name it belongs to (nil in
// arrays and at the top).
func (w *jsonText) value(key []byte, depth int) bool {
	if depth > maxDepth {
		return false
	}
	w.ws()
	if w.i >= len(w.b) {
		return false
	}
	switch c := w.b[w.i]; {
	case c == '"':
		if key != nil && skipKeys[string(key)] {
			return w.skipString()
		}
		start := len(w.out)
		var ok bool
		if w.out, ok = unquote(w.out, w.b, &w.i); !ok {
			return false
		}
		if depth == 1 && string(key) == "summary" {
			w.sumFrom, w.sumTo, w.hasSum = start, len(w.out), true
		}
		w.out = append(w.out, '\n')
		return true
	case c == '{':
		w.i++
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == '}' {
			w.i++
			return true
		}
		for {
			w.ws()
			if w.i >= len(w.b) || w.b[w.i] != '"' {
				return false
			}
			k, ok := w.rawKey()
			if !ok {
				return false
			}
			w.ws()
			if w.i >= len(w.b) || w.b[w.i] != ':' {
				return false
			}
			w.i++
			if !w.value(k, depth+1) {
				return false
			}
			w.ws()
			if w.i >= len(w.b) {
				return false
			}
			if w.b[w.i] == ',' {
				w.i++
				continue
			}
			if w.b[w.i] == '}' {
				w.i++
				return true
			}
			return false
		}
	case c == '[':
		w.i++
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == ']' {
			w.i++
			return true
		}
		for {
			if !w.value(nil, depth+1) {
				return false
			}
			w.ws()
			if w.i >= len(w.b) {
				return false
			}
			if w.b[w.i] == ',' {
				w.i++
				continue
			}
			if w.b[w.i] == ']' {
				w.i++
				return true
			}
			return false
		}
	default:
		// number, true, false, null: skip the literal
		j := w.i
		for j < len(w.b) {
			switch w.b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				goto done
			}
			j++
		}
	done:
		if j == w.i {
			return false
		}
		w.i = j
		return true
	}
}

// rawKey reads a member name. An unescaped name is a slice of the input;
// an escaped one is unescaped into a fresh slice.
func (w *jsonText) rawKey() ([]byte, bool) {
	start := w.i + 1
	for j := start; j < len(w.b); j++ {
		switch w.b[j] {
		case '"':
			w.i = j + 1
			return w.b[start:j], true
		case '\\':
			k, ok := unquote(nil, w.b, &w.i)
			return k, ok
		}
	}
	return nil, false
}

// skipString moves past a string without keeping it.
func (w *jsonText) skipString() bool {
	for j := w.i + 1; j < len(w.b); j++ {
		switch w.b[j] {
		case '"':
			w.i = j + 1
			return true
		case '\\':
			j++
		}
	}
	return false
}

// unquote appends the JSON string starting at b[*i] (a '"'), unescaped,
// to dst and moves *i past it.
func unquote(dst, b []byte, i *int) ([]byte, bool) {
	j := *i + 1
	for {
		k := j
		for k < len(b) && b[k] != '"' && b[k] != '\\' {
			k++
		}
		dst = append(dst, b[j:k]...)
		if k >= len(b) {
			return dst, false
		}
		if b[k] == '"' {
			*i = k + 1
			return dst, true
		}
		if k+1 >= len(b) {
			return dst, false
		}
		switch e := b[k+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b, k+2)
			if !ok {
				return dst, false
			}
			k += 4
			if r >= 0xd800 && r < 0xdc00 && k+7 < len(b) && b[k+2] == '\\' && b[k+3] == 'u' {
				if r2, ok := hex4(b, k+4); ok && r2 >= 0xdc00 && r2 < 0xe000 {
					r = (r-0xd800)<<10 + (r2 - 0xdc00) + 0x10000
					k += 6
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
		j = k + 2
	}
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// headLen is the longest head (first words) kept, in characters.
const headLen = 80

// head returns the first words of text[from:]: white space collapsed to
// single spaces, secrets (findings, sorted) masked, at most headLen
// characters.
func head(text []byte, from int, fs []secrets.Finding) string {
	out := make([]byte, 0, headLen+8)
	runes := 0
	space := false
	fi := 0
	for i := from; i < len(text) && runes < headLen; {
		for fi < len(fs) && fs[fi].End <= i {
			fi++
		}
		if fi < len(fs) && fs[fi].Start <= i {
			m := secrets.Mask(text[max(i, fs[fi].Start):fs[fi].End])
			if space && len(out) > 0 {
				out = append(out, ' ')
			}
			space = false
			out = append(out, m...)
			runes += utf8.RuneCountInString(m)
			i = fs[fi].End
			continue
		}
		r, n := utf8.DecodeRune(text[i:])
		i += n
		switch r {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			space = true
			continue
		}
		if r < 0x20 || r == utf8.RuneError {
			continue
		}
		if space && len(out) > 0 {
			out = append(out, ' ')
			runes++
		}
		space = false
		out = utf8.AppendRune(out, r)
		runes++
	}
	return string(trimRunes(out, headLen))
}

// trimRunes cuts b to at most n characters.
func trimRunes(b []byte, n int) []byte {
	k := 0
	for i := range string(b) {
		if k == n {
			return b[:i]
		}
		k++
	}
	return b
}
