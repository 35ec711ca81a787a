package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/internal/jsonscan"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Hook events, as Gemini CLI names them in settings.json and in the
// payload's hook_event_name.
const (
	SessionStart        = "SessionStart"
	BeforeAgent         = "BeforeAgent"
	PreCompress         = "PreCompress"
	BeforeModel         = "BeforeModel"
	BeforeToolSelection = "BeforeToolSelection"
	AfterModel          = "AfterModel"
	BeforeTool          = "BeforeTool"
	AfterTool           = "AfterTool"
	AfterAgent          = "AfterAgent"
	Notification        = "Notification"
	SessionEnd          = "SessionEnd"
)

// Events lists every hook event Gemini CLI 0.61 accepts, in the order one
// turn fires them. An unknown name in settings.json makes the CLI warn
// and skip it.
func Events() []string {
	return []string{SessionStart, BeforeAgent, PreCompress, BeforeModel, BeforeToolSelection,
		AfterModel, BeforeTool, AfterTool, AfterAgent, Notification, SessionEnd}
}

// KnownEvent reports whether name is one of Events.
func KnownEvent(name string) bool { return slices.Contains(Events(), name) }

// Tools whose calls and results this package reads.
const (
	ToolReadFile      = "read_file"
	ToolReadManyFiles = "read_many_files"
	ToolWriteFile     = "write_file"
	ToolReplace       = "replace"
	ToolInvokeAgent   = "invoke_agent"
)

// Payload is the JSON Gemini CLI writes on a hook's stdin: the members
// every event carries, then those of the event. Only the members this
// package reads are decoded; others are ignored, so that new members in
// new releases break nothing. A member absent or null is the zero value.
type Payload struct {
	SessionID      string    // session_id (a subagent's calls carry the parent's)
	TranscriptPath string    // the main chat file; "" when the CLI records none
	Cwd            string    // the CLI's working directory (absolute)
	Event          string    // hook_event_name
	Timestamp      time.Time // when the CLI fired the event (zero when absent)

	// BeforeTool, AfterTool.
	ToolName            string
	ToolInput           json.RawMessage // the call's arguments: an object
	ToolResponse        *ToolResponse   // AfterTool only
	MCPContext          json.RawMessage // mcp_context: an object, for MCP tools
	OriginalRequestName string          // the name the model called, when the CLI mapped it

	// BeforeAgent, AfterAgent.
	Prompt         string
	PromptResponse string // AfterAgent
	StopHookActive bool   // AfterAgent

	Source  string // SessionStart: startup, resume, clear
	Reason  string // SessionEnd: exit, clear, logout, prompt_input_exit, other
	Trigger string // PreCompress: auto, manual (fires before every model turn)

	// Notification.
	NotificationType string
	Message          string
	Details          json.RawMessage

	// BeforeModel, BeforeToolSelection, AfterModel: the request (the
	// whole history, flattened) and the response. Kept only when
	// DecodeOptions.LLM is set; otherwise skipped without being decoded.
	LLMRequest  json.RawMessage
	LLMResponse json.RawMessage
}

// ToolResponse is an AfterTool payload's tool_response: what the tool
// returned, before the CLI turned it into the function response the model
// receives (which may append text to it, see ReadSeen).
type ToolResponse struct {
	// LLMContent is what the model receives: a string, a part object
	// ({"text"}, {"inlineData"}...) or an array of strings and parts.
	LLMContent json.RawMessage
	// ReturnDisplay is what the CLI shows: a string, or an object
	// (replace and write_file: fileDiff, filePath, originalContent,
	// newContent, isNewFile...; read_many_files: files, skipped...). Nil
	// when absent.
	ReturnDisplay json.RawMessage
	// Error is set when the tool failed.
	Error *ToolError
}

// ToolError is a failed tool's error.
type ToolError struct {
	Message string
	Type    string // the CLI's ToolErrorType: file_not_found, policy_violation...
}

// FieldError is a payload member this package reads that is missing
// where it is needed, or holds another JSON type than the one it is read
// as. A hook whose payload has one should do nothing with that payload
// (fail open) and say which member and what it got: guessing — an empty
// path, a zero time — would check the wrong file or misplace evidence.
type FieldError struct {
	Field string // the member's path: session_id, tool_input.file_path
	Got   string // "a number", "null", "empty"...; "" when missing
	Want  string // "a string", "an object"...
}

func (e *FieldError) Error() string {
	switch e.Got {
	case "":
		return e.Field + " is missing"
	case "empty":
		return e.Field + " is empty"
	}
	return e.Field + " is " + e.Got + ", not " + e.Want
}

// jsonKind names the JSON type of a value by its first byte.
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// members decodes raw members one by one and keeps the first problem, so
// that a decoder reads as the list of what it takes. Absent and null
// members are the zero value unless required.
type members struct{ err error }

func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

func (m *members) fail(field string, raw []byte, want string) {
	if m.err == nil {
		m.err = &FieldError{Field: field, Got: jsonKind(raw), Want: want}
	}
}

func (m *members) str(field string, raw []byte, required bool) string {
	if m.err != nil {
		return ""
	}
	if isNull(raw) {
		if required {
			m.fail(field, raw, "a string")
		}
		return ""
	}
	if raw[0] != '"' {
		m.fail(field, raw, "a string")
		return ""
	}
	s, ok := jsonscan.String(raw)
	if !ok {
		m.err = fmt.Errorf("decode %s: invalid string", field)
		return ""
	}
	if s == "" && required {
		m.err = &FieldError{Field: field, Got: "empty", Want: "a string"}
	}
	return s
}

func (m *members) boolean(field string, raw []byte) bool {
	if m.err != nil || isNull(raw) {
		return false
	}
	switch string(raw) {
	case "true":
		return true
	case "false":
		return false
	}
	m.fail(field, raw, "a boolean")
	return false
}

// int decodes an optional integer; has is false when it is absent.
func (m *members) int(field string, raw []byte) (n int64, has bool) {
	if m.err != nil || isNull(raw) {
		return 0, false
	}
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		m.fail(field, raw, "a number")
		return 0, false
	}
	n, ok := jsonscan.Int(raw)
	if !ok {
		m.err = &FieldError{Field: field, Got: "a number", Want: "an integer"}
		return 0, false
	}
	return n, true
}

// object checks that a member is an object and valid JSON; it returns it
// (nil for an absent or null optional one).
func (m *members) object(field string, raw []byte, required bool) json.RawMessage {
	if m.err != nil {
		return nil
	}
	if isNull(raw) {
		if required {
			m.fail(field, raw, "an object")
		}
		return nil
	}
	if raw[0] != '{' {
		m.fail(field, raw, "an object")
		return nil
	}
	if !jsonscan.Valid(raw) {
		m.err = fmt.Errorf("decode %s: invalid JSON", field)
		return nil
	}
	return raw
}

// value checks that a member is valid JSON of one of the kinds in want
// (first bytes: '"', '{', '['); nil when absent or null.
func (m *members) value(field string, raw []byte, want string, kinds string) json.RawMessage {
	if m.err != nil || isNull(raw) {
		return nil
	}
	if !bytes.Contains([]byte(kinds), raw[:1]) {
		m.fail(field, raw, want)
		return nil
	}
	if !jsonscan.Valid(raw) {
		m.err = fmt.Errorf("decode %s: invalid JSON", field)
		return nil
	}
	return raw
}

// fields gathers an object's members by name; a repeated member keeps its
// last value, as JSON.parse and encoding/json do.
func fields(obj []byte, names ...string) (map[string][]byte, bool) {
	out := make(map[string][]byte, len(names))
	st := jsonscan.Members(obj, func(k, v []byte) bool {
		if slices.Contains(names, string(k)) {
			out[string(k)] = v
		}
		return true
	})
	return out, st == jsonscan.OK
}

// MaxPayload bounds what DecodePayload reads: BeforeModel carries the
// whole history, and a write_file's AfterTool the file three times.
const MaxPayload = 256 << 20

// DecodeOptions tunes DecodePayload.
type DecodeOptions struct {
	// Event is the event the hook was installed for ("" to take the
	// payload's word). When set, a payload naming another event is an
	// error, and the members it requires are the ones Event requires.
	Event string
	// LLM keeps llm_request and llm_response (checked to be objects).
	// Without it they are skipped with the cheapest scan there is: the
	// hooks of the model events need neither.
	LLM bool
}

// DecodePayload reads and checks one hook payload. Members read as
// strings, booleans, integers or objects that hold another JSON type are
// a *FieldError naming them; so are members an event requires (every
// payload: session_id; BeforeTool: tool_name and tool_input; AfterTool:
// also tool_response) when missing. A relative cwd or transcript_path is
// an error: they are read as they are.
func DecodePayload(r io.Reader, opt DecodeOptions) (*Payload, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	if len(b) > MaxPayload {
		return nil, fmt.Errorf("payload larger than %d bytes", MaxPayload)
	}
	return ParsePayload(b, opt)
}

// topMembers are the payload members DecodePayload reads.
var topMembers = []string{
	"session_id", "transcript_path", "cwd", "hook_event_name", "timestamp",
	"tool_name", "tool_input", "tool_response", "mcp_context", "original_request_name",
	"prompt", "prompt_response", "stop_hook_active", "source", "reason", "trigger",
	"notification_type", "message", "details", "llm_request", "llm_response",
}

// ParsePayload is DecodePayload of a payload already read.
func ParsePayload(b []byte, opt DecodeOptions) (*Payload, error) {
	i := jsonscan.WS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("payload is not a JSON object")
	}
	raw := make(map[string][]byte, 16)
	// One scan over the whole payload, strings checked for their closing
	// quote only: llm_request (the whole history) is passed over as fast
	// as it can be. What is kept is checked below.
	end, st := jsonscan.Object(b, i, jsonscan.Quotes, nil, func(k, v []byte) bool {
		if slices.Contains(topMembers, string(k)) {
			raw[string(k)] = v
		}
		return true
	})
	if st != jsonscan.OK || jsonscan.WS(b, end) != len(b) {
		return nil, errors.New("payload is not a JSON object")
	}
	var m members
	p := &Payload{
		SessionID:      m.str("session_id", raw["session_id"], true),
		TranscriptPath: m.str("transcript_path", raw["transcript_path"], false),
		Cwd:            m.str("cwd", raw["cwd"], false),
		Event:          m.str("hook_event_name", raw["hook_event_name"], false),
	}
	if ts := m.str("timestamp", raw["timestamp"], false); ts != "" && m.err == nil {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return nil, fmt.Errorf("payload timestamp %q is not an RFC 3339 time", ts)
		}
		p.Timestamp = t
	}
	event := p.Event
	if opt.Event != "" {
		if p.Event != "" && p.Event != opt.Event {
			return nil, fmt.Errorf("payload is for %s, not %s", p.Event, opt.Event)
		}
		event = opt.Event
	}
	tool := event == BeforeTool || event == AfterTool
	p.ToolName = m.str("tool_name", raw["tool_name"], tool)
	p.ToolInput = m.object("tool_input", raw["tool_input"], tool)
	p.MCPContext = m.object("mcp_context", raw["mcp_context"], false)
	p.OriginalRequestName = m.str("original_request_name", raw["original_request_name"], false)
	if tr := m.object("tool_response", raw["tool_response"], event == AfterTool); tr != nil {
		p.ToolResponse = m.toolResponse(tr)
	}
	p.Prompt = m.str("prompt", raw["prompt"], false)
	p.PromptResponse = m.str("prompt_response", raw["prompt_response"], false)
	p.StopHookActive = m.boolean("stop_hook_active", raw["stop_hook_active"])
	p.Source = m.str("source", raw["source"], false)
	p.Reason = m.str("reason", raw["reason"], false)
	p.Trigger = m.str("trigger", raw["trigger"], false)
	p.NotificationType = m.str("notification_type", raw["notification_type"], false)
	p.Message = m.str("message", raw["message"], false)
	p.Details = m.value("details", raw["details"], "a JSON value", `{["tfn-0123456789`)
	if opt.LLM {
		p.LLMRequest = m.object("llm_request", raw["llm_request"], false)
		p.LLMResponse = m.object("llm_response", raw["llm_response"], false)
	}
	if m.err != nil {
		return nil, m.err
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return nil, fmt.Errorf("payload cwd %q is not absolute", p.Cwd)
	}
	if p.TranscriptPath != "" && !filepath.IsAbs(p.TranscriptPath) {
		return nil, fmt.Errorf("payload transcript path %q is not absolute", p.TranscriptPath)
	}
	return p, nil
}

func (m *members) toolResponse(obj []byte) *ToolResponse {
	f, _ := fields(obj, "llmContent", "returnDisplay", "error")
	tr := &ToolResponse{
		LLMContent:    m.value("tool_response.llmContent", f["llmContent"], "a string, a part or an array of parts", `"{[`),
		ReturnDisplay: m.value("tool_response.returnDisplay", f["returnDisplay"], "a string or an object", `"{`),
	}
	if e := m.object("tool_response.error", f["error"], false); e != nil {
		ef, _ := fields(e, "message", "type")
		tr.Error = &ToolError{
			Message: m.str("tool_response.error.message", ef["message"], false),
			Type:    m.str("tool_response.error.type", ef["type"], false),
		}
	}
	return tr
}

// Failed reports whether an AfterTool result is a failure: the tool
// returned an error (a hook's deny never reaches AfterTool).
func (p *Payload) Failed() bool { return p.ToolResponse != nil && p.ToolResponse.Error != nil }

// HookKey is a dedupe key for a record a hook takes of this payload's tool
// call. Gemini CLI gives a hook no call id (the chat file's call ids are
// written after the hooks ran), so the key is the event's timestamp and a
// digest of the tool and its input: the same payload read twice gives the
// same key, two calls give two. It never equals a key of the chat reader:
// a hook's record and the chat's record of one result are two records.
func (p *Payload) HookKey() string {
	ts := ""
	if !p.Timestamp.IsZero() {
		ts = p.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return "hook:" + ts + ":" + digest(p.ToolName, string(p.ToolInput))
}

// EditTarget is the file a BeforeTool call of write_file or replace would
// change: its file_path, resolved the way the CLI resolves it (against
// cwd; an "@"-prefixed path that does not exist is read without the "@"),
// so that the guard checks the file the tool will write. ok is false for
// every other tool. Whether the file exists is for the caller to find
// out: a write_file (or a replace with an empty old_string) of a file
// that does not exist creates it, which the guard allows.
func (p *Payload) EditTarget() (path string, ok bool, err error) {
	if p.ToolName != ToolWriteFile && p.ToolName != ToolReplace {
		return "", false, nil
	}
	path, err = p.toolPath()
	return path, err == nil, err
}

// toolPath is the resolved file_path of a file tool's input.
func (p *Payload) toolPath() (string, error) {
	var m members
	f, ok := fields(p.ToolInput, "file_path")
	if !ok {
		return "", &FieldError{Field: "tool_input", Got: jsonKind(p.ToolInput), Want: "an object"}
	}
	fp := m.str("tool_input.file_path", f["file_path"], true)
	if m.err != nil {
		return "", m.err
	}
	abs, ok := resolvePath(fp, p.Cwd, exists)
	if !ok {
		return "", fmt.Errorf("tool_input.file_path %q cannot be made absolute (cwd %q)", fp, p.Cwd)
	}
	return abs, nil
}

// Seen returns the file versions an AfterTool result put into the
// context: a read_file's text (see readSeen), each file a read_many_files
// showed (see readManySeen), the content after a write_file or replace
// (see editSeen). A read whose text is not exactly the file's (binary,
// shortened lines, a split that is not exact) names the file without
// content and says why. Other tools, failed calls and other events give
// nothing. A member of the wrong type is a *FieldError.
func (p *Payload) Seen() ([]Seen, error) {
	if p.Event != AfterTool || p.ToolResponse == nil || p.Failed() {
		return nil, nil
	}
	tr := p.ToolResponse
	// The input is checked whole before anything is derived from it.
	if _, _, err := p.FileArgs(); err != nil {
		return nil, err
	}
	switch p.ToolName {
	case ToolReadFile:
		args, err := parseReadFileArgs(p.ToolInput)
		if err != nil {
			return nil, err
		}
		path, err := p.toolPath()
		if err != nil {
			return nil, err
		}
		if len(tr.LLMContent) == 0 || tr.LLMContent[0] != '"' {
			return []Seen{{Path: path, Tool: ToolReadFile, Op: gitstore.OpRead, Why: "not text (" + jsonKind(tr.LLMContent) + ")"}}, nil
		}
		text, _ := jsonscan.String(tr.LLMContent)
		return []Seen{readSeen(path, args, text, tr.ReturnDisplay)}, nil
	case ToolReadManyFiles:
		text, ok := contentText(tr.LLMContent)
		if !ok {
			return nil, nil
		}
		seen, why := readManySeen(text, tr.ReturnDisplay)
		if why != "" {
			return manyRefused(tr.ReturnDisplay, why), nil
		}
		return seen, nil
	case ToolWriteFile, ToolReplace:
		path, err := p.toolPath()
		if err != nil {
			return nil, err
		}
		return []Seen{editSeen(p.ToolName, path, p.ToolInput, tr.ReturnDisplay)}, nil
	}
	return nil, nil
}

// manyRefused names the files of a read_many_files result whose split was
// refused, without content.
func manyRefused(display []byte, why string) []Seen {
	d, ok := parseManyDisplay(display)
	if !ok {
		return nil
	}
	out := make([]Seen, 0, len(d.files))
	for _, rel := range d.files {
		out = append(out, Seen{Path: filepath.Join(d.targetDir, filepath.FromSlash(rel)), Tool: ToolReadManyFiles, Op: gitstore.OpRead, Why: why})
	}
	return out
}

// SubagentID is the id of the subagent an AfterTool result of
// invoke_agent ran: its chat file is chats/<session>/<id>.jsonl beside
// the session's. The payload names it only in the ids of the subagent's
// recent tool calls ("<id>#<turn>-<n>"); "" when it names none.
func (p *Payload) SubagentID() string {
	if p.Event != AfterTool || p.ToolName != ToolInvokeAgent || p.ToolResponse == nil {
		return ""
	}
	d := p.ToolResponse.ReturnDisplay
	if len(d) == 0 || d[0] != '{' {
		return ""
	}
	id := ""
	jsonscan.Elems(jsonscan.Field(d, "recentActivity"), func(v []byte) bool {
		s, _ := jsonscan.String(jsonscan.Field(v, "id"))
		if i := strings.IndexByte(s, '#'); i > 0 {
			id = s[:i]
			return false
		}
		return true
	})
	if !validID(id) {
		return ""
	}
	return id
}

// validID reports whether s can name a chat file: the CLI sanitizes the
// ids it names files with to [a-zA-Z0-9_-].
func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// FileArgs are the members of a file tool's tool_input this package
// reads, typed.
type FileArgs struct {
	FilePath string // read_file, write_file, replace
	// write_file's content; replace's old_string and new_string (nil when
	// absent: the CLI refuses the call).
	Content              *string
	OldString, NewString *string
	AllowMultiple        bool
	// read_file's range: 1-based, inclusive; 0 when not given. Legacy is
	// set when the input has offset or limit (older CLIs' range).
	StartLine, EndLine int64
	Legacy             bool
	// read_many_files' patterns (include; older CLIs: paths).
	Include []string
}

// FileArgs decodes tool_input for the file tools (read_file,
// read_many_files, write_file, replace): every member it reads must have
// the type the CLI gives it, else a *FieldError; file_path is required
// (but for read_many_files). ok is false for other tools.
func (p *Payload) FileArgs() (a FileArgs, ok bool, err error) {
	switch p.ToolName {
	case ToolReadFile, ToolReadManyFiles, ToolWriteFile, ToolReplace:
	default:
		return a, false, nil
	}
	f, good := fields(p.ToolInput, "file_path", "content", "old_string", "new_string", "allow_multiple",
		"start_line", "end_line", "offset", "limit", "include", "paths")
	if !good {
		return a, true, &FieldError{Field: "tool_input", Got: jsonKind(p.ToolInput), Want: "an object"}
	}
	var m members
	a.FilePath = m.str("tool_input.file_path", f["file_path"], p.ToolName != ToolReadManyFiles)
	opt := func(name string) *string {
		if isNull(f[name]) {
			return nil
		}
		s := m.str("tool_input."+name, f[name], false)
		return &s
	}
	switch p.ToolName {
	case ToolReadFile:
		a.StartLine, _ = m.int("tool_input.start_line", f["start_line"])
		a.EndLine, _ = m.int("tool_input.end_line", f["end_line"])
		_, hasOff := m.int("tool_input.offset", f["offset"])
		_, hasLim := m.int("tool_input.limit", f["limit"])
		a.Legacy = hasOff || hasLim
	case ToolWriteFile:
		a.Content = opt("content")
	case ToolReplace:
		a.OldString, a.NewString = opt("old_string"), opt("new_string")
		a.AllowMultiple = m.boolean("tool_input.allow_multiple", f["allow_multiple"])
	case ToolReadManyFiles:
		for _, name := range []string{"include", "paths"} {
			raw := f[name]
			if isNull(raw) || m.err != nil {
				continue
			}
			if raw[0] != '[' {
				m.fail("tool_input."+name, raw, "an array of strings")
				continue
			}
			n := 0
			jsonscan.Elems(raw, func(v []byte) bool {
				s := m.str("tool_input."+name+"["+strconv.Itoa(n)+"]", v, false)
				a.Include = append(a.Include, s)
				n++
				return m.err == nil
			})
		}
	}
	return a, true, m.err
}
