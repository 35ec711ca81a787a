package stubbackend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Responses API (POST /v1/responses), as vLLM, LM Studio and Ollama
// serve it and Codex CLI speaks it: input items are templated as chat
// messages (a message by its role and text; a call as an assistant line
// "[call NAME ARGS]"; an output as a tool line "[result OUTPUT]";
// reasoning by its summary text), instructions as the system.

// respBody is the part of a Responses request the stub reads.
type respBody struct {
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Input        json.RawMessage   `json:"input"`
	Tools        json.RawMessage   `json:"tools"`
	Stream       bool              `json:"stream"`
	Previous     string            `json:"previous_response_id"`
	items        []json.RawMessage // Input when it is an array
}

// ResponsesMessages turns Responses input items into the chat-shaped
// messages ({"role","content"}) the stub templates and Reply receives.
func ResponsesMessages(items []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(items))
	for _, raw := range items {
		var it struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
			Output    json.RawMessage `json:"output"`
			Summary   []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		json.Unmarshal(raw, &it)
		role, text := it.Role, ""
		switch {
		case it.Type == "message" || it.Type == "" && it.Role != "":
			text = contentText(it.Content)
		case it.Type == "reasoning":
			role = "assistant"
			for _, s := range it.Summary {
				text += s.Text
			}
		case strings.HasSuffix(it.Type, "_call_output"):
			role, text = "tool", "[result "+contentText(it.Output)+"]"
		case strings.HasSuffix(it.Type, "_call"):
			role, text = "assistant", "[call "+it.Name+" "+it.Arguments+it.Input+"]"
		default:
			role, text = "assistant", "["+it.Type+"]"
		}
		b, _ := json.Marshal(map[string]string{"role": role, "content": text})
		out = append(out, b)
	}
	return out
}

func (s *Server) responses(w http.ResponseWriter, rec *Request) {
	var rb respBody
	if err := json.Unmarshal(rec.Body, &rb); err != nil || len(rb.Input) == 0 {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "invalid request body", "type": "invalid_request_error"}})
		return
	}
	var text string
	if json.Unmarshal(rb.Input, &text) == nil {
		item, _ := json.Marshal(map[string]string{"role": "user", "content": text})
		rb.items = []json.RawMessage{item}
	} else if json.Unmarshal(rb.Input, &rb.items) != nil {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "input must be a string or an array", "type": "invalid_request_error"}})
		return
	}
	msgs := ResponsesMessages(rb.items)
	cb := chatBody{Model: rb.Model, Messages: msgs, Tools: rb.Tools}
	sys, _ := json.Marshal(rb.Instructions)
	cb.System = sys
	rec.Summary = isSummary(rec)
	rec.Prompt = promptTokens(&cb)
	if rec.Summary {
		if s.SummaryStatus != 0 {
			writeJSON(w, s.SummaryStatus, map[string]any{"error": map[string]any{"message": "summary refused by the stub"}})
			return
		}
		prompt := ""
		if len(msgs) > 0 {
			_, prompt = messageText(msgs[len(msgs)-1])
		}
		answer := DefaultSummary(prompt)
		if s.Summary != nil {
			answer = s.Summary(rec, prompt)
		}
		writeJSON(w, 200, responseObject("resp_stub_summary", rb.Model, answer, rec.Prompt))
		return
	}
	if s.Window > 0 && rec.Prompt > s.Window {
		s.overflow(w, OpenAI, rec.Prompt)
		return
	}
	answer := s.reply(rec, msgs)
	id := fmt.Sprintf("resp_stub_%d", len(s.Requests()))
	if !rb.Stream {
		writeJSON(w, 200, responseObject(id, rb.Model, answer, rec.Prompt))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	seq := 0
	send := func(event string, data map[string]any) {
		data["type"], data["sequence_number"] = event, seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		fl.Flush()
	}
	send("response.created", map[string]any{"response": map[string]any{"id": id, "status": "in_progress", "output": []any{}}})
	send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "message", "id": "msg_" + id, "role": "assistant", "status": "in_progress", "content": []any{}}})
	for _, part := range splitParts(answer, 3) {
		send("response.output_text.delta", map[string]any{"item_id": "msg_" + id, "output_index": 0, "content_index": 0, "delta": part})
	}
	obj := responseObject(id, rb.Model, answer, rec.Prompt)
	send("response.output_item.done", map[string]any{"output_index": 0, "item": obj["output"].([]any)[0]})
	if s.NoUsage {
		delete(obj, "usage")
	}
	send("response.completed", map[string]any{"response": obj})
}

// responseObject is a completed Responses answer of one output message.
func responseObject(id, model, text string, prompt int) map[string]any {
	return map[string]any{
		"id": id, "object": "response", "status": "completed", "model": model,
		"output": []any{map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
		"usage": map[string]any{"input_tokens": prompt, "output_tokens": Tokens(text), "total_tokens": prompt + Tokens(text),
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}},
	}
}
