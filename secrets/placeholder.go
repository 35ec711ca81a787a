package secrets

import (
	"bytes"
	"strings"
)

// A placeholder stands in the stored text for one redacted secret:
//
//	[secret:KIND:ID]
//
// KIND is the Finding's kind (lower-case letters, digits and '-'), ID is
// 8 to 32 lower-case hex digits chosen by the caller (gitstore uses a
// keyed hash, so the id says nothing about the value to someone without
// the key). A placeholder holds no byte that JSON escapes, so it can
// replace a value inside a JSON string.

// Secret is one redacted value: the placeholder id and kind that stand
// for it and the value's exact bytes.
type Secret struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Value []byte `json:"value"`
}

// Ref is one placeholder found in a text.
type Ref struct {
	Start, End int // text[Start:End] is the whole "[secret:KIND:ID]"
	Kind, ID   string
}

// Placeholder returns "[secret:KIND:ID]".
func Placeholder(kind, id string) string { return "[secret:" + kind + ":" + id + "]" }

// Redact replaces each finding of fs (sorted, not overlapping, as Scan
// returns them) in text by the placeholder of its kind and id(kind,
// value), and returns the new text and the secrets replaced, in order.
// text is not modified. With no findings it returns text itself.
func Redact(text []byte, fs []Finding, id func(kind string, value []byte) string) ([]byte, []Secret) {
	if len(fs) == 0 {
		return text, nil
	}
	out := make([]byte, 0, len(text)+len(fs)*24)
	sec := make([]Secret, 0, len(fs))
	last := 0
	for _, f := range fs {
		if f.Start < last || f.End > len(text) || f.Start >= f.End {
			continue // not sorted or out of range: leave it (never corrupt the text)
		}
		v := text[f.Start:f.End]
		pid := id(f.Kind, v)
		out = append(out, text[last:f.Start]...)
		out = append(out, Placeholder(f.Kind, pid)...)
		sec = append(sec, Secret{ID: pid, Kind: f.Kind, Value: append([]byte(nil), v...)})
		last = f.End
	}
	out = append(out, text[last:]...)
	return out, sec
}

const placeholderOpen = "[secret:"

// Placeholders returns the well-formed placeholders in text, in order.
func Placeholders(text []byte) []Ref {
	var out []Ref
	for i := 0; ; {
		j := bytes.Index(text[i:], []byte(placeholderOpen))
		if j < 0 {
			return out
		}
		start := i + j
		end := placeholderEnd(text, start)
		if end == 0 {
			i = start + 1
			continue
		}
		p := start + len(placeholderOpen)
		k := p + bytes.IndexByte(text[p:end], ':')
		out = append(out, Ref{Start: start, End: end, Kind: string(text[p:k]), ID: string(text[k+1 : end-1])})
		i = end
	}
}

// placeholderEnd returns the index after the well-formed placeholder that
// starts at text[start], or 0 when none starts there.
func placeholderEnd(text []byte, start int) int {
	if !bytes.HasPrefix(text[start:], []byte(placeholderOpen)) {
		return 0
	}
	p := start + len(placeholderOpen)
	k := p
	for k < len(text) && (text[k] >= 'a' && text[k] <= 'z' || text[k] >= '0' && text[k] <= '9' || text[k] == '-') {
		k++
	}
	if k == p || k-p > 64 || k >= len(text) || text[k] != ':' {
		return 0
	}
	q := k + 1
	m := q
	for m < len(text) && (text[m] >= 'a' && text[m] <= 'f' || text[m] >= '0' && text[m] <= '9') {
		m++
	}
	if n := m - q; n < 8 || n > 32 || m >= len(text) || text[m] != ']' {
		return 0
	}
	return m + 1
}

// Reveal replaces every placeholder whose id lookup knows (for the same
// kind) by the value, and returns the text and how many were put back.
// Unknown placeholders stay as they are. With the secrets Redact returned,
// Reveal(Redact(t)) == t byte for byte.
func Reveal(text []byte, lookup func(kind, id string) ([]byte, bool)) ([]byte, int) {
	refs := Placeholders(text)
	if len(refs) == 0 {
		return text, 0
	}
	out := make([]byte, 0, len(text))
	last, n := 0, 0
	for _, r := range refs {
		v, ok := lookup(r.Kind, r.ID)
		if !ok {
			continue
		}
		out = append(out, text[last:r.Start]...)
		out = append(out, v...)
		last = r.End
		n++
	}
	if n == 0 {
		return text, 0
	}
	return append(out, text[last:]...), n
}

// Mask returns value as recall and the MCP server print it: the first 3
// and last 4 bytes around "****"; a value of 10 bytes or fewer is "****"
// whole, so that nothing of a short secret shows.
func Mask(value []byte) string {
	if len(value) <= 10 {
		return "****"
	}
	return string(value[:3]) + "****" + string(value[len(value)-4:])
}

// MaskString returns s with every secret ScanName finds in it replaced by
// its Mask: a name (a path, a ref, a session id) that holds a secret can
// be printed this way. A string with no secret comes back as it is.
func MaskString(s string) string {
	fs := ScanName([]byte(s))
	if len(fs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, f := range fs {
		b.WriteString(s[last:f.Start])
		b.WriteString(Mask([]byte(s[f.Start:f.End])))
		last = f.End
	}
	b.WriteString(s[last:])
	return b.String()
}
