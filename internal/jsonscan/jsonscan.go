// Package jsonscan reads JSON text in place: it finds the members of an
// object, the elements of an array and the end of any value without
// decoding them, and decodes the few scalars its callers need. It is the
// module's only byte-level JSON scanner: the transcript parser, the
// proxy's request scanner, gitstore's event lines and the seal's entry
// lines all look into JSON through it, where encoding/json would decode
// megabytes they do not need. It imports only the standard library.
//
// This doc is the spec; FuzzScan checks it against encoding/json.
//
// Grammar. Objects, arrays, commas, colons, literals and numbers are
// checked exactly as encoding/json checks them, with its nesting limit
// (MaxDepth). How much of a string is checked is the caller's choice, a
// Check: Quotes only finds the closing quote (the first '"' after an even
// run of backslashes), Escapes also rejects an invalid escape, Strict also
// rejects a control byte (below 0x20), as encoding/json does. Invalid UTF-8
// inside strings is accepted under every Check, as encoding/json accepts
// it. Valid is Strict over one value and is json.Valid.
//
// Values are sub-slices of the input, never copies: a value is its raw
// bytes (a string with its quotes), a key is the raw bytes between its
// quotes (escapes as written). Every member is reported, duplicates
// included, in order; callers choose (encoding/json keeps the last).
//
// Decoding. Unquote and String decode a string as encoding/json does,
// except that invalid UTF-8 is kept byte for byte (encoding/json writes
// U+FFFD for each such byte) and raw control bytes are kept. Int decodes a
// number token holding an integer (2.0 and 1e3 count). AppendQuote encodes
// as encoding/json does with HTML escaping off, except that it writes the
// U+FFFD standing for a byte of invalid UTF-8 as itself, not as \ufffd
// (the archive's span bytes, and so their hashes, depend on it).
//
// Plain reads the one form the archive's writers produce (a flat object,
// no white space, strings without escapes, control bytes or invalid UTF-8,
// values that are strings, integers or booleans) in one pass; a line it
// refuses goes to encoding/json.
package jsonscan

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Check says how much of each string a scan checks.
type Check uint8

const (
	Quotes  Check = iota // the closing quote only: fastest, for text already checked
	Escapes              // and every escape
	Strict               // and no control bytes: encoding/json's grammar
)

// Status is how a scan of an object or array ended.
type Status uint8

const (
	OK      Status = iota // the whole value was read
	Stopped               // a callback returned false
	Bad                   // the input is not JSON (under the Check used)
)

// MaxDepth is the deepest nesting accepted, as in encoding/json.
const MaxDepth = 10000

// WS returns the index of the first byte at or after i that is not JSON
// white space.
func WS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Valid reports whether b is one JSON value, white space around it
// allowed: json.Valid.
func Valid(b []byte) bool {
	i := WS(b, 0)
	e, ok := skipValue(b, i, 1, Strict)
	return ok && WS(b, e) == len(b)
}

// Skip returns the index after the value that starts at b[i] (no white
// space before it), and whether it is one.
func Skip(b []byte, i int, c Check) (int, bool) {
	return skipValue(b, i, 1, c)
}

// Object scans the object that starts at or after b[i] (after white
// space). peek, when not nil, sees each key and the input from its value
// on, before the value is scanned, and may stop the scan there; fn, when
// not nil, sees each key and value and may stop it. Object returns the
// index after the object (or where it stopped) and how it ended.
func Object(b []byte, i int, c Check, peek func(key, rest []byte) bool, fn func(key, val []byte) bool) (int, Status) {
	return object(b, i, 1, c, peek, fn)
}

// Members calls fn with each member of the object obj holds (white space
// around it allowed), scanning strings with Quotes.
func Members(obj []byte, fn func(key, val []byte) bool) Status {
	e, st := object(obj, 0, 1, Quotes, nil, fn)
	if st == OK && WS(obj, e) != len(obj) {
		return Bad
	}
	return st
}

// Elems calls fn with each element of the array arr holds (white space
// around it allowed), scanning strings with Quotes.
func Elems(arr []byte, fn func(val []byte) bool) Status {
	i := WS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return Bad
	}
	i = WS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return end(arr, i+1)
	}
	for {
		ve, ok := skipValue(arr, i, 2, Quotes)
		if !ok {
			return Bad
		}
		if !fn(arr[i:ve]) {
			return Stopped
		}
		i = WS(arr, ve)
		if i >= len(arr) {
			return Bad
		}
		switch arr[i] {
		case ',':
			i = WS(arr, i+1)
		case ']':
			return end(arr, i+1)
		default:
			return Bad
		}
	}
}

func end(b []byte, i int) Status {
	if WS(b, i) != len(b) {
		return Bad
	}
	return OK
}

// Field returns the value of the first member named key (raw key bytes
// compared) of the object obj holds; nil when there is none or obj is not
// an object.
func Field(obj []byte, key string) []byte {
	var out []byte
	Members(obj, func(k, v []byte) bool {
		if string(k) == key {
			out = v
			return false
		}
		return true
	})
	return out
}

func object(b []byte, i, depth int, c Check, peek func(k, rest []byte) bool, fn func(k, v []byte) bool) (int, Status) {
	i = WS(b, i)
	if i >= len(b) || b[i] != '{' || depth > MaxDepth {
		return i, Bad
	}
	i = WS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, OK
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, Bad
		}
		ke, ok := skipString(b, i, c)
		if !ok {
			return i, Bad
		}
		key := b[i+1 : ke-1]
		i = WS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return i, Bad
		}
		vs := WS(b, i+1)
		if peek != nil && !peek(key, b[vs:]) {
			return vs, Stopped
		}
		ve, ok := skipValue(b, vs, depth+1, c)
		if !ok {
			return vs, Bad
		}
		if fn != nil && !fn(key, b[vs:ve]) {
			return ve, Stopped
		}
		i = WS(b, ve)
		if i >= len(b) {
			return i, Bad
		}
		switch b[i] {
		case ',':
			i = WS(b, i+1)
		case '}':
			return i + 1, OK
		default:
			return i, Bad
		}
	}
}

// skipValue returns the index after the value at b[i]; depth counts the
// containers the value is in, itself included.
func skipValue(b []byte, i, depth int, c Check) (int, bool) {
	if i >= len(b) || depth > MaxDepth {
		return i, false
	}
	switch ch := b[i]; {
	case ch == '"':
		return skipString(b, i, c)
	case ch == '{':
		e, st := object(b, i, depth, c, nil, nil)
		return e, st == OK
	case ch == '[':
		i = WS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			e, ok := skipValue(b, i, depth+1, c)
			if !ok {
				return e, false
			}
			i = WS(b, e)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = WS(b, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case ch == 't':
		return i + 4, bytes.HasPrefix(b[i:], []byte("true"))
	case ch == 'f':
		return i + 5, bytes.HasPrefix(b[i:], []byte("false"))
	case ch == 'n':
		return i + 4, bytes.HasPrefix(b[i:], []byte("null"))
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return skipNumber(b, i)
	}
	return i, false
}

func skipNumber(b []byte, i int) (int, bool) {
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

// skipString returns the index after the string at b[i] ('"').
func skipString(b []byte, i int, c Check) (int, bool) {
	switch c {
	case Quotes:
		// The closing quote is the first one preceded by an even number
		// of backslashes.
		pos := i + 1
		for {
			k := bytes.IndexByte(b[pos:], '"')
			if k < 0 {
				return len(b), false
			}
			q := pos + k
			n := 0
			for j := q - 1; j > i && b[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				return q + 1, true
			}
			pos = q + 1
		}
	case Escapes:
		// Runs without escapes are skipped with IndexByte.
		pos := i + 1
		q := -1
		for {
			if q < pos {
				k := bytes.IndexByte(b[pos:], '"')
				if k < 0 {
					return len(b), false
				}
				q = pos + k
			}
			k := bytes.IndexByte(b[pos:q], '\\')
			if k < 0 {
				return q + 1, true
			}
			k += pos
			if k+1 >= len(b) {
				return len(b), false
			}
			switch b[k+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				pos = k + 2
			case 'u':
				if k+6 > len(b) || !hex4(b[k+2:k+6]) {
					return len(b), false
				}
				pos = k + 6
			default:
				return len(b), false
			}
		}
	}
	for j := i + 1; j < len(b); j++ {
		switch ch := b[j]; {
		case ch == '"':
			return j + 1, true
		case ch < 0x20:
			return j, false
		case ch == '\\':
			n, ok := escapeLen(b, j)
			if !ok {
				return j, false
			}
			j += n - 1
		}
	}
	return len(b), false
}

// escapeLen returns the length of the valid escape at b[k] ('\\').
func escapeLen(b []byte, k int) (int, bool) {
	if k+1 >= len(b) {
		return 0, false
	}
	switch b[k+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		if k+6 > len(b) || !hex4(b[k+2:k+6]) {
			return 0, false
		}
		return 6, true
	}
	return 0, false
}

func hex4(h []byte) bool {
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hexVal(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// String decodes raw, a JSON string value with its quotes; ok is false
// when raw is not one.
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s), true
	}
	out, ok := Unquote(raw)
	return string(out), ok
}

// Unquote decodes raw, a JSON string value with its quotes, into new
// bytes; ok is false when raw is not one (an invalid escape, or a closing
// quote that is escaped). It does not look for unescaped quotes inside:
// raw is a value a scan delimited.
func Unquote(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	s := raw[1 : len(raw)-1]
	out := make([]byte, len(s))
	w := 0
	for r := 0; r < len(s); {
		// Copy the run up to the next escape in one go.
		k := bytes.IndexByte(s[r:], '\\')
		if k < 0 {
			w += copy(out[w:], s[r:])
			break
		}
		w += copy(out[w:], s[r:r+k])
		r += k
		if r+1 >= len(s) {
			return nil, false
		}
		n := 2
		switch e := s[r+1]; e {
		case 'n':
			out[w] = '\n'
		case 't':
			out[w] = '\t'
		case 'r':
			out[w] = '\r'
		case 'b':
			out[w] = '\b'
		case 'f':
			out[w] = '\f'
		case 'u':
			if r+6 > len(s) || !hex4(s[r+2:r+6]) {
				return nil, false
			}
			n = 6
			ru := hexVal(s[r+2 : r+6])
			if utf16.IsSurrogate(ru) {
				r2 := rune(-1)
				if r+6 < len(s) && s[r+6] == '\\' {
					if m, ok := escapeLen(s, r+6); ok && m == 6 {
						r2 = hexVal(s[r+8 : r+12])
					}
				}
				if d := utf16.DecodeRune(ru, r2); d != utf8.RuneError {
					ru, n = d, 12
				} else {
					ru = utf8.RuneError
				}
			}
			// A \u escape is 6 bytes and encodes at most 3 (a pair: 12
			// and 4): the output never overtakes the input.
			w += utf8.EncodeRune(out[w:], ru)
			r += n
			continue
		case '"', '\\', '/':
			out[w] = e
		default:
			return nil, false
		}
		w++
		r += n
	}
	return out[:w], true
}

// Int decodes raw, a JSON number token, when it holds an integer that
// fits an int64 (2.0 and 1e3 count).
func Int(raw []byte) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if e, ok := skipNumber(raw, 0); !ok || e != len(raw) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < -(1<<63) || f >= 1<<63 || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// Quote encodes s as a JSON string.
func Quote(s string) []byte {
	return AppendQuote(make([]byte, 0, len(s)+2), s)
}

// AppendQuote appends s as a JSON string, the way encoding/json writes it
// with HTML escaping off (but see the package doc on invalid UTF-8).
func AppendQuote(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
			i++
			continue
		}
		if c < 0x80 {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexd[r&0xf])
			i += size
			start = i
		default:
			i += size
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Plain calls fn with each member of line when line is in the plain form
// (see the package doc): the key and, for a string value, its body
// (quoted true), else the integer or boolean as written. It reports false
// when line is not in that form or fn returned false.
func Plain(line []byte, fn func(key, val []byte, quoted bool) bool) bool {
	b := line
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	b = b[1 : len(b)-1]
	for len(b) > 0 {
		if b[0] != '"' {
			return false
		}
		n := plainStringLen(b[1:])
		if n < 0 {
			return false
		}
		key := b[1 : 1+n]
		b = b[2+n:]
		if len(b) < 2 || b[0] != ':' {
			return false
		}
		b = b[1:]
		var val []byte
		quoted := b[0] == '"'
		if quoted {
			n := plainStringLen(b[1:])
			if n < 0 {
				return false
			}
			val = b[1 : 1+n]
			b = b[2+n:]
		} else {
			n := bytes.IndexByte(b, ',')
			if n < 0 {
				n = len(b)
			}
			val = b[:n]
			b = b[n:]
			if string(val) != "true" && string(val) != "false" && !isInt(val) {
				return false
			}
		}
		if !fn(key, val, quoted) {
			return false
		}
		if len(b) == 0 {
			return true
		}
		if b[0] != ',' || len(b) == 1 {
			return false
		}
		b = b[1:]
	}
	return true
}

// plainStringLen returns the length of the string body at the start of b
// up to its closing quote, or -1 when it holds an escape, a control byte
// or invalid UTF-8.
func plainStringLen(b []byte) int {
	ascii := true
	for i, c := range b {
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(b[:i]) {
				return -1
			}
			return i
		case c == '\\' || c < 0x20:
			return -1
		case c >= 0x80:
			ascii = false
		}
	}
	return -1
}

// isInt reports whether b is a JSON integer: -?(0|[1-9][0-9]*).
func isInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
