package opencodetest

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

// Step is one model answer of a scenario: a tool call, or (Tool empty) a
// final text.
type Step struct {
	Tool string // read, edit, write, bash, glob, grep, task, ...
	Args any    // the call's arguments, marshalled to JSON
	Text string // the final text
}

// Call is a step calling tool with args.
func Call(tool string, args any) Step { return Step{Tool: tool, Args: args} }

// Read is a read of path (absolute).
func Read(path string) Step { return Call("read", map[string]any{"filePath": path}) }

// Edit replaces old by new in path (absolute).
func Edit(path, old, new string) Step {
	return Call("edit", map[string]any{"filePath": path, "oldString": old, "newString": new})
}

// Task runs a subagent ("general") with prompt, which routes its requests.
func Task(prompt string) Step {
	return Call("task", map[string]any{"description": "opencodetest subtask", "prompt": prompt, "subagent_type": "general"})
}

// Say is a step answering text, which ends the turn.
func Say(text string) Step { return Step{Text: text} }

// Script maps a marker to the steps of its scenario.
//
// Routing, from the request alone: a request with tools is served by the
// scenario whose marker occurs in the latest user message holding any
// marker (the prompt; a subagent's task prompt), the longest marker
// winning within a message; when no user message holds one (after a
// compaction the conversation is a summary) the latest state note in a
// summary the model wrote decides. The step is one past the highest step
// whose tool result (tool_call_id CallID(marker, n)) is in the request,
// or the step a summary recorded, whichever is larger. Past the last step
// the last step's text is repeated if it is a text step.
type Script map[string][]Step

// ToolResult is a role "tool" message the model received.
type ToolResult struct {
	CallID string
	Text   string
}

// Request is one HTTP request the model server received.
type Request struct {
	Seq    int
	Time   time.Time
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any
	// Kind: "scenario" (served a step), "compact" (the summarisation
	// request), "title" (a request without tools, e.g. the session
	// title), "unmatched", "capped" or "other".
	Kind     string
	Scenario string
	Step     int
	Reply    string
	Tokens   int // usage.prompt_tokens reported

	api apiRequest
}

// Messages returns the text of the messages with one of roles (every role
// when none is given), one element per message.
func (r Request) Messages(roles ...string) []string {
	var out []string
	for _, m := range r.api.Messages {
		if len(roles) == 0 || contains(roles, m.Role) {
			out = append(out, m.text())
		}
	}
	return out
}

// System is the system messages' text joined.
func (r Request) System() string { return strings.Join(r.Messages("system"), "\n") }

// Text is every message's text joined.
func (r Request) Text() string { return strings.Join(r.Messages(), "\n") }

// ToolResults are the role "tool" messages, in order.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.api.Messages {
		if m.Role == "tool" {
			out = append(out, ToolResult{CallID: m.ToolCallID, Text: m.text()})
		}
	}
	return out
}

// HasTools reports whether the request offered tools.
func (r Request) HasTools() bool { return len(r.api.Tools) > 0 }

// ToolNames are the names of the tools offered.
func (r Request) ToolNames() []string {
	var out []string
	for _, raw := range r.api.Tools {
		var t struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) == nil {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Model is a scripted OpenAI chat completions server on 127.0.0.1.
type Model struct {
	script  Script
	markers []string
	byID    map[string]string
	srv     *http.Server
	ln      net.Listener
	dump    string

	// MaxRequests caps the requests answered; later ones get HTTP 400.
	// opencode loops compact, continue, compact when a model's context
	// limit is not above its output limit; the cap ends such a run.
	MaxRequests int

	mu           sync.Mutex
	seq          int
	reqs         []Request
	summary      string
	promptTokens func(Request) int
}

// DefaultSummary starts the text answered to a compaction request.
const DefaultSummary = "opencodetest summary: the user asked for scripted file changes."

// CompactionPrompt is a substring of the system prompt of opencode
// 1.18.33's summarisation request.
const CompactionPrompt = "You are a context summarization agent"

// NewModel starts a scripted model server; it stops when the test ends,
// or after 5 minutes at the latest. When OPENCODETEST_DUMP names a
// directory, every request body is also written there.
func NewModel(t testing.TB, script Script) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("opencodetest: listen: %v", err)
	}
	m := &Model{script: script, ln: ln, summary: DefaultSummary, dump: os.Getenv("OPENCODETEST_DUMP"), MaxRequests: 60}
	m.byID = map[string]string{}
	for k := range script {
		if k == "" {
			t.Fatalf("opencodetest: empty scenario marker")
		}
		if other, dup := m.byID[idPart(k)]; dup {
			t.Fatalf("opencodetest: markers %q and %q make the same call ids", k, other)
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
		_ = os.MkdirAll(m.dump, 0o700)
	}
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
	stop := time.AfterFunc(5*time.Minute, func() { _ = m.srv.Close() })
	t.Cleanup(func() {
		stop.Stop()
		_ = m.srv.Close()
		if t.Failed() {
			t.Logf("opencodetest: model requests:\n%s", m.Log())
		}
	})
	return m
}

// URL is the provider baseURL: http://127.0.0.1:PORT/v1.
func (m *Model) URL() string { return "http://" + m.ln.Addr().String() + "/v1" }

// SetSummary sets the start of the text answered to compaction requests.
func (m *Model) SetSummary(text string) {
	m.mu.Lock()
	m.summary = text
	m.mu.Unlock()
}

// SetPromptTokens makes the model report f(request) as
// usage.prompt_tokens, e.g. above limit.context - limit.output to make
// opencode compact; by default about a token per 4 bytes of body.
func (m *Model) SetPromptTokens(f func(Request) int) {
	m.mu.Lock()
	m.promptTokens = f
	m.mu.Unlock()
}

// CallID is the tool call id of step of scenario marker.
func CallID(marker string, step int) string { return fmt.Sprintf("call_%s_%d", idPart(marker), step) }

var nonID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func idPart(marker string) string { return strings.Trim(nonID.ReplaceAllString(marker, "-"), "-") }

func (m *Model) parseID(id string) (marker string, step int, ok bool) {
	rest, found := strings.CutPrefix(id, "call_")
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

// Requests returns a copy of every request received so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// ScenarioRequests returns the requests that served a step of marker.
func (m *Model) ScenarioRequests(marker string) []Request {
	var out []Request
	for _, r := range m.Requests() {
		if r.Scenario == marker && r.Kind == "scenario" {
			out = append(out, r)
		}
	}
	return out
}

// Kinds counts the requests by Kind.
func (m *Model) Kinds() map[string]int {
	out := map[string]int{}
	for _, r := range m.Requests() {
		out[r.Kind]++
	}
	return out
}

// ToolResults returns the tool results of the scenario's calls that the
// model received, each once (the first seen), by step.
func (m *Model) ToolResults(marker string) []ToolResult {
	byStep := map[int]ToolResult{}
	for _, r := range m.Requests() {
		for _, tr := range r.ToolResults() {
			if mk, n, ok := m.parseID(tr.CallID); ok && mk == marker {
				if _, seen := byStep[n]; !seen {
					byStep[n] = tr
				}
			}
		}
	}
	steps := make([]int, 0, len(byStep))
	for n := range byStep {
		steps = append(steps, n)
	}
	sort.Ints(steps)
	out := make([]ToolResult, 0, len(steps))
	for _, n := range steps {
		out = append(out, byStep[n])
	}
	return out
}

// Log is a one-line-per-request summary.
func (m *Model) Log() string {
	var b strings.Builder
	for _, r := range m.Requests() {
		fmt.Fprintf(&b, "#%d %s %s %s kind=%s", r.Seq, r.Time.Format("15:04:05.000"), r.Method, r.Path, r.Kind)
		if r.Body != nil {
			fmt.Fprintf(&b, " msgs=%d tools=%d results=%d tokens=%d", len(r.api.Messages), len(r.api.Tools), len(r.ToolResults()), r.Tokens)
		}
		if r.Scenario != "" {
			fmt.Fprintf(&b, " scenario=%q step=%d", r.Scenario, r.Step)
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
	req := Request{Time: time.Now(), Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), Raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &req.Body)
		_ = json.Unmarshal(raw, &req.api)
	}
	m.mu.Lock()
	m.seq++
	req.Seq = m.seq
	capped := m.MaxRequests > 0 && req.Seq > m.MaxRequests
	f := m.promptTokens
	m.mu.Unlock()
	req.Tokens = 1 + len(raw)/4
	if f != nil {
		req.Tokens = f(req)
	}
	switch {
	case capped:
		req.Kind, req.Reply = "capped", "400"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"opencodetest: request cap reached"}}`)
	case hr.Method == http.MethodPost && strings.HasSuffix(hr.URL.Path, "/chat/completions"):
		rep := m.answer(&req)
		model := req.api.Model
		id := fmt.Sprintf("chatcmpl-%d", req.Seq)
		if req.api.Stream {
			writeSSE(w, id, model, rep, req.Tokens)
		} else {
			writeJSON(w, id, model, rep, req.Tokens)
		}
	default:
		req.Kind, req.Reply = "other", "404"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"type":"not_found","message":"opencodetest: no such route"}}`)
	}
	m.record(req)
}

func (m *Model) record(req Request) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	sort.SliceStable(m.reqs, func(i, j int) bool { return m.reqs[i].Seq < m.reqs[j].Seq })
	m.mu.Unlock()
	if m.dump != "" && len(req.Raw) > 0 {
		name := fmt.Sprintf("%03d-%s-%s.json", req.Seq, req.Kind, idPart(req.Scenario))
		var pretty bytes.Buffer
		if json.Indent(&pretty, req.Raw, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(req.Raw)
		}
		hdr, _ := json.Marshal(req.Header)
		_ = os.WriteFile(filepath.Join(m.dump, name), append(append(hdr, '\n'), pretty.Bytes()...), 0o600)
	}
}

var stateRe = regexp.MustCompile(`\[opencodetest-state scenario=([A-Za-z0-9_-]+) next=([0-9]+)\]`)

func (m *Model) answer(req *Request) reply {
	var rep reply
	switch {
	case strings.Contains(req.System(), CompactionPrompt):
		// The conversation arrives as text ("[User]: ...", "[Assistant
		// tool call]: read({...})", "[Tool result]: ..."), without call
		// ids: the step is the count of tool results after the prompt.
		req.Kind = "compact"
		m.route(req, nil)
		if req.Scenario != "" {
			us := req.Messages("user")
			last := us[len(us)-1]
			if i := strings.LastIndex(last, req.Scenario); i >= 0 {
				req.Step = max(req.Step, strings.Count(last[i:], "[Tool result]:"))
			}
		}
		m.mu.Lock()
		rep.Text = m.summary
		m.mu.Unlock()
		if req.Scenario != "" {
			rep.Text += fmt.Sprintf("\nThe task goes on. [opencodetest-state scenario=%s next=%d]", idPart(req.Scenario), req.Step)
		}
	case !req.HasTools():
		req.Kind = "title"
		rep.Text = "opencodetest session"
	default:
		m.route(req, &rep)
	}
	if rep.Tool != "" {
		req.Reply = rep.Tool + " " + rep.CallID + " " + rep.Args
	} else {
		req.Reply = fmt.Sprintf("text %.60q", rep.Text)
	}
	return rep
}

// route picks the scenario and step; with rep nil it only sets
// req.Scenario and req.Step (for a summary).
func (m *Model) route(req *Request, rep *reply) {
	us := req.Messages("user")
	for i := len(us) - 1; i >= 0 && req.Scenario == ""; i-- {
		for _, mk := range m.markers {
			if strings.Contains(us[i], mk) {
				req.Scenario = mk
				break
			}
		}
	}
	all := req.Messages("user", "assistant")
	if req.Scenario == "" {
		for i := len(all) - 1; i >= 0 && req.Scenario == ""; i-- {
			if sm := stateRe.FindAllStringSubmatch(all[i], -1); len(sm) > 0 {
				req.Scenario = m.byID[sm[len(sm)-1][1]]
			}
		}
	}
	if req.Scenario == "" {
		if rep != nil {
			req.Kind = "unmatched"
			rep.Text = "opencodetest: no scenario marker in this conversation"
		}
		return
	}
	step := 0
	for _, tr := range req.ToolResults() {
		if mk, n, ok := m.parseID(tr.CallID); ok && mk == req.Scenario && n+1 > step {
			step = n + 1
		}
	}
	for _, t := range all {
		for _, sm := range stateRe.FindAllStringSubmatch(t, -1) {
			if n, _ := strconv.Atoi(sm[2]); sm[1] == idPart(req.Scenario) && n > step {
				step = n
			}
		}
	}
	req.Step = step
	if rep == nil {
		return
	}
	req.Kind = "scenario"
	steps := m.script[req.Scenario]
	if step >= len(steps) {
		if n := len(steps); n > 0 && steps[n-1].Tool == "" {
			rep.Text = steps[n-1].Text
		} else {
			rep.Text = fmt.Sprintf("opencodetest: scenario %q has no step %d", req.Scenario, step)
		}
		return
	}
	s := steps[step]
	if s.Tool == "" {
		rep.Text = s.Text
		return
	}
	args, err := json.Marshal(s.Args)
	if err != nil || s.Args == nil {
		args = []byte("{}")
	}
	*rep = reply{Tool: s.Tool, CallID: CallID(req.Scenario, step), Args: string(args)}
}
