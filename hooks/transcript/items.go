package transcript

import (
	"encoding/json"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// LineMeta is what every item knows about the transcript line it came
// from. The adapter fills it from its format (Claude Code: uuid,
// timestamp, sessionId, agentId, isSidechain, cwd).
type LineMeta struct {
	UUID      string    // the line's (or message's) id: dedupe keys are made of it
	TS        time.Time // the line's timestamp (zero when it has none)
	SessionID string    // the session (a subagent's lines carry the parent's)
	Agent     string    // the subagent; "" in a main context
	Sidechain bool      // the line is a subagent's
	Cwd       string
	// Model is the model that wrote the line, as the harness names it
	// (Claude Code: message.model; Codex: the turn's turn_context model;
	// Gemini CLI: the message's model; opencode: providerID/modelID),
	// "" when the transcript does not say. Adapters may set it on every
	// item of an assistant line; the sweep archives it (extra "model")
	// on the spans the model produced only: assistant text, thinking and
	// tool calls. It is what lets blame name the model behind a write.
	Model string
}

// Item is one thing a line yields: *TextSpan, *ToolUse,
// *ToolResult, *FileSeen, *CompactBoundary or *CompactSummary.
type Item interface {
	Meta() *LineMeta
}

// TextSpan is a text block of a user or assistant message.
type TextSpan struct {
	LineMeta
	Kind     string          // "user", "assistant" or "thinking"
	Role     string          // "user" or "assistant"
	Block    int             // index of the block in its message (0 for a message of one text)
	Key      string          // dedupe key: span:<uuid> or span:<uuid>:<block>
	TextJSON json.RawMessage // the text, as a JSON string
}

// Text returns the span's text.
func (s *TextSpan) Text() string { return stringValue(s.TextJSON) }

// ToolUse is a tool call of an assistant message.
type ToolUse struct {
	LineMeta
	ID    string
	Name  string
	Input json.RawMessage // the input object, raw
	// Path is the file a file tool names (Claude Code: Read, Write, Edit,
	// MultiEdit, NotebookEdit), made absolute against the line's cwd.
	Path    string
	Block   int
	SpanKey string
}

// ToolResult is the result of a tool call, as the model received it.
type ToolResult struct {
	LineMeta
	ToolUseID   string
	IsError     bool
	ContentJSON json.RawMessage // the content: a JSON string or an array of blocks
	// ToolUseResult is the harness's structured record of the result
	// beside what the model read (Claude Code: the line's toolUseResult,
	// an object or a string), raw; nil when there is none or when it
	// would be ambiguous (a line holding several results).
	ToolUseResult json.RawMessage
	Tool          string // the matching tool use's name, when known
	Path          string // the matching tool use's file, when known
	Block         int
	SpanKey       string
}

// Text returns the result's text: the string content, or the text blocks
// joined by newlines.
func (r *ToolResult) Text() string { return ContentText(r.ContentJSON) }

// FileSeen is evidence derived from a result: a file version that entered
// the context (op read, write, edit or attach).
type FileSeen struct {
	LineMeta
	Path       string // as the transcript names it (absolute)
	Content    []byte // the raw text (no line numbers), when HasContent
	HasContent bool
	View       string      // "full" or "lines:A-B"
	Op         gitstore.Op // read, write, edit, attach
	Tool       string      // the tool as the harness names it (Claude Code's Read, Edit...); "" for attach
	Key        string      // the tool call's id, or attach:<uuid>
}

// CompactBoundary is a compaction of the line's context.
type CompactBoundary struct {
	LineMeta
	Trigger string // manual, auto
	Key     string // compact:<uuid>: the guard's boundary key
}

// CompactSummary is the summary a compaction left in the context.
type CompactSummary struct {
	LineMeta
	TextJSON json.RawMessage // JSON string, or array of blocks
	Key      string          // span:<uuid>
}

// Text returns the summary's text.
func (s *CompactSummary) Text() string { return ContentText(s.TextJSON) }

// Meta implements Item.
func (s *TextSpan) Meta() *LineMeta        { return &s.LineMeta }
func (s *ToolUse) Meta() *LineMeta         { return &s.LineMeta }
func (s *ToolResult) Meta() *LineMeta      { return &s.LineMeta }
func (s *FileSeen) Meta() *LineMeta        { return &s.LineMeta }
func (s *CompactBoundary) Meta() *LineMeta { return &s.LineMeta }
func (s *CompactSummary) Meta() *LineMeta  { return &s.LineMeta }

// Line is one complete line and what it yielded.
type Line struct {
	LineMeta
	Type    string // the line's "type"
	Start   int64  // byte offset of the line
	End     int64  // byte offset after its '\n': where to resume
	Invalid bool   // not a JSON object: skipped (and counted)
	Skipped bool   // a type or attachment the parser does not read
	Items   []Item
}

// Stats counts what a parser read.
type Stats struct {
	Lines   int   // complete lines read
	Invalid int   // lines that are not JSON objects
	Skipped int   // lines of types not read (and blank lines)
	Items   int   // items yielded
	Bytes   int64 // bytes of complete lines read
}

// PendingToolUse is a tool call whose result has not been read yet. A
// sweep keeps them beside its cursor: the result line may arrive in a
// later sweep than its call.
type PendingToolUse struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Path  string          `json:"path,omitempty"`
	Input json.RawMessage `json:"input,omitempty"` // file tools only
}

// MaxPendingToolUses bounds the calls a parser remembers (a call whose
// result never comes, e.g. an interrupted one, is forgotten eventually).
const MaxPendingToolUses = 4096
