package gemini

// The adapter: Gemini CLI as a hooks.Harness. Everything here turns what
// the parsers of this package read into the runtime's neutral calls, and
// the runtime's answers into Gemini CLI's output protocol.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"

	"github.com/git-lossless/git-lossless/gitstore"

	"context"
)

// Name is Gemini CLI's harness name: Event.Harness of everything
// recorded for it, and the word install, uninstall and hook take.
const Name = "gemini"

// Prefix starts the writer of every Gemini CLI session:
// gemini-<session_id>.
const Prefix = "gemini-"

// Harness is Gemini CLI's adapter (hooks.Harness). It holds no state: the
// zero value is ready.
type Harness struct{}

// New returns Gemini CLI's adapter.
func New() Harness { return Harness{} }

var _ hooks.Harness = Harness{}

// Name implements hooks.Harness.
func (Harness) Name() string { return Name }

// Prefix implements hooks.Harness.
func (Harness) Prefix() string { return Prefix }

// Dialect is Gemini CLI's words: its read_file tool, the user-role texts
// the CLI writes itself (the session context, hook contexts, the
// compression's snapshot), its file tools.
func (Harness) Dialect() hooks.Dialect {
	return hooks.Dialect{
		ReadWith:    "the read_file tool",
		NotRequests: []string{"<session_context>", "<hook_context>", "<state_snapshot>"},
		FileTools:   []string{ToolReadFile, ToolReadManyFiles, ToolWriteFile, ToolReplace},
	}
}

// Event implements hooks.Harness: the runtime's names and Gemini CLI's
// (BeforeTool, AfterTool, BeforeAgent, SessionStart, SessionEnd,
// PreCompress).
func (Harness) Event(name string) hooks.HookEvent {
	switch name {
	case BeforeTool, string(hooks.PreToolUse):
		return hooks.PreToolUse
	case AfterTool, string(hooks.PostToolUse):
		return hooks.PostToolUse
	case BeforeAgent, string(hooks.BeforeAgent):
		return hooks.BeforeAgent
	case SessionStart, string(hooks.SessionStart):
		return hooks.SessionStart
	case SessionEnd, string(hooks.SessionEnd):
		return hooks.SessionEnd
	case PreCompress, string(hooks.PreCompact):
		return hooks.PreCompact
	}
	return ""
}

// eventName is the Gemini CLI event of a runtime event (for the
// hookEventName of its output).
func eventName(ev hooks.HookEvent) string {
	switch ev {
	case hooks.PreToolUse:
		return BeforeTool
	case hooks.PostToolUse:
		return AfterTool
	case hooks.BeforeAgent:
		return BeforeAgent
	case hooks.SessionStart:
		return SessionStart
	case hooks.SessionEnd:
		return SessionEnd
	case hooks.PreCompact:
		return PreCompress
	}
	return ""
}

// Decode implements hooks.Harness. BeforeTool of write_file or replace
// names the file it will change (EditTarget; the guard allows creating a
// file); AfterTool names what the result put into the context (Seen): a
// read with its text when it is exactly the file (whole or lines:A-B),
// without when it is not; a write or replace without content, so that the
// runtime records the file as it is on disk right after (the CLI may
// correct the model's content, and the disk is what the edit produced).
// The payload has no call id: the evidence is keyed by HookKey. No payload
// marks a subagent (its calls carry the parent's session and chat), so
// every hook call is the main context's; the chats tell them apart in the
// sweep. AfterTool and BeforeAgent ask for the working set to be handed
// back after a compression (Call.HandBack): Gemini CLI fires no hook after
// one. SessionStart is decoded but does nothing (Gemini CLI's sources are
// startup, resume and clear, never compact; a headless SessionStart
// context is prepended to the prompt and a resumed session drops it, so
// nothing is handed back there) and is not installed.
func (Harness) Decode(ev hooks.HookEvent, stdin io.Reader) (hooks.Call, error) {
	p, err := DecodePayload(stdin, DecodeOptions{Event: eventName(ev)})
	if err != nil {
		return hooks.Call{}, err
	}
	c := hooks.Call{Event: ev, Session: p.SessionID, Cwd: p.Cwd, Transcript: p.TranscriptPath, ContextTranscript: p.TranscriptPath,
		Tool: p.ToolName, Prompt: p.Prompt, Trigger: p.Trigger}
	if !validID(strings.ReplaceAll(p.SessionID, ".", "_")) {
		return hooks.Call{}, &FieldError{Field: "session_id", Got: strconv.Quote(p.SessionID), Want: "an id of letters, digits, '-', '_'"}
	}
	if p.Source == "compact" {
		c.Source = p.Source
	}
	switch ev {
	case hooks.PreToolUse:
		c.CallID = p.HookKey()
		path, ok, err := p.EditTarget()
		switch {
		case err != nil:
			c.ToolErr = err
		case ok:
			op := gitstore.OpEdit
			if p.ToolName == ToolWriteFile {
				op = gitstore.OpWrite
			}
			c.Files = []hooks.FileOp{{Op: op, Path: path}}
		}
	case hooks.PostToolUse:
		c.CallID = p.HookKey()
		c.HandBack = true
		seen, err := p.Seen()
		if err != nil {
			c.ToolErr = err
			break
		}
		for _, s := range seen {
			c.Files = append(c.Files, fileOp(s))
		}
	case hooks.BeforeAgent:
		c.HandBack = true
	}
	return c, nil
}

// fileOp is one Seen as the runtime's FileOp.
func fileOp(s Seen) hooks.FileOp {
	f := hooks.FileOp{Op: s.Op, Path: s.Path}
	if s.Op != gitstore.OpRead {
		return f // the file as the call left it on disk
	}
	if !s.HasContent {
		f.ResultType = s.Why
		return f
	}
	f.Content, f.HasContent = s.Content, true
	if a, b, ok := lineRange(s.View); ok {
		f.Partial, f.FirstLine, f.NumLines = true, a, b-a+1
	}
	return f
}

// lineRange reads a view "lines:A-B".
func lineRange(view string) (a, b int64, ok bool) {
	r, found := strings.CutPrefix(view, "lines:")
	if !found {
		return 0, 0, false
	}
	as, bs, found := strings.Cut(r, "-")
	if !found {
		return 0, 0, false
	}
	a, err1 := strconv.ParseInt(as, 10, 64)
	b, err2 := strconv.ParseInt(bs, 10, 64)
	if err1 != nil || err2 != nil || a < 1 || b < a {
		return 0, 0, false
	}
	return a, b, true
}

// Reply implements hooks.Harness: a deny is {"decision":"deny","reason"}
// (the model receives "Tool execution blocked: <reason>"); context is
// hookSpecificOutput.additionalContext of the event the call came from
// (AfterTool: appended to the tool's result; BeforeAgent: to the
// prompt). The CLI escapes '<' and '>' in it, which is why the runtime
// hands back a notice and names the tools that give content back, never
// the content itself.
func (Harness) Reply(c hooks.Call, r hooks.Reply) []byte {
	switch {
	case r.Deny != "":
		return DenyOutput(r.Deny)
	case r.Context != "":
		b, err := ContextOutput(eventName(c.Event), r.Context)
		if err != nil {
			return nil
		}
		return b
	}
	return nil
}

// MCPToolName is the name Gemini CLI 0.61 gives tool of server: "mcp_",
// the server's name, "_", the tool's, every character outside
// [A-Za-z0-9_.:-] turned into '_' (mcp_git-lossless_restore_context).
func MCPToolName(server, tool string) string {
	b := []byte("mcp_" + server + "_" + tool)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			b[i] = '_'
		}
	}
	return string(b)
}

// MCPTools implements hooks.Harness: the names Gemini CLI gives our
// server's tools when the settings it reads in dir (the project's
// .gemini/settings.json, then the user's) register ours. Whether the
// project's folder is trusted (untrusted folders' settings are ignored)
// is not checked.
func (Harness) MCPTools(dir string, getenv func(string) string) (func(string) string, error) {
	var errs []error
	var paths []string
	if p, err := SettingsPath(settings.ScopeProject, dir, getenv); err == nil {
		paths = append(paths, filepath.Join(dir, ".gemini", "settings.json"), p)
	}
	if p, err := SettingsPath(settings.ScopeUser, dir, getenv); err == nil {
		paths = append(paths, p)
	}
	exe, _ := os.Executable()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var f struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		if raw, ok := f.MCPServers[settings.MCPServerName]; ok {
			if settings.IsOurMCPServer(raw, exe) {
				return func(tool string) string { return MCPToolName(settings.MCPServerName, tool) }, errors.Join(errs...)
			}
			break // someone else's server under our name wins
		}
	}
	return nil, errors.Join(errs...)
}

// chatReader is a ChatReader as the runtime reads transcripts: its state
// kept in the sweep's cursor (hooks.TranscriptStater), no pending calls
// of the runtime's kind (the state holds them).
type chatReader struct{ *ChatReader }

func (chatReader) Pending() []transcript.PendingToolUse { return nil }

// State implements hooks.TranscriptStater.
func (c chatReader) State() json.RawMessage {
	b, err := json.Marshal(c.ChatReader.State())
	if err != nil {
		return nil
	}
	return b
}

// ReadTranscript implements hooks.Harness with the chat reader, the
// options the chat's path says (session, subagent, project directory)
// and the state the last read left in the cursor.
func (Harness) ReadTranscript(r io.Reader, at hooks.TranscriptPos) hooks.TranscriptReader {
	var opt ChatOptions
	if cf, ok := ChatFileOf(at.Path); ok {
		opt = cf.Options()
	}
	var st *ChatState
	if len(at.State) > 0 && at.Offset > 0 {
		st = new(ChatState)
		if json.Unmarshal(at.State, st) != nil {
			st = nil
		}
	}
	return chatReader{NewChatReader(r, at.Offset, st, opt)}
}

// Subagents implements hooks.Harness: chats/<session id>/*.jsonl beside
// the main chat, by name.
func (Harness) Subagents(main string) ([]string, error) {
	cf, ok := ChatFileOf(main)
	if !ok || cf.SessionID == "" || cf.Agent != "" || !validID(cf.SessionID) {
		return nil, nil
	}
	dir := filepath.Join(filepath.Dir(main), cf.SessionID)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// SessionOf implements hooks.Harness: a main chat's header, a subagent
// chat's directory.
func (Harness) SessionOf(path string) string {
	cf, _ := ChatFileOf(path)
	return cf.SessionID
}

// SessionFile implements hooks.Harness: a main chat
// (tmp/<project>/chats/*.jsonl) is its own session's; a subagent's
// (chats/<session id>/<id>.jsonl) belongs to the main chat beside that
// directory whose header names the session (chats/<session id>.jsonl,
// which does not exist, when none does: the session is then its
// subagents).
func (Harness) SessionFile(path string) (string, bool) {
	cf, ok := ChatFileOf(path)
	if !ok {
		return "", false
	}
	if cf.Agent == "" && filepath.Base(filepath.Dir(path)) == "chats" {
		return path, true
	}
	chats := filepath.Dir(filepath.Dir(path))
	short := cf.SessionID
	if len(short) > 8 {
		short = short[:8]
	}
	matches, _ := filepath.Glob(filepath.Join(chats, "session-*-"+short+".jsonl"))
	for _, m := range matches {
		if h, err := readHeader(m); err == nil && h.sessionID == cf.SessionID {
			return m, true
		}
	}
	return filepath.Join(chats, cf.SessionID+".jsonl"), true
}

// TranscriptCwd implements hooks.Harness: the project directory the
// chat's projectHash names in projects.json (see ChatFileOf).
func (Harness) TranscriptCwd(path string, size int64) (string, error) {
	cf, ok := ChatFileOf(path)
	if !ok {
		return "", nil
	}
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return cf.ProjectDir, nil
}

// ImportDirs implements hooks.Harness: <Dir>/tmp/*/chats, every
// project's chats (the rest of tmp is the CLI's logs and caches); <Dir>/tmp
// when there are none, for the caller to report.
func (Harness) ImportDirs(dir string, getenv func(string) string) ([]string, error) {
	d, err := Dir(getenvOr(getenv))
	if err != nil {
		return nil, err
	}
	chats, err := filepath.Glob(filepath.Join(d, "tmp", "*", "chats"))
	if err != nil || len(chats) == 0 {
		return []string{filepath.Join(d, "tmp")}, nil
	}
	return chats, nil
}

func getenvOr(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}

// Sessions implements hooks.Harness: the main chat of session (the most
// recently written when session is "") among the chats whose project
// directory is the work tree wt.
func (Harness) Sessions(ctx context.Context, wt, session string, getenv func(string) string) (hooks.SessionFound, error) {
	d, err := Dir(getenvOr(getenv))
	if err != nil {
		return hooks.SessionFound{}, err
	}
	chats, _, err := FindChats(d)
	if err != nil {
		return hooks.SessionFound{}, err
	}
	want := sameDirFunc(wt)
	var best *ChatFile
	for i := range chats {
		c := &chats[i]
		if c.Agent != "" || !want(c.ProjectDir) || (session != "" && c.SessionID != session) {
			continue
		}
		if best == nil || c.ModTime.After(best.ModTime) {
			best = c
		}
	}
	if best == nil {
		return hooks.SessionFound{}, fmt.Errorf("no Gemini CLI chat of %s under %s", wt, d)
	}
	return hooks.SessionFound{Session: best.SessionID, Transcript: best.Path}, nil
}

// sameDirFunc reports whether a directory is wt (symlinks resolved).
func sameDirFunc(wt string) func(string) bool {
	clean := filepath.Clean(wt)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		real = clean
	}
	return func(d string) bool {
		if d == "" {
			return false
		}
		if filepath.Clean(d) == clean {
			return true
		}
		r, err := filepath.EvalSymlinks(d)
		return err == nil && r == real
	}
}

// ContextUsage implements hooks.Harness: the input tokens of the last
// model message (its "tokens"), the compressions the chat records.
func (Harness) ContextUsage(path string) (hooks.ContextUsage, error) {
	f, err := os.Open(path)
	if err != nil {
		return hooks.ContextUsage{}, err
	}
	defer f.Close()
	var u hooks.ContextUsage
	cf, _ := ChatFileOf(path)
	u.Session = cf.SessionID
	c := NewChatReader(strings.NewReader(""), 0, nil, cf.Options())
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = bytes.TrimRight(line, "\r\n")
			for _, it := range c.ParseLine(line).Items {
				if b, ok := it.(*transcript.CompactBoundary); ok && b.Trigger == "compress" {
					u.Compactions++
					u.Known, u.Used = false, 0
				}
			}
			if t, _ := jsonscan.String(jsonscan.Field(line, "type")); t == "gemini" {
				if n, ok := jsonscan.Int(jsonscan.Field(jsonscan.Field(line, "tokens"), "input")); ok {
					u.Used, u.Known = n, true
					if m, ok := jsonscan.String(jsonscan.Field(line, "model")); ok && m != "" {
						u.Model = m
					}
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return u, err
		}
	}
	return u, nil
}
