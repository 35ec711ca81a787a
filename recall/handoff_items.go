package recall

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// hoItem is one thing a session said or did, in the neutral shape both a
// harness's spans and the messages of proxy spans are read into, so that
// the hand-off's rules apply to both alike.
type hoItem struct {
	id     string // the span that holds it (WRITER#SEQ, or a proxy span's sp- id)
	ts     time.Time
	agent  string
	kind   string // a Kind*, or kindPins
	locked bool
	text   string // a prompt's, answer's or summary's text; a result's content
	callID string // a tool call's id; a result's call id
	tool   string
	target string // a tool call's target (see the rules)
	path   string // the event's path
	// isError: a tool result marked is_error
	isError bool
	pins    []string // kindPins: a proxy span's pinned facts
	// meta is the document of an item not read yet (assistant texts are
	// read only when reported: Index.loadItem)
	meta *docMeta
}

// kindPins is the item of a proxy span's pinned facts.
const kindPins = "pins"

// spanItem fills it from a harness span's document (the neutral shape of
// hooks/transcript). It returns false for a document it cannot read.
func spanItem(it *hoItem, data []byte) bool {
	var doc struct {
		Kind      string          `json:"kind"`
		Text      json.RawMessage `json:"text"`
		ID        string          `json:"id"`
		Tool      string          `json:"tool"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	switch it.kind {
	case KindToolUse:
		it.callID = doc.ID
		if doc.Tool != "" {
			it.tool = doc.Tool
		}
		it.target = targetOf(it.path, doc.Input)
	case KindToolResult:
		it.callID, it.isError = doc.ToolUseID, doc.IsError
		if doc.Tool != "" && it.tool == "" {
			it.tool = doc.Tool
		}
		it.text = contentText(doc.Content)
	default:
		if doc.Text != nil {
			it.text = contentText(doc.Text)
		} else if doc.Content != nil {
			it.text = contentText(doc.Content)
		}
	}
	return true
}

// targetOf is a tool call's target: its file (the event's path, else the
// input's), else its command, else its input as compact JSON.
func targetOf(path string, input json.RawMessage) string {
	if path != "" {
		return path
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(input, &in) != nil {
		return compactJSON(input)
	}
	str := func(k string) string {
		var s string
		if json.Unmarshal(in[k], &s) == nil {
			return s
		}
		var a []string
		if json.Unmarshal(in[k], &a) == nil {
			return strings.Join(a, " ")
		}
		return ""
	}
	for _, k := range []string{"file_path", "path", "notebook_path", "filePath", "command", "cmd"} {
		if s := str(k); s != "" {
			return s
		}
	}
	return compactJSON(input)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// proxyItems reads a proxy span's folded messages into items (each with
// the span's id), then its summary and pins. A message whose index an
// earlier span of the session already gave (seen) is skipped: the
// client resends its history, so an index names one message.
func proxyItems(base hoItem, data []byte, seen map[int]bool) []hoItem {
	var sp proxyDoc
	if json.Unmarshal(data, &sp) != nil {
		return nil
	}
	msgs := slices.Clone(sp.Messages)
	slices.SortStableFunc(msgs, func(a, b proxyMsg) int { return a.Index - b.Index })
	var out []hoItem
	mk := func(kind, text string) hoItem {
		it := base
		it.kind, it.text, it.tool, it.path = kind, text, "", ""
		return it
	}
	for _, pm := range msgs {
		if pm.Message == nil || seen[pm.Index] {
			continue
		}
		seen[pm.Index] = true
		var msg struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(pm.Message, &msg) != nil {
			continue
		}
		textKind := ""
		switch msg.Role {
		case "user":
			textKind = KindUserPrompt
		case "assistant":
			textKind = KindAssistantText
		case "tool": // OpenAI: a tool call's result (no error mark)
			it := mk(KindToolResult, contentText(msg.Content))
			it.callID = msg.ToolCallID
			out = append(out, it)
			continue
		default:
			continue // system and developer messages are the client's setup
		}
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			out = append(out, mk(textKind, s))
		} else {
			var blocks []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				IsError   bool            `json:"is_error"`
				Content   json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(msg.Content, &blocks)
			var texts []string
			for _, b := range blocks {
				switch b.Type {
				case "text", "input_text", "output_text":
					texts = append(texts, b.Text)
				case "tool_use":
					it := mk(KindToolUse, "")
					it.callID, it.tool, it.target = b.ID, b.Name, targetOf("", b.Input)
					out = append(out, it)
				case "tool_result":
					it := mk(KindToolResult, contentText(b.Content))
					it.callID, it.isError = b.ToolUseID, b.IsError
					out = append(out, it)
				}
			}
			if len(texts) > 0 {
				out = append(out, mk(textKind, strings.Join(texts, "\n")))
			}
		}
		for _, tc := range msg.ToolCalls {
			it := mk(KindToolUse, "")
			it.callID, it.tool, it.target = tc.ID, tc.Function.Name, targetOf("", json.RawMessage(tc.Function.Arguments))
			out = append(out, it)
		}
	}
	if sp.Summary != "" {
		out = append(out, mk(KindCompactSummary, sp.Summary))
	}
	if len(sp.Pins) > 0 {
		it := mk(kindPins, "")
		it.pins = sp.Pins
		out = append(out, it)
	}
	return out
}
