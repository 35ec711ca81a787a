package codextest

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

// Step is one model answer of a scenario: a shell command, a patch, another
// tool call, or (none of those) a final text that ends the turn.
type Step struct {
	Shell     string // exec_command {"cmd": Shell}
	Patch     string // apply_patch (a custom tool) with this input
	Tool      string // any other function tool, e.g. "spawn_agent"
	Namespace string // the tool's namespace, e.g. "multi_agent_v1"
	Args      any    // its arguments, marshalled to JSON; AgentIDArg is replaced
	Text      string // the final text
}

// AgentIDArg, as a string anywhere in Step.Args, is replaced by the
// agent_id of the latest spawn_agent output in the request (the child's
// thread id), so a wait_agent step can name the agent it waits for.
const AgentIDArg = "{{agent_id}}"

// Shell is a step running cmd through exec_command (Codex has no read
// tool: `cat hello.txt` is how it reads).
func Shell(cmd string) Step { return Step{Shell: cmd} }

// Patch is a step calling apply_patch with a patch in Codex's format
// ("*** Begin Patch\n*** Update File: f\n@@\n-old\n+new\n*** End Patch\n").
func Patch(patch string) Step { return Step{Patch: patch} }

// UpdateFile is the apply_patch input replacing the line old by new in
// path (relative to the working directory).
func UpdateFile(path, old, new string) string {
	return "*** Begin Patch\n*** Update File: " + path + "\n@@\n-" + old + "\n+" + new + "\n*** End Patch\n"
}

// Call is a step calling a function tool.
func Call(tool string, args any) Step { return Step{Tool: tool, Args: args} }

// Spawn starts a subagent with message as its prompt (multi_agent_v1
// spawn_agent; its output holds the child's agent_id).
func Spawn(message string) Step {
	return Step{Tool: "spawn_agent", Namespace: "multi_agent_v1", Args: map[string]any{"message": message}}
}

// WaitAgent waits for the subagent the latest Spawn started.
func WaitAgent() Step {
	return Step{Tool: "wait_agent", Namespace: "multi_agent_v1",
		Args: map[string]any{"targets": []any{AgentIDArg}, "timeout_ms": 30000}}
}

// Say is a step answering text, which ends the turn.
func Say(text string) Step { return Step{Text: text} }

// Script maps a marker to the steps of its scenario.
//
// Routing, from the request alone: a request is served by the scenario
// whose marker occurs in the latest user message holding any marker (the
// prompt; a subagent's spawn message; the compaction summary, which
// carries the marker of the scenario it summarised); the longest marker
// wins within a message. The step is one past the highest step whose
// tool output (function_call_output or custom_tool_call_output, matched
// by call id CallID(marker, n)) is in the request, or the step a
// compaction summary in the request recorded, whichever is larger. Past
// the last step the last step's text is repeated if it is a text step.
type Script map[string][]Step

// ToolOutput is a tool call's output as the model received it.
type ToolOutput struct {
	CallID string
	Custom bool // custom_tool_call_output (apply_patch), else function_call_output
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
	// Kind: "scenario" (served a step), "compact" (a compaction request,
	// answered with a summary), "side" (no tools), "unmatched" (no
	// marker), "capped" (over the request cap, refused) or "other".
	Kind     string
	Scenario string
	Step     int
	Reply    string
	Tokens   int // input_tokens reported

	api apiRequest
}

// Messages returns the text of the request's messages with one of roles
// ("user", "developer", "assistant"; every role when none is given), one
// message per element, in order.
func (r Request) Messages(roles ...string) []string {
	var out []string
	for _, it := range r.api.Input {
		if it.Type != "message" && it.Type != "" {
			continue
		}
		if len(roles) > 0 && !contains(roles, it.Role) {
			continue
		}
		out = append(out, flatten(it.Content))
	}
	return out
}

// MessageText is the user and developer messages' text joined: prompts,
// environment context, compaction summaries, and hook context
// (SessionStart additionalContext arrives as a developer message).
func (r Request) MessageText() string {
	return strings.Join(r.Messages("user", "developer"), "\n")
}

// ToolOutputs are the tool outputs in the request, in order.
func (r Request) ToolOutputs() []ToolOutput {
	var out []ToolOutput
	for _, it := range r.api.Input {
		switch it.Type {
		case "function_call_output", "custom_tool_call_output":
			out = append(out, ToolOutput{CallID: it.CallID, Custom: it.Type == "custom_tool_call_output", Text: flatten(it.Output)})
		}
	}
	return out
}

// ToolNames are the names of the tools offered, namespaced tools as
// "namespace.name".
func (r Request) ToolNames() []string {
	var out []string
	for _, raw := range r.api.Tools {
		var t struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		if len(t.Tools) > 0 {
			for _, s := range t.Tools {
				out = append(out, t.Name+"."+s.Name)
			}
			continue
		}
		out = append(out, t.Name)
	}
	return out
}

// HasTools reports whether the request offered tools.
func (r Request) HasTools() bool { return len(r.api.Tools) > 0 }

// ThreadID is client_metadata.thread_id: the session id for the main
// agent, the child's own thread id (its agent_id) for a subagent.
func (r Request) ThreadID() string { s, _ := r.api.ClientMetadata["thread_id"].(string); return s }

// RequestKind is request_kind from client_metadata's
// x-codex-turn-metadata: "turn", or "compaction" for the compaction
// request.
func (r Request) RequestKind() string {
	s, _ := r.api.ClientMetadata["x-codex-turn-metadata"].(string)
	var md struct {
		RequestKind string `json:"request_kind"`
	}
	_ = json.Unmarshal([]byte(s), &md)
	return md.RequestKind
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Model is a scripted Responses API server on 127.0.0.1.
type Model struct {
	script  Script
	markers []string          // longest first
	byID    map[string]string // idPart(marker) -> marker
	srv     *http.Server
	ln      net.Listener
	dump    string

	// MaxRequests caps the requests answered; later ones get HTTP 400,
	// which ends the run, so a CLI stuck in a loop cannot spin for long.
	MaxRequests int

	mu          sync.Mutex
	seq         int // requests arrived
	reqs        []Request
	summary     string
	inputTokens func(Request) int
}

// DefaultSummary starts the text answered to a compaction request; the
// model appends the scenario's state to it (see Script).
const DefaultSummary = "codextest summary: the user asked for scripted file changes."

// CompactionPrompt is a substring of the user message Codex 0.169.0 ends
// its compaction request with.
const CompactionPrompt = "CONTEXT CHECKPOINT COMPACTION"

// NewModel starts a scripted model server; it stops when the test ends,
// or after lifetime (5 minutes when zero) at the latest. When the
// environment variable CODEXTEST_DUMP names a directory, every request
// body is also written there.
func NewModel(t testing.TB, script Script) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("codextest: listen: %v", err)
	}
	m := &Model{script: script, ln: ln, summary: DefaultSummary, dump: os.Getenv("CODEXTEST_DUMP"), MaxRequests: 100}
	m.byID = map[string]string{}
	for k := range script {
		if k == "" {
			t.Fatalf("codextest: empty scenario marker")
		}
		if other, dup := m.byID[idPart(k)]; dup {
			t.Fatalf("codextest: markers %q and %q make the same call ids", k, other)
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
			t.Logf("codextest: model requests:\n%s", m.Log())
		}
	})
	return m
}

// URL is the provider base_url: http://127.0.0.1:PORT/v1.
func (m *Model) URL() string { return "http://" + m.ln.Addr().String() + "/v1" }

// SetSummary sets the start of the text answered to compaction requests.
func (m *Model) SetSummary(text string) {
	m.mu.Lock()
	m.summary = text
	m.mu.Unlock()
}

// SetInputTokens makes the model report f(request) as usage.input_tokens,
// e.g. above `-c model_auto_compact_token_limit=N` to make Codex compact
// after that answer. By default it reports about a token per 4 bytes of
// body.
func (m *Model) SetInputTokens(f func(Request) int) {
	m.mu.Lock()
	m.inputTokens = f
	m.mu.Unlock()
}

// CallID is the call id of the tool call at step of scenario marker.
func CallID(marker string, step int) string { return fmt.Sprintf("call_%s_%d", idPart(marker), step) }

var nonID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func idPart(marker string) string { return strings.Trim(nonID.ReplaceAllString(marker, "-"), "-") }

// parseID maps a call id the model made back to its scenario and step.
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

// ScenarioRequests returns the requests served by the scenario marker.
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

// ToolOutputs returns the outputs of the scenario's tool calls that the
// model received, each once, in order of the calls.
func (m *Model) ToolOutputs(marker string) []ToolOutput {
	prefix := "call_" + idPart(marker) + "_"
	seen := map[string]bool{}
	var out []ToolOutput
	for _, r := range m.Requests() {
		for _, o := range r.ToolOutputs() {
			if strings.HasPrefix(o.CallID, prefix) && !seen[o.CallID] {
				seen[o.CallID] = true
				out = append(out, o)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		_, a, _ := m.parseID(out[i].CallID)
		_, b, _ := m.parseID(out[j].CallID)
		return a < b
	})
	return out
}

// Log is a one-line-per-request summary of what the server received and
// answered.
func (m *Model) Log() string {
	var b strings.Builder
	for _, r := range m.Requests() {
		fmt.Fprintf(&b, "#%d %s %s %s kind=%s", r.Seq, r.Time.Format("15:04:05.000"), r.Method, r.Path, r.Kind)
		if r.Body != nil {
			fmt.Fprintf(&b, " items=%d tools=%d outputs=%d tokens=%d", len(r.api.Input), len(r.api.Tools), len(r.ToolOutputs()), r.Tokens)
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
	m.mu.Unlock()
	switch {
	case capped:
		req.Kind = "capped"
		req.Reply = "400"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"codextest: request cap reached"}}`)
	case hr.Method == http.MethodPost && strings.HasSuffix(hr.URL.Path, "/responses"):
		m.responses(w, &req)
	default:
		req.Kind = "other"
		req.Reply = "404"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"type":"not_found","message":"codextest: no such route"}}`)
	}
	m.record(req)
}

func (m *Model) record(req Request) {
	m.mu.Lock()
	// Seq was taken on arrival; keep the list in that order.
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

// compactAsk reports whether the request is Codex's compaction request:
// request_kind "compaction", or a last user message asking for a context
// checkpoint.
func compactAsk(r *Request) bool {
	if r.RequestKind() == "compaction" {
		return true
	}
	us := r.Messages("user")
	return len(us) > 0 && strings.Contains(us[len(us)-1], CompactionPrompt)
}

var stateRe = regexp.MustCompile(`\[codextest-state scenario=([A-Za-z0-9_-]+) next=([0-9]+)\]`)

func (m *Model) responses(w http.ResponseWriter, req *Request) {
	var rep reply
	switch {
	case compactAsk(req):
		req.Kind = "compact"
		m.route(req, nil)
		m.mu.Lock()
		rep.Text = m.summary
		m.mu.Unlock()
		if req.Scenario != "" {
			rep.Text += fmt.Sprintf("\nThe task %s goes on. [codextest-state scenario=%s next=%d]", req.Scenario, idPart(req.Scenario), req.Step)
		}
	case !req.HasTools():
		req.Kind = "side"
		rep.Text = "codextest"
	default:
		m.route(req, &rep)
	}
	if rep.Kind == "" {
		rep.Kind = "text"
		req.Reply = fmt.Sprintf("text %.60q", rep.Text)
	} else {
		req.Reply = rep.Name + " " + rep.CallID + " " + rep.Args
	}
	m.mu.Lock()
	f := m.inputTokens
	m.mu.Unlock()
	req.Tokens = 1 + len(req.Raw)/4
	if f != nil {
		req.Tokens = f(*req)
	}
	writeSSE(w, fmt.Sprintf("resp_%d", req.Seq), req.Seq, rep, usage{Input: req.Tokens, Output: 1 + (len(rep.Text)+len(rep.Args))/4})
}

// route picks the scenario and step of a request; with rep nil it only
// sets req.Scenario and req.Step (for a compaction summary).
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
	if req.Scenario == "" {
		if rep != nil {
			req.Kind = "unmatched"
			rep.Text = "codextest: no scenario marker in this conversation"
		}
		return
	}
	step := 0
	for _, o := range req.ToolOutputs() {
		if mk, n, ok := m.parseID(o.CallID); ok && mk == req.Scenario && n+1 > step {
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
		if n := len(steps); n > 0 && isText(steps[n-1]) {
			rep.Text = steps[n-1].Text
		} else {
			rep.Text = fmt.Sprintf("codextest: scenario %q has no step %d", req.Scenario, step)
		}
		return
	}
	s := steps[step]
	id := CallID(req.Scenario, step)
	switch {
	case s.Shell != "":
		args, _ := json.Marshal(map[string]any{"cmd": s.Shell})
		*rep = reply{Kind: "function_call", Name: "exec_command", CallID: id, Args: string(args)}
	case s.Patch != "":
		*rep = reply{Kind: "custom_tool_call", Name: "apply_patch", CallID: id, Args: s.Patch}
	case s.Tool != "":
		args, err := json.Marshal(s.Args)
		if err != nil || s.Args == nil {
			args = []byte("{}")
		}
		if bytes.Contains(args, []byte(AgentIDArg)) {
			args = bytes.ReplaceAll(args, []byte(AgentIDArg), []byte(latestAgentID(req)))
		}
		*rep = reply{Kind: "function_call", Name: s.Tool, Namespace: s.Namespace, CallID: id, Args: string(args)}
	default:
		rep.Text = s.Text
	}
}

func isText(s Step) bool { return s.Shell == "" && s.Patch == "" && s.Tool == "" }

// latestAgentID is the agent_id of the last tool output holding one.
func latestAgentID(req *Request) string {
	id := ""
	for _, o := range req.ToolOutputs() {
		var v struct {
			AgentID string `json:"agent_id"`
		}
		if json.Unmarshal([]byte(o.Text), &v) == nil && v.AgentID != "" {
			id = v.AgentID
		}
	}
	return id
}
