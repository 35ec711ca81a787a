package opencode

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"time"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/transcript"
)

// LogLine is one line of the session log the plugin keeps (opencode
// keeps no transcript file of its own): what the sweep reads for spans
// and compaction boundaries.
type LogLine struct {
	V       int             `json:"v"`
	Type    string          `json:"type"` // user, assistant, summary, tool, compacted
	ID      string          `json:"id"`   // the part id; the call id for tool; the bus event id for compacted
	Message string          `json:"message"`
	Session string          `json:"session"` // the root session
	Agent   string          `json:"agent"`   // the child session, "" in the root
	TS      int64           `json:"ts"`      // Unix ms
	Cwd     string          `json:"cwd"`
	Text    string          `json:"text"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Output  *string         `json:"output"`
	Error   *string         `json:"error,omitempty"` // a failed call's error (exports only)
	// Model is the model as providerID/modelID: on usage lines (a
	// finished model turn's model and tokens: no items, ContextUsage
	// reads them), and on the assistant and tool lines of a plugin that
	// knew the model of their message (transcript.LineMeta.Model).
	Model  string `json:"model,omitempty"`
	Tokens *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cache_read"`
		CacheWrite int64 `json:"cache_write"`
	} `json:"tokens,omitempty"`
}

// ReadTranscript implements hooks.Harness over the plugin's session log.
func (Harness) ReadTranscript(r io.Reader, at hooks.TranscriptPos) hooks.TranscriptReader {
	size := 64 << 10
	if at.Left > 0 && at.Left < int64(size) {
		size = max(int(at.Left), 4096)
	}
	return &logReader{br: bufio.NewReaderSize(r, size), off: at.Offset}
}

type logReader struct {
	br      *bufio.Reader
	off     int64
	stats   transcript.Stats
	started bool
	done    bool // an export was read whole
}

func (r *logReader) Offset() int64                        { return r.off }
func (r *logReader) Pending() []transcript.PendingToolUse { return nil }
func (r *logReader) Stats() transcript.Stats              { return r.stats }

// Next implements hooks.TranscriptReader: a last line without its newline
// is still being written and left for the next read.
func (r *logReader) Next() (*transcript.Line, error) {
	if r.done {
		return nil, io.EOF
	}
	if !r.started {
		r.started = true
		if head, _ := r.br.Peek(512); r.off == 0 && isExport(head) {
			// `opencode export` output: one document, read whole.
			r.done = true
			tl, err := readExport(r.br, r.off)
			if err != nil {
				return nil, err
			}
			r.off = tl.End
			r.stats.Lines++
			r.stats.Bytes += tl.End - tl.Start
			r.stats.Items += len(tl.Items)
			return tl, nil
		}
	}
	b, err := r.br.ReadBytes('\n')
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	if err != nil {
		return nil, err
	}
	tl := &transcript.Line{Start: r.off, End: r.off + int64(len(b))}
	r.off = tl.End
	r.stats.Lines++
	r.stats.Bytes += int64(len(b))
	var l LogLine
	if json.Unmarshal(b, &l) != nil {
		tl.Invalid = true
		r.stats.Invalid++
		return tl, nil
	}
	tl.Type = l.Type
	tl.LineMeta = transcript.LineMeta{UUID: l.ID, SessionID: l.Session, Agent: l.Agent, Sidechain: l.Agent != "", Cwd: l.Cwd}
	if l.TS > 0 {
		tl.TS = time.UnixMilli(l.TS).UTC()
	}
	tl.Items = l.items(tl.LineMeta)
	if len(tl.Items) == 0 {
		tl.Skipped = true
		r.stats.Skipped++
	}
	r.stats.Items += len(tl.Items)
	return tl, nil
}

// items are a log line's transcript items.
func (l *LogLine) items(m transcript.LineMeta) []transcript.Item {
	if l.ID == "" {
		return nil
	}
	if l.Type == "assistant" || l.Type == "tool" {
		m.Model = l.Model
	}
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	switch l.Type {
	case "user", "assistant":
		return []transcript.Item{&transcript.TextSpan{LineMeta: m, Kind: l.Type, Role: l.Type, Key: "span:" + l.ID, TextJSON: str(l.Text)}}
	case "summary":
		return []transcript.Item{&transcript.CompactSummary{LineMeta: m, Key: "span:" + l.ID, TextJSON: str(l.Text)}}
	case "compacted":
		return []transcript.Item{&transcript.CompactBoundary{LineMeta: m, Trigger: "auto", Key: "compact:" + l.ID}}
	case "tool":
		path := l.argPath()
		input := l.Args
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		use := &transcript.ToolUse{LineMeta: m, ID: l.ID, Name: l.Tool, Input: input, Path: path, SpanKey: "span:" + l.ID + ":0"}
		items := []transcript.Item{use}
		switch {
		case l.Output != nil:
			items = append(items, &transcript.ToolResult{LineMeta: m, ToolUseID: l.ID, ContentJSON: str(*l.Output), Tool: l.Tool,
				Path: path, Block: 1, SpanKey: "span:" + l.ID + ":1"})
		case l.Error != nil:
			items = append(items, &transcript.ToolResult{LineMeta: m, ToolUseID: l.ID, ContentJSON: str(*l.Error), IsError: true, Tool: l.Tool,
				Path: path, Block: 1, SpanKey: "span:" + l.ID + ":1"})
		}
		return items
	}
	return nil
}

// argPath is the file a tool call's args name (filePath), absolute
// against the line's cwd; "" when none.
func (l *LogLine) argPath() string {
	var a struct {
		FilePath string `json:"filePath"`
	}
	if len(l.Args) == 0 || json.Unmarshal(l.Args, &a) != nil || a.FilePath == "" {
		return ""
	}
	if !filepath.IsAbs(a.FilePath) {
		if l.Cwd == "" {
			return ""
		}
		return filepath.Join(l.Cwd, a.FilePath)
	}
	return filepath.Clean(a.FilePath)
}
