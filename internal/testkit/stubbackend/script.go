package stubbackend

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Conversation builds OpenAI chat requests turn by turn, the way a client
// resends its whole history every turn.
type Conversation struct {
	Model    string
	Messages []map[string]any
}

// NewConversation starts one with a system prompt.
func NewConversation(model, system string) *Conversation {
	c := &Conversation{Model: model}
	if system != "" {
		c.Messages = append(c.Messages, map[string]any{"role": "system", "content": system})
	}
	return c
}

// User adds a user message.
func (c *Conversation) User(text string) {
	c.Messages = append(c.Messages, map[string]any{"role": "user", "content": text})
}

// Assistant adds an assistant message.
func (c *Conversation) Assistant(text string) {
	c.Messages = append(c.Messages, map[string]any{"role": "assistant", "content": text})
}

// ToolCall adds an assistant tool call and its result.
func (c *Conversation) ToolCall(id, name, args, result string) {
	c.Messages = append(c.Messages,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}},
		map[string]any{"role": "tool", "tool_call_id": id, "content": result})
}

// Body is the request body for the conversation so far.
func (c *Conversation) Body(stream bool) []byte {
	req := map[string]any{"model": c.Model, "messages": c.Messages, "max_tokens": 512}
	if stream {
		req["stream"] = true
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

// Code returns about n bytes of Go-like source, deterministic for seed.
func Code(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	words := []string{"index", "buffer", "count", "offset", "window", "session", "token", "budget", "span", "archive", "writer", "chain"}
	var b strings.Builder
	fmt.Fprintf(&b, "package mod%d\n\n", seed%97)
	for b.Len() < n {
		w1, w2 := words[rng.IntN(len(words))], words[rng.IntN(len(words))]
		switch rng.IntN(3) {
		case 0:
			fmt.Fprintf(&b, "// %s%d updates the %s by %d.\nfunc %s%d(%s int) int {\n\treturn %s*%d + %d\n}\n\n",
				w1, rng.IntN(1000), w2, rng.IntN(100), w1, rng.IntN(1000), w2, w2, rng.IntN(97), rng.IntN(1000))
		case 1:
			fmt.Fprintf(&b, "var %s%d = []int{%d, %d, %d, %d}\n", w1, rng.IntN(1000), rng.IntN(1e4), rng.IntN(1e4), rng.IntN(1e4), rng.IntN(1e4))
		default:
			fmt.Fprintf(&b, "type %s%d struct {\n\t%s int\n\t%s string\n}\n\n", strings.ToUpper(w1[:1])+w1[1:], rng.IntN(1000), w2, w1)
		}
	}
	return b.String()
}

// DemoTurn is the user message of turn i (1-based) of the demo session:
// the user pastes a file of about 4,000 bytes and asks about it. Turn 1
// also states a fact to keep.
func DemoTurn(i int) string {
	head := fmt.Sprintf("Turn %d. Here is src/module%d.go; review it and tell me what to change.", i, i)
	if i == 1 {
		head += " Remember this: the release branch is called lossless-2026 and must not be force-pushed."
	}
	return head + "\n\n```go\n" + Code(uint64(i), 3900) + "```\n"
}

// AgentStep is step i (0-based) of a scripted agent session: a tool call
// reading a file of 2 to 12 KB, and every fifth step a user message first.
type AgentStep struct {
	User   string // "" when the step has no user message
	CallID string
	Path   string
	Result string
}

// AgentScript returns the steps of a scripted agent session.
func AgentScript(turns int, seed uint64) []AgentStep {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []AgentStep
	for i := 0; i < turns; i++ {
		st := AgentStep{CallID: fmt.Sprintf("call_%03d", i+1), Path: fmt.Sprintf("src/pkg%d/file%d.go", i%7, i)}
		if i%5 == 0 {
			st.User = fmt.Sprintf("Step %d: keep going with the refactor; next look at %s.", i+1, st.Path)
			if i == 0 {
				st.User = "Refactor the archive writer for speed. Remember this: never change the on-disk format. Start with " + st.Path + "."
			}
		}
		st.Result = Code(seed*1000+uint64(i), 2048+rng.IntN(10*1024))
		out = append(out, st)
	}
	return out
}
