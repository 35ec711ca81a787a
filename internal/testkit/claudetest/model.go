package claudetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Step is one assistant message of a scenario: a tool call, or (Tool
// empty) a final text that ends the turn.
type Step struct {
	Tool  string // tool name: "Read", "Edit", "Agent", ...; empty for a final text
	Input any    // tool input, marshalled to JSON
	Text  string // the final text, or text sent before the tool call

	// After, when set, holds the step back until a user or system
	// message after the previous step's tool result (after the marker
	// message, for step 0) contains the text After, e.g.
	// "<task-notification>", which Claude Code sends as a new user turn
	// when a background subagent finishes. Until then the model answers
	// WaitText and ends the turn; `claude -p` then waits for its
	// background tasks and sends their notifications as new turns.
	After string
}

// WaitText is what a held-back step (Step.After) answers meanwhile.
const WaitText = "claudetest: waiting"

// Call is a step that calls tool with input.
func Call(tool string, input any) Step { return Step{Tool: tool, Input: input} }

// Say is a step that answers text and ends the turn.
func Say(text string) Step { return Step{Text: text} }

// Script maps a marker to the steps of its scenario.
//
// Routing: a request with tools is served by the scenario whose marker
// occurs in the conversation's latest user message holding any marker (the
// prompt, for the main agent; the Agent tool's prompt, for a subagent);
// when several markers occur in that message the longest wins. A
// conversation with no marker left (an auto compaction replaced the prompt
// by a summary) stays with the scenario of its latest scripted tool result.
//
// Step: the tool call at step n gets the id ToolUseID(marker, n); the step
// served is one past the highest step whose tool_result is in the request,
// 0 when there is none. It depends on the request only, so retries, the
// extra request after a background task notification, and compactions
// that keep the last tool result all get the same, right step. Past the
// last step the last step's text is repeated if it is a text step.
type Script map[string][]Step

// ToolResult is a tool result the model received.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	Text      string
}

// Request is one HTTP request the model server received.
type Request struct {
	Seq    int
	Time   time.Time
	Method string
	Path   string
	Header http.Header
	Raw    []byte         // the body
	Body   map[string]any // the body parsed as JSON; nil if it is not
	// Kind is "scenario" (served a step), "wait" (a Step.After held
	// back), "compact" (a compaction summary), "side" (no tools),
	// "unmatched" (no scenario), "count_tokens" or "other".
	Kind     string
	Scenario string // the marker of the scenario that served it
	Step     int    // the step served
	AgentID  string // header x-claude-code-agent-id, when sent
	Reply    string // what was answered, in short

	api apiRequest
}

// MessageText is the text of the request's user and system messages
// outside tool results: prompts, system reminders, notifications, and hook
// context (SessionStart additionalContext arrives as a message with role
// "system" in the messages list, not in the system prompt).
func (r Request) MessageText() string {
	var b strings.Builder
	for _, m := range r.api.Messages {
		if m.Role != "assistant" {
			b.WriteString(m.text())
		}
	}
	return b.String()
}

// System is the request's system prompt as text.
func (r Request) System() string { return systemText(r.api.System) }

// ToolResults are the tool results in the request's messages, in order.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.api.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type == "tool_result" {
				out = append(out, ToolResult{ToolUseID: b.ToolUseID, IsError: b.IsError, Text: resultText(b.Content)})
			}
		}
	}
	return out
}

// HasTools reports whether the request offered tools.
func (r Request) HasTools() bool { return len(r.api.Tools) > 0 }

// Model is a scripted Anthropic Messages API server on 127.0.0.1.
type Model struct {
	script  Script
	markers []string          // longest first
	byID    map[string]string // idPart(marker) -> marker
	srv     *http.Server
	ln      net.Listener
	dump    string

	mu          sync.Mutex
	reqs        []Request
	summary     string
	inputTokens func(Request) int
}

// sideText answers requests without tools that are not compactions (none
// were seen from `claude -p` 2.1.328; interactive sessions ask for titles).
const sideText = `{"title": "claudetest session"}`

// SetSummary sets the text answered to compaction requests. It must hold
// a <summary> block: without one Claude Code retries the request.
func (m *Model) SetSummary(text string) {
	m.mu.Lock()
	m.summary = text
	m.mu.Unlock()
}

// SetInputTokens makes the model report f(request) as the input_tokens of
// its answers (and of count_tokens), e.g. to push a session toward auto
// compaction. By default it reports about a token per 4 bytes of body.
func (m *Model) SetInputTokens(f func(Request) int) {
	m.mu.Lock()
	m.inputTokens = f
	m.mu.Unlock()
}

func (m *Model) tokens(r Request) int {
	m.mu.Lock()
	f := m.inputTokens
	m.mu.Unlock()
	if f != nil {
		return f(r)
	}
	return estimateTokens(r.Raw)
}

// NewModel starts a scripted model server; it stops when the test ends.
// When the environment variable CLAUDETEST_DUMP names a directory, every
// request body is also written there, one file per request.
func NewModel(t testing.TB, script Script) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("claudetest: listen: %v", err)
	}
	m := &Model{
		script: script, ln: ln,
		summary: DefaultSummary,
		dump:    os.Getenv("CLAUDETEST_DUMP"),
	}
	m.byID = map[string]string{}
	for k := range script {
		if k == "" {
			t.Fatalf("claudetest: empty scenario marker")
		}
		if other, dup := m.byID[idPart(k)]; dup {
			t.Fatalf("claudetest: markers %q and %q make the same tool_use ids", k, other)
		}
		m.byID[idPart(k)] = k
		m.markers = append(m.markers, k)
	}
	sort.Slice(m.markers, func(i, j int) bool {
		if len(m.markers[i]) != len(m.markers[j]) {
			return len(m.markers[i]) > len(m.markers[j])
		}
		return m.markers[i] < m.markers[j]
	})
	if m.dump != "" {
		_ = os.MkdirAll(m.dump, 0o755)
	}
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = m.srv.Close()
		if t.Failed() {
			t.Logf("claudetest: model requests:\n%s", m.Log())
		}
	})
	return m
}

// DefaultSummary is what the model answers to a compaction request.
const DefaultSummary = "<analysis>claudetest</analysis>\n<summary>claudetest summary: the user asked for scripted file edits and they were done.</summary>"

// URL is the base URL for ANTHROPIC_BASE_URL.
func (m *Model) URL() string { return "http://" + m.ln.Addr().String() }

// ToolUseID is the id of the tool call at step of the scenario marker.
func ToolUseID(marker string, step int) string {
	return fmt.Sprintf("toolu_%s_%d", idPart(marker), step)
}

var nonID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func idPart(marker string) string { return strings.Trim(nonID.ReplaceAllString(marker, "-"), "-") }

// Requests returns a copy of every request received so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// ScenarioRequests returns the Messages requests served by the scenario.
func (m *Model) ScenarioRequests(marker string) []Request {
	var out []Request
	for _, r := range m.Requests() {
		if r.Scenario == marker {
			out = append(out, r)
		}
	}
	return out
}

// ToolResults returns the results of the scenario's tool calls that the
// model received, in order of the calls, each once.
func (m *Model) ToolResults(marker string) []ToolResult {
	prefix := "toolu_" + idPart(marker) + "_"
	seen := map[string]bool{}
	var out []ToolResult
	for _, r := range m.Requests() {
		for _, tr := range r.ToolResults() {
			if strings.HasPrefix(tr.ToolUseID, prefix) && !seen[tr.ToolUseID] {
				seen[tr.ToolUseID] = true
				out = append(out, tr)
			}
		}
	}
	return out
}

// Log is a one-line-per-request summary of what the server received and
// answered.
func (m *Model) Log() string {
	var b strings.Builder
	for _, r := range m.Requests() {
		fmt.Fprintf(&b, "#%d %s %s %s kind=%s", r.Seq, r.Time.Format("15:04:05.000"), r.Method, r.Path, r.Kind)
		if r.Body != nil {
			fmt.Fprintf(&b, " msgs=%d tools=%d results=%d", len(r.api.Messages), len(r.api.Tools), len(r.ToolResults()))
		}
		if r.Scenario != "" {
			fmt.Fprintf(&b, " scenario=%q step=%d", r.Scenario, r.Step)
		}
		if r.AgentID != "" {
			fmt.Fprintf(&b, " agent=%s", r.AgentID)
		}
		if r.Reply != "" {
			fmt.Fprintf(&b, " -> %s", r.Reply)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *Model) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	req := Request{Time: time.Now(), Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), Raw: raw,
		AgentID: hr.Header.Get("x-claude-code-agent-id")}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &req.Body)
		_ = json.Unmarshal(raw, &req.api)
	}
	switch {
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages":
		m.messages(w, &req)
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages/count_tokens":
		req.Kind = "count_tokens"
		n := m.tokens(req)
		req.Reply = fmt.Sprintf("input_tokens=%d", n)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, n)
	case hr.Method == http.MethodHead || hr.Method == http.MethodGet:
		req.Kind = "other"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if hr.Method == http.MethodGet {
			_, _ = io.WriteString(w, "{}")
		}
	default:
		req.Kind = "other"
		req.Reply = "404"
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"claudetest: no such route"}}`, http.StatusNotFound)
	}
	m.record(req)
}

func (m *Model) record(req Request) {
	m.mu.Lock()
	req.Seq = len(m.reqs) + 1
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if m.dump != "" && len(req.Raw) > 0 {
		name := fmt.Sprintf("%03d-%s-%s.json", req.Seq, req.Kind, idPart(req.Scenario))
		var pretty bytes.Buffer
		if json.Indent(&pretty, req.Raw, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(req.Raw)
		}
		hdr, _ := json.Marshal(req.Header)
		_ = os.WriteFile(filepath.Join(m.dump, name), append(append(hdr, '\n'), pretty.Bytes()...), 0o644)
	}
}

func estimateTokens(raw []byte) int { return 1 + len(raw)/4 }

// compactAsk reports whether a request asks for a conversation summary:
// its last user message (system messages may follow it) asks for "a
// detailed summary of the conversation". That is what compaction sends,
// manual or auto, with the session's tools and the whole conversation.
func compactAsk(r *Request) bool {
	msgs := r.api.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		switch msgs[i].Role {
		case "system":
			continue
		case "user":
			return strings.Contains(strings.ToLower(msgs[i].userText()), "summary of the conversation")
		}
		return false
	}
	return false
}

func (m *Model) messages(w http.ResponseWriter, req *Request) {
	var rep reply
	switch {
	case compactAsk(req):
		req.Kind = "compact"
		m.mu.Lock()
		rep.Text = m.summary
		m.mu.Unlock()
	case !req.HasTools():
		req.Kind = "side"
		rep.Text = sideText
	default:
		m.route(req, &rep)
	}
	req.Reply = rep.Tool
	if rep.Tool != "" {
		req.Reply = rep.Tool + " " + rep.ID + " " + string(rep.Input)
	} else {
		req.Reply = fmt.Sprintf("text %.60q", rep.Text)
	}
	msgID := fmt.Sprintf("msg_claudetest_%d", time.Now().UnixNano())
	model := req.api.Model
	if model == "" {
		model = "claude-claudetest"
	}
	in := m.tokens(*req)
	if req.api.Stream {
		writeSSEReply(w, msgID, model, rep, in)
	} else {
		writeJSONReply(w, msgID, model, rep, in)
	}
}

// route picks the scenario and step of a request with tools.
func (m *Model) route(req *Request, rep *reply) {
	msgs := req.api.Messages
	anchor := -1 // the message after which a held-back step looks for After
	for i := len(msgs) - 1; i >= 0 && anchor < 0; i-- {
		text := msgs[i].userText()
		for _, mk := range m.markers {
			if strings.Contains(text, mk) {
				req.Scenario, anchor = mk, i
				break
			}
		}
	}
	if anchor < 0 {
		// No marker left (an auto compaction replaced the prompt by a
		// summary): the scenario of the latest scripted tool result.
		for i := len(msgs) - 1; i >= 0 && req.Scenario == ""; i-- {
			for _, b := range msgs[i].blocks() {
				if b.Type != "tool_result" {
					continue
				}
				if mk, _, ok := m.parseID(b.ToolUseID); ok {
					req.Scenario = mk
				}
			}
		}
	}
	if req.Scenario == "" {
		req.Kind = "unmatched"
		rep.Text = "claudetest: no scenario marker in this conversation"
		return
	}
	req.Kind = "scenario"
	step := 0
	for i, msg := range msgs {
		for _, b := range msg.blocks() {
			if b.Type != "tool_result" {
				continue
			}
			if mk, n, ok := m.parseID(b.ToolUseID); ok && mk == req.Scenario && n+1 > step {
				step = n + 1
				if i > anchor {
					anchor = i
				}
			}
		}
	}
	req.Step = step
	steps := m.script[req.Scenario]
	if step >= len(steps) {
		if n := len(steps); n > 0 && steps[n-1].Tool == "" {
			rep.Text = steps[n-1].Text
		} else {
			rep.Text = fmt.Sprintf("claudetest: scenario %q has no step %d", req.Scenario, step)
		}
		return
	}
	s := steps[step]
	if s.After != "" {
		seen := false
		for _, msg := range msgs[anchor+1:] {
			if msg.Role != "assistant" && strings.Contains(msg.text(), s.After) {
				seen = true
				break
			}
		}
		if !seen {
			req.Kind = "wait"
			rep.Text = WaitText
			return
		}
	}
	rep.Text = s.Text
	if s.Tool != "" {
		rep.Tool = s.Tool
		rep.ID = ToolUseID(req.Scenario, step)
		in, err := json.Marshal(s.Input)
		if err != nil || s.Input == nil {
			in = []byte("{}")
		}
		rep.Input = in
	}
}

// parseID maps a tool_use id the model made back to its scenario and step.
func (m *Model) parseID(id string) (marker string, step int, ok bool) {
	rest, found := strings.CutPrefix(id, "toolu_")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '_')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	marker, ok = m.byID[rest[:i]]
	return marker, n, ok
}
