package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// SpanJSON is the content archived for a span item: compact JSON
// {"kind","role",...} with the text, the tool call or the tool result. It
// returns nil for items that are not spans. The JSON is always valid (raw
// values from the transcript are checked and re-encoded when needed).
func SpanJSON(it Item) []byte {
	var b []byte
	str := func(k, v string) {
		b = append(b, ',')
		b = append(b, jsonscan.Quote(k)...)
		b = append(b, ':')
		b = append(b, jsonscan.Quote(v)...)
	}
	raw := func(k string, v []byte) {
		b = append(b, ',')
		b = append(b, jsonscan.Quote(k)...)
		b = append(b, ':')
		b = append(b, SafeJSON(v)...)
	}
	head := func(kind, role string) {
		b = append(b, `{"kind":`...)
		b = append(b, jsonscan.Quote(kind)...)
		str("role", role)
	}
	switch x := it.(type) {
	case *TextSpan:
		b = make([]byte, 0, len(x.TextJSON)+48)
		head(x.Kind, x.Role)
		raw("text", x.TextJSON)
	case *ToolUse:
		b = make([]byte, 0, len(x.Input)+96)
		head("tool_use", "assistant")
		str("id", x.ID)
		str("tool", x.Name)
		raw("input", x.Input)
	case *ToolResult:
		b = make([]byte, 0, len(x.ContentJSON)+128)
		head("tool_result", "user")
		str("tool_use_id", x.ToolUseID)
		if x.Tool != "" {
			str("tool", x.Tool)
		}
		if x.IsError {
			b = append(b, `,"is_error":true`...)
		}
		raw("content", x.ContentJSON)
	case *CompactSummary:
		b = make([]byte, 0, len(x.TextJSON)+64)
		head("compact_summary", "user")
		if len(x.TextJSON) > 0 && x.TextJSON[0] == '"' {
			raw("text", x.TextJSON)
		} else {
			str("text", x.Text())
		}
	default:
		return nil
	}
	return append(b, '}')
}

// SpanKind is the "kind" of a span item ("" for other items).
func SpanKind(it Item) string {
	switch x := it.(type) {
	case *TextSpan:
		return x.Kind
	case *ToolUse:
		return "tool_use"
	case *ToolResult:
		return "tool_result"
	case *CompactSummary:
		return "compact_summary"
	}
	return ""
}

// ContentText returns a content value's text: the string, or the "text"
// members of an array's blocks joined by newlines.
func ContentText(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		return stringValue(raw)
	}
	var parts []string
	jsonscan.Elems(raw, func(v []byte) bool {
		if len(v) > 0 && v[0] == '"' {
			parts = append(parts, stringValue(v))
			return true
		}
		if t := jsonscan.Field(v, "text"); t != nil {
			parts = append(parts, stringValue(t))
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// stringValue decodes raw when it is a string ("" otherwise).
func stringValue(raw []byte) string {
	s, _ := jsonscan.String(raw)
	return s
}

// SafeJSON returns raw (a value the scanner accepted) as valid JSON: as it
// is when it holds no control bytes and is valid UTF-8; compacted when
// that makes it so (white space between tokens); else re-encoded (a string
// with its bytes coerced to UTF-8, anything else as a JSON string of its
// bytes).
func SafeJSON(raw []byte) []byte {
	clean := true
	for _, c := range raw {
		if c < 0x20 {
			clean = false
			break
		}
	}
	if clean && utf8.Valid(raw) {
		if len(raw) == 0 {
			return []byte("null")
		}
		return raw
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err == nil && utf8.Valid(buf.Bytes()) {
		return buf.Bytes()
	}
	if s, ok := jsonscan.String(raw); ok {
		return jsonscan.Quote(s)
	}
	return jsonscan.Quote(string(raw))
}
