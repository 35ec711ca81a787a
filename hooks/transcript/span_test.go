package transcript

import (
	"encoding/json"
	"testing"
)

// TestSpanJSONShapes: every span item gives the one neutral document
// shape recall renders, valid JSON whatever bytes the adapter copied out
// of its transcript; items that are not spans give none.
func TestSpanJSONShapes(t *testing.T) {
	cases := []struct {
		it   Item
		kind string
		want string
	}{
		{&TextSpan{Kind: "user", Role: "user", TextJSON: json.RawMessage(`"hi"`)}, "user", `{"kind":"user","role":"user","text":"hi"}`},
		{&ToolUse{ID: "c1", Name: "Read", Input: json.RawMessage(`{"file_path":"/p/a"}`)}, "tool_use",
			`{"kind":"tool_use","role":"assistant","id":"c1","tool":"Read","input":{"file_path":"/p/a"}}`},
		{&ToolResult{ToolUseID: "c1", Tool: "Bash", IsError: true, ContentJSON: json.RawMessage(`"boom"`)}, "tool_result",
			`{"kind":"tool_result","role":"user","tool_use_id":"c1","tool":"Bash","is_error":true,"content":"boom"}`},
		{&CompactSummary{TextJSON: json.RawMessage(`[{"type":"text","text":"sum"}]`)}, "compact_summary", `{"kind":"compact_summary","role":"user","text":"sum"}`},
		// A control byte the scanner let through is re-encoded.
		{&TextSpan{Kind: "assistant", Role: "assistant", TextJSON: json.RawMessage("\"a\x01b\"")}, "assistant", `{"kind":"assistant","role":"assistant","text":"a\u0001b"}`},
	}
	for _, c := range cases {
		got := SpanJSON(c.it)
		if string(got) != c.want || !json.Valid(got) {
			t.Errorf("SpanJSON(%T) = %s, want %s", c.it, got, c.want)
		}
		if k := SpanKind(c.it); k != c.kind {
			t.Errorf("SpanKind(%T) = %q, want %q", c.it, k, c.kind)
		}
	}
	for _, it := range []Item{&FileSeen{}, &CompactBoundary{}} {
		if b := SpanJSON(it); b != nil || SpanKind(it) != "" {
			t.Errorf("%T is no span: %s", it, b)
		}
	}
}

func TestContentText(t *testing.T) {
	for in, want := range map[string]string{
		`"plain"`: "plain",
		`[{"type":"text","text":"a"},{"type":"image"},"b"]`: "a\nb",
		``: "",
	} {
		if got := ContentText([]byte(in)); got != want {
			t.Errorf("ContentText(%s) = %q, want %q", in, got, want)
		}
	}
}
