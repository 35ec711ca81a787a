package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Event is a Codex hook event, as hook_event_name spells it.
type Event string

// The events Codex 0.169.0 fires (all thirteen accepted in hooks.json).
const (
	SessionStart      Event = "SessionStart"      // source: startup, resume, clear, compact
	UserPromptSubmit  Event = "UserPromptSubmit"  // prompt
	PreModelRequest   Event = "PreModelRequest"   // before every model request
	PreToolUse        Event = "PreToolUse"        // may deny the call
	PermissionRequest Event = "PermissionRequest" // a call that needs approval
	PostToolUse       Event = "PostToolUse"       // tool_response
	PreCompact        Event = "PreCompact"        // trigger: auto, manual
	PostCompact       Event = "PostCompact"       // trigger
	SubagentStart     Event = "SubagentStart"     // agent_id, agent_type; transcript_path is the child's rollout
	SubagentStop      Event = "SubagentStop"      // agent_transcript_path is the child's rollout
	Stop              Event = "Stop"              // stop_hook_active, last_assistant_message
	SessionEnd        Event = "SessionEnd"        // reason
	Interrupt         Event = "Interrupt"
)

// Events lists the events in the order Codex documents them.
func Events() []Event {
	return []Event{SessionStart, UserPromptSubmit, PreModelRequest, PreToolUse, PermissionRequest, PostToolUse,
		PreCompact, PostCompact, SubagentStart, SubagentStop, Stop, SessionEnd, Interrupt}
}

// Known reports whether e is one of Events.
func (e Event) Known() bool {
	for _, k := range Events() {
		if e == k {
			return true
		}
	}
	return false
}

// Tool names as Codex 0.169.0 passes them in tool_name. Every shell tool
// (exec_command, shell, shell_command, local_shell) is "Bash" with
// tool_input {"command": string}; apply_patch is "apply_patch" with
// tool_input {"command": patch}. A namespaced tool is its namespace glued
// to its name ("multi_agent_v1wait_agent"), except spawn_agent.
const (
	HookToolBash       = "Bash"
	HookToolApplyPatch = "apply_patch"
)

// Payload is the JSON Codex writes on a hook's stdin. Only the members we
// use are decoded; new members in new releases break nothing.
type Payload struct {
	SessionID      string // a subagent's hooks carry its parent's session_id
	TurnID         string
	TranscriptPath string // the rollout; a subagent's own hooks name the child's
	Cwd            string
	HookEventName  Event
	Model          string
	PermissionMode string
	Source         string // SessionStart
	Trigger        string // PreCompact, PostCompact
	Prompt         string // UserPromptSubmit
	Reason         string // SessionEnd
	ToolName       string
	ToolInput      json.RawMessage // raw; see Command
	ToolResponse   json.RawMessage // raw (a string in every sample); see ResponseText
	ToolUseID      string          // the call_id of the rollout's call
	// AgentID is the subagent's thread id (its rollout's session_meta id)
	// in the subagent's own hooks and in SubagentStart/Stop; "" in the
	// main context.
	AgentID              string
	AgentType            string
	AgentTranscriptPath  string // SubagentStop: the child's rollout
	StopHookActive       bool
	LastAssistantMessage string
}

// FieldError is a payload member we read that is missing where it is
// needed, or holds another JSON type than the one we read it as. A hook
// whose payload has one does nothing with it (fails open), and says
// which member and what it got: guessing instead would check the wrong
// file or file evidence under the wrong context.
type FieldError struct {
	Field string // the member's path: session_id, tool_input.command
	Got   string // "a number", "null", "empty"; "" when missing
	Want  string // "a string", "an object", ...
}

func (e *FieldError) Error() string {
	switch e.Got {
	case "":
		return "codex payload: " + e.Field + " is missing"
	case "empty":
		return "codex payload: " + e.Field + " is empty"
	}
	return "codex payload: " + e.Field + " is " + e.Got + ", not " + e.Want
}

// jsonKind names the JSON type a value starts with.
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// members decodes members one by one and keeps the first problem. An
// absent or null member is the zero value unless it is required.
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
	var s string
	if raw[0] != '"' {
		m.fail(field, raw, "a string")
		return ""
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		m.err = fmt.Errorf("codex payload: decode %s: %w", field, err)
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

// rawPayload keeps every member raw, so that a wrong type is named.
type rawPayload struct {
	SessionID            json.RawMessage `json:"session_id"`
	TurnID               json.RawMessage `json:"turn_id"`
	TranscriptPath       json.RawMessage `json:"transcript_path"`
	Cwd                  json.RawMessage `json:"cwd"`
	HookEventName        json.RawMessage `json:"hook_event_name"`
	Model                json.RawMessage `json:"model"`
	PermissionMode       json.RawMessage `json:"permission_mode"`
	Source               json.RawMessage `json:"source"`
	Trigger              json.RawMessage `json:"trigger"`
	Prompt               json.RawMessage `json:"prompt"`
	Reason               json.RawMessage `json:"reason"`
	ToolName             json.RawMessage `json:"tool_name"`
	ToolInput            json.RawMessage `json:"tool_input"`
	ToolResponse         json.RawMessage `json:"tool_response"`
	ToolUseID            json.RawMessage `json:"tool_use_id"`
	AgentID              json.RawMessage `json:"agent_id"`
	AgentType            json.RawMessage `json:"agent_type"`
	AgentTranscriptPath  json.RawMessage `json:"agent_transcript_path"`
	StopHookActive       json.RawMessage `json:"stop_hook_active"`
	LastAssistantMessage json.RawMessage `json:"last_assistant_message"`
}

// MaxPayload bounds what a hook reads from stdin: a PostToolUse of a big
// patch or command output carries it twice.
const MaxPayload = 256 << 20

// DecodePayload reads and checks one hook payload. session_id is
// required; every member we read as a string must be one (or null,
// which is absent); cwd and transcript paths must be absolute; agent_id
// must be an id (no path separator).
func DecodePayload(r io.Reader) (Payload, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return Payload{}, fmt.Errorf("codex payload: read: %w", err)
	}
	if len(b) > MaxPayload {
		return Payload{}, fmt.Errorf("codex payload larger than %d bytes", MaxPayload)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Payload{}, errors.New("codex payload is not a JSON object")
	}
	var raw rawPayload
	if err := json.Unmarshal(b, &raw); err != nil {
		return Payload{}, fmt.Errorf("codex payload: decode: %w", err)
	}
	var m members
	p := Payload{
		SessionID:            m.str("session_id", raw.SessionID, true),
		TurnID:               m.str("turn_id", raw.TurnID, false),
		TranscriptPath:       m.str("transcript_path", raw.TranscriptPath, false),
		Cwd:                  m.str("cwd", raw.Cwd, false),
		HookEventName:        Event(m.str("hook_event_name", raw.HookEventName, false)),
		Model:                m.str("model", raw.Model, false),
		PermissionMode:       m.str("permission_mode", raw.PermissionMode, false),
		Source:               m.str("source", raw.Source, false),
		Trigger:              m.str("trigger", raw.Trigger, false),
		Prompt:               m.str("prompt", raw.Prompt, false),
		Reason:               m.str("reason", raw.Reason, false),
		ToolName:             m.str("tool_name", raw.ToolName, false),
		ToolUseID:            m.str("tool_use_id", raw.ToolUseID, false),
		AgentID:              m.str("agent_id", raw.AgentID, false),
		AgentType:            m.str("agent_type", raw.AgentType, false),
		AgentTranscriptPath:  m.str("agent_transcript_path", raw.AgentTranscriptPath, false),
		StopHookActive:       m.boolean("stop_hook_active", raw.StopHookActive),
		LastAssistantMessage: m.str("last_assistant_message", raw.LastAssistantMessage, false),
	}
	if m.err != nil {
		return Payload{}, m.err
	}
	if !isNull(raw.ToolInput) {
		p.ToolInput = raw.ToolInput
	}
	if !isNull(raw.ToolResponse) {
		p.ToolResponse = raw.ToolResponse
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return Payload{}, fmt.Errorf("codex payload: cwd %q is not absolute", p.Cwd)
	}
	for _, tp := range []string{p.TranscriptPath, p.AgentTranscriptPath} {
		if tp != "" && !filepath.IsAbs(tp) {
			return Payload{}, fmt.Errorf("codex payload: transcript path %q is not absolute", tp)
		}
	}
	if strings.ContainsAny(p.AgentID, `/\`+"\x00") || p.AgentID == "." || p.AgentID == ".." {
		return Payload{}, fmt.Errorf("codex payload: agent_id %q is not an id", p.AgentID)
	}
	return p, nil
}

// ContextTranscript is the rollout of the context the hook runs in: a
// subagent's own (its hooks name it in transcript_path; SubagentStop
// names it in agent_transcript_path, and the parent's in
// transcript_path), else the session's.
func (p *Payload) ContextTranscript() string {
	if p.AgentID != "" && p.AgentTranscriptPath != "" {
		return p.AgentTranscriptPath
	}
	return p.TranscriptPath
}

// Command returns tool_input.command: a Bash call's command line, or an
// apply_patch call's patch. It must be a non-empty string.
func (p *Payload) Command() (string, error) {
	var m members
	if isNull(p.ToolInput) || p.ToolInput[0] != '{' {
		m.fail("tool_input", p.ToolInput, "an object")
		return "", m.err
	}
	var in struct {
		Command json.RawMessage `json:"command"`
	}
	if err := json.Unmarshal(p.ToolInput, &in); err != nil {
		return "", fmt.Errorf("codex payload: decode tool_input: %w", err)
	}
	s := m.str("tool_input.command", in.Command, true)
	return s, m.err
}

// Patch returns the patch a call applies: an apply_patch call's input, or
// a Bash command that is an apply_patch heredoc (ShellPatch), which Codex
// applies as a patch. dir is the heredoc's "cd DIR" ("" otherwise). ok is
// false for any other call.
func (p *Payload) Patch() (patch, dir string, ok bool, err error) {
	switch p.ToolName {
	case HookToolApplyPatch:
		s, err := p.Command()
		return s, "", err == nil, err
	case HookToolBash:
		s, err := p.Command()
		if err != nil {
			return "", "", false, err
		}
		patch, dir, ok = ShellPatch(s)
		return patch, dir, ok, nil
	}
	return "", "", false, nil
}

// ResponseText returns tool_response, which must be a string: a Bash
// call's output as the model received it, unwrapped (PostToolUse gives
// "hello world\n", not the framing of the rollout's copy), or
// apply_patch's framed result (see ParseExecOutput).
func (p *Payload) ResponseText() (string, error) {
	var m members
	if isNull(p.ToolResponse) {
		m.fail("tool_response", p.ToolResponse, "a string")
		return "", m.err
	}
	s := m.str("tool_response", p.ToolResponse, false)
	return s, m.err
}

// DenyOutput is what a PreToolUse hook prints on stdout (exit 0) to deny
// the call; Codex gives the model "Command blocked by PreToolUse hook:
// <reason>. Command: <input>". Codex rejects a deny without a reason, so
// an empty one is an error here.
func DenyOutput(reason string) ([]byte, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, errors.New("codex deny: the reason must not be empty")
	}
	return hookOutput(map[string]string{
		"hookEventName":            string(PreToolUse),
		"permissionDecision":       "deny",
		"permissionDecisionReason": reason,
	})
}

// SessionStartOutput is what a SessionStart hook prints on stdout to
// hand text back to the model: Codex injects additionalContext as a
// developer message (after a compaction: SessionStart with source
// "compact"). Empty text prints nothing (nil).
func SessionStartOutput(additionalContext string) []byte {
	if additionalContext == "" {
		return nil
	}
	b, _ := hookOutput(map[string]string{
		"hookEventName":     string(SessionStart),
		"additionalContext": additionalContext,
	})
	return b
}

func hookOutput(specific map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"hookSpecificOutput": specific}); err != nil {
		return nil, fmt.Errorf("codex hook output: %w", err)
	}
	return buf.Bytes(), nil
}
