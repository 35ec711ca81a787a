package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

// Payload is the JSON Claude Code writes on a hook's stdin. Only the fields
// we use are decoded; the rest is ignored, so new fields in new releases
// break nothing.
type Payload struct {
	SessionID           string          `json:"session_id"`
	TranscriptPath      string          `json:"transcript_path"`
	Cwd                 string          `json:"cwd"`
	HookEventName       string          `json:"hook_event_name"`
	Source              string          `json:"source"` // SessionStart: startup, resume, clear, compact
	ToolName            string          `json:"tool_name"`
	ToolInput           json.RawMessage `json:"tool_input"`
	ToolResponse        json.RawMessage `json:"tool_response"`
	ToolUseID           string          `json:"tool_use_id"`
	AgentID             string          `json:"agent_id"`
	AgentType           string          `json:"agent_type"`
	AgentTranscriptPath string          `json:"agent_transcript_path"`
	Trigger             string          `json:"trigger"` // PreCompact: manual, auto
}

// rawPayload is a payload as it arrives. Every member Payload holds as a
// string is kept raw here, so that DecodePayload can name a member that
// holds another JSON type (encoding/json would either fail with a message
// about Go struct fields, or, for null, say nothing at all).
type rawPayload struct {
	SessionID           json.RawMessage `json:"session_id"`
	TranscriptPath      json.RawMessage `json:"transcript_path"`
	Cwd                 json.RawMessage `json:"cwd"`
	HookEventName       json.RawMessage `json:"hook_event_name"`
	Source              json.RawMessage `json:"source"`
	ToolName            json.RawMessage `json:"tool_name"`
	ToolInput           json.RawMessage `json:"tool_input"`
	ToolResponse        json.RawMessage `json:"tool_response"`
	ToolUseID           json.RawMessage `json:"tool_use_id"`
	AgentID             json.RawMessage `json:"agent_id"`
	AgentType           json.RawMessage `json:"agent_type"`
	AgentTranscriptPath json.RawMessage `json:"agent_transcript_path"`
	Trigger             json.RawMessage `json:"trigger"`
}

// FieldError is a payload member the hooks read that is missing where it
// is needed, or holds another JSON type than the one they read it as. The
// hooks treat every such member alike: a hook whose payload has one does
// nothing with that payload (fail open: the edit is not checked, the
// result not recorded), and says which member and what it got. Guessing
// instead — an empty path, the main context for an agent_id of the wrong
// type — would check the wrong file or file the evidence under the wrong
// context.
type FieldError struct {
	Field string // the member's path in the payload: session_id, tool_input.file_path
	Got   string // what it holds: "a number", "null", ...; "" when it is missing
	Want  string // what the hooks read it as: "a string", "an object", ...
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

// members decodes payload members one by one and keeps the first problem,
// so that a decoder reads as the list of what it takes. Absent and null
// members are the zero value — Claude Code writes null for a member it has
// no value for (custom_instructions, originalFile) — unless the member is
// required, when both are a FieldError.
type members struct{ err error }

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

func (m *members) fail(field string, raw json.RawMessage, want string) {
	if m.err != nil {
		return
	}
	got := ""
	if len(raw) > 0 {
		got = settings.JSONKind(raw[0])
	}
	m.err = &FieldError{Field: field, Got: got, Want: want}
}

// str decodes a member read as a string; a required one must not be
// empty either.
func (m *members) str(field string, raw json.RawMessage, required bool) string {
	if m.err != nil {
		return ""
	}
	if len(raw) == 0 || isNull(raw) {
		if required {
			m.fail(field, raw, "a string")
		}
		return ""
	}
	if raw[0] != '"' {
		m.fail(field, raw, "a string")
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		m.err = fmt.Errorf("decode %s: %w", field, err)
		return ""
	}
	if s == "" && required {
		m.err = &FieldError{Field: field, Got: "empty", Want: "a string"}
	}
	return s
}

// object reports whether a member is a JSON object (false for an absent
// or null optional one).
func (m *members) object(field string, raw json.RawMessage, required bool) bool {
	if m.err != nil {
		return false
	}
	if len(raw) == 0 || isNull(raw) {
		if required {
			m.fail(field, raw, "an object")
		}
		return false
	}
	if raw[0] != '{' {
		m.fail(field, raw, "an object")
		return false
	}
	return true
}

// int decodes an optional member read as an integer.
func (m *members) int(field string, raw json.RawMessage) int64 {
	if m.err != nil || len(raw) == 0 || isNull(raw) {
		return 0
	}
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		m.fail(field, raw, "a number")
		return 0
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		m.err = &FieldError{Field: field, Got: "a number", Want: "an integer"}
		return 0
	}
	return n
}

// decode unmarshals an object member into v (a struct of raw members).
func (m *members) decode(field string, raw json.RawMessage, v any) {
	if m.err != nil {
		return
	}
	if err := json.Unmarshal(raw, v); err != nil {
		m.err = fmt.Errorf("decode %s: %w", field, err)
	}
}

// DecodePayload reads and checks one hook payload. A member Payload holds
// as a string that holds another JSON type is a *FieldError naming it.
func DecodePayload(r io.Reader) (Payload, error) {
	b, err := hooks.ReadPayload(r)
	if err != nil {
		return Payload{}, err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Payload{}, errors.New("payload is not a JSON object")
	}
	var raw rawPayload
	if err := json.Unmarshal(b, &raw); err != nil {
		return Payload{}, fmt.Errorf("decode payload: %w", err)
	}
	var m members
	p := Payload{
		SessionID:           m.str("session_id", raw.SessionID, true),
		TranscriptPath:      m.str("transcript_path", raw.TranscriptPath, false),
		Cwd:                 m.str("cwd", raw.Cwd, false),
		HookEventName:       m.str("hook_event_name", raw.HookEventName, false),
		Source:              m.str("source", raw.Source, false),
		ToolName:            m.str("tool_name", raw.ToolName, false),
		ToolInput:           raw.ToolInput,
		ToolResponse:        raw.ToolResponse,
		ToolUseID:           m.str("tool_use_id", raw.ToolUseID, false),
		AgentID:             m.str("agent_id", raw.AgentID, false),
		AgentType:           m.str("agent_type", raw.AgentType, false),
		AgentTranscriptPath: m.str("agent_transcript_path", raw.AgentTranscriptPath, false),
		Trigger:             m.str("trigger", raw.Trigger, false),
	}
	if m.err != nil {
		return Payload{}, m.err
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return Payload{}, fmt.Errorf("payload cwd %q is not absolute", p.Cwd)
	}
	// Transcript paths are read (and swept) as they are: relative ones
	// would be resolved against whatever directory the hook runs in.
	for _, tp := range []string{p.TranscriptPath, p.AgentTranscriptPath} {
		if tp != "" && !filepath.IsAbs(tp) {
			return Payload{}, fmt.Errorf("payload transcript path %q is not absolute", tp)
		}
	}
	// The agent id names the subagent's transcript file: it must not
	// lead out of <session>/subagents/.
	if strings.ContainsAny(p.AgentID, `/\`+"\x00") {
		return Payload{}, fmt.Errorf("payload agent_id %q is not an id", p.AgentID)
	}
	return p, nil
}

// toolInput is what the hooks read of a file tool's input.
type toolInput struct {
	// Path is the file the call names, as given: tool_input.file_path,
	// or notebook_path for NotebookEdit (see pathMember).
	Path string
	// content is Write's content member, checked by writtenContent: only
	// post-tool-use reads it.
	content json.RawMessage
}

// pathMember is the tool_input member that names a file tool's file.
func pathMember(tool string) string {
	if tool == "NotebookEdit" {
		return "notebook_path"
	}
	return "file_path"
}

// input decodes tool_input for a file tool: an object whose path member
// is a non-empty string.
func (p *Payload) input() (toolInput, error) {
	var m members
	var raw struct {
		FilePath     json.RawMessage `json:"file_path"`
		NotebookPath json.RawMessage `json:"notebook_path"`
		Content      json.RawMessage `json:"content"`
	}
	if m.object("tool_input", p.ToolInput, false) {
		m.decode("tool_input", p.ToolInput, &raw)
	}
	member := pathMember(p.ToolName)
	path := raw.FilePath
	if member == "notebook_path" {
		path = raw.NotebookPath
	}
	in := toolInput{Path: m.str("tool_input."+member, path, true), content: raw.Content}
	return in, m.err
}

// writtenContent is a Write's tool_input.content: required, a string (an
// empty one writes an empty file).
func (in toolInput) writtenContent() (string, error) {
	var m members
	if len(in.content) == 0 || isNull(in.content) {
		m.fail("tool_input.content", in.content, "a string")
		return "", m.err
	}
	s := m.str("tool_input.content", in.content, false)
	return s, m.err
}

// target is the file a file tool's call names (absolute, as Claude Code
// passes it; made absolute against cwd when it is not), or the
// *FieldError that says why the payload names none.
func (p *Payload) target() (string, error) {
	in, err := p.input()
	if err != nil {
		return "", err
	}
	return p.fileOf(in), nil
}

// fileOf is the file a decoded tool input names: see target.
func (p *Payload) fileOf(in toolInput) string {
	f := in.Path
	if !filepath.IsAbs(f) && p.Cwd != "" {
		f = filepath.Join(p.Cwd, f)
	}
	return filepath.Clean(f)
}

// readResult is what the hooks read of a Read's tool_response:
// {"type":"text","file":{"content","startLine","numLines","totalLines"}}.
// Content is nil for results without text (image, pdf, notebook) and for
// file_unchanged.
type readResult struct {
	Type                            string
	Content                         *string
	StartLine, NumLines, TotalLines int64
}

// readResult decodes a Read's tool_response: an object, whose members
// the hooks read must have the types Claude Code gives them. A result of
// the wrong shape is not evidence of anything: recording it without
// content would make it the latest evidence of the file and turn the
// drift check off.
func (p *Payload) readResult() (readResult, error) {
	var m members
	var raw struct {
		Type json.RawMessage `json:"type"`
		File json.RawMessage `json:"file"`
	}
	var file struct {
		Content    json.RawMessage `json:"content"`
		StartLine  json.RawMessage `json:"startLine"`
		NumLines   json.RawMessage `json:"numLines"`
		TotalLines json.RawMessage `json:"totalLines"`
	}
	if m.object("tool_response", p.ToolResponse, true) {
		m.decode("tool_response", p.ToolResponse, &raw)
	}
	r := readResult{Type: m.str("tool_response.type", raw.Type, false)}
	if m.object("tool_response.file", raw.File, false) {
		m.decode("tool_response.file", raw.File, &file)
		if len(file.Content) > 0 && !isNull(file.Content) {
			c := m.str("tool_response.file.content", file.Content, false)
			r.Content = &c
		}
		r.StartLine = m.int("tool_response.file.startLine", file.StartLine)
		r.NumLines = m.int("tool_response.file.numLines", file.NumLines)
		r.TotalLines = m.int("tool_response.file.totalLines", file.TotalLines)
	}
	return r, m.err
}

// contextTranscript is the transcript of the context the hook runs in: the
// session's own, or the subagent's (whose payload still names the
// parent's transcript_path).
func (p *Payload) contextTranscript() string {
	if p.AgentID == "" {
		return p.TranscriptPath
	}
	if p.AgentTranscriptPath != "" {
		return p.AgentTranscriptPath
	}
	if p.TranscriptPath == "" {
		return ""
	}
	return filepath.Join(strings.TrimSuffix(p.TranscriptPath, ".jsonl"), "subagents", "agent-"+p.AgentID+".jsonl")
}

// eventNames maps our command names and Claude Code's event names to the
// runtime's events.
var eventNames = map[string]hooks.HookEvent{
	"session-start": hooks.SessionStart, "SessionStart": hooks.SessionStart,
	"pre-tool-use": hooks.PreToolUse, "PreToolUse": hooks.PreToolUse,
	"post-tool-use": hooks.PostToolUse, "PostToolUse": hooks.PostToolUse,
	"pre-compact": hooks.PreCompact, "PreCompact": hooks.PreCompact,
	"subagent-stop": hooks.SubagentStop, "SubagentStop": hooks.SubagentStop,
	"session-end": hooks.SessionEnd, "SessionEnd": hooks.SessionEnd,
}

// EventName returns the runtime's event for a command or Claude Code
// event name, or "" for an unknown one.
func EventName(s string) hooks.HookEvent { return eventNames[s] }

// EventNames lists the hook events we handle, in Claude Code's spelling.
func EventNames() []string {
	return []string{"SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "SubagentStop", "SessionEnd"}
}
