package gitstore

// Dedupe: a record whose key the writer holds already is not stored again.

import (
	"bytes"
	"context"
	"encoding/json"
)

func hasKeys(evs []Event) bool {
	for _, e := range evs {
		if e.Key != "" {
			return true
		}
	}
	return false
}

// dedupe drops events whose key is in stored or occurs earlier in evs. It
// adds the keys it keeps to stored.
func dedupe(evs []Event, stored map[string]bool) ([]Event, int) {
	out := make([]Event, 0, len(evs))
	n := 0
	for _, e := range evs {
		if e.Key != "" {
			if stored[e.Key] {
				n++
				continue
			}
			stored[e.Key] = true
		}
		out = append(out, e)
	}
	return out, n
}

// fewKeys is how many distinct keys storedKeys looks up one by one in the
// writer's index bytes; above it, one pass collects every stored key.
const fewKeys = 16

// storedKeys returns which of evs' dedupe keys writer already holds at
// head h (with more than fewKeys distinct keys: every key it holds). A
// hook's append carries one or two keys and a writer may hold tens of
// thousands of lines: each key is then searched for in the mapped index as
// a byte string (`"key":"<k>"`), which skips every line that does not
// hold it; a sweep's thousands of keys are checked against one set.
func (s *Store) storedKeys(ctx context.Context, writer string, h head, evs []Event) (map[string]bool, error) {
	set := map[string]bool{}
	if h.Commit == "" {
		return set, nil
	}
	var keys []string
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Key != "" && !seen[e.Key] {
			seen[e.Key] = true
			keys = append(keys, e.Key)
		}
	}
	if data, release, ok := s.currentIndex(writer, h.Commit); ok {
		defer release()
		if len(keys) <= fewKeys {
			for _, k := range keys {
				needle := append([]byte(`"key":`), jsonString(k)...)
				scanLinesAt(data, needle, func(start int) {
					if got, ok := lineKey(lineAt(data, start)); ok && got == k {
						set[k] = true
					}
				})
			}
			return set, nil
		}
		scanLines(data, nil, func(l []byte) {
			if k, ok := lineKey(l); ok {
				set[k] = true
			}
		})
		return set, nil
	}
	lines, err := s.writerLines(ctx, writer, h)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if k, ok := lineKey(l); ok {
			set[k] = true
		}
	}
	return set, nil
}

// lineKey extracts a stored line's dedupe key: the top-level "key" member.
// It scans for the canonical `"key":"` member instead of decoding the
// line: a sweep checks thousands of keys against thousands of lines, and
// this keeps that linear. Inside a string a quote is escaped, so a bare
// `"key":"` is always a member name; it is the event's own unless an
// object or array opens before it (an unknown field such as
// {"attestation":{"key":...}}), and only then is the line walked member by
// member. A key without escapes (a tool_use_id) is taken as it is; one with
// escapes is unquoted by encoding/json.
func lineKey(l []byte) (string, bool) {
	needle := []byte(`"key":"`)
	i := bytes.Index(l, needle)
	if i < 0 {
		return "", false
	}
	if len(l) > 0 && bytes.ContainsAny(l[1:i], "{[") {
		if i = topLevelMember(l, "key"); i < 0 || !bytes.HasPrefix(l[i:], needle) {
			return "", false
		}
	}
	rest := l[i+len(needle)-1:] // from the opening quote
	end, escaped := 1, false
	for end < len(rest) && rest[end] != '"' {
		if rest[end] == '\\' {
			end++
			escaped = true
		}
		end++
	}
	if end >= len(rest) {
		return "", false
	}
	if !escaped {
		return string(rest[1:end]), true
	}
	var k string
	if err := json.Unmarshal(rest[:end+1], &k); err != nil {
		return "", false
	}
	return k, true
}

// topLevelMember returns the offset of the top-level member named name
// (its opening quote) in the JSON object l, or -1.
func topLevelMember(l []byte, name string) int {
	want := `"` + name + `":`
	depth, inStr := 0, false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			if depth == 1 && bytes.HasPrefix(l[i:], []byte(want)) {
				return i
			}
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}
