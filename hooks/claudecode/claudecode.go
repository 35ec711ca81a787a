package claudecode

import (
	"encoding/json"
	"io"
	"os"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode/cctranscript"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/hooks/shellread"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Name is Claude Code's harness name: Event.Harness of everything
// recorded for it, and the word install, uninstall and hook take.
const Name = "claude-code"

// Prefix starts the writer of every Claude Code session: cc-<session_id>.
const Prefix = "cc-"

// Harness is Claude Code's adapter (hooks.Harness). It holds no state:
// the zero value is ready.
type Harness struct{}

// New returns Claude Code's adapter.
func New() Harness { return Harness{} }

var _ hooks.Harness = Harness{}

// Name implements hooks.Harness.
func (Harness) Name() string { return Name }

// Prefix implements hooks.Harness.
func (Harness) Prefix() string { return Prefix }

// Dialect is Claude Code's words: its Read tool, the user-role texts it
// writes itself, its file tools and its error wrapper.
func (Harness) Dialect() hooks.Dialect {
	return hooks.Dialect{
		ReadWith: "the Read tool",
		// Slash-command echoes, background task notices, reminders, the
		// interruption marker: not requests.
		NotRequests: []string{
			"<task-notification>", "<local-command-", "<command-name>", "<command-message>", "<command-args>",
			"<system-reminder>", "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-memory-input>",
			"[Request interrupted", "Caveat: The messages below",
		},
		FileTools:     []string{"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"},
		ErrorWrappers: []string{"tool_use_error"},
	}
}

// Event implements hooks.Harness: our command names and Claude Code's
// event names (SessionStart, PreToolUse, ...).
func (Harness) Event(name string) hooks.HookEvent { return EventName(name) }

// editTools are the tools the guard checks: they change a file.
var editTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// resultOps are the tools whose results are evidence, with the op each
// records.
var resultOps = map[string]gitstore.Op{"Read": gitstore.OpRead, "Write": gitstore.OpWrite, "Edit": gitstore.OpEdit, "MultiEdit": gitstore.OpEdit, "NotebookEdit": gitstore.OpEdit}

// Decode implements hooks.Harness: the payload's members (see
// DecodePayload, and FieldError for what a payload that breaks them
// gets), and for a file tool the file it will change (PreToolUse) or the
// result it put into the context (PostToolUse).
func (Harness) Decode(ev hooks.HookEvent, stdin io.Reader) (hooks.Call, error) {
	p, err := DecodePayload(stdin)
	if err != nil {
		return hooks.Call{}, err
	}
	c := hooks.Call{Event: ev, Session: p.SessionID, Agent: p.AgentID, Cwd: p.Cwd, Transcript: p.TranscriptPath,
		ContextTranscript: p.contextTranscript(), Tool: p.ToolName, CallID: p.ToolUseID, Source: p.Source, Trigger: p.Trigger}
	switch {
	case ev == hooks.PreToolUse && editTools[p.ToolName]:
		abs, err := p.target()
		if err != nil {
			c.ToolErr = err
			break
		}
		c.Files = []hooks.FileOp{{Op: resultOps[p.ToolName], Path: abs}}
	case ev == hooks.PostToolUse && resultOps[p.ToolName] != "":
		f, err := p.result()
		if err != nil {
			c.ToolErr = err
			break
		}
		c.Files = []hooks.FileOp{f}
	case p.ToolName == "Bash":
		c.Shell = p.shell()
	}
	return c, nil
}

// result decodes a file tool's PostToolUse payload into what its result
// put into the context. The payload is checked whole before anything is
// recorded: a member of the wrong type is an error, and nothing is.
func (p *Payload) result() (hooks.FileOp, error) {
	f := hooks.FileOp{Op: resultOps[p.ToolName]}
	in, err := p.input()
	if err != nil {
		return f, err
	}
	f.Path = p.fileOf(in)
	switch f.Op {
	case gitstore.OpRead:
		read, err := p.readResult()
		if err != nil {
			return f, err
		}
		switch {
		case read.Type == "file_unchanged":
			// Claude Code answers a repeated read of an unchanged file
			// with no content: the earlier read stands.
			f.Unchanged = true
		case read.Content == nil:
			f.ResultType = read.Type // image, pdf, notebook
		default:
			f.Content, f.HasContent = []byte(*read.Content), true
			start := max(read.StartLine, 1)
			f.FirstLine, f.NumLines = start, read.NumLines
			f.Partial = start > 1 || (read.TotalLines > 0 && read.NumLines < read.TotalLines)
		}
	case gitstore.OpWrite:
		written, err := in.writtenContent()
		if err != nil {
			return f, err
		}
		f.Content, f.HasContent = []byte(written), true
	}
	// An edit's result holds no content: the runtime records the file as
	// the edit left it on disk.
	return f, nil
}

// shell is a Bash call's command and output, as far as the payload holds
// them as strings (a shell call is no evidence of a file yet: nothing
// here is required).
func (p *Payload) shell() *hooks.Shell {
	var in struct {
		Command string `json:"command"`
	}
	var out struct {
		Stdout           *string         `json:"stdout"`
		Interrupted      bool            `json:"interrupted"`
		BackgroundTaskID json.RawMessage `json:"backgroundTaskId"`
	}
	_ = json.Unmarshal(p.ToolInput, &in)
	_ = json.Unmarshal(p.ToolResponse, &out)
	// Bash runs in the session's current directory, which the payload's
	// cwd follows; its stdout reaches the model with blank edge lines
	// dropped (see hooks/shellread).
	sh := &hooks.Shell{Command: in.Command, Dir: p.Cwd, Shown: shellread.BlankEdgesTrimmed}
	// An interrupted command's or a background task's stdout is not the
	// command's whole output: never evidence.
	background := len(out.BackgroundTaskID) > 0 && string(out.BackgroundTaskID) != "null"
	if out.Stdout != nil && !out.Interrupted && !background {
		sh.Output, sh.HasOutput = *out.Stdout, true
	}
	return sh
}

// Reply implements hooks.Harness: the hookSpecificOutput Claude Code
// reads from a hook's stdout (exit 0): PreToolUse's permissionDecision
// deny, with the reason the model reads, and SessionStart's
// additionalContext.
func (Harness) Reply(c hooks.Call, r hooks.Reply) []byte {
	var out map[string]any
	switch {
	case r.Deny != "":
		out = map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": r.Deny}
	case r.Context != "":
		out = map[string]any{"hookEventName": "SessionStart", "additionalContext": r.Context}
	default:
		return nil
	}
	b, _ := json.Marshal(map[string]any{"hookSpecificOutput": out})
	return append(b, '\n')
}

// MCPTools implements hooks.Harness: the names Claude Code gives our
// server's tools (mcp__git-lossless__<tool>), when the registration it
// starts for a session in dir (local, approved project, user) is ours.
func (Harness) MCPTools(dir string, getenv func(string) string) (func(string) string, error) {
	l := MCPLookupFor(dir, getenv)
	if exe, err := os.Executable(); err == nil {
		l.Programs = []string{exe}
	}
	regs, err := FindMCPRegistrations(l)
	srv, registered := EffectiveMCPServer(regs)
	if !registered || !srv.Ours {
		return nil, err
	}
	return func(tool string) string { return MCPToolName(settings.MCPServerName, tool) }, err
}

// ReadTranscript implements hooks.Harness with the transcript parser of
// package cctranscript.
func (Harness) ReadTranscript(r io.Reader, at hooks.TranscriptPos) hooks.TranscriptReader {
	size := at.Left
	if size <= 0 {
		size = 256 << 10
	}
	p := cctranscript.NewParserSize(r, at.Offset, size)
	p.SetPending(at.Pending)
	return p
}
