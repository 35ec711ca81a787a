package codex

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/shellread"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Name is Codex CLI's harness name: Event.Harness of everything recorded
// for it, and the word install, uninstall and hook take.
const Name = "codex"

// Prefix starts the writer of every Codex session: codex-<session_id>.
const Prefix = "codex-"

// Harness is Codex CLI's adapter (hooks.Harness). It holds no state: the
// zero value is ready.
type Harness struct{}

// New returns Codex CLI's adapter.
func New() Harness { return Harness{} }

var _ hooks.Harness = Harness{}

// Name implements hooks.Harness.
func (Harness) Name() string { return Name }

// Prefix implements hooks.Harness.
func (Harness) Prefix() string { return Prefix }

// ReadWith is how a Codex model reads a file again: it has no read tool,
// and only a shell read whose output is the file (hooks/shellread) counts.
const ReadWith = "a plain `cat FILE` shell command (no pipe; `sed -n 'A,Bp' FILE` for a part)"

// Dialect is Codex's words: its shell read, the user-role texts it writes
// itself (the rollout reader skips most of them already), apply_patch as
// its file tool.
func (Harness) Dialect() hooks.Dialect {
	return hooks.Dialect{
		ReadWith:    ReadWith,
		NotRequests: []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<subagent_notification>", "<turn_aborted>"},
		FileTools:   []string{ToolApplyPatch, HookToolApplyPatch},
	}
}

// eventNames maps our command names and Codex's event names to the
// runtime's events.
var eventNames = map[string]hooks.HookEvent{
	"session-start": hooks.SessionStart, string(SessionStart): hooks.SessionStart,
	"user-prompt-submit": hooks.UserPromptSubmit, string(UserPromptSubmit): hooks.UserPromptSubmit,
	"pre-tool-use": hooks.PreToolUse, string(PreToolUse): hooks.PreToolUse,
	"post-tool-use": hooks.PostToolUse, string(PostToolUse): hooks.PostToolUse,
	"pre-compact": hooks.PreCompact, string(PreCompact): hooks.PreCompact,
	"post-compact": hooks.PostCompact, string(PostCompact): hooks.PostCompact,
	"subagent-start": hooks.SubagentStart, string(SubagentStart): hooks.SubagentStart,
	"subagent-stop": hooks.SubagentStop, string(SubagentStop): hooks.SubagentStop,
	"stop": hooks.Stop, string(Stop): hooks.Stop,
	"session-end": hooks.SessionEnd, string(SessionEnd): hooks.SessionEnd,
}

// Event implements hooks.Harness: our command names and Codex's event
// names (SessionStart, PreToolUse, ...).
func (Harness) Event(name string) hooks.HookEvent { return eventNames[name] }

// Decode implements hooks.Harness. A subagent's hooks carry the parent's
// session_id and their own agent_id and rollout: the subagent is its own
// context (Agent, ContextTranscript), in the session's writer.
//
// PreToolUse of apply_patch (or of a shell command that is an apply_patch
// heredoc, which Codex applies as a patch): Files are every file the
// patch replaces or removes (Patch.NeedsSeen), which the guard judges; a
// new file is not listed. PostToolUse of a patch Codex applied: Files are
// the files it left written (op edit: the runtime reads them from disk)
// and those it removed (op delete, no content); a patch that failed
// records nothing, as it may have applied only some hunks. PostToolUse of
// another shell call: Shell, for the runtime's shell-read recogniser,
// with the output verbatim (Codex hands the hook what the model got).
func (Harness) Decode(ev hooks.HookEvent, stdin io.Reader) (hooks.Call, error) {
	p, err := DecodePayload(stdin)
	if err != nil {
		return hooks.Call{}, err
	}
	c := hooks.Call{Event: ev, Session: p.SessionID, Agent: p.AgentID, Cwd: p.Cwd,
		Transcript: mainTranscript(&p), ContextTranscript: p.ContextTranscript(),
		Tool: p.ToolName, CallID: p.ToolUseID, Model: p.Model, Prompt: p.Prompt, Source: p.Source, Trigger: p.Trigger}
	if ev != hooks.PreToolUse && ev != hooks.PostToolUse {
		return c, nil
	}
	patch, dir, isPatch, err := p.Patch()
	if err != nil {
		if p.ToolName == HookToolApplyPatch {
			c.ToolErr = err
		}
		return c, nil
	}
	cwd := p.Cwd
	if dir != "" {
		cwd = ResolvePath(p.Cwd, dir)
	}
	if isPatch {
		pt, err := ParsePatch(patch)
		if err != nil {
			// Codex refuses a patch it cannot parse: nothing changes.
			return c, nil
		}
		if ev == hooks.PreToolUse {
			for _, f := range pt.NeedsSeen(cwd, exists) {
				c.Files = append(c.Files, hooks.FileOp{Op: gitstore.OpEdit, Path: f})
			}
			return c, nil
		}
		if !patchApplied(&p) {
			return c, nil
		}
		written, removed := pt.Final(cwd)
		n := len(written) + len(removed)
		key := func(i int) string {
			if n == 1 || p.ToolUseID == "" {
				return ""
			}
			return p.ToolUseID + ":" + strconv.Itoa(i)
		}
		for _, f := range written {
			c.Files = append(c.Files, hooks.FileOp{Op: gitstore.OpEdit, Path: f, Key: key(len(c.Files))})
		}
		for _, f := range removed {
			c.Files = append(c.Files, hooks.FileOp{Op: gitstore.OpDelete, Path: f, Key: key(len(c.Files))})
		}
		return c, nil
	}
	if ev == hooks.PostToolUse && p.ToolName == HookToolBash {
		cmd, _ := p.Command()
		sh := &hooks.Shell{Command: cmd, Shown: shellread.Verbatim}
		wd := inputString(p.ToolInput, "workdir")
		if wd == "" {
			// The payload has no workdir: the rollout's call has (its
			// line is written before the tool runs). Not found there (no
			// rollout yet), the call ran where exec_command runs by
			// default: the session's cwd.
			wd, _ = callWorkdir(p.ContextTranscript(), p.ToolUseID, cmd)
		}
		if wd != "" {
			sh.Dir = ResolvePath(p.Cwd, wd)
		}
		if out, err := p.ResponseText(); err == nil {
			sh.Output, sh.HasOutput = out, true
		}
		c.Shell = sh
	}
	return c, nil
}

// patchApplied reports whether a patch call's tool_response says Codex
// applied it: framed with exit code 0 (apply_patch) or, for a heredoc
// through the shell, the output Codex's applier prints on success.
func patchApplied(p *Payload) bool {
	text, err := p.ResponseText()
	if err != nil {
		return false
	}
	o := ParseExecOutput(text)
	if o.Framed && (!o.Exited || o.ExitCode != 0) {
		return false
	}
	return strings.HasPrefix(o.Output, "Success. Updated the following files:")
}

// inputString is a string member of tool_input ("" when absent).
func inputString(in json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(in, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}

func exists(abs string) bool {
	_, err := os.Stat(abs)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// mainTranscript is the session's main rollout. A subagent's hooks name
// the child's rollout in transcript_path (SubagentStop: the parent's);
// the parent's is the rollout of the session's thread (its id is the
// session id), found beside the child's, in the same day's directory or
// another under sessions/ ("" when there is none).
func mainTranscript(p *Payload) string {
	if p.AgentID == "" || p.HookEventName == SubagentStop || p.TranscriptPath == "" {
		return p.TranscriptPath
	}
	if ThreadIDFromPath(p.TranscriptPath) == strings.ToLower(p.SessionID) {
		return p.TranscriptPath
	}
	return findRollout(filepath.Dir(p.TranscriptPath), p.SessionID)
}

// findRollout finds the rollout of thread id: in dir, else anywhere under
// the sessions directory dir is a day of.
func findRollout(dir, id string) string {
	if id == "" || strings.ContainsAny(id, "*?[/\\") {
		return ""
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "rollout-*-"+id+".jsonl")); len(m) > 0 {
		return m[0]
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(dir)))
	if m, _ := filepath.Glob(filepath.Join(root, "*", "*", "*", "rollout-*-"+id+".jsonl")); len(m) > 0 {
		return m[0]
	}
	return ""
}

// Reply implements hooks.Harness: PreToolUse's permissionDecision deny
// with the reason the model reads (Codex hands the model "Command blocked
// by PreToolUse hook: <reason>. Command: <the patch>"), and
// SessionStart's additionalContext (injected as a developer message).
func (Harness) Reply(c hooks.Call, r hooks.Reply) []byte {
	switch {
	case r.Deny != "":
		b, err := DenyOutput(r.Deny)
		if err != nil {
			return nil
		}
		return b
	case r.Context != "":
		return SessionStartOutput(r.Context)
	}
	return nil
}
