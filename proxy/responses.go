package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The Responses route: POST /v1/responses, OpenAI's Responses API, the only
// wire Codex CLI speaks (0.169.0 refuses wire_api = "chat"), served by
// vLLM, LM Studio and Ollama for local models.
//
// A request's conversation is its "input" array of items; "instructions"
// is its system prompt (a fixed floor, like Anthropic's top-level system,
// never folded). Items are typed, not role-tagged:
//
//   - message (role user, assistant, system or developer; content a string
//     or input_text/output_text/input_image parts). A message without a
//     type but with a role (the API's short form) is a message too.
//   - function_call / function_call_output, custom_tool_call /
//     custom_tool_call_output, local_shell_call / local_shell_call_output,
//     mcp_call, computer_call / computer_call_output: a call opens its
//     call_id, an output answers it. A unit the proxy keeps or folds whole
//     runs until every call it opened is answered, so a call is never
//     separated from its output, whatever the order of parallel calls.
//   - reasoning (a summary and, from OpenAI models, encrypted_content):
//     part of the turn of the item after it, so it is kept or folded with
//     that item and never left at the edge of a unit.
//   - anything else (web_search_call, item_reference, types this proxy
//     does not know): one item, kept or folded whole; folded items are
//     archived byte for byte like every other.
//
// Only "input" is rewritten. The summary goes in as a user message item
// with input_text (the form every server accepts: Codex itself sends its
// context as message items), followed by an assistant output_text
// acknowledgement when the kept turns start with a user message, as on
// the chat route. Summaries are asked of the same backend on the same
// route: a non-streamed /v1/responses request with the summariser prompt
// as instructions and max_output_tokens.
//
// A request naming previous_response_id carries only the new turn: the
// history lives on the server, so there is nothing the proxy could fold.
// It is forwarded as the client's exact bytes, not journaled, and counted
// (Stats.Stateful, "stateful" on the savings log line).
//
// Limits: reasoning items of folded turns are archived but not summarised
// (encrypted_content is opaque, as thinking blocks are on the Anthropic
// route); exact token counts are not asked of the backend for this route
// (no server counts Responses input), so it runs on the calibrated
// estimate and the usage the backend reports; an item_reference to an
// item the server stored is forwarded as it is and counted as its own
// bytes.

// classifyItem is classify for a Responses input item.
func (m *message) classifyItem(ms []member) bool {
	typ := stringValue(findMember(m.raw, ms, "type"))
	role := stringValue(findMember(m.raw, ms, "role"))
	if typ == "" && role != "" {
		typ = "message"
	}
	if typ == "" {
		return false
	}
	m.item = typ
	switch {
	case typ == "message":
		if role == "" {
			return false
		}
		m.role = role
	case typ == "reasoning":
		m.role, m.reasoning = "assistant", true
	case strings.HasSuffix(typ, "_call_output"):
		m.role, m.results = "tool", true
		m.callID = stringValue(findMember(m.raw, ms, "call_id"))
	case strings.HasSuffix(typ, "_call"):
		m.role = "assistant"
		m.callID = stringValue(findMember(m.raw, ms, "call_id"))
		// A call without a call_id (web_search_call) has no output to
		// wait for.
		m.calls = m.callID != ""
	default:
		m.role = "assistant"
	}
	m.classified = true
	return true
}

// responsesGroups partitions Responses items into units kept or folded
// whole: a unit ends only where every call it opened has been answered
// and its last item is not a reasoning item.
func responsesGroups(msgs []message) []group {
	var out []group
	open := map[string]bool{}
	start := 0
	for i := range msgs {
		m := &msgs[i]
		if m.calls {
			open[m.callID] = true
		} else if m.results {
			delete(open, m.callID)
		}
		if len(open) == 0 && !m.reasoning {
			out = append(out, group{start, i + 1})
			start = i + 1
		}
	}
	if start < len(msgs) {
		// Unanswered calls or a trailing reasoning item: one last unit,
		// which the tail always keeps.
		out = append(out, group{start, len(msgs)})
	}
	return out
}

// respItem is a Responses input item, decoded only for items being
// summarised.
type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Action    json.RawMessage `json:"action"`
	Output    json.RawMessage `json:"output"`
}

// parseItem is parse for a Responses input item: its text (for pins) and
// how the summariser sees it.
func (m *message) parseItem() bool {
	var it respItem
	if err := json.Unmarshal(m.raw, &it); err != nil {
		return false
	}
	if it.Type == "" && it.Role != "" {
		it.Type = "message"
	}
	var text, render strings.Builder
	switch {
	case it.Type == "message":
		render.WriteString(it.Role + ":\n")
		for _, b := range contentBlocks(it.Content) {
			switch b.Type {
			case "input_text", "output_text", "text", "":
				if b.Text != "" {
					text.WriteString(b.Text + "\n")
					render.WriteString(b.Text + "\n")
				}
			case "input_image":
				render.WriteString("[image]\n")
			case "input_file":
				render.WriteString("[document]\n")
			case "refusal":
				render.WriteString("[refusal]\n")
			}
		}
	case it.Type == "reasoning":
		// The model's private reasoning: not summarised.
	case strings.HasSuffix(it.Type, "_call_output"):
		render.WriteString("tool result:\n" + clip(textOfContent(it.Output), 4000) + "\n")
	case strings.HasSuffix(it.Type, "_call"):
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + "." + name
		}
		args := it.Arguments
		if args == "" {
			args = it.Input
		}
		if args == "" && len(it.Action) > 0 {
			args = string(it.Action)
		}
		render.WriteString("[tool call " + strings.TrimSpace(name) + " " + clip(args, 1500) + "]\n")
	default:
		render.WriteString("[" + it.Type + " item]\n")
	}
	m.text, m.render, m.parsed = text.String(), render.String(), true
	return true
}

// responsesMessage is a message item of role with one text part.
func responsesMessage(role, text string) []byte {
	part := "input_text"
	if role == "assistant" {
		part = "output_text"
	}
	type textPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, _ := marshalNoEscape(struct {
		Type    string     `json:"type"`
		Role    string     `json:"role"`
		Content []textPart `json:"content"`
	}{"message", role, []textPart{{part, text}}})
	return b
}

// asItem rewrites a chat-shaped {"role","content":string} message the
// compaction built (summary, acknowledgement, recall) as a Responses
// message item; other dialects get it back unchanged.
func asItem(d dialect, msg []byte) []byte {
	if d != responses {
		return msg
	}
	var m struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Role == "" {
		return msg
	}
	return responsesMessage(m.Role, m.Content)
}

// responsesSummaryBody is a summary request on the Responses route.
func responsesSummaryBody(model, system, prompt string, maxTok int) map[string]any {
	return map[string]any{
		"model": model, "instructions": system, "max_output_tokens": maxTok, "temperature": 0.2,
		"stream": false, "store": false,
		"input": []any{map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": prompt}}}},
	}
}

// responsesAnswerText is the text of a non-streamed Responses answer: its
// output message items' output_text parts (or the output_text
// convenience member some servers add).
func responsesAnswerText(raw []byte) string {
	if t := bytes.TrimSpace(raw); bytes.HasPrefix(t, []byte("event:")) || bytes.HasPrefix(t, []byte("data:")) {
		return responsesStreamText(t)
	}
	var a struct {
		Output []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		} `json:"output"`
		OutputText string `json:"output_text"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	var b strings.Builder
	for _, o := range a.Output {
		if o.Type != "message" {
			continue
		}
		for _, c := range contentBlocks(o.Content) {
			if c.Type == "output_text" || c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
	}
	if b.Len() == 0 {
		return a.OutputText
	}
	return b.String()
}

// responsesStreamText is the text of a Responses answer that came as an
// event stream although stream was false (some servers stream always):
// the completed response's output, else the output_text deltas.
func responsesStreamText(raw []byte) string {
	var deltas strings.Builder
	for _, l := range bytes.Split(raw, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(l, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		var ev struct {
			Type     string          `json:"type"`
			Delta    string          `json:"delta"`
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(bytes.TrimSpace(data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			if t := responsesAnswerText(ev.Response); t != "" {
				return t
			}
		}
	}
	return deltas.String()
}
