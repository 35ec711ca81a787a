package opencode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Name is opencode's harness name: Event.Harness of everything recorded
// for it, and the word install, uninstall and hook take.
const Name = "opencode"

// Prefix starts the writer of every opencode session: oc-<session id>
// (the root session's id: a child session is a subagent context of it).
const Prefix = "oc-"

// Harness is opencode's adapter (hooks.Harness). It holds no state: the
// zero value is ready.
type Harness struct{}

// New returns opencode's adapter.
func New() Harness { return Harness{} }

var _ hooks.Harness = Harness{}

// Name implements hooks.Harness.
func (Harness) Name() string { return Name }

// Prefix implements hooks.Harness.
func (Harness) Prefix() string { return Prefix }

// Dialect is opencode's words: its read tool and its file tools.
func (Harness) Dialect() hooks.Dialect {
	return hooks.Dialect{
		ReadWith:  "the read tool",
		FileTools: []string{"read", "edit", "write", "multiedit", "patch"},
	}
}

// eventNames maps our command names and the plugin's event names to the
// runtime's events.
var eventNames = map[string]hooks.HookEvent{
	"pre-tool-use": hooks.PreToolUse, "tool.execute.before": hooks.PreToolUse,
	"post-tool-use": hooks.PostToolUse, "tool.execute.after": hooks.PostToolUse,
	"session-start": hooks.SessionStart, "session.compacted": hooks.SessionStart,
	"session-end": hooks.SessionEnd, "session.idle": hooks.SessionEnd,
	"pre-compact": hooks.PreCompact, "subagent-stop": hooks.SubagentStop,
}

// Event implements hooks.Harness.
func (Harness) Event(name string) hooks.HookEvent { return eventNames[name] }

// Payload is what the plugin writes on the hook program's stdin (see the
// package doc for each member).
type Payload struct {
	V                 int             `json:"v"`
	Event             string          `json:"event"`
	Session           string          `json:"session"`
	Agent             string          `json:"agent"`
	SessionID         string          `json:"session_id"`
	ParentID          string          `json:"parent_id"`
	Cwd               string          `json:"cwd"`
	Worktree          string          `json:"worktree"`
	Transcript        string          `json:"transcript"`
	ContextTranscript string          `json:"context_transcript"`
	Tool              string          `json:"tool"`
	CallID            string          `json:"call_id"`
	Args              json.RawMessage `json:"args"`
	Output            *string         `json:"output"`
	Source            string          `json:"source"`
	// Model is the model of the session's latest assistant message,
	// providerID/modelID, when the plugin saw one ("" else).
	Model string `json:"model"`
}

// editTools are the tools the guard checks, with the op their results
// record; readTools the tools whose results are read evidence.
var editTools = map[string]gitstore.Op{"edit": gitstore.OpEdit, "write": gitstore.OpWrite, "multiedit": gitstore.OpEdit}

// DecodePayload reads and checks one plugin payload: a JSON object whose
// session is a non-empty id, cwd and log paths absolute, agent an id.
func DecodePayload(r io.Reader) (Payload, error) {
	b, err := hooks.ReadPayload(r)
	if err != nil {
		return Payload{}, err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Payload{}, errors.New("payload is not a JSON object")
	}
	var p Payload
	if err := json.Unmarshal(b, &p); err != nil {
		return Payload{}, fmt.Errorf("decode payload: %w", err)
	}
	switch {
	case p.Session == "":
		return p, errors.New("session is missing")
	case strings.ContainsAny(p.Session+p.Agent, `/\`+"\x00"):
		return p, fmt.Errorf("session %q or agent %q is not an id", p.Session, p.Agent)
	case p.Cwd != "" && !filepath.IsAbs(p.Cwd):
		return p, fmt.Errorf("payload cwd %q is not absolute", p.Cwd)
	}
	for _, tp := range []string{p.Transcript, p.ContextTranscript} {
		if tp != "" && !filepath.IsAbs(tp) {
			return p, fmt.Errorf("payload transcript path %q is not absolute", tp)
		}
	}
	return p, nil
}

// filePath is the file a file tool's args name (args.filePath), made
// absolute against cwd.
func (p *Payload) filePath() (string, error) {
	var a struct {
		FilePath *string `json:"filePath"`
	}
	if len(p.Args) == 0 || p.Args[0] != '{' {
		return "", errors.New("args is not an object")
	}
	if err := json.Unmarshal(p.Args, &a); err != nil {
		return "", fmt.Errorf("decode args: %w", err)
	}
	if a.FilePath == nil || *a.FilePath == "" {
		return "", errors.New("args.filePath is missing")
	}
	f := *a.FilePath
	if !filepath.IsAbs(f) {
		if p.Cwd == "" {
			return "", fmt.Errorf("args.filePath %q is relative and the payload has no cwd", f)
		}
		f = filepath.Join(p.Cwd, f)
	}
	return filepath.Clean(f), nil
}

// Decode implements hooks.Harness: the plugin's payload; for an edit or
// write the file it will change (PreToolUse) or changed (PostToolUse),
// for a read the text its output showed when that is exact (see
// ReadEvidence), for bash the command and output.
func (Harness) Decode(ev hooks.HookEvent, stdin io.Reader) (hooks.Call, error) {
	p, err := DecodePayload(stdin)
	if err != nil {
		return hooks.Call{}, err
	}
	c := hooks.Call{Event: ev, Session: p.Session, Agent: p.Agent, Cwd: p.Cwd, Transcript: p.Transcript,
		ContextTranscript: p.ContextTranscript, Tool: p.Tool, CallID: p.CallID, Source: p.Source, Model: p.Model}
	if c.ContextTranscript == "" {
		c.ContextTranscript = c.Transcript
	}
	switch {
	case p.Tool == "apply_patch" && (ev == hooks.PreToolUse || ev == hooks.PostToolUse):
		c.Files, c.ToolErr = p.patchFiles(ev)
	case ev == hooks.PreToolUse && editTools[p.Tool] != "":
		abs, err := p.filePath()
		if err != nil {
			c.ToolErr = err
			break
		}
		c.Files = []hooks.FileOp{{Op: editTools[p.Tool], Path: abs}}
	case ev == hooks.PostToolUse && editTools[p.Tool] != "":
		abs, err := p.filePath()
		if err != nil {
			c.ToolErr = err
			break
		}
		f := hooks.FileOp{Op: editTools[p.Tool], Path: abs}
		if p.Tool == "write" {
			var a struct {
				Content *string `json:"content"`
			}
			if json.Unmarshal(p.Args, &a) == nil && a.Content != nil {
				f.Content, f.HasContent = []byte(*a.Content), true
			}
		}
		c.Files = []hooks.FileOp{f}
	case ev == hooks.PostToolUse && p.Tool == "read":
		abs, err := p.filePath()
		if err != nil {
			c.ToolErr = err
			break
		}
		if p.Output == nil {
			break
		}
		if f, ok := ReadEvidence(abs, *p.Output); ok {
			c.Files = []hooks.FileOp{f}
		}
	case p.Tool == "bash":
		var a struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(p.Args, &a)
		c.Shell = &hooks.Shell{Command: a.Command}
		if p.Output != nil {
			c.Shell.Output, c.Shell.HasOutput = *p.Output, true
		}
	}
	return c, nil
}

// patchFiles are the files an apply_patch call (opencode's edit tool for
// GPT models: args.patchText in Codex's patch format, see patchOps) will
// change, for the guard (every file whose current
// content it replaces or removes; adding a new file needs nothing), or
// has written, for the recorder (each read back from disk). A patch that
// does not parse changes nothing: opencode refuses it too.
func (p *Payload) patchFiles(ev hooks.HookEvent) ([]hooks.FileOp, error) {
	var a struct {
		PatchText *string `json:"patchText"`
	}
	if len(p.Args) == 0 || p.Args[0] != '{' || json.Unmarshal(p.Args, &a) != nil || a.PatchText == nil {
		return nil, errors.New("args.patchText is missing")
	}
	ops := patchOps(*a.PatchText, p.Cwd)
	var files []hooks.FileOp
	if ev == hooks.PreToolUse {
		for _, f := range patchNeedsSeen(ops) {
			files = append(files, hooks.FileOp{Op: gitstore.OpEdit, Path: f})
		}
		return files, nil
	}
	for _, f := range patchWritten(ops) {
		files = append(files, hooks.FileOp{Op: gitstore.OpEdit, Path: f})
	}
	return files, nil
}

// Reply implements hooks.Harness: one JSON object on stdout that the
// plugin reads, {"deny": reason} (it throws Error(reason), which opencode
// hands the model verbatim) or {"context": text} (pushed into the system
// prompt of every later request of the session).
func (Harness) Reply(c hooks.Call, r hooks.Reply) []byte {
	var out map[string]string
	switch {
	case r.Deny != "":
		out = map[string]string{"deny": r.Deny}
	case r.Context != "":
		out = map[string]string{"context": r.Context}
	default:
		return nil
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}
