package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// The hot path looks into requests with jsonscan, not encoding/json. A
// request that is not compacted is forwarded as the client's exact bytes,
// so the proxy only needs to know where the top-level members and the
// messages are, not to decode them: skipping strings and brackets runs at
// memory speed where a full decode of a long conversation costs
// milliseconds. Strings are scanned with jsonscan.Quotes (their escapes
// are not checked): malformed input makes the scan fail (the request then
// passes through untouched), and input the scan accepts but a strict
// parser would not is decoded strictly before anything is rewritten.

// member is one top-level member of a JSON object: its key (decoded) and
// the byte range of its value.
type member struct {
	key        string
	start, end int
}

// scanObject returns the members of the object b holds (b must be exactly
// one object, surrounding white space allowed).
func scanObject(b []byte) ([]member, bool) {
	var out []member
	ok := true
	st := jsonscan.Members(b, func(k, v []byte) bool {
		key := string(k)
		if bytes.IndexByte(k, '\\') >= 0 {
			q := make([]byte, 0, len(k)+2)
			key, ok = jsonscan.String(append(append(append(q, '"'), k...), '"'))
			if !ok {
				return false
			}
		}
		// v is a sub-slice of b: its offset is what its capacity lacks.
		start := cap(b) - cap(v)
		out = append(out, member{key: key, start: start, end: start + len(v)})
		return true
	})
	return out, ok && st == jsonscan.OK
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
	s, _ := jsonscan.String(v)
	return s
}

// intValue decodes a JSON number value as an int (a fraction is dropped);
// 0 for anything else.
func intValue(v []byte) int {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil || f < 0 || f > 1<<40 {
		return 0
	}
	return int(f)
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
