package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A lenient structural JSON scanner for the hot path. A request that is not
// compacted is forwarded as the client's exact bytes, so the proxy only
// needs to know where the top-level members and the messages are, not to
// decode them: skipping strings and brackets runs at memory speed where a
// full decode of a long conversation costs milliseconds. Malformed input
// makes the scan fail (the request then passes through untouched); input
// the scanner accepts but a strict parser would not is decoded strictly
// before anything is rewritten.

// member is one top-level member of a JSON object: its key and the byte
// range of its value.
type member struct {
	key        string
	start, end int
}

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false
		}
		j += i
		// Count the backslashes before the quote: odd means escaped.
		n := 0
		for k := j - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
		i = j + 1
	}
}

// skipValue returns the index after the value starting at or after b[i].
func skipValue(b []byte, i int) (int, bool) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default:
		start := i
		for i < len(b) {
			c := b[i]
			if isWS(c) || c == ',' || c == ']' || c == '}' || c == ':' {
				break
			}
			i++
		}
		if i == start {
			return 0, false
		}
		return i, true
	}
}

// scanObject returns the members of the object b holds (b must be exactly
// one object, surrounding white space allowed).
func scanObject(b []byte) ([]member, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipWS(b, i+1)
	var out []member
	if i < len(b) && b[i] == '}' {
		return out, skipWS(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		ke, ok := skipString(b, i)
		if !ok {
			return nil, false
		}
		key := string(b[i+1 : ke-1])
		if bytes.IndexByte(b[i:ke], '\\') >= 0 {
			var k string
			if json.Unmarshal(b[i:ke], &k) != nil {
				return nil, false
			}
			key = k
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		vs := skipWS(b, i+1)
		ve, ok := skipValue(b, vs)
		if !ok {
			return nil, false
		}
		out = append(out, member{key: key, start: vs, end: ve})
		i = skipWS(b, ve)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == '}' {
			return out, skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return nil, false
		}
		i = skipWS(b, i+1)
	}
}

// scanArray returns the byte ranges of the elements of the array b holds.
func scanArray(b []byte) ([][2]int, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipWS(b, i+1)
	var out [][2]int
	if i < len(b) && b[i] == ']' {
		return out, skipWS(b, i+1) == len(b)
	}
	for {
		vs := skipWS(b, i)
		ve, ok := skipValue(b, vs)
		if !ok {
			return nil, false
		}
		out = append(out, [2]int{vs, ve})
		i = skipWS(b, ve)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == ']' {
			return out, skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return nil, false
		}
		i++
	}
}

// findMember returns the value of key in ms, or nil.
func findMember(b []byte, ms []member, key string) []byte {
	for _, m := range ms {
		if m.key == key {
			return b[m.start:m.end]
		}
	}
	return nil
}

// stringValue decodes a JSON string value; "" for anything else.
func stringValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// intValue decodes a JSON number value as an int; 0 for anything else.
func intValue(v []byte) int {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil || f < 0 || f > 1<<40 {
		return 0
	}
	return int(f)
}

// spliceMember returns b with the value of the top-level member m replaced
// by v; every other byte of b is kept.
func spliceMember(b []byte, m member, v []byte) []byte {
	out := make([]byte, 0, len(b)-(m.end-m.start)+len(v))
	out = append(out, b[:m.start]...)
	out = append(out, v...)
	return append(out, b[m.end:]...)
}

// marshalNoEscape encodes v like json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
