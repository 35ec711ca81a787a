package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// dialect is the wire format of a compactable route.
type dialect uint8

const (
	openAI    dialect = iota + 1 // POST /v1/chat/completions
	anthropic                    // POST /v1/messages
	responses                    // POST /v1/responses (OpenAI Responses API)
)

func (d dialect) String() string {
	switch d {
	case anthropic:
		return "anthropic"
	case responses:
		return "responses"
	}
	return "openai"
}

// arrayKey is the member holding the conversation: "messages", or the
// Responses API's "input" items.
func (d dialect) arrayKey() string {
	if d == responses {
		return "input"
	}
	return "messages"
}

// request is a chat request as the hot path sees it: the client's bytes,
// where its members are, and each message's raw bytes.
type request struct {
	d       dialect
	body    []byte
	members []member
	msgsAt  member // the "messages" member
	model   string
	stream  bool
	maxOut  int // max_tokens / max_completion_tokens, 0 when absent
	msgs    []message
	// fixedChars counts the bytes outside messages that reach the prompt:
	// tools, and Anthropic's top-level system.
	fixedChars int
	// system is Anthropic's top-level system value, or the Responses
	// API's instructions (raw), kept as it is.
	system []byte
	// stateful: a Responses request naming previous_response_id, whose
	// history the server holds; forwarded untouched (responses.go).
	stateful bool
	// cacheKey is a Responses request's prompt_cache_key: the client's
	// own conversation id (Codex sends its thread id), used in the
	// session key when present.
	cacheKey string
}

// message is one element of "messages".
type message struct {
	raw   []byte
	chars int // estimate basis: bytes, with images counted as a fixed amount

	// Filled by classify (compaction path): a structural scan, no decode.
	classified bool
	role       string
	calls      bool // makes tool calls (assistant tool_calls / tool_use)
	// Responses items only (responses.go): the item's type, the call id
	// it opens (a call) or answers (an output), and whether it is a
	// reasoning item, which belongs to the item after it.
	item      string
	callID    string
	reasoning bool
	results   bool // answers tool calls (tool role / tool_result blocks)

	// Filled by parse (messages being summarised only).
	parsed bool
	text   string // plain text for pins
	render string // how the summariser sees it
}

func (m *message) isSystem() bool { return m.role == "system" || m.role == "developer" }

// imageChars is what one image counts for in the estimate (about 1,000
// tokens), instead of its base64 bytes.
const imageChars = 3500

// parseRequest scans body as a chat request of dialect d. It returns nil
// when body is not an object with a "messages" array.
func parseRequest(body []byte, d dialect) *request {
	ms, ok := scanObject(body)
	if !ok {
		return nil
	}
	r := &request{d: d, body: body, members: ms}
	found := false
	arrayKey := d.arrayKey()
	for _, m := range ms {
		v := body[m.start:m.end]
		switch m.key {
		case arrayKey:
			if len(v) == 0 || v[0] != '[' {
				return nil // a Responses input given as a string: nothing to fold
			}
			r.msgsAt, found = m, true
		case "model":
			r.model = stringValue(v)
		case "stream":
			r.stream = string(v) == "true"
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			if n := intValue(v); n > r.maxOut {
				r.maxOut = n
			}
		case "tools", "functions", "tool_choice", "response_format":
			r.fixedChars += len(v)
		case "system":
			if d == anthropic {
				r.system = v
				r.fixedChars += contentChars(v)
			}
		case "instructions":
			if d == responses && string(v) != "null" {
				r.system = v
				r.fixedChars += contentChars(v)
			}
		case "previous_response_id":
			r.stateful = d == responses && string(v) != "null" && string(v) != `""`
		case "prompt_cache_key":
			r.cacheKey = stringValue(v)
		}
	}
	if !found {
		return nil
	}
	var raws [][]byte
	ok = true
	st := jsonscan.Elems(body[r.msgsAt.start:r.msgsAt.end], func(raw []byte) bool {
		ok = raw[0] == '{'
		raws = append(raws, raw)
		return ok
	})
	if !ok || st != jsonscan.OK {
		return nil
	}
	r.msgs = make([]message, len(raws))
	for i, raw := range raws {
		r.msgs[i] = message{raw: raw, chars: contentChars(raw)}
	}
	return r
}

// contentChars is the estimate basis of a JSON value: its length, except
// that embedded images (long base64 strings) count as imageChars each.
func contentChars(raw []byte) int {
	n := len(raw)
	// Inline images are base64 (OpenAI "data:image/...;base64,", Anthropic
	// "type":"base64"): one search for a needle whose first byte is rare.
	if len(raw) < 4096 || !bytes.Contains(raw, []byte("base64")) {
		return n
	}
	// Find long strings without white space: base64 payloads.
	for i := 0; i < len(raw); {
		if raw[i] != '"' {
			i++
			continue
		}
		j, ok := jsonscan.Skip(raw, i, jsonscan.Quotes)
		if !ok {
			break
		}
		if s := raw[i+1 : j-1]; len(s) > 4096 && bytes.IndexAny(s, " \\") < 0 {
			n -= len(s)
			n += imageChars
		}
		i = j
	}
	return n
}

// totalChars is the estimate basis of the whole request.
func (r *request) totalChars() int {
	n := r.fixedChars
	for i := range r.msgs {
		n += r.msgs[i].chars + msgOverheadChars
	}
	return n
}

// msgOverheadChars stands for a message's template tokens (role markers).
const msgOverheadChars = 14

// wire shapes, decoded only on the compaction path.
type wireMsg struct {
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
	FunctionCall *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function_call"`
	Name string `json:"name"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// classify finds the message's role and whether it makes or answers tool
// calls, by scanning its structure without decoding it. It reports false
// for a message that is not an object with a role.
func (m *message) classify(d dialect) bool {
	if m.classified {
		return true
	}
	ms, ok := scanObject(m.raw)
	if !ok {
		return false
	}
	if d == responses {
		return m.classifyItem(ms)
	}
	m.role = stringValue(findMember(m.raw, ms, "role"))
	if m.role == "" {
		return false
	}
	switch m.role {
	case "tool", "function":
		m.results = true
	}
	if tc := findMember(m.raw, ms, "tool_calls"); tc != nil {
		// The request's scan checked the array: one element is enough.
		if jsonscan.Elems(tc, func([]byte) bool { return false }) == jsonscan.Stopped {
			m.calls = true
		}
	}
	if fc := findMember(m.raw, ms, "function_call"); fc != nil && string(fc) != "null" {
		m.calls = true
	}
	content := findMember(m.raw, ms, "content")
	if len(content) > 0 && content[0] == '[' && (bytes.Contains(content, []byte("tool_use")) || bytes.Contains(content, []byte("tool_result"))) {
		jsonscan.Elems(content, func(el []byte) bool {
			bm, ok := scanObject(el)
			if !ok {
				return true
			}
			switch stringValue(findMember(el, bm, "type")) {
			case "tool_use", "server_tool_use":
				m.calls = true
			case "tool_result":
				m.results = true
			}
			return true
		})
	}
	m.classified = true
	return true
}

// parse decodes a message being summarised: its text and how the
// summariser sees it. It reports false for a message that does not decode.
func (m *message) parse(d dialect) bool {
	if m.parsed {
		return true
	}
	if d == responses {
		return m.parseItem()
	}
	var w wireMsg
	if err := json.Unmarshal(m.raw, &w); err != nil || w.Role == "" {
		return false
	}
	var text strings.Builder
	var render strings.Builder
	render.WriteString(w.Role)
	if w.Role == "tool" || w.Role == "function" {
		render.Reset()
		render.WriteString("tool result")
		if w.Name != "" {
			render.WriteString(" of " + w.Name)
		}
	}
	render.WriteString(":\n")
	blocks := contentBlocks(w.Content)
	for _, b := range blocks {
		switch b.Type {
		case "text", "input_text", "":
			if b.Text != "" {
				text.WriteString(b.Text)
				text.WriteByte('\n')
				render.WriteString(b.Text)
				render.WriteByte('\n')
			}
		case "tool_use", "server_tool_use":
			render.WriteString("[tool call " + b.Name + " " + clip(string(b.Input), 1500) + "]\n")
		case "tool_result":
			res := textOfContent(b.Content)
			label := "[tool result"
			if b.IsError {
				label += " (error)"
			}
			render.WriteString(label + ":\n" + res + "]\n")
		case "image", "image_url", "input_image":
			render.WriteString("[image]\n")
		case "document", "file":
			render.WriteString("[document]\n")
		case "thinking", "redacted_thinking":
			// The model's private reasoning: not summarised.
		default:
			if b.Text != "" {
				render.WriteString(b.Text + "\n")
			}
		}
	}
	for _, c := range w.ToolCalls {
		render.WriteString("[tool call " + c.Function.Name + " " + clip(c.Function.Arguments, 1500) + "]\n")
	}
	if w.FunctionCall != nil {
		render.WriteString("[tool call " + w.FunctionCall.Name + " " + clip(w.FunctionCall.Arguments, 1500) + "]\n")
	}
	m.text = text.String()
	m.render = render.String()
	m.parsed = true
	return true
}

// contentBlocks decodes a content value: a string becomes one text block.
func contentBlocks(raw json.RawMessage) []wireBlock {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []wireBlock{{Type: "text", Text: s}}
		}
		return nil
	}
	var bs []wireBlock
	if json.Unmarshal(raw, &bs) == nil {
		return bs
	}
	return nil
}

// textOfContent returns the text of a content value (string or blocks).
func textOfContent(raw json.RawMessage) string {
	var b strings.Builder
	for _, bl := range contentBlocks(raw) {
		if bl.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(bl.Text)
		}
		if bl.Type == "tool_result" {
			b.WriteString(textOfContent(bl.Content))
		}
	}
	return b.String()
}

// clip shortens s to about n bytes, keeping its head and tail.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	h := n * 2 / 3
	t := n - h
	return validPrefix(s[:h]) + " …[" + itoa(len(s)-n) + " bytes omitted]… " + validSuffix(s[len(s)-t:])
}

// validPrefix / validSuffix drop a split UTF-8 sequence at a cut.
func validPrefix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

func validSuffix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	return s
}

// sessionSeed returns the text that identifies a conversation: the model,
// the first system text and the first user text.
func (r *request) sessionSeed() (system, user string) {
	if (r.d == anthropic || r.d == responses) && r.system != nil {
		system = textOfContent(r.system)
	}
	if r.cacheKey != "" {
		// The client names its conversation: two sessions with the same
		// instructions and first message (Codex's environment context)
		// stay apart.
		system = r.cacheKey + "\x00" + system
	}
	for i := range r.msgs {
		if system != "" && user != "" {
			break
		}
		raw := r.msgs[i].raw
		ms, ok := scanObject(raw)
		if !ok {
			continue
		}
		role := stringValue(findMember(raw, ms, "role"))
		content := findMember(raw, ms, "content")
		switch {
		case (role == "system" || role == "developer") && system == "" && r.d != anthropic:
			system = textOfContent(content)
		case role == "user" && user == "":
			user = textOfContent(content)
		}
	}
	return system, user
}

// sessionKey derives a session id: a hash of model, first system and first
// user message.
func (r *request) sessionKey() string {
	sys, user := r.sessionSeed()
	h := sha256.New()
	h.Write([]byte(r.model))
	h.Write([]byte{0})
	h.Write([]byte(sys))
	h.Write([]byte{0})
	h.Write([]byte(user))
	return "s-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// msgHash identifies a message for the summary memo: the hash of its
// bytes, with Anthropic cache_control markers removed (clients move them
// from turn to turn).
func msgHash(raw []byte) [32]byte {
	if bytes.Contains(raw, []byte(`"cache_control"`)) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			stripKey(v, "cache_control")
			if b, err := marshalNoEscape(v); err == nil {
				return sha256.Sum256(b)
			}
		}
	}
	return sha256.Sum256(raw)
}

func stripKey(v any, key string) {
	switch t := v.(type) {
	case map[string]any:
		delete(t, key)
		for _, x := range t {
			stripKey(x, key)
		}
	case []any:
		for _, x := range t {
			stripKey(x, key)
		}
	}
}

// chainHash extends a memo chain by one message.
func chainHash(prev [32]byte, msg [32]byte) [32]byte {
	var buf [64]byte
	copy(buf[:32], prev[:])
	copy(buf[32:], msg[:])
	return sha256.Sum256(buf[:])
}

func itoa(n int) string { return strconv.Itoa(n) }
