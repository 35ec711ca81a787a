package geminitest

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

// Step is one model answer of a scenario: a function call, or (Tool
// empty) a final text.
type Step struct {
	Tool string // read_file, replace, write_file, invoke_agent, run_shell_command, ...
	Args any    // the call's args, marshalled to JSON
	Text string // the final text
}

// Call is a step calling tool with args.
func Call(tool string, args any) Step { return Step{Tool: tool, Args: args} }

// ReadFile is a read_file call.
func ReadFile(path string) Step { return Call("read_file", map[string]any{"file_path": path}) }

// Replace is a replace call (Gemini CLI's edit tool) of old by new in path.
func Replace(path, old, new string) Step {
	return Call("replace", map[string]any{"file_path": path, "instruction": "geminitest edit", "old_string": old, "new_string": new})
}

// WriteFile is a write_file call.
func WriteFile(path, content string) Step {
	return Call("write_file", map[string]any{"file_path": path, "content": content})
}

// InvokeAgent runs the subagent name (e.g. "codebase_investigator") with
// prompt; its requests are routed by the markers in prompt.
func InvokeAgent(name, prompt string) Step {
	return Call("invoke_agent", map[string]any{"agent_name": name, "prompt": prompt})
}

// Say is a step answering text, which ends the turn.
func Say(text string) Step { return Step{Text: text} }

// Script maps a marker to the steps of its scenario.
//
// Routing, from the request alone: a request with tools is served by the
// scenario whose marker occurs in the latest user text holding any marker
// (the prompt; a subagent's prompt; a compression's <state_snapshot>,
// which carries the marker it summarised); the longest marker wins
// within a text. The step is one past the highest step whose
// functionResponse (id "<tool>__"+CallID(marker, n); the CLI prefixes the
// tool name to the id the model gave) is in the request, or the step a
// state snapshot in the request recorded, whichever is larger. Past the
// last step the last step's text is repeated if it is a text step.
type Script map[string][]Step

// ToolResult is a functionResponse the model received.
type ToolResult struct {
	ID       string // as sent back: "<tool>__gt_<marker id>_<n>"
	Name     string
	Response string // the response object as JSON: {"output": ...} or {"error": ...}
}

// Output is the response's "output" string, Error its "error" string.
func (r ToolResult) Output() string { return r.field("output") }

// Error is the response's "error" string (a hook deny lands here).
func (r ToolResult) Error() string { return r.field("error") }

func (r ToolResult) field(k string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(r.Response), &m)
	s, _ := m[k].(string)
	return s
}

// Request is one HTTP request the model server received.
type Request struct {
	Seq    int
	Time   time.Time
	Method string
	Path   string // /v1beta/models/<model>:<method>
	Header http.Header
	Raw    []byte
	Body   map[string]any
	// Kind: "scenario" (served a step), "compress" (the compression
	// request, answered with a <state_snapshot>), "verify" (the second
	// compression call, evaluating the snapshot), "json" (a JSON-mode
	// call: next speaker, loop detection, routing), "side" (no tools),
	// "count_tokens", "unmatched", "capped" or "other".
	Kind     string
	Scenario string
	Step     int
	Reply    string
	Tokens   int // promptTokenCount reported

	api apiRequest
}

// ModelName is the model in the path.
func (r Request) ModelName() string {
	m, _, _ := strings.Cut(strings.TrimPrefix(r.Path, "/v1beta/models/"), ":")
	return m
}

// APIMethod is the method after the colon: streamGenerateContent,
// generateContent or countTokens.
func (r Request) APIMethod() string { _, m, _ := strings.Cut(r.Path, ":"); return m }

// UserTexts are the text of the request's user contents, one element per
// content, in order (function responses left out).
func (r Request) UserTexts() []string {
	var out []string
	for _, c := range r.api.Contents {
		if c.Role == "user" {
			if t := c.text(); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// Text is every text part of the request (system instruction, user and
// model contents) joined.
func (r Request) Text() string {
	var b strings.Builder
	if r.api.SystemInstruction != nil {
		b.WriteString(r.api.SystemInstruction.text())
	}
	for _, c := range r.api.Contents {
		b.WriteString(c.text())
	}
	return b.String()
}

// System is the system instruction's text.
func (r Request) System() string {
	if r.api.SystemInstruction == nil {
		return ""
	}
	return r.api.SystemInstruction.text()
}

// ToolResults are the functionResponse parts, in order.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, c := range r.api.Contents {
		for _, p := range c.Parts {
			if f := p.FunctionResponse; f != nil {
				out = append(out, ToolResult{ID: f.ID, Name: f.Name, Response: string(f.Response)})
			}
		}
	}
	return out
}

// HasTools reports whether the request offered tools.
func (r Request) HasTools() bool { return len(r.api.Tools) > 0 }

// WantsJSON reports a JSON-mode request (generationConfig.
// responseMimeType application/json).
func (r Request) WantsJSON() bool {
	return r.api.GenerationConfig.ResponseMimeType == "application/json"
}

// Model is a scripted Gemini API server on 127.0.0.1.
type Model struct {
	script  Script
	markers []string
	byID    map[string]string
	srv     *http.Server
	ln      net.Listener
	dump    string

	// MaxRequests caps the requests answered; later ones get HTTP 400.
	MaxRequests int

	mu           sync.Mutex
	seq          int
	reqs         []Request
	summary      string
	promptTokens func(Request) int
}

// DefaultSummary starts the state snapshot answered to compression.
const DefaultSummary = "geminitest summary: the user asked for scripted file changes."

// NewModel starts a scripted model server; it stops when the test ends,
// or after 5 minutes at the latest. When GEMINITEST_DUMP names a
// directory, every request body is also written there.
func NewModel(t testing.TB, script Script) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("geminitest: listen: %v", err)
	}
	m := &Model{script: script, ln: ln, summary: DefaultSummary, dump: os.Getenv("GEMINITEST_DUMP"), MaxRequests: 100}
	m.byID = map[string]string{}
	for k := range script {
		if k == "" {
			t.Fatalf("geminitest: empty scenario marker")
		}
		if other, dup := m.byID[idPart(k)]; dup {
			t.Fatalf("geminitest: markers %q and %q make the same call ids", k, other)
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
			t.Logf("geminitest: model requests:\n%s", m.Log())
		}
	})
	return m
}

// URL is the value for GOOGLE_GEMINI_BASE_URL.
func (m *Model) URL() string { return "http://" + m.ln.Addr().String() }

// SetSummary sets the start of the state snapshot answered to compression.
func (m *Model) SetSummary(text string) {
	m.mu.Lock()
	m.summary = text
	m.mu.Unlock()
}

// SetPromptTokens makes the model report f(request) as promptTokenCount
// (and countTokens' totalTokens); by default about a token per 4 bytes.
func (m *Model) SetPromptTokens(f func(Request) int) {
	m.mu.Lock()
	m.promptTokens = f
	m.mu.Unlock()
}

// CallID is the functionCall id the model gives step of scenario marker.
func CallID(marker string, step int) string { return fmt.Sprintf("gt_%s_%d", idPart(marker), step) }

var nonID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func idPart(marker string) string { return strings.Trim(nonID.ReplaceAllString(marker, "-"), "-") }

// parseID maps a functionResponse id back to its scenario and step.
func (m *Model) parseID(id string) (marker string, step int, ok bool) {
	if i := strings.Index(id, "__gt_"); i >= 0 {
		id = id[i+2:]
	}
	rest, found := strings.CutPrefix(id, "gt_")
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

// ToolResults returns the functionResponses of the scenario's calls that
// the model received, each once (the first seen), by step.
func (m *Model) ToolResults(marker string) []ToolResult {
	byStep := map[int]ToolResult{}
	for _, r := range m.Requests() {
		for _, tr := range r.ToolResults() {
			if mk, n, ok := m.parseID(tr.ID); ok && mk == marker {
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
			fmt.Fprintf(&b, " contents=%d tools=%d results=%d tokens=%d", len(r.api.Contents), len(r.api.Tools), len(r.ToolResults()), r.Tokens)
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
	switch method := req.APIMethod(); {
	case capped:
		req.Kind, req.Reply = "capped", "400"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"geminitest: request cap reached"}}`)
	case hr.Method != http.MethodPost:
		m.notFound(w, &req)
	case method == "countTokens":
		req.Kind = "count_tokens"
		req.Reply = fmt.Sprintf("totalTokens=%d", req.Tokens)
		writeJSON(w, map[string]any{"totalTokens": req.Tokens})
	case method == "streamGenerateContent" || method == "generateContent":
		rep := m.answer(&req)
		body := response(rep, req.Seq, req.Tokens)
		if method == "streamGenerateContent" {
			writeSSE(w, body)
		} else {
			writeJSON(w, body)
		}
	default:
		m.notFound(w, &req)
	}
	m.record(req)
}

func (m *Model) notFound(w http.ResponseWriter, req *Request) {
	req.Kind, req.Reply = "other", "404"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, `{"error":{"code":404,"status":"NOT_FOUND","message":"geminitest: no such route"}}`)
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
		hdr, _ := json.Marshal(map[string]any{"path": req.Path, "header": req.Header})
		_ = os.WriteFile(filepath.Join(m.dump, name), append(append(hdr, '\n'), pretty.Bytes()...), 0o600)
	}
}

// CompressionPrompt and VerifyPrompt are substrings of the system
// instruction of Gemini CLI 0.61.0's two compression calls.
const (
	CompressionPrompt = "distilling chat history"
	VerifyPrompt      = "Critically evaluate the <state_snapshot>"
)

var (
	stateRe    = regexp.MustCompile(`\[geminitest-state scenario=([A-Za-z0-9_-]+) next=([0-9]+)\]`)
	snapshotRe = regexp.MustCompile(`(?s)<state_snapshot>.*?</state_snapshot>`)
)

func (m *Model) answer(req *Request) reply {
	var rep reply
	text := req.Text()
	switch {
	case strings.Contains(text, VerifyPrompt):
		// Hand back the snapshot being evaluated (the last one in the
		// contents; the system instruction names the tag too), unchanged.
		req.Kind = "verify"
		var contents strings.Builder
		for _, c := range req.api.Contents {
			contents.WriteString(c.text())
		}
		all := snapshotRe.FindAllString(contents.String(), -1)
		if len(all) > 0 {
			rep.Text = all[len(all)-1]
		}
	case strings.Contains(text, CompressionPrompt):
		req.Kind = "compress"
		m.route(req, nil)
		m.mu.Lock()
		s := m.summary
		m.mu.Unlock()
		if req.Scenario != "" {
			s += fmt.Sprintf("\nThe task %s goes on. [geminitest-state scenario=%s next=%d]", req.Scenario, idPart(req.Scenario), req.Step)
		}
		rep.Text = "<state_snapshot>\n" + s + "\n</state_snapshot>"
	case req.WantsJSON():
		req.Kind = "json"
		schema := req.api.GenerationConfig.ResponseJSONSchema
		if len(schema) == 0 {
			schema = req.api.GenerationConfig.ResponseSchema
		}
		b, _ := json.Marshal(fillSchema(schema))
		rep.Text = string(b)
	case !req.HasTools():
		req.Kind = "side"
		rep.Text = "geminitest"
	default:
		m.route(req, &rep)
	}
	if rep.Call != nil {
		req.Reply = fmt.Sprintf("%s %s %s", rep.Call.Name, rep.Call.ID, rep.Call.Args)
	} else {
		req.Reply = fmt.Sprintf("text %.60q", rep.Text)
	}
	return rep
}

// route picks the scenario and step; with rep nil it only sets
// req.Scenario and req.Step (for a state snapshot).
func (m *Model) route(req *Request, rep *reply) {
	us := req.UserTexts()
	for i := len(us) - 1; i >= 0 && req.Scenario == ""; i-- {
		for _, mk := range m.markers {
			if strings.Contains(us[i], mk) {
				req.Scenario = mk
				break
			}
		}
	}
	if req.Scenario == "" {
		if rep != nil {
			req.Kind = "unmatched"
			rep.Text = "geminitest: no scenario marker in this conversation"
		}
		return
	}
	step := 0
	for _, tr := range req.ToolResults() {
		if mk, n, ok := m.parseID(tr.ID); ok && mk == req.Scenario && n+1 > step {
			step = n + 1
		}
	}
	for _, u := range us {
		for _, sm := range stateRe.FindAllStringSubmatch(u, -1) {
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
			rep.Text = fmt.Sprintf("geminitest: scenario %q has no step %d", req.Scenario, step)
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
	rep.Call = &functionCall{ID: CallID(req.Scenario, step), Name: s.Tool, Args: args}
}
