package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Error is a settings file we refuse to touch: invalid JSON, or a
// shape we cannot merge into with certainty. Line and Col (1-based) locate
// the problem; they are 0 when there is no position.
type Error struct {
	Path      string
	Offset    int64
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	name := e.Path
	if name == "" {
		name = "settings.json"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", name, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", name, e.Msg)
}

func errorAt(path string, doc []byte, off int, format string, a ...any) *Error {
	if off > len(doc) {
		off = len(doc)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(doc[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(doc[:off], '\n')
	return &Error{Path: path, Offset: int64(off), Line: line, Col: col, Msg: fmt.Sprintf(format, a...)}
}

type textSpan struct{ start, end int }

type objMember struct {
	key      string
	keyStart int // the key's opening quote
	keyEnd   int // after its closing quote
	val      textSpan
}

// scanObject lists the members of the object whose '{' is at doc[at], and
// returns the offset of its closing '}'. doc must be valid JSON.
func scanObject(doc []byte, at int) ([]objMember, int, error) {
	dec := json.NewDecoder(bytes.NewReader(doc[at:]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, 0, fmt.Errorf("expected an object at offset %d", at)
	}
	var out []objMember
	prev := at + 1
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, 0, err
		}
		key, _ := t.(string)
		m := objMember{key: key, keyEnd: at + int(dec.InputOffset())}
		m.keyStart = prev
		for m.keyStart < len(doc) && doc[m.keyStart] != '"' {
			m.keyStart++ // whitespace and the comma
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, err
		}
		m.val.end = at + int(dec.InputOffset())
		m.val.start = m.val.end - len(raw)
		prev = m.val.end
		out = append(out, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, err
	}
	return out, at + int(dec.InputOffset()) - 1, nil
}

// scanArray lists the elements of the array whose '[' is at doc[at], and
// returns the offset of its closing ']'.
func scanArray(doc []byte, at int) ([]textSpan, int, error) {
	dec := json.NewDecoder(bytes.NewReader(doc[at:]))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, 0, fmt.Errorf("expected an array at offset %d", at)
	}
	var out []textSpan
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, err
		}
		end := at + int(dec.InputOffset())
		out = append(out, textSpan{end - len(raw), end})
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, err
	}
	return out, at + int(dec.InputOffset()) - 1, nil
}

// JSONKind names the kind of the JSON value whose first byte is b ("an
// object", "a string", ...), for messages that say what a file or a
// payload holds instead of what was expected.
func JSONKind(b byte) string {
	switch b {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// document is a parsed settings.json: its bytes, the top-level members
// and the hooks tree, each node with its span in the bytes, and the
// file's layout (so that what we add looks like what is there).
type document struct {
	path       string
	doc        []byte
	empty      bool // no file, or only whitespace: treated as {}
	top        []objMember
	topOpen    int // '{'
	topClose   int // '}'
	hooksAt    int // index in top of "hooks", -1 when absent
	hooksClose int // the '}' of the hooks object
	events     []event

	multiline bool   // members on lines of their own (else one-line JSON)
	unit      string // one level of indentation
	sep       string // between a key and its value, as the file writes it
	nl        string // "\n", or "\r\n" in a CRLF file
}

// parseObjectFile scans a JSON file whose top level must be an
// object (what names it in messages: "the settings are"): its
// members with their spans and its layout, so that changes can be
// spliced in looking like the rest. Whitespace only (or nothing) is an
// empty document, treated as {}.
func parseObjectFile(path string, doc []byte, what string) (*document, error) {
	s := &document{path: path, doc: doc, hooksAt: -1, multiline: true, unit: "  ", sep: ": ", nl: "\n"}
	if bytes.Contains(doc, []byte("\r\n")) {
		s.nl = "\r\n"
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		s.empty = true
		return s, nil
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := int(se.Offset)
			if off > 0 && !strings.Contains(se.Error(), "unexpected end") {
				off-- // Offset is after the offending byte; at EOF, the end
			}
			return nil, errorAt(path, doc, off, "invalid JSON: %v", se)
		}
		return nil, &Error{Path: path, Msg: "invalid JSON: " + err.Error()}
	}
	s.topOpen = len(doc) - len(bytes.TrimLeft(doc, " \t\r\n"))
	if doc[s.topOpen] != '{' {
		return nil, errorAt(path, doc, s.topOpen, "%s %s, expected an object", what, JSONKind(doc[s.topOpen]))
	}
	var err error
	if s.top, s.topClose, err = scanObject(doc, s.topOpen); err != nil {
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	if len(s.top) > 0 {
		first := s.top[0]
		lead := doc[s.topOpen+1 : first.keyStart]
		if i := bytes.LastIndexByte(lead, '\n'); i >= 0 {
			if u := string(lead[i+1:]); u != "" {
				s.unit = u
			}
		} else {
			s.multiline = false
		}
		s.sep = string(doc[first.keyEnd:first.val.start])
	}
	return s, nil
}

func (s *document) text(sp textSpan) []byte { return s.doc[sp.start:sp.end] }

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep && and > readable in commands
	if err := enc.Encode(v); err != nil {
		panic(err) // plain structs of strings and ints
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// splicer rebuilds one object or array of the document with some items
// dropped, replaced or appended, and every other byte, whitespace and
// commas included, as it was. Appended items copy the layout of the last
// item (its line break and indentation).
type splicer struct {
	s           *document
	open, close byte
	items       []*spliceItem
	lastPost    []byte // between the last item and the closing bracket
	newLead     []byte // before an appended item
	prefix      string // indentation of an appended item
	compact     bool   // items on one line: appended items compact too
}

type spliceItem struct {
	lead []byte // between the preceding '[', '{' or ',' and the item
	text []byte
	post []byte // between the item and its ',' (nil for the last item)
	gone bool
}

// newSplicer takes the container at doc[openAt:closeAt+1] whose items
// (members from the key on, or elements) are spans.
func (s *document) newSplicer(openAt, closeAt int, spans []textSpan) *splicer {
	sp := &splicer{s: s, open: s.doc[openAt], close: s.doc[closeAt], compact: !s.multiline}
	prev := openAt + 1
	for i, x := range spans {
		it := &spliceItem{lead: s.doc[prev:x.start], text: s.doc[x.start:x.end]}
		if i < len(spans)-1 {
			c := x.end
			for s.doc[c] != ',' {
				c++
			}
			it.post = s.doc[x.end:c]
			prev = c + 1
		} else {
			sp.lastPost = s.doc[x.end:closeAt]
		}
		sp.items = append(sp.items, it)
	}
	switch {
	case len(spans) > 0:
		sp.newLead = sp.items[len(sp.items)-1].lead
		if i := bytes.LastIndexByte(sp.newLead, '\n'); i >= 0 {
			sp.prefix, sp.compact = string(sp.newLead[i+1:]), false
		} else {
			sp.compact = true
		}
	case s.multiline:
		ind := s.lineIndent(openAt)
		sp.prefix = ind + s.unit
		sp.newLead = []byte(s.nl + sp.prefix)
		sp.lastPost = []byte(s.nl + ind)
	}
	return sp
}

func memberSpans(ms []objMember) []textSpan {
	out := make([]textSpan, len(ms))
	for i, m := range ms {
		out[i] = textSpan{m.keyStart, m.val.end}
	}
	return out
}

// format lays out compact JSON for an appended item.
func (sp *splicer) format(v []byte) []byte {
	if sp.compact {
		return v
	}
	return sp.s.indent(v, sp.prefix)
}

// formatAt lays out compact JSON replacing item i.
func (sp *splicer) formatAt(i int, v []byte) []byte {
	lead := sp.items[i].lead
	j := bytes.LastIndexByte(lead, '\n')
	if j < 0 {
		return v
	}
	return sp.s.indent(v, string(lead[j+1:]))
}

func (sp *splicer) add(text []byte) {
	sp.items = append(sp.items, &spliceItem{lead: sp.newLead, text: text})
}

func (sp *splicer) live() int {
	n := 0
	for _, it := range sp.items {
		if !it.gone {
			n++
		}
	}
	return n
}

func (sp *splicer) bytes() []byte {
	var live []*spliceItem
	for _, it := range sp.items {
		if !it.gone {
			live = append(live, it)
		}
	}
	var b bytes.Buffer
	b.WriteByte(sp.open)
	for k, it := range live {
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(it.lead)
		b.Write(it.text)
		if k < len(live)-1 {
			b.Write(it.post)
		} else {
			b.Write(sp.lastPost)
		}
	}
	b.WriteByte(sp.close)
	return b.Bytes()
}

// indent lays out compact JSON as a value whose line starts with prefix.
func (s *document) indent(v []byte, prefix string) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, v, prefix, s.unit); err != nil {
		panic(err) // v is built from valid JSON
	}
	if s.nl != "\n" {
		return bytes.ReplaceAll(b.Bytes(), []byte("\n"), []byte(s.nl))
	}
	return b.Bytes()
}

// lineIndent returns the leading whitespace of the line holding off.
func (s *document) lineIndent(off int) string {
	start := bytes.LastIndexByte(s.doc[:off], '\n') + 1
	end := start
	for end < off && (s.doc[end] == ' ' || s.doc[end] == '\t') {
		end++
	}
	return string(s.doc[start:end])
}

// member joins a key (as written, or encoded) and a value.
func (s *document) member(key string, raw []byte, val []byte) []byte {
	if raw == nil {
		raw, _ = json.Marshal(key)
	}
	return append(append(append([]byte{}, raw...), s.sep...), val...)
}
