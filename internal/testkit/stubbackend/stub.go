// Package stubbackend is a scripted model server for the proxy's tests,
// demo and benchmark: it imitates llama.cpp, vLLM, Ollama, a generic
// OpenAI-compatible server, or the Anthropic Messages API closely enough
// for the proxy to tell them apart (detection routes, tokenizer routes,
// window reports, overflow errors, Ollama's silent truncation, streamed
// and plain answers with usage), and records every request it receives.
//
// Its tokenizer is deterministic: a chat is templated as "<|ROLE|>\n" +
// text + "\n" per message (text: the content's text, tool calls and tool
// results), and counted as one token per 4 bytes, rounded up.
//
// It is a fixture, not part of git-lossless: only tests and the demo and
// bench commands of cmd/git-lossless may import it, never a production
// package (internal/layoutcheck enforces that). It imports the standard
// library only, not testing, so the demo can link it.
package stubbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Kinds of server the stub imitates.
const (
	LlamaCpp  = "llamacpp"
	VLLM      = "vllm"
	Ollama    = "ollama"
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// Request is one request the stub received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	Summary      bool // a summary request from the proxy
	Prompt       int  // prompt tokens counted (chat routes)
	Status       int  // status answered
	Truncated    bool // Ollama-style silent truncation applied
	Duration     time.Duration
}

// Server is a scripted backend. Set the fields before Start.
type Server struct {
	Kind  string // LlamaCpp, VLLM, Ollama, OpenAI or Anthropic
	Model string // served model name (default "stub-model")
	// Window is the context window in tokens (0: unlimited). A prompt over
	// it is rejected with the kind's overflow error, or, for Ollama,
	// silently cut to fit.
	Window int
	// OllamaLoaded makes /api/ps list the model with Window as its runtime
	// context_length; OllamaNumCtx sets num_ctx in /api/show; Native is
	// the model_info context length.
	OllamaLoaded bool
	OllamaNumCtx int
	Native       int
	// Reply returns the assistant's answer (default: "ok, turn N").
	Reply func(r *Request, messages []json.RawMessage) string
	// Summary returns a summary request's answer (default: a
	// deterministic summary of the transcript with a Must Keep section).
	Summary func(r *Request, prompt string) string
	// SummaryStatus, when non-zero, answers summary requests with that
	// HTTP status and an error body.
	SummaryStatus int
	// SummaryDelay delays summary answers.
	SummaryDelay time.Duration
	// NoUsage leaves usage out of answers.
	NoUsage bool
	// Auth, when set, is a key every request must carry (as
	// "Authorization: Bearer KEY" or "X-Api-Key: KEY"), probes and
	// tokenizer routes included, like a backend behind an authenticating
	// gateway; others are answered 401.
	Auth string

	mu       sync.Mutex
	requests []*Request
	changed  chan struct{} // closed and replaced when a request is recorded
	srv      *http.Server
	ln       net.Listener
}

// Start serves on a free loopback port and returns its base URL.
func (s *Server) Start() (string, error) {
	if s.Model == "" {
		s.Model = "stub-model"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(ln)
	return "http://" + ln.Addr().String(), nil
}

// Close stops the server.
func (s *Server) Close() {
	if s.srv != nil {
		s.srv.Close()
	}
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Chat returns the chat requests (not summaries, not probes) received.
func (s *Server) Chat() []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if !r.Summary && (r.Path == "/v1/chat/completions" || r.Path == "/v1/messages" || r.Path == "/v1/responses") {
			out = append(out, r)
		}
	}
	return out
}

// Summaries returns the summary requests received.
func (s *Server) Summaries() []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if r.Summary {
			out = append(out, r)
		}
	}
	return out
}

// Await blocks until done, called with the requests received so far,
// returns true, or ctx ends. A request is recorded when its answer has
// been written, which can be after the proxy stopped waiting for it (a
// summary call that timed out): tests wait for it here instead of
// sleeping.
func (s *Server) Await(ctx context.Context, done func([]*Request) bool) error {
	for {
		s.mu.Lock()
		reqs := append([]*Request(nil), s.requests...)
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		if done(reqs) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("stub: %d requests received, still waiting: %w", len(reqs), ctx.Err())
		}
	}
}

// Reset forgets the requests received.
func (s *Server) Reset() {
	s.mu.Lock()
	s.requests = nil
	s.mu.Unlock()
}

// Tokens counts text the stub's way: one token per 4 bytes.
func Tokens(text string) int { return (len(text) + 3) / 4 }

// Template renders messages the stub's way (see the package doc).
func Template(system string, messages []json.RawMessage) string {
	var b strings.Builder
	if system != "" {
		b.WriteString("<|system|>\n" + system + "\n")
	}
	for _, m := range messages {
		role, text := messageText(m)
		b.WriteString("<|" + role + "|>\n" + text + "\n")
	}
	b.WriteString("<|assistant|>\n")
	return b.String()
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	ToolUseID string          `json:"tool_use_id"`
}

func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, x := range bs {
		switch x.Type {
		case "tool_use":
			b.WriteString("[call " + x.Name + " " + string(x.Input) + "]")
		case "tool_result":
			b.WriteString("[result " + contentText(x.Content) + "]")
		default:
			b.WriteString(x.Text)
		}
	}
	return b.String()
}

func messageText(raw json.RawMessage) (role, text string) {
	var m struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	}
	json.Unmarshal(raw, &m)
	text = contentText(m.Content)
	if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
		text += string(m.ToolCalls)
	}
	return m.Role, text
}

type chatBody struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	System        json.RawMessage   `json:"system"`
	Tools         json.RawMessage   `json:"tools"`
	Stream        bool              `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// promptTokens counts a chat body.
func promptTokens(cb *chatBody) int {
	n := Tokens(Template(contentText(cb.System), cb.Messages))
	if len(cb.Tools) > 0 && string(cb.Tools) != "null" {
		n += Tokens(string(cb.Tools))
	}
	return n
}

// ServeHTTP answers like the configured kind.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	body, _ := io.ReadAll(r.Body)
	rec := &Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	rw := &statusWriter{ResponseWriter: w, status: 200}
	if s.Auth != "" && r.Header.Get("Authorization") != "Bearer "+s.Auth && r.Header.Get("X-Api-Key") != s.Auth {
		writeJSON(rw, http.StatusUnauthorized, map[string]any{"error": map[string]any{"message": "missing or wrong API key", "type": "authentication_error"}})
	} else {
		s.route(rw, r, rec)
	}
	rec.Status = rw.status
	rec.Duration = time.Since(t0)
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.mu.Unlock()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(c int) { w.status = c; w.ResponseWriter.WriteHeader(c) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, rec *Request) {
	p := r.URL.Path
	switch {
	case r.Method == "POST" && p == "/v1/chat/completions":
		s.chat(w, rec)
	case r.Method == "POST" && p == "/v1/responses" && s.Kind != Anthropic:
		s.responses(w, rec)
	case r.Method == "POST" && p == "/v1/messages" && (s.Kind == Anthropic || s.Kind == LlamaCpp):
		s.messages(w, rec)
	case r.Method == "POST" && p == "/v1/messages/count_tokens" && (s.Kind == Anthropic || s.Kind == LlamaCpp):
		var cb chatBody
		if json.Unmarshal(rec.Body, &cb) != nil {
			writeJSON(w, 400, map[string]any{"error": "bad json"})
			return
		}
		writeJSON(w, 200, map[string]any{"input_tokens": promptTokens(&cb)})
	case r.Method == "GET" && p == "/v1/models" && s.Kind != Anthropic:
		d := map[string]any{"id": s.Model, "object": "model", "owned_by": s.Kind}
		if s.Kind == VLLM {
			d["max_model_len"] = s.Window
		}
		if s.Kind == LlamaCpp {
			d["meta"] = map[string]any{"n_ctx_train": 131072}
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{d}})
	case s.Kind == LlamaCpp && r.Method == "GET" && p == "/props":
		writeJSON(w, 200, map[string]any{"default_generation_settings": map[string]any{"n_ctx": s.Window}, "total_slots": 1})
	case s.Kind == LlamaCpp && r.Method == "POST" && p == "/apply-template":
		var cb chatBody
		if json.Unmarshal(rec.Body, &cb) != nil {
			writeJSON(w, 400, map[string]any{"error": "bad json"})
			return
		}
		prompt := Template("", cb.Messages)
		if len(cb.Tools) > 0 && string(cb.Tools) != "null" {
			prompt += string(cb.Tools)
		}
		writeJSON(w, 200, map[string]any{"prompt": prompt})
	case s.Kind == LlamaCpp && r.Method == "POST" && p == "/tokenize":
		var in struct {
			Content string `json:"content"`
		}
		json.Unmarshal(rec.Body, &in)
		writeJSON(w, 200, map[string]any{"tokens": make([]int, Tokens(in.Content))})
	case s.Kind == VLLM && r.Method == "POST" && p == "/tokenize":
		var cb chatBody
		if json.Unmarshal(rec.Body, &cb) != nil {
			writeJSON(w, 400, map[string]any{"error": "bad json"})
			return
		}
		n := promptTokens(&cb)
		writeJSON(w, 200, map[string]any{"count": n, "max_model_len": s.Window, "tokens": make([]int, n)})
	case s.Kind == Ollama && p == "/api/version":
		writeJSON(w, 200, map[string]any{"version": "0.13.0"})
	case s.Kind == Ollama && p == "/api/ps":
		models := []any{}
		if s.OllamaLoaded {
			models = append(models, map[string]any{"name": s.Model + ":latest", "model": s.Model + ":latest", "context_length": s.Window})
		}
		writeJSON(w, 200, map[string]any{"models": models})
	case s.Kind == Ollama && p == "/api/show":
		params := "temperature 0.7"
		if s.OllamaNumCtx > 0 {
			params += fmt.Sprintf("\nnum_ctx                        %d", s.OllamaNumCtx)
		}
		native := s.Native
		if native == 0 {
			native = 131072
		}
		writeJSON(w, 200, map[string]any{"parameters": params, "model_info": map[string]any{"general.architecture": "llama", "llama.context_length": native}})
	case r.Method == "HEAD" || r.Method == "GET" && p == "/":
		w.WriteHeader(200)
	default:
		writeJSON(w, 404, map[string]any{"error": "not found: " + p})
	}
}

// isSummary tells the proxy's summary calls apart.
func isSummary(rec *Request) bool {
	return rec.Header.Get("X-Lossless-Summary") != ""
}

// maxChatBody is the largest chat body the stub reads as a chat.
const maxChatBody = 16 << 20

func (s *Server) chat(w http.ResponseWriter, rec *Request) {
	if len(rec.Body) > maxChatBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": map[string]any{"message": "request body too large", "type": "invalid_request_error"}})
		return
	}
	var cb chatBody
	if err := json.Unmarshal(rec.Body, &cb); err != nil || cb.Messages == nil {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "invalid request body", "type": "invalid_request_error"}})
		return
	}
	rec.Summary = isSummary(rec)
	rec.Prompt = promptTokens(&cb)
	if rec.Summary {
		s.summaryAnswer(w, rec, cb, false)
		return
	}
	if s.Window > 0 && rec.Prompt > s.Window {
		if s.Kind == Ollama {
			rec.Truncated = true
			rec.Prompt = s.Window // silently cut the front
		} else {
			s.overflow(w, s.Kind, rec.Prompt)
			return
		}
	}
	text := s.reply(rec, cb.Messages)
	usage := map[string]any{"prompt_tokens": rec.Prompt, "completion_tokens": Tokens(text), "total_tokens": rec.Prompt + Tokens(text)}
	id := "chatcmpl-stub"
	if !cb.Stream {
		out := map[string]any{
			"id": id, "object": "chat.completion", "created": 1767323101, "model": cb.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		}
		if !s.NoUsage {
			out["usage"] = usage
		}
		if s.Kind == LlamaCpp {
			out["timings"] = map[string]any{"prompt_n": rec.Prompt, "cache_n": 0, "predicted_n": Tokens(text)}
		}
		writeJSON(w, 200, out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767323101, "model": cb.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, part := range splitParts(text, 3) {
		send(chunk(map[string]any{"content": part}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	if cb.StreamOptions.IncludeUsage && !s.NoUsage {
		var choices any = []any{}
		if s.Kind == VLLM {
			choices = nil
		}
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767323101, "model": cb.Model, "choices": choices, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

func splitParts(s string, n int) []string {
	if len(s) < n*2 {
		return []string{s}
	}
	var out []string
	step := len(s) / n
	for i := 0; i < n-1; i++ {
		out = append(out, s[i*step:(i+1)*step])
	}
	return append(out, s[(n-1)*step:])
}

func (s *Server) overflow(w http.ResponseWriter, kind string, prompt int) {
	switch kind {
	case LlamaCpp:
		writeJSON(w, 400, map[string]any{"error": map[string]any{
			"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": s.Window,
			"message": fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", prompt, s.Window),
		}})
	case VLLM:
		writeJSON(w, 400, map[string]any{"object": "error", "type": "BadRequestError", "code": 400,
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, 0 in the completion). Please reduce the length of the messages or completion.", s.Window, prompt, prompt)})
	case Anthropic:
		writeJSON(w, 400, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
			"message": fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, s.Window)}})
	default:
		writeJSON(w, 400, map[string]any{"error": map[string]any{"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.Window, prompt)}})
	}
}

func (s *Server) reply(rec *Request, msgs []json.RawMessage) string {
	if s.Reply != nil {
		return s.Reply(rec, msgs)
	}
	users := 0
	for _, m := range msgs {
		if role, _ := messageText(m); role == "user" {
			users++
		}
	}
	return fmt.Sprintf("ok, turn %d", users)
}

// summaryAnswer answers a summary request (both dialects).
func (s *Server) summaryAnswer(w http.ResponseWriter, rec *Request, cb chatBody, anthropic bool) {
	if s.SummaryDelay > 0 {
		time.Sleep(s.SummaryDelay)
	}
	if s.SummaryStatus != 0 {
		writeJSON(w, s.SummaryStatus, map[string]any{"error": map[string]any{"message": "summary refused by the stub"}})
		return
	}
	prompt := ""
	if len(cb.Messages) > 0 {
		_, prompt = messageText(cb.Messages[len(cb.Messages)-1])
	}
	var text string
	if s.Summary != nil {
		text = s.Summary(rec, prompt)
	} else {
		text = DefaultSummary(prompt)
	}
	if anthropic {
		writeJSON(w, 200, map[string]any{"id": "msg_stub_summary", "type": "message", "role": "assistant", "model": cb.Model,
			"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn",
			"usage": map[string]any{"input_tokens": rec.Prompt, "output_tokens": Tokens(text)}})
		return
	}
	writeJSON(w, 200, map[string]any{"id": "chatcmpl-stub-summary", "object": "chat.completion", "model": cb.Model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": rec.Prompt, "completion_tokens": Tokens(text), "total_tokens": rec.Prompt + Tokens(text)}})
}

// DefaultSummary summarises a summary prompt deterministically: one line
// per transcript entry (its first 60 bytes) and a Must Keep section with
// the previous summary's bullets plus the user lines that say MUST.
func DefaultSummary(prompt string) string {
	var lines, keep []string
	inPrev := false
	for _, l := range strings.Split(prompt, "\n") {
		switch {
		case strings.HasPrefix(l, "<summary-"):
			inPrev = true
			continue
		case strings.HasPrefix(l, "</summary-"):
			inPrev = false
			continue
		}
		if inPrev {
			if b, ok := strings.CutPrefix(l, "- "); ok {
				keep = append(keep, b)
			}
			continue
		}
		if len(l) > 4 && l[0] == '[' && strings.Contains(l[:min(8, len(l))], "] ") {
			t := l
			if len(t) > 60 {
				t = t[:60]
			}
			lines = append(lines, t)
		}
		if strings.Contains(l, "MUST") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	var b strings.Builder
	b.WriteString("Summary of the earlier conversation:\n")
	for _, l := range lines {
		b.WriteString("* " + l + "\n")
	}
	if len(keep) > 0 {
		b.WriteString("\n## Must Keep\n")
		seen := map[string]bool{}
		for _, k := range keep {
			if !seen[k] {
				seen[k] = true
				b.WriteString("- " + k + "\n")
			}
		}
	}
	return b.String()
}

// messages answers POST /v1/messages (Anthropic shapes).
func (s *Server) messages(w http.ResponseWriter, rec *Request) {
	var cb chatBody
	if err := json.Unmarshal(rec.Body, &cb); err != nil || cb.Messages == nil {
		writeJSON(w, 400, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "invalid request body"}})
		return
	}
	rec.Summary = isSummary(rec)
	rec.Prompt = promptTokens(&cb)
	if rec.Summary {
		s.summaryAnswer(w, rec, cb, true)
		return
	}
	if s.Window > 0 && rec.Prompt > s.Window {
		s.overflow(w, Anthropic, rec.Prompt)
		return
	}
	text := s.reply(rec, cb.Messages)
	usage := map[string]any{"input_tokens": rec.Prompt, "output_tokens": Tokens(text)}
	if !cb.Stream {
		writeJSON(w, 200, map[string]any{"id": "msg_stub", "type": "message", "role": "assistant", "model": cb.Model,
			"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn", "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_stub", "type": "message", "role": "assistant",
		"model": cb.Model, "content": []any{}, "stop_reason": nil, "usage": map[string]any{"input_tokens": rec.Prompt, "output_tokens": 1}}})
	ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	for _, part := range splitParts(text, 3) {
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": part}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": Tokens(text)}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}
