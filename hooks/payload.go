package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
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

// MaxPayload bounds what a hook reads from stdin: a Write of a huge file
// carries the file twice (input and response).
const MaxPayload = 256 << 20

// DecodePayload reads and checks one hook payload.
func DecodePayload(r io.Reader) (Payload, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return Payload{}, fmt.Errorf("read payload: %w", err)
	}
	if len(b) > MaxPayload {
		return Payload{}, fmt.Errorf("payload larger than %d bytes", MaxPayload)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Payload{}, errors.New("payload is not a JSON object")
	}
	var p Payload
	if err := json.Unmarshal(b, &p); err != nil {
		return Payload{}, fmt.Errorf("decode payload: %w", err)
	}
	if p.SessionID == "" {
		return Payload{}, errors.New("payload has no session_id")
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

// toolInput is the union of the tool inputs we read.
type toolInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Content      string `json:"content"`
	Offset       *int64 `json:"offset"`
	Limit        *int64 `json:"limit"`
}

func (p *Payload) input() toolInput {
	var in toolInput
	if len(p.ToolInput) > 0 {
		_ = json.Unmarshal(p.ToolInput, &in) // a malformed input just has no path
	}
	return in
}

// target is the file a tool call names (absolute, as Claude Code passes it;
// made absolute against cwd when it is not).
func (p *Payload) target() string {
	in := p.input()
	f := in.FilePath
	if f == "" {
		f = in.NotebookPath
	}
	if f == "" {
		return ""
	}
	if !filepath.IsAbs(f) && p.Cwd != "" {
		f = filepath.Join(p.Cwd, f)
	}
	return filepath.Clean(f)
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

// eventNames maps our command names and Claude Code's event names to one
// canonical name.
var eventNames = map[string]string{
	"session-start": "session-start", "SessionStart": "session-start",
	"pre-tool-use": "pre-tool-use", "PreToolUse": "pre-tool-use",
	"post-tool-use": "post-tool-use", "PostToolUse": "post-tool-use",
	"pre-compact": "pre-compact", "PreCompact": "pre-compact",
	"subagent-stop": "subagent-stop", "SubagentStop": "subagent-stop",
	"session-end": "session-end", "SessionEnd": "session-end",
}

// EventName returns the canonical hook event name, or "" for an unknown one.
func EventName(s string) string { return eventNames[s] }

// EventNames lists the hook events we handle, in Claude Code's spelling.
func EventNames() []string {
	return []string{"SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "SubagentStop", "SessionEnd"}
}
