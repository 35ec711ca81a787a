package claudetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiRequest is the part of an Anthropic Messages request the model reads.
type apiRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	System   json.RawMessage   `json:"system"`
	Messages []apiMessage      `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type apiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

type apiBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: string or blocks
	IsError   bool            `json:"is_error,omitempty"`
}

// blocks returns the message content as blocks; a string content is one
// text block.
func (m apiMessage) blocks() []apiBlock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []apiBlock{{Type: "text", Text: s}}
	}
	var bs []apiBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// userText is the text of a user message outside tool results: the prompt,
// system reminders, command output and notifications.
func (m apiMessage) userText() string {
	if m.Role != "user" {
		return ""
	}
	return m.text()
}

// text is the text blocks of the message, one per line.
func (m apiMessage) text() string {
	var b strings.Builder
	for _, bl := range m.blocks() {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// resultText flattens a tool_result's content (a string or text blocks).
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []apiBlock
	_ = json.Unmarshal(raw, &bs)
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// systemText flattens the system prompt (a string or text blocks).
func systemText(raw json.RawMessage) string { return resultText(raw) }

// reply is one assistant message the model sends back.
type reply struct {
	Text  string          // a text block (may be empty when a tool is called)
	Tool  string          // tool name; empty for a final text
	ID    string          // tool_use id
	Input json.RawMessage // tool input
}

func (r reply) stopReason() string {
	if r.Tool != "" {
		return "tool_use"
	}
	return "end_turn"
}

func (r reply) content() []map[string]any {
	var c []map[string]any
	if r.Text != "" || r.Tool == "" {
		c = append(c, map[string]any{"type": "text", "text": r.Text})
	}
	if r.Tool != "" {
		c = append(c, map[string]any{"type": "tool_use", "id": r.ID, "name": r.Tool, "input": r.Input})
	}
	return c
}

// writeJSONReply answers a non-streamed request.
func writeJSONReply(w http.ResponseWriter, msgID, model string, r reply, inTokens int) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content":       r.content(),
		"stop_reason":   r.stopReason(),
		"stop_sequence": nil,
		"usage":         map[string]any{"input_tokens": inTokens, "output_tokens": outTokens(r)},
	})
}

func outTokens(r reply) int { return 1 + (len(r.Text)+len(r.Input))/4 }

// writeSSEReply answers a streamed request with the event sequence the
// Messages API sends.
func writeSSEReply(w http.ResponseWriter, msgID, model string, r reply, inTokens int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": inTokens, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	idx := 0
	if r.Text != "" || r.Tool == "" {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
			"delta": map[string]any{"type": "text_delta", "text": r.Text}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if r.Tool != "" {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": r.ID, "name": r.Tool, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(r.Input)}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outTokens(r)}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
