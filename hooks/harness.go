package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/hooks/shellread"
	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// Harness is one agent harness's adapter: all the runtime knows of a
// harness. The runtime (Run, the sweeps, Import, Restore, the facts)
// drives it; the adapter never drives the runtime's bookkeeping itself.
// An adapter is a package beside this one (hooks/claudecode is Claude
// Code's) whose value is listed in package hooks/harnesses; see the
// package doc for how to add one.
type Harness interface {
	// Name is the harness's name: what its events record
	// (gitstore.Event.Harness) and what `git lossless install`,
	// `uninstall` and `hook` take ("claude-code").
	Name() string
	// Prefix starts the name of the writer of each of its sessions
	// (gitstore.WriterName(Prefix(), session)) and of its cursor
	// directory ("cc-"). Prefixes of two harnesses never start one
	// another.
	Prefix() string
	// Dialect is the harness's own words that the runtime's messages and
	// facts use.
	Dialect() Dialect

	// Event maps an event name, as the hook command line gives it (the
	// harness's spelling or the runtime's), to the runtime's event; ""
	// for a name it does not know.
	Event(name string) HookEvent
	// Decode reads one hook call from its stdin (ReadPayload bounds it).
	// A payload that cannot be used is an error naming what is wrong
	// with it (the runtime does nothing with it and says so); a call
	// whose tool part alone is unusable is a Call with ToolErr set.
	Decode(ev HookEvent, stdin io.Reader) (Call, error)
	// Reply renders the runtime's answer to a call in the harness's
	// output protocol: the bytes for stdout (nil: print nothing).
	Reply(c Call, r Reply) []byte
	// MCPTools says whether the harness starts git-lossless's MCP server
	// for a session in dir: the names under which the model sees the
	// server's tools ("restore_context" -> "mcp__git-lossless__..."), or
	// nil when it does not start it. The error, if any, is a warning:
	// the names may still be given.
	MCPTools(dir string, getenv func(string) string) (func(tool string) string, error)

	// ReadTranscript reads a transcript's items from at: the sweep's and
	// the guard's one way into a harness's transcript format.
	ReadTranscript(r io.Reader, at TranscriptPos) TranscriptReader
	// Subagents lists the transcripts of the subagents of the session
	// whose main transcript is main, in the order they are swept (a
	// missing directory is none).
	Subagents(main string) ([]string, error)
	// SessionOf names the session of the transcript at path when its
	// lines do not (from its name).
	SessionOf(path string) string
	// SessionFile says whether a file found under an import directory is
	// one of the harness's transcripts, and of which session: main is the
	// path of the session's main transcript (path itself for a main
	// transcript).
	SessionFile(path string) (main string, ok bool)
	// TranscriptCwd is the working directory of the session of the
	// transcript at path (size bytes): where Import archives it. "" when
	// the transcript names none.
	TranscriptCwd(path string, size int64) (string, error)
	// ImportDirs are where the harness keeps its sessions: what `git
	// lossless import` reads without arguments. dir resolves relative
	// settings; a missing directory is for the caller to report.
	ImportDirs(dir string, getenv func(string) string) ([]string, error)
	// Sessions finds the harness's sessions that ran in the work tree
	// wt: the main transcript of session, or of the latest session when
	// session is "", for the MCP server's tools that default to the
	// caller's session.
	Sessions(ctx context.Context, wt, session string, getenv func(string) string) (SessionFound, error)
	// ContextUsage reads how full a context is from its transcript.
	ContextUsage(transcript string) (ContextUsage, error)

	// Install computes what `git lossless install HARNESS` (or
	// uninstall, opt.Uninstall) changes: the hook registration and the
	// MCP server's, one target per file. Nothing is written: the caller
	// shows the targets' plans and applies them.
	Install(ctx context.Context, opt InstallOptions) (Install, error)
}

// Sampler makes realistic hook payloads of a harness, for `git lossless bench hooks`.
//
// It is optional (a harness without it is listed by the bench as "no
// sampler"): the bench measures each harness's pre-tool and post-tool hook
// as a whole process, side by side with Claude Code's, on payloads the
// harness itself would send. For PreToolUse the payload is an edit of
// file (the guard's case); for PostToolUse a read of file that showed
// content (the recording's case), in session, run from cwd, with
// transcript as the session's transcript ("" when the harness has none).
// event is the event's name as the harness passes it on the hook command
// line (`git-lossless-hook [HARNESS] EVENT`), stdin the payload.
type Sampler interface {
	SamplePayload(ev HookEvent, session, cwd, transcript, file string, content []byte) (event string, stdin []byte)
}

// SampleCallID is the call id a Sampler gives the call of ev on file:
// one per event and file, so that each sample's evidence is new (the
// call id is its dedupe key: a bench whose samples shared one would
// measure a hook that records nothing after the first).
func SampleCallID(prefix string, ev HookEvent, file string) string {
	h := fnv.New64a()
	h.Write([]byte(string(ev) + "\x00" + file))
	return prefix + strconv.FormatUint(h.Sum64(), 16)
}

// HookEvent is an event of the runtime: what a hook call asks it to do,
// whatever the harness calls the event.
type HookEvent string

// The runtime's events.
const (
	// SessionStart: a session starts or resumes; after a compaction or a
	// resume (Call.Source "compact", "resume") the runtime sweeps the
	// session and hands its facts and working set back (Reply.Context).
	SessionStart HookEvent = "session-start"
	// PreToolUse: the guard, for a call that changes files (Call.Files).
	PreToolUse HookEvent = "pre-tool-use"
	// PostToolUse: the record of what a call put into the context
	// (Call.Files), and a sweep of the context's transcript.
	PostToolUse HookEvent = "post-tool-use"
	// PreCompact: a compaction was asked for; the session is swept.
	PreCompact HookEvent = "pre-compact"
	// SubagentStop: a subagent ended; its transcript is swept.
	SubagentStop HookEvent = "subagent-stop"
	// SessionEnd: the session ended; it is swept.
	SessionEnd HookEvent = "session-end"
	// BeforeAgent: the user sent a prompt, before the model sees it. The
	// session is swept and, when its transcript shows a compaction of the
	// context that no hook has handed back yet, the working set is
	// handed back (Reply.Context; see Call.HandBack). For harnesses with
	// no hook after a compaction (Gemini CLI's BeforeAgent).
	BeforeAgent HookEvent = "before-agent"
)

// Events some harnesses have besides (added for Codex CLI). Stop and
// PostCompact sweep the session (a turn's spans, a compaction's boundary,
// archived while the session goes on: Codex clamps SessionEnd's hook to
// 3 s); UserPromptSubmit and SubagentStart do nothing yet.
const (
	UserPromptSubmit HookEvent = "user-prompt-submit"
	PostCompact      HookEvent = "post-compact"
	SubagentStart    HookEvent = "subagent-start"
	Stop             HookEvent = "stop"
)

// HookEvents lists the runtime's events in the order a session meets them.
func HookEvents() []HookEvent {
	return []HookEvent{SessionStart, BeforeAgent, PreToolUse, PostToolUse, PreCompact, SubagentStop, SessionEnd}
}

// Call is one hook call, as the adapter decoded it from the harness's
// payload: everything the runtime reads of it.
type Call struct {
	Event HookEvent
	// Session is the session's id (required): the writer is
	// Prefix()+Session.
	Session string
	// Agent is the subagent the call runs in; "" for the main context.
	Agent string
	// Cwd is the session's working directory (absolute; "" when the
	// payload has none): the archive is the one it belongs to.
	Cwd string
	// Transcript is the session's main transcript, ContextTranscript the
	// transcript of the context the call runs in (a subagent's own, or
	// Transcript). Absolute paths; "" when there is none.
	Transcript, ContextTranscript string
	// Tool is the tool's name as the harness names it, CallID the call's
	// id (the dedupe key of its evidence).
	Tool, CallID string
	// Model is the model the payload names, when it names one (Codex's
	// every payload; opencode's plugin, once it saw the session's
	// assistant message): PostToolUse records it on its write and edit
	// evidence (extra "model"), so that the model behind a write is
	// known before any sweep (see Models). An adapter only copies it
	// from a payload it decodes anyway.
	Model string
	// Files: at PreToolUse the files the call will change (the guard
	// decides each), at PostToolUse the files it read or changed. None
	// for a call that touches no file the runtime records.
	Files []FileOp
	// ToolErr, when set, says why the payload's description of the tool
	// call cannot be used (a *FieldError-like message naming the member):
	// the runtime reports it, with what it left undone, instead of using
	// Files.
	ToolErr error
	// Shell is the command and output of a shell tool's call (nil for
	// other tools): what a recogniser of shell reads looks at.
	Shell *Shell
	// Prompt is the user's prompt (on the events that carry one).
	Prompt string
	// Source is why a session starts: "startup", "resume", "compact"
	// (after a compaction), "clear".
	Source string
	// Trigger is what asked for a compaction: "manual" or "auto".
	Trigger string
	// HandBack asks the runtime, at PostToolUse and BeforeAgent, to hand
	// the working set back (Reply.Context, once per compaction boundary)
	// when the context's transcript shows a compaction no hook has handed
	// back yet: for a harness that fires no hook after a compaction and
	// takes added context on these events (Gemini CLI). See handBack.
	HandBack bool
}

// FileOp is one file a tool call reads or changes.
type FileOp struct {
	// Op is read, write, edit or delete (the call removed the file: no
	// content, and no evidence of anything).
	Op gitstore.Op
	// Path is the file, absolute and clean.
	Path string
	// Content is what the model was shown (read) or wrote (write), when
	// HasContent. A write or an edit without content is recorded with the
	// file's bytes on disk right after the call (what it produced); a
	// read without content (an image...) is recorded without content.
	Content    []byte
	HasContent bool
	// Partial: a read showed lines FirstLine..FirstLine+NumLines-1 of the
	// file, not all of it.
	Partial             bool
	FirstLine, NumLines int64
	// ResultType is what the harness says a read without text was
	// ("image", "pdf"...): recorded beside it.
	ResultType string
	// Unchanged: the harness answered a read without content because the
	// earlier read stands (Claude Code's file_unchanged). It is no new
	// evidence: recording it would hide the earlier read's hash from the
	// drift check. Only its access of a denied file is recorded.
	Unchanged bool
	// Key is the record's dedupe key when not the call id: a call that
	// changes several files (a patch) records each under its own key.
	Key string
}

// Shell is a shell tool's call.
type Shell struct {
	Command string
	// Output is what the model received (PostToolUse), HasOutput whether
	// the payload holds it. An adapter leaves HasOutput false for a
	// result that is not the command's whole output (interrupted, sent to
	// the background): such a call is never evidence.
	Output    string
	HasOutput bool
	// Dir is the directory the command ran in (absolute; "" = Call.Cwd):
	// a recognised read's relative file is resolved against it.
	Dir string
	// Shown says how the harness altered the output before the model
	// received it (shellread.Verbatim: not at all), for shellread.Match.
	Shown shellread.Shown
}

// Reply is the runtime's answer to a call, for Harness.Reply to render.
type Reply struct {
	// Deny, when not empty, is the guard's reason for refusing the call:
	// the model reads it.
	Deny string
	// Context, when not empty, is text handed into the model's context
	// (the facts and working set after a compaction or a resume).
	Context string
}

// Dialect is what the runtime says and reads in a harness's own words.
type Dialect struct {
	// ReadWith names how the model reads a file in this harness ("the
	// Read tool"): deny reasons and the text after a compaction say
	// "read FILE again with <ReadWith>". Empty: no tool is named.
	ReadWith string
	// NotRequests start the user-role texts the harness writes itself
	// (reminders, command echoes): the facts do not quote them as the
	// user's requests.
	NotRequests []string
	// FileTools are the tools whose calls name a file: the facts tell
	// their errors apart by file, other tools' by command.
	FileTools []string
	// ErrorWrappers name the tags the harness wraps around tool error
	// texts ("tool_use_error" for <tool_use_error>...</tool_use_error>):
	// the facts drop them.
	ErrorWrappers []string
}

// TranscriptPos is where a read of a transcript starts.
type TranscriptPos struct {
	Offset int64
	// Left is about how many bytes are left to read (0: unknown): a
	// reader sizes its buffer by it.
	Left int64
	// Pending are the tool calls an earlier read left waiting for their
	// results.
	Pending []transcript.PendingToolUse
	// Path is the transcript's absolute path ("" when the reader reads
	// no file): for a harness whose lines do not say all a reader needs
	// (the session and subagent of a Gemini CLI chat are in its path).
	Path string
	// State is what an earlier reader left at Offset (its
	// TranscriptStater.State, kept in the cursor); nil at the start or
	// when none was kept.
	State json.RawMessage
}

// TranscriptStater is a TranscriptReader that needs more than Pending to
// read on from an offset (Gemini CLI's chat reader: which messages and
// results it already yielded). The sweep keeps State in the transcript's
// cursor, opaque, and hands it back in TranscriptPos.State.
type TranscriptStater interface {
	// State is what the reader knows at Offset (nil: nothing).
	State() json.RawMessage
}

// TranscriptReader reads a transcript's items, one complete line at a
// time.
type TranscriptReader interface {
	// Next returns the next complete line; io.EOF at the end, or before
	// a last line still being written (it is left for the next read).
	Next() (*transcript.Line, error)
	// Offset is where the next read starts: after the last complete line.
	Offset() int64
	// Pending are the calls still waiting for their results.
	Pending() []transcript.PendingToolUse
	// Stats counts what was read.
	Stats() transcript.Stats
}

// SessionFound is a session Harness.Sessions found.
type SessionFound struct {
	Session    string
	Transcript string // its main transcript
}

// ContextUsage is how full a context is, from its transcript.
type ContextUsage struct {
	Session     string
	Model       string
	Used        int64 // tokens in the context after the last model turn
	Compactions int   // compactions in the transcript
	// Known: a model turn with usage follows the last compaction (Used
	// means something).
	Known bool
}

// InstallOptions are what `git lossless install|uninstall HARNESS` hands
// its harness.
type InstallOptions struct {
	Uninstall bool
	// Scope is "user" (every project) or "project" (the repository of
	// Dir).
	Scope  string
	Dir    string
	Getenv func(string) string
	// Bin is what the hooks and the MCP server run (install); at
	// uninstall Path is set only when --command names one more program
	// whose commands are ours.
	Bin settings.HookBinary
	// HooksFile and MCPFile name files to change instead of the scope's
	// ("" = the scope's).
	HooksFile, MCPFile string
	// NoMCP leaves the MCP server's registration alone.
	NoMCP bool
}

// Install is what an install or uninstall changes: one target per file.
type Install struct {
	Targets []InstallTarget
	// Done are printed after an install is written: when it takes
	// effect, what the user still has to do.
	Done []string
}

// InstallTarget is one file an install or uninstall changes.
type InstallTarget struct {
	// Label and Where head the target: "LABEL: PATH (WHERE)"
	// ("settings", "user settings"); Where is empty for a file named on
	// the command line.
	Label, Where string
	Plan         *settings.Plan
	// Unchanged is printed when the plan changes nothing.
	Unchanged string
	// Removed is printed when applying the plan removed the file.
	Removed string
}

// ReadPayload reads a hook's stdin: at most MaxPayload bytes, trimmed.
func ReadPayload(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	if len(b) > MaxPayload {
		return nil, fmt.Errorf("payload larger than %d bytes", MaxPayload)
	}
	return b, nil
}

// MaxPayload bounds what a hook reads from stdin: a write of a huge file
// carries the file twice (input and response).
const MaxPayload = 256 << 20

// Writer is the writer of a harness's session.
func Writer(h Harness, session string) string { return gitstore.WriterName(h.Prefix(), session) }

// Find returns the harness named name among hs.
func Find(hs []Harness, name string) (Harness, bool) {
	for _, h := range hs {
		if h.Name() == name {
			return h, true
		}
	}
	return nil, false
}

// OfWriter returns the harness among hs whose sessions' writers carry the
// prefix writer starts with (the longest such prefix), so that log,
// recall and the MCP server can tell a writer's harness by its name.
func OfWriter(hs []Harness, writer string) (Harness, bool) {
	var best Harness
	for _, h := range hs {
		if p := h.Prefix(); p != "" && strings.HasPrefix(writer, p) && len(writer) > len(p) && (best == nil || len(p) > len(best.Prefix())) {
			best = h
		}
	}
	return best, best != nil
}

// RefusedError is an install target's file that cannot be changed with
// certainty (a file that is not valid JSON, a key of the wrong shape):
// nothing is written, and Hint says what the user can do.
type RefusedError struct {
	Err  error
	Hint string
}

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// DoctorChecker is an optional interface of a Harness: the checks `git
// lossless doctor` runs of the harness's installation (its hooks, what
// the harness needs besides them to run them, its MCP registration).
// A harness with nothing installed and no trace of the harness returns
// none.
type DoctorChecker interface {
	DoctorChecks(ctx context.Context, opt DoctorOptions) []DoctorCheck
}

// DoctorOptions are what the doctor hands a harness's checks.
type DoctorOptions struct {
	Dir    string // the directory checked (its repository for project scope)
	Getenv func(string) string
}

// DoctorCheck is one line of the doctor's report (see package
// hooks/doctor: Status is "OK", "WARN" or "FAIL"; Fix is for a WARN or
// FAIL).
type DoctorCheck struct {
	Check, Status, Detail, Fix string
}
