package codextest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiRequest is the part of a Responses API request the model reads.
type apiRequest struct {
	Model          string            `json:"model"`
	Input          []apiItem         `json:"input"`
	Tools          []json.RawMessage `json:"tools"`
	Stream         bool              `json:"stream"`
	ClientMetadata map[string]any    `json:"client_metadata"`
}

// apiItem is one input item: a message, a tool call the model made
// earlier, or a tool call's output.
type apiItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // message: a string or parts
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Arguments string          `json:"arguments,omitempty"` // function_call
	Input     string          `json:"input,omitempty"`     // custom_tool_call
	CallID    string          `json:"call_id,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"` // a string or parts
}

type apiPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// text flattens a message's content or a tool output (a string or a list
// of parts with text), parts joined by newlines.
func flatten(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []apiPart
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// reply is one model answer: a tool call or a final text.
type reply struct {
	Text      string // final text (Kind "text")
	Kind      string // "text", "function_call" or "custom_tool_call"
	Name      string
	Namespace string
	CallID    string
	Args      string // function_call arguments (JSON) or custom tool input
}

type usage struct{ Input, Output int }

// writeSSE answers with the Responses API event stream Codex 0.169.0
// accepts: response.created, the output item (added, deltas, done) and
// response.completed carrying usage. Codex's auto compaction reads
// usage.input_tokens.
func writeSSE(w http.ResponseWriter, respID string, seq int, r reply, u usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	send("response.created", map[string]any{"response": map[string]any{"id": respID, "status": "in_progress", "output": []any{}}})
	switch r.Kind {
	case "function_call":
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", seq), "call_id": r.CallID,
			"name": r.Name, "arguments": r.Args, "status": "completed"}
		if r.Namespace != "" {
			item["namespace"] = r.Namespace
		}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	case "custom_tool_call":
		item := map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_%d", seq), "call_id": r.CallID,
			"name": r.Name, "input": r.Args, "status": "completed"}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	default:
		id := fmt.Sprintf("msg_%d", seq)
		send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
		send("response.output_text.delta", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "delta": r.Text})
		send("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "id": id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}}}})
	}
	send("response.completed", map[string]any{"response": map[string]any{
		"id": respID, "status": "completed", "output": []any{},
		"usage": map[string]any{
			"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": u.Input + u.Output,
		},
	}})
}
