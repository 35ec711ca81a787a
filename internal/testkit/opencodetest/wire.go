package opencodetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiRequest is the part of a chat completions request the model reads.
type apiRequest struct {
	Model    string            `json:"model"`
	Messages []apiMessage      `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   bool              `json:"stream"`
}

type apiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string or parts
	ToolCalls  []apiToolCall   `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type apiToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// text flattens a message's content: a string, or parts with text.
func (m apiMessage) text() string {
	if len(m.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// reply is one model answer: a tool call or a text.
type reply struct {
	Text   string
	Tool   string
	CallID string
	Args   string
}

// writeSSE answers with the chat.completion.chunk stream of an
// OpenAI-compatible server: the tool call's name (arguments empty), its
// arguments, the finish reason, a usage chunk, [DONE]. A text is one
// content delta.
func writeSSE(w http.ResponseWriter, id, model string, r reply, promptTokens int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(choices []any, usage map[string]any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
	}
	finish := "stop"
	if r.Tool != "" {
		finish = "tool_calls"
		send(choice(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": r.CallID, "type": "function", "function": map[string]any{"name": r.Tool, "arguments": ""}}}}, nil), nil)
		send(choice(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "function": map[string]any{"arguments": r.Args}}}}, nil), nil)
	} else {
		send(choice(map[string]any{"role": "assistant", "content": r.Text}, nil), nil)
	}
	send(choice(map[string]any{}, finish), nil)
	out := 1 + (len(r.Text)+len(r.Args))/4
	send([]any{}, map[string]any{"prompt_tokens": promptTokens, "completion_tokens": out, "total_tokens": promptTokens + out})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// writeJSON answers a request that did not ask for a stream.
func writeJSON(w http.ResponseWriter, id, model string, r reply, promptTokens int) {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	finish := "stop"
	if r.Tool != "" {
		finish = "tool_calls"
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": r.CallID, "type": "function",
			"function": map[string]any{"name": r.Tool, "arguments": r.Args}}}
	}
	out := 1 + (len(r.Text)+len(r.Args))/4
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": promptTokens, "completion_tokens": out, "total_tokens": promptTokens + out},
	})
}
