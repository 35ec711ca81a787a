package hooks

// Claude Code transcript parser.
//
// A transcript is JSON lines, appended while we read it, with lines from a
// few bytes to tens of megabytes and a set of line types that grows release
// by release. The parser reads complete lines only (a trailing line without
// its '\n' is left for the next read), holds one line at a time, and looks
// at a line's fields with a small validating scanner instead of decoding
// it: most bytes of a real transcript are in lines it skips
// (api-request-shape, api-request-blob, prompt_snapshot attachments...),
// which it recognises from their first fields without scanning the rest.
// Values it keeps (tool inputs, results, texts) are copied out of the line
// as raw JSON and decoded only when needed.
//
// What a line yields:
//
//   - assistant: a TextSpan per text block (kind "assistant") and per
//     thinking block with text (kind "thinking"), a ToolUse per tool_use.
//   - user: a CompactSummary when isCompactSummary; else a TextSpan per
//     text (kind "user"), and per tool_result a ToolResult plus, for file
//     tools, the FileSeen evidence derived from it (see deriveFileSeen).
//   - attachment of type "file" (re-attached after a compaction): a
//     FileSeen with op "attach"; every other attachment is skipped.
//   - system with subtype "compact_boundary": a CompactBoundary.
//   - anything else (api-request*, prompt_snapshot, queue-operation,
//     unknown types): skipped. Image and document blocks yield nothing.
//
// A tool_result is paired with its tool_use by id, also across parses:
// calls still waiting for a result are kept (Pending/SetPending).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// LineMeta is what every item knows about the transcript line it came from.
type LineMeta struct {
	UUID      string    // the line's uuid
	TS        time.Time // the line's timestamp (zero when it has none)
	SessionID string    // sessionId (a subagent's lines carry the parent's)
	Agent     string    // agentId: the subagent; "" in a main transcript
	Sidechain bool      // isSidechain
	Cwd       string
}

// TranscriptItem is one thing a line yields: *TextSpan, *ToolUse,
// *ToolResult, *FileSeen, *CompactBoundary or *CompactSummary.
type TranscriptItem interface {
	Meta() *LineMeta
}

// TextSpan is a text block of a user or assistant message.
type TextSpan struct {
	LineMeta
	Kind     string          // "user", "assistant" or "thinking"
	Role     string          // "user" or "assistant"
	Block    int             // index in message.content (0 for string content)
	Key      string          // dedupe key: span:<uuid> or span:<uuid>:<block>
	TextJSON json.RawMessage // the text, as a JSON string
}

// Text returns the span's text.
func (s *TextSpan) Text() string { return tjStringValue(s.TextJSON) }

// ToolUse is a tool call of an assistant message.
type ToolUse struct {
	LineMeta
	ID    string
	Name  string
	Input json.RawMessage // the input object, raw
	// Path is the file a file tool (Read, Write, Edit, MultiEdit,
	// NotebookEdit) names, made absolute against the line's cwd.
	Path    string
	Block   int
	SpanKey string
}

// ToolResult is a tool_result block of a user message.
type ToolResult struct {
	LineMeta
	ToolUseID   string
	IsError     bool
	ContentJSON json.RawMessage // the content: a JSON string or an array of blocks
	// ToolUseResult is the line's toolUseResult (an object or a string),
	// raw; nil when the line has none (subagent transcripts) or when the
	// line holds several results (it would be ambiguous).
	ToolUseResult json.RawMessage
	Tool          string // the matching tool use's name, when known
	Path          string // the matching tool use's file, when known
	Block         int
	SpanKey       string
}

// Text returns the result's text: the string content, or the text blocks
// joined by newlines.
func (r *ToolResult) Text() string { return tjContentText(r.ContentJSON) }

// FileSeen is evidence derived from a result: a file version that entered
// the context (op read, write, edit or attach).
type FileSeen struct {
	LineMeta
	Path       string // as the transcript names it (absolute)
	Content    []byte // the raw text (no line numbers), when HasContent
	HasContent bool
	View       string // "full" or "lines:A-B"
	Op         string // read, write, edit, attach
	Tool       string // Read, Write, Edit, MultiEdit, NotebookEdit; "" for attach
	Key        string // tool_use_id, or attach:<uuid>
}

// CompactBoundary is a compaction of the line's context.
type CompactBoundary struct {
	LineMeta
	Trigger string // manual, auto
	Key     string // compact:<uuid>
}

// CompactSummary is the summary a compaction left in the context.
type CompactSummary struct {
	LineMeta
	TextJSON json.RawMessage // JSON string, or array of blocks
	Key      string          // span:<uuid>
}

// Text returns the summary's text.
func (s *CompactSummary) Text() string { return tjContentText(s.TextJSON) }

// Meta implements TranscriptItem.
func (s *TextSpan) Meta() *LineMeta        { return &s.LineMeta }
func (s *ToolUse) Meta() *LineMeta         { return &s.LineMeta }
func (s *ToolResult) Meta() *LineMeta      { return &s.LineMeta }
func (s *FileSeen) Meta() *LineMeta        { return &s.LineMeta }
func (s *CompactBoundary) Meta() *LineMeta { return &s.LineMeta }
func (s *CompactSummary) Meta() *LineMeta  { return &s.LineMeta }

// TranscriptLine is one complete line and what it yielded.
type TranscriptLine struct {
	LineMeta
	Type    string // the line's "type"
	Start   int64  // byte offset of the line
	End     int64  // byte offset after its '\n': where to resume
	Invalid bool   // not a JSON object: skipped (and counted)
	Skipped bool   // a type or attachment the parser does not read
	Items   []TranscriptItem
}

// TranscriptStats counts what a parser read.
type TranscriptStats struct {
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
	seq   int64
}

// MaxPendingToolUses bounds the calls a parser remembers (a call whose
// result never comes, e.g. an interrupted one, is forgotten eventually).
const MaxPendingToolUses = 4096

// readDefaultLimit is how many lines Claude Code's Read shows when no
// limit is given: a result of this many lines may be a truncated view.
const readDefaultLimit = 2000

// TranscriptParser reads a transcript from an offset, line by line.
type TranscriptParser struct {
	br      *bufio.Reader
	off     int64
	buf     []byte
	pending map[string]*PendingToolUse
	seq     int64
	stats   TranscriptStats
}

// NewTranscriptParser reads r, whose first byte is at offset of the
// transcript (offsets in lines are transcript offsets).
func NewTranscriptParser(r io.Reader, offset int64) *TranscriptParser {
	return &TranscriptParser{
		br:      bufio.NewReaderSize(r, 256<<10),
		off:     offset,
		pending: map[string]*PendingToolUse{},
	}
}

// Offset is the offset after the last complete line read: where the next
// read must start.
func (p *TranscriptParser) Offset() int64 { return p.off }

// Stats returns the counts so far.
func (p *TranscriptParser) Stats() TranscriptStats { return p.stats }

// Pending returns the tool calls still waiting for their results, oldest
// first.
func (p *TranscriptParser) Pending() []PendingToolUse {
	out := make([]PendingToolUse, 0, len(p.pending))
	for _, t := range p.pending {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b PendingToolUse) int { return int(a.seq - b.seq) })
	for i := range out {
		out[i].seq = 0
	}
	return out
}

// SetPending restores calls saved from an earlier parse.
func (p *TranscriptParser) SetPending(ts []PendingToolUse) {
	for _, t := range ts {
		if t.ID != "" {
			p.remember(t)
		}
	}
}

func (p *TranscriptParser) remember(t PendingToolUse) {
	p.seq++
	t.seq = p.seq
	p.pending[t.ID] = &t
	if len(p.pending) > MaxPendingToolUses {
		var oldest *PendingToolUse
		for _, c := range p.pending {
			if oldest == nil || c.seq < oldest.seq {
				oldest = c
			}
		}
		delete(p.pending, oldest.ID)
	}
}

// Next reads the next complete line. At the end of the input, or before a
// final line that has no '\n' yet, it returns io.EOF and Offset stays
// before that partial line. A parser that returned an error must not be
// used again: make a new one at Offset to read on.
func (p *TranscriptParser) Next() (*TranscriptLine, error) {
	line, err := p.readLine()
	if err != nil {
		return nil, err
	}
	start := p.off
	p.off += int64(len(line))
	p.stats.Lines++
	p.stats.Bytes += int64(len(line))
	tl := p.ParseLine(bytes.TrimRight(line, "\r\n"))
	tl.Start, tl.End = start, p.off
	if cap(p.buf) > 8<<20 {
		p.buf = nil // do not keep a huge line's buffer
	}
	return tl, nil
}

func (p *TranscriptParser) readLine() ([]byte, error) {
	p.buf = p.buf[:0]
	for {
		frag, err := p.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(p.buf) == 0 {
				return frag, nil
			}
			p.buf = append(p.buf, frag...)
			return p.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			p.buf = append(p.buf, frag...)
		case errors.Is(err, io.EOF):
			return nil, io.EOF // a partial line stays for the next read
		default:
			return nil, err
		}
	}
}

// ParseLine parses one line (without its '\n') and counts it. Offsets of
// the returned line are zero.
func (p *TranscriptParser) ParseLine(line []byte) *TranscriptLine {
	tl := &TranscriptLine{}
	p.parse(line, tl)
	switch {
	case tl.Invalid:
		p.stats.Invalid++
	case tl.Skipped:
		p.stats.Skipped++
	}
	p.stats.Items += len(tl.Items)
	return tl
}

// tjEnvelope holds the top-level fields of a line, raw.
type tjEnvelope struct {
	typ, uuid, ts, session, agent, cwd, subtype []byte
	sidechain, compactSummary                   bool
	message, toolUseResult, attachment, meta    []byte
}

// interesting line types: everything else is skipped on sight.
func tjWantType(t string) bool {
	switch t {
	case "user", "assistant", "attachment", "system":
		return true
	}
	return false
}

func (p *TranscriptParser) parse(line []byte, tl *TranscriptLine) {
	i := tjWS(line, 0)
	if i == len(line) {
		tl.Skipped = true // blank line
		return
	}
	var env tjEnvelope
	skip := false
	end, st := tjMembersV(line, i, 0, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			env.typ = v
			if s, ok := tjStr(v); !ok || !tjWantType(s) {
				skip = true
				return false
			}
		case "attachment":
			env.attachment = v
		case "uuid":
			env.uuid = v
		case "timestamp":
			env.ts = v
		case "sessionId":
			env.session = v
		case "agentId":
			env.agent = v
		case "cwd":
			env.cwd = v
		case "subtype":
			env.subtype = v
		case "isSidechain":
			env.sidechain = string(v) == "true"
		case "isCompactSummary":
			env.compactSummary = string(v) == "true"
		case "message":
			env.message = v
		case "toolUseResult":
			env.toolUseResult = v
		case "compactMetadata":
			env.meta = v
		}
		return true
	}, func(k, rest []byte) bool {
		// An attachment is read only when it is a file: decide from its
		// first member, without scanning the (big) rest of the line.
		if string(k) == "attachment" {
			if t := tjFirstType(rest); t != "" && t != "file" {
				skip = true
				return false
			}
		}
		return true
	}, true)
	if env.typ != nil {
		tl.Type, _ = tjStr(env.typ)
	}
	if skip {
		tl.Skipped = true
		return
	}
	if st != tjOK || tjWS(line, end) != len(line) {
		tl.Invalid = true
		tl.Type = ""
		return
	}
	m := &tl.LineMeta
	m.UUID, _ = tjStr(env.uuid)
	m.SessionID, _ = tjStr(env.session)
	m.Agent, _ = tjStr(env.agent)
	m.Cwd, _ = tjStr(env.cwd)
	m.Sidechain = env.sidechain
	if s, ok := tjStr(env.ts); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			m.TS = t
		}
	}
	switch tl.Type {
	case "assistant":
		p.parseAssistant(tl, &env)
	case "user":
		p.parseUser(tl, &env)
	case "attachment":
		p.parseAttachment(tl, &env)
	case "system":
		if s, _ := tjStr(env.subtype); s == "compact_boundary" {
			cb := &CompactBoundary{LineMeta: tl.LineMeta}
			if env.meta != nil {
				tjMembers(env.meta, 0, 0, func(k, v []byte) bool {
					if string(k) == "trigger" {
						cb.Trigger, _ = tjStr(v)
					}
					return true
				})
			}
			if tl.UUID != "" {
				cb.Key = "compact:" + tl.UUID
			}
			tl.Items = append(tl.Items, cb)
		} else {
			tl.Skipped = true
		}
	default:
		tl.Skipped = true
	}
}

// tjBlock is one block of message.content.
type tjBlock struct {
	typ, text, thinking, id, name, input, toolUseID, content []byte
	isError                                                  bool
}

func tjBlocks(content []byte, fn func(i int, b *tjBlock)) {
	n := 0
	tjElems(content, func(v []byte) bool {
		var b tjBlock
		tjMembers(v, 0, 0, func(k, v []byte) bool {
			switch string(k) {
			case "type":
				b.typ = v
			case "text":
				b.text = v
			case "thinking":
				b.thinking = v
			case "id":
				b.id = v
			case "name":
				b.name = v
			case "input":
				b.input = v
			case "tool_use_id":
				b.toolUseID = v
			case "content":
				b.content = v
			case "is_error":
				b.isError = string(v) == "true"
			}
			return true
		})
		fn(n, &b)
		n++
		return true
	})
}

// spanKeys sets the span keys of a line's items once their number is
// known: span:<uuid> for one, span:<uuid>:<block> for several.
func spanKeys(uuid string, items []TranscriptItem) {
	if uuid == "" {
		return
	}
	n := 0
	for _, it := range items {
		switch it.(type) {
		case *TextSpan, *ToolUse, *ToolResult, *CompactSummary:
			n++
		}
	}
	key := func(block int) string {
		if n == 1 {
			return "span:" + uuid
		}
		return "span:" + uuid + ":" + strconv.Itoa(block)
	}
	for _, it := range items {
		switch x := it.(type) {
		case *TextSpan:
			x.Key = key(x.Block)
		case *ToolUse:
			x.SpanKey = key(x.Block)
		case *ToolResult:
			x.SpanKey = key(x.Block)
		case *CompactSummary:
			x.Key = key(0)
		}
	}
}

func (p *TranscriptParser) parseAssistant(tl *TranscriptLine, env *tjEnvelope) {
	content := tjField(env.message, "content")
	if content == nil {
		tl.Skipped = true
		return
	}
	if content[0] == '"' {
		if !tjEmptyString(content) {
			tl.Items = append(tl.Items, &TextSpan{LineMeta: tl.LineMeta, Kind: "assistant", Role: "assistant", TextJSON: tjCopy(content)})
		}
	} else {
		tjBlocks(content, func(i int, b *tjBlock) {
			t, _ := tjStr(b.typ)
			switch t {
			case "text":
				if b.text != nil && !tjEmptyString(b.text) {
					tl.Items = append(tl.Items, &TextSpan{LineMeta: tl.LineMeta, Kind: "assistant", Role: "assistant", Block: i, TextJSON: tjCopy(b.text)})
				}
			case "thinking":
				if b.thinking != nil && !tjEmptyString(b.thinking) {
					tl.Items = append(tl.Items, &TextSpan{LineMeta: tl.LineMeta, Kind: "thinking", Role: "assistant", Block: i, TextJSON: tjCopy(b.thinking)})
				}
			case "tool_use":
				id, _ := tjStr(b.id)
				name, _ := tjStr(b.name)
				if id == "" {
					return
				}
				tu := &ToolUse{LineMeta: tl.LineMeta, ID: id, Name: name, Block: i}
				if b.input != nil {
					tu.Input = tjCopy(b.input)
				} else {
					tu.Input = json.RawMessage("{}")
				}
				pt := PendingToolUse{ID: id, Name: name}
				if isFileTool(name) {
					tu.Path = tjInputPath(tu.Input, tl.Cwd)
					pt.Path = tu.Path
					pt.Input = tjSafe(tu.Input)
				}
				p.remember(pt)
				tl.Items = append(tl.Items, tu)
			}
		})
	}
	spanKeys(tl.UUID, tl.Items)
}

func isFileTool(name string) bool {
	switch name {
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// tjInputPath returns the file a tool input names, absolute.
func tjInputPath(input []byte, cwd string) string {
	var fp, np string
	tjMembers(input, 0, 0, func(k, v []byte) bool {
		switch string(k) {
		case "file_path":
			fp, _ = tjStr(v)
		case "notebook_path":
			np, _ = tjStr(v)
		}
		return true
	})
	if fp == "" {
		fp = np
	}
	return tjAbs(fp, cwd)
}

func tjAbs(p, cwd string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) && cwd != "" && filepath.IsAbs(cwd) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

func (p *TranscriptParser) parseUser(tl *TranscriptLine, env *tjEnvelope) {
	content := tjField(env.message, "content")
	if content == nil {
		tl.Skipped = true
		return
	}
	if env.compactSummary {
		tl.Items = append(tl.Items, &CompactSummary{LineMeta: tl.LineMeta, TextJSON: tjCopy(content)})
		spanKeys(tl.UUID, tl.Items)
		return
	}
	if content[0] == '"' {
		if !tjEmptyString(content) {
			tl.Items = append(tl.Items, &TextSpan{LineMeta: tl.LineMeta, Kind: "user", Role: "user", TextJSON: tjCopy(content)})
		}
		spanKeys(tl.UUID, tl.Items)
		return
	}
	var results []*ToolResult
	tjBlocks(content, func(i int, b *tjBlock) {
		t, _ := tjStr(b.typ)
		switch t {
		case "text":
			if b.text != nil && !tjEmptyString(b.text) {
				tl.Items = append(tl.Items, &TextSpan{LineMeta: tl.LineMeta, Kind: "user", Role: "user", Block: i, TextJSON: tjCopy(b.text)})
			}
		case "tool_result":
			id, _ := tjStr(b.toolUseID)
			r := &ToolResult{LineMeta: tl.LineMeta, ToolUseID: id, IsError: b.isError, Block: i}
			if b.content != nil {
				r.ContentJSON = tjCopy(b.content)
			} else {
				r.ContentJSON = json.RawMessage(`""`)
			}
			results = append(results, r)
			tl.Items = append(tl.Items, r)
		}
	})
	spanKeys(tl.UUID, tl.Items)
	if len(results) == 1 && env.toolUseResult != nil && string(env.toolUseResult) != "null" {
		results[0].ToolUseResult = tjCopy(env.toolUseResult)
	}
	for _, r := range results {
		var pt *PendingToolUse
		if r.ToolUseID != "" {
			pt = p.pending[r.ToolUseID]
			delete(p.pending, r.ToolUseID)
		}
		if pt != nil {
			r.Tool, r.Path = pt.Name, pt.Path
		}
		if fs := deriveFileSeen(r, pt); fs != nil {
			tl.Items = append(tl.Items, fs)
		}
	}
}

func (p *TranscriptParser) parseAttachment(tl *TranscriptLine, env *tjEnvelope) {
	a := env.attachment
	if a == nil {
		tl.Skipped = true
		return
	}
	var typ, filename, content []byte
	tjMembers(a, 0, 0, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			typ = v
		case "filename":
			filename = v
		case "content":
			content = v
		}
		return true
	})
	if t, _ := tjStr(typ); t != "file" || content == nil || tl.UUID == "" {
		tl.Skipped = true
		return
	}
	// content: {"type":"text","file":{filePath, content, numLines, startLine, totalLines}}
	var ctyp, file []byte
	tjMembers(content, 0, 0, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			ctyp = v
		case "file":
			file = v
		}
		return true
	})
	if t, _ := tjStr(ctyp); t != "text" || file == nil {
		tl.Skipped = true // image, notebook, pdf...: no text to archive
		return
	}
	rf := tjReadFileOf(file)
	if !rf.hasContent {
		tl.Skipped = true
		return
	}
	path := rf.filePath
	if path == "" {
		path, _ = tjStr(filename)
	}
	view, ok := rf.view(nil, nil)
	if !ok || path == "" {
		tl.Skipped = true
		return
	}
	tl.Items = append(tl.Items, &FileSeen{
		LineMeta: tl.LineMeta, Path: tjAbs(path, tl.Cwd), Content: rf.content, HasContent: true,
		View: view, Op: "attach", Key: "attach:" + tl.UUID,
	})
}

// tjReadFile is a Read result's (or a file attachment's) file object.
type tjReadFile struct {
	filePath                        string
	content                         []byte
	hasContent                      bool
	startLine, numLines, totalLines int64
	hasStart, hasNum, hasTotal      bool
}

func tjReadFileOf(file []byte) tjReadFile {
	var rf tjReadFile
	tjMembers(file, 0, 0, func(k, v []byte) bool {
		switch string(k) {
		case "filePath":
			rf.filePath, _ = tjStr(v)
		case "content":
			rf.content, rf.hasContent = tjUnquote(v)
		case "startLine":
			rf.startLine, rf.hasStart = tjInt(v)
		case "numLines":
			rf.numLines, rf.hasNum = tjInt(v)
		case "totalLines":
			rf.totalLines, rf.hasTotal = tjInt(v)
		}
		return true
	})
	return rf
}

// view says which part of the file the result showed: "full" when it
// starts at line 1 and shows every line, "lines:A-B" otherwise. ok is
// false when it showed nothing (an offset past the end).
func (rf *tjReadFile) view(offset, limit *int64) (string, bool) {
	start := int64(1)
	if rf.hasStart {
		start = max(rf.startLine, 1)
	} else if offset != nil {
		start = max(*offset, 1)
	}
	num := rf.numLines
	if !rf.hasNum {
		num = int64(bytes.Count(rf.content, []byte("\n"))) + 1
	}
	if !rf.hasTotal {
		// Older results: no totals. A read without offset or limit that
		// shows fewer lines than the default limit is the whole file.
		if start == 1 && limit == nil && num < readDefaultLimit {
			return "full", true
		}
		return "lines:" + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(start+max(num, 1)-1, 10), true
	}
	if rf.totalLines == 0 && num == 0 {
		return "full", true // an empty file
	}
	if num <= 0 {
		return "", false
	}
	if start == 1 && num >= rf.totalLines {
		return "full", true
	}
	return "lines:" + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(start+num-1, 10), true
}

// tjToolUseResult holds the members of a toolUseResult object we read.
type tjToolUseResult struct {
	isObject               bool
	typ                    string
	file                   []byte
	filePath               string
	content                []byte
	hasContent             bool
	originalFile           string
	hasOriginal            bool
	oldString, newString   string
	hasOld, hasNew         bool
	replaceAll             bool
	edits, structuredPatch []byte
}

func tjToolUseResultOf(raw []byte) tjToolUseResult {
	var t tjToolUseResult
	if len(raw) == 0 || raw[0] != '{' {
		return t
	}
	t.isObject = true
	tjMembers(raw, 0, 0, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			t.typ, _ = tjStr(v)
		case "file":
			if len(v) > 0 && v[0] == '{' {
				t.file = v
			}
		case "filePath":
			t.filePath, _ = tjStr(v)
		case "content":
			t.content, t.hasContent = tjUnquote(v)
		case "originalFile":
			t.originalFile, t.hasOriginal = tjStr(v)
		case "oldString":
			t.oldString, t.hasOld = tjStr(v)
		case "newString":
			t.newString, t.hasNew = tjStr(v)
		case "replaceAll":
			t.replaceAll = string(v) == "true"
		case "edits":
			t.edits = v
		case "structuredPatch":
			t.structuredPatch = v
		}
		return true
	})
	return t
}

// tjInput holds the members of a file tool's input we read.
type tjInput struct {
	filePath, oldString, newString string
	content                        []byte
	hasContent, hasOld, hasNew     bool
	replaceAll                     bool
	offset, limit                  *int64
	edits                          []byte
}

func tjInputOf(raw []byte) tjInput {
	var in tjInput
	tjMembers(raw, 0, 0, func(k, v []byte) bool {
		switch string(k) {
		case "file_path":
			in.filePath, _ = tjStr(v)
		case "content":
			in.content, in.hasContent = tjUnquote(v)
		case "old_string":
			in.oldString, in.hasOld = tjStr(v)
		case "new_string":
			in.newString, in.hasNew = tjStr(v)
		case "replace_all":
			in.replaceAll = string(v) == "true"
		case "offset":
			if n, ok := tjInt(v); ok {
				in.offset = &n
			}
		case "limit":
			if n, ok := tjInt(v); ok {
				in.limit = &n
			}
		case "edits":
			in.edits = v
		}
		return true
	})
	return in
}

// deriveFileSeen turns a tool result into file evidence: the text a Read
// showed (from toolUseResult.file.content, else recovered from the
// numbered result text), the content a Write wrote, the content an Edit
// produced (originalFile with the edit applied, when the transcript holds
// it; no content otherwise). Failed calls, non-text reads (images, PDFs,
// notebooks) and file_unchanged results (no content: the earlier read
// still stands) yield nothing.
func deriveFileSeen(r *ToolResult, pt *PendingToolUse) *FileSeen {
	if r.IsError || r.ToolUseID == "" {
		return nil
	}
	tur := tjToolUseResultOf(r.ToolUseResult)
	name := ""
	var in tjInput
	path := ""
	if pt != nil {
		name, path = pt.Name, pt.Path
		in = tjInputOf(pt.Input)
	} else if tur.isObject {
		// The call was not seen (lost state): infer the tool from the
		// result's shape.
		switch {
		case tur.file != nil:
			name = "Read"
		case tur.hasOriginal && tur.hasOld:
			name = "Edit"
		case tur.hasOriginal && tur.edits != nil:
			name = "MultiEdit"
		case (tur.typ == "create" || tur.typ == "update") && tur.hasContent:
			name = "Write"
		}
	}
	fs := &FileSeen{LineMeta: r.LineMeta, Tool: name, Key: r.ToolUseID, View: "full"}
	if tur.filePath != "" {
		fs.Path = tjAbs(tur.filePath, r.Cwd)
	}
	if path != "" {
		fs.Path = path
	}
	switch name {
	case "Read":
		fs.Op = "read"
		switch tur.typ {
		case "file_unchanged", "image", "notebook", "pdf", "parts":
			return nil
		}
		if tur.file != nil {
			rf := tjReadFileOf(tur.file)
			if !rf.hasContent {
				return nil
			}
			view, ok := rf.view(in.offset, in.limit)
			if !ok {
				return nil
			}
			if fs.Path == "" {
				fs.Path = tjAbs(rf.filePath, r.Cwd)
			}
			fs.Content, fs.HasContent, fs.View = rf.content, true, view
			break
		}
		if tur.isObject && tur.typ != "" && tur.typ != "text" {
			return nil // a result type we do not know
		}
		text, first, last, ok := StripLineNumbers(r.Text())
		if !ok {
			return nil
		}
		fs.Content, fs.HasContent = []byte(text), true
		if first == 1 && in.limit == nil && (in.offset == nil || *in.offset <= 1) && last-first+1 < readDefaultLimit {
			fs.View = "full"
		} else {
			fs.View = "lines:" + strconv.Itoa(first) + "-" + strconv.Itoa(last)
		}
	case "Write":
		fs.Op = "write"
		switch {
		case tur.hasContent:
			fs.Content, fs.HasContent = tur.content, true
		case in.hasContent:
			fs.Content, fs.HasContent = in.content, true
		}
	case "Edit":
		fs.Op = "edit"
		old, nw, all := in.oldString, in.newString, in.replaceAll
		hasOld, hasNew := in.hasOld, in.hasNew
		if tur.hasOld && tur.hasNew {
			old, nw, all, hasOld, hasNew = tur.oldString, tur.newString, tur.replaceAll, true, true
		}
		switch {
		case hasOld && hasNew && old == "":
			// An Edit with an empty old_string creates the file.
			fs.Content, fs.HasContent = []byte(nw), true
		case tur.hasOriginal && hasOld && hasNew:
			if out, ok := applyEdit(tur.originalFile, old, nw, all); ok && patchAgrees(out, tur.structuredPatch) {
				fs.Content, fs.HasContent = []byte(out), true
			}
		}
	case "MultiEdit":
		fs.Op = "edit"
		edits := tur.edits
		if edits == nil {
			edits = in.edits
		}
		if tur.hasOriginal && edits != nil {
			out, ok := tur.originalFile, true
			n := 0
			tjElems(edits, func(v []byte) bool {
				e := tjInputOf(v)
				if !e.hasOld || !e.hasNew {
					ok = false
					return false
				}
				if e.oldString == "" {
					if n > 0 || out != "" {
						ok = false
						return false
					}
					out = e.newString
				} else if out, ok = applyEdit(out, e.oldString, e.newString, e.replaceAll); !ok {
					return false
				}
				n++
				return true
			})
			if ok && n > 0 && patchAgrees(out, tur.structuredPatch) {
				fs.Content, fs.HasContent = []byte(out), true
			}
		}
	case "NotebookEdit":
		fs.Op = "edit" // cell edits: no file content in the transcript
	default:
		return nil
	}
	if fs.Path == "" {
		return nil
	}
	return fs
}

// applyEdit applies one Edit the way Claude Code does: the first
// occurrence of old (every one with replaceAll) becomes new; deleting a
// string that is followed by a newline deletes that newline too.
func applyEdit(orig, old, nw string, all bool) (string, bool) {
	if old == "" {
		return "", false
	}
	if nw == "" && !strings.HasSuffix(old, "\n") && strings.Contains(orig, old+"\n") {
		old += "\n"
	}
	if !strings.Contains(orig, old) {
		return "", false
	}
	if all {
		return strings.ReplaceAll(orig, old, nw), true
	}
	return strings.Replace(orig, old, nw, 1), true
}

// patchAgrees checks content against the result's structuredPatch: every
// hunk's new side (context and added lines) must be the content's lines
// at newStart. No patch, nothing to disagree with.
func patchAgrees(content string, patch []byte) bool {
	if len(patch) == 0 || patch[0] != '[' {
		return true
	}
	lines := strings.Split(content, "\n")
	ok := true
	tjElems(patch, func(h []byte) bool {
		var newStart int64
		var hl []byte
		tjMembers(h, 0, 0, func(k, v []byte) bool {
			switch string(k) {
			case "newStart":
				newStart, _ = tjInt(v)
			case "lines":
				hl = v
			}
			return true
		})
		at := int(newStart) - 1
		if at < 0 {
			at = 0 // an empty side starts at 0
		}
		tjElems(hl, func(v []byte) bool {
			s, _ := tjStr(v)
			if s == "" {
				return true
			}
			switch s[0] {
			case ' ', '+':
				if at >= len(lines) || lines[at] != s[1:] {
					ok = false
					return false
				}
				at++
			}
			return true
		})
		return ok
	})
	return ok
}

// StripLineNumbers recovers the raw text of a Read result from the numbered
// text the model was shown: "1\tline" (Claude Code 2.x) or "     1→line"
// (older: six-wide number and an arrow). Numbering must be consecutive; it
// stops at the first line that is not numbered so (e.g. a system reminder
// appended after a blank line). It returns the text (lines joined by
// newlines: a file ending in a newline shows a last, empty line), the
// first and last line numbers, and ok=false when the text does not start
// with a numbered line.
func StripLineNumbers(s string) (text string, first, last int, ok bool) {
	var b strings.Builder
	style := 0
	n := 0
	for len(s) > 0 || n == 0 {
		line := s
		rest := ""
		nl := strings.IndexByte(s, '\n')
		if nl >= 0 {
			line, rest = s[:nl], s[nl+1:]
		}
		num, body, st, good := numberedLine(line)
		if !good || (style != 0 && st != style) || (n > 0 && num != last+1) {
			break
		}
		if n == 0 {
			first, style = num, st
			b.Grow(len(s))
		} else {
			b.WriteByte('\n')
		}
		b.WriteString(body)
		last = num
		n++
		if nl < 0 {
			break
		}
		s = rest
	}
	if n == 0 {
		return "", 0, 0, false
	}
	return b.String(), first, last, true
}

// numberedLine splits "12\tbody" (style 1) or "    12→body" (style 2).
func numberedLine(line string) (num int, body string, style int, ok bool) {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	spaces := i
	j := i
	for j < len(line) && line[j] >= '0' && line[j] <= '9' && j-i < 10 {
		num = num*10 + int(line[j]-'0')
		j++
	}
	if j == i || j-i >= 10 {
		return 0, "", 0, false
	}
	switch {
	case spaces == 0 && j < len(line) && line[j] == '\t':
		return num, line[j+1:], 1, true
	case strings.HasPrefix(line[j:], "→"):
		return num, line[j+len("→"):], 2, true
	}
	return 0, "", 0, false
}

// SpanJSON is the content archived for a span item: compact JSON
// {"kind","role",...} with the text, the tool call or the tool result. It
// returns nil for items that are not spans. The JSON is always valid (raw
// values from the transcript are checked and re-encoded when needed).
func SpanJSON(it TranscriptItem) []byte {
	var b []byte
	str := func(k, v string) {
		b = append(b, ',')
		b = append(b, tjQuote(k)...)
		b = append(b, ':')
		b = append(b, tjQuote(v)...)
	}
	raw := func(k string, v []byte) {
		b = append(b, ',')
		b = append(b, tjQuote(k)...)
		b = append(b, ':')
		b = append(b, tjSafe(v)...)
	}
	head := func(kind, role string) {
		b = append(b, `{"kind":`...)
		b = append(b, tjQuote(kind)...)
		str("role", role)
	}
	switch x := it.(type) {
	case *TextSpan:
		b = make([]byte, 0, len(x.TextJSON)+48)
		head(x.Kind, x.Role)
		raw("text", x.TextJSON)
	case *ToolUse:
		b = make([]byte, 0, len(x.Input)+96)
		head("tool_use", "assistant")
		str("id", x.ID)
		str("tool", x.Name)
		raw("input", x.Input)
	case *ToolResult:
		b = make([]byte, 0, len(x.ContentJSON)+128)
		head("tool_result", "user")
		str("tool_use_id", x.ToolUseID)
		if x.Tool != "" {
			str("tool", x.Tool)
		}
		if x.IsError {
			b = append(b, `,"is_error":true`...)
		}
		raw("content", x.ContentJSON)
	case *CompactSummary:
		b = make([]byte, 0, len(x.TextJSON)+64)
		head("compact_summary", "user")
		if len(x.TextJSON) > 0 && x.TextJSON[0] == '"' {
			raw("text", x.TextJSON)
		} else {
			str("text", x.Text())
		}
	default:
		return nil
	}
	return append(b, '}')
}

// SpanKind is the "kind" of a span item ("" for other items).
func SpanKind(it TranscriptItem) string {
	switch x := it.(type) {
	case *TextSpan:
		return x.Kind
	case *ToolUse:
		return "tool_use"
	case *ToolResult:
		return "tool_result"
	case *CompactSummary:
		return "compact_summary"
	}
	return ""
}

// ---- a small validating JSON scanner over raw bytes ----

type tjStatus int

const (
	tjOK      tjStatus = iota
	tjStopped          // the callback stopped the iteration
	tjBad              // not valid JSON
)

const tjMaxDepth = 10000

func tjWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// tjMembers iterates the object starting at b[i] (after white space),
// calling fn with each member's raw key (between the quotes, escapes as
// written) and raw value. It returns the index after the object.
func tjMembers(b []byte, i, depth int, fn func(k, v []byte) bool) (int, tjStatus) {
	return tjMembersV(b, i, depth, fn, nil, false)
}

// tjMembersV is tjMembers; with validate, every string's escapes are
// checked too. A line is validated once, by its top-level scan; values
// taken from it are re-scanned without (quote parity only), which is much
// cheaper for text with many escapes (source code).
// peek, when not nil, sees each key and the bytes from its value on
// before the value is scanned, and may stop the iteration.
func tjMembersV(b []byte, i, depth int, fn func(k, v []byte) bool, peek func(k, rest []byte) bool, validate bool) (int, tjStatus) {
	i = tjWS(b, i)
	if i >= len(b) || b[i] != '{' || depth > tjMaxDepth {
		return i, tjBad
	}
	i = tjWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, tjOK
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, tjBad
		}
		ke, ok := tjSkipStr(b, i, validate)
		if !ok {
			return i, tjBad
		}
		key := b[i+1 : ke-1]
		i = tjWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return i, tjBad
		}
		vs := tjWS(b, i+1)
		if peek != nil && !peek(key, b[vs:]) {
			return vs, tjStopped
		}
		ve, ok := tjSkipValue(b, vs, depth+1, validate)
		if !ok {
			return vs, tjBad
		}
		if fn != nil && !fn(key, b[vs:ve]) {
			return ve, tjStopped
		}
		i = tjWS(b, ve)
		if i >= len(b) {
			return i, tjBad
		}
		switch b[i] {
		case ',':
			i = tjWS(b, i+1)
		case '}':
			return i + 1, tjOK
		default:
			return i, tjBad
		}
	}
}

// tjElems iterates the array b (raw), calling fn with each raw element.
func tjElems(b []byte, fn func(v []byte) bool) tjStatus {
	i := tjWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return tjBad
	}
	i = tjWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return tjOK
	}
	for {
		ve, ok := tjSkipValue(b, i, 1, false)
		if !ok {
			return tjBad
		}
		if !fn(b[i:ve]) {
			return tjStopped
		}
		i = tjWS(b, ve)
		if i >= len(b) {
			return tjBad
		}
		switch b[i] {
		case ',':
			i = tjWS(b, i+1)
		case ']':
			return tjOK
		default:
			return tjBad
		}
	}
}

// tjSkipValue returns the index after the value at b[i].
func tjSkipValue(b []byte, i, depth int, validate bool) (int, bool) {
	if i >= len(b) || depth > tjMaxDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return tjSkipStr(b, i, validate)
	case c == '{':
		e, st := tjMembersV(b, i, depth, nil, nil, validate)
		return e, st == tjOK
	case c == '[':
		i = tjWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			e, ok := tjSkipValue(b, i, depth+1, validate)
			if !ok {
				return e, false
			}
			i = tjWS(b, e)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = tjWS(b, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == 't':
		return i + 4, bytes.HasPrefix(b[i:], []byte("true"))
	case c == 'f':
		return i + 5, bytes.HasPrefix(b[i:], []byte("false"))
	case c == 'n':
		return i + 4, bytes.HasPrefix(b[i:], []byte("null"))
	case c == '-' || (c >= '0' && c <= '9'):
		return tjSkipNumber(b, i)
	}
	return i, false
}

func tjSkipNumber(b []byte, i int) (int, bool) {
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

func tjSkipStr(b []byte, i int, validate bool) (int, bool) {
	if validate {
		return tjSkipString(b, i)
	}
	// The closing quote is the first one not escaped: preceded by an even
	// number of backslashes.
	pos := i + 1
	for {
		k := bytes.IndexByte(b[pos:], '"')
		if k < 0 {
			return len(b), false
		}
		q := pos + k
		n := 0
		for j := q - 1; j > i && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		pos = q + 1
	}
}

// tjSkipString returns the index after the string starting at b[i] ('"'),
// checking its escapes. Runs without escapes are skipped with IndexByte.
func tjSkipString(b []byte, i int) (int, bool) {
	pos := i + 1
	q := -1
	for {
		if q < pos {
			k := bytes.IndexByte(b[pos:], '"')
			if k < 0 {
				return len(b), false
			}
			q = pos + k
		}
		k := bytes.IndexByte(b[pos:q], '\\')
		if k < 0 {
			return q + 1, true
		}
		k += pos
		if k+1 >= len(b) {
			return len(b), false
		}
		switch b[k+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			pos = k + 2
		case 'u':
			if k+6 > len(b) || !tjHex4(b[k+2:k+6]) {
				return len(b), false
			}
			pos = k + 6
		default:
			return len(b), false
		}
	}
}

func tjHex4(h []byte) bool {
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func tjHexVal(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// tjStr decodes a raw JSON string value (already validated by the
// scanner). Bytes that are not valid UTF-8 are kept as they are.
func tjStr(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s), true
	}
	out, ok := tjUnquote(raw)
	return string(out), ok
}

// tjUnquote decodes a raw JSON string value into new bytes.
func tjUnquote(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	s := raw[1 : len(raw)-1]
	out := make([]byte, len(s))
	w := 0
	for r := 0; r < len(s); {
		c := s[r]
		if c != '\\' {
			out[w] = c
			w++
			r++
			continue
		}
		if r+1 >= len(s) {
			break
		}
		switch e := s[r+1]; e {
		case 'n':
			out[w] = '\n'
		case 't':
			out[w] = '\t'
		case 'r':
			out[w] = '\r'
		case 'b':
			out[w] = '\b'
		case 'f':
			out[w] = '\f'
		case 'u':
			if r+6 > len(s) || !tjHex4(s[r+2:r+6]) {
				return out[:w], false
			}
			ru := tjHexVal(s[r+2 : r+6])
			adv := 6
			if utf16.IsSurrogate(ru) {
				r2 := rune(-1)
				if r+12 <= len(s) && s[r+6] == '\\' && s[r+7] == 'u' && tjHex4(s[r+8:r+12]) {
					r2 = tjHexVal(s[r+8 : r+12])
				}
				if d := utf16.DecodeRune(ru, r2); d != utf8.RuneError {
					ru, adv = d, 12
				} else {
					ru = utf8.RuneError
				}
			}
			// A \u escape is 6 bytes and encodes at most 4 (a pair: 12
			// and 4): the output never overtakes the input.
			w += utf8.EncodeRune(out[w:], ru)
			r += adv
			continue
		default: // '"', '\\', '/'
			out[w] = e
		}
		w++
		r += 2
	}
	return out[:w], true
}

// tjStringValue decodes raw when it is a string ("" otherwise).
func tjStringValue(raw []byte) string {
	s, _ := tjStr(raw)
	return s
}

// tjContentText returns a content value's text: the string, or the "text"
// members of an array's blocks joined by newlines.
func tjContentText(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		return tjStringValue(raw)
	}
	var parts []string
	tjElems(raw, func(v []byte) bool {
		if len(v) > 0 && v[0] == '"' {
			parts = append(parts, tjStringValue(v))
			return true
		}
		if t := tjField(v, "text"); t != nil {
			parts = append(parts, tjStringValue(t))
		}
		return true
	})
	return strings.Join(parts, "\n")
}

func tjEmptyString(raw []byte) bool { return len(raw) == 2 && raw[0] == '"' }

// tjInt decodes a raw JSON number that holds an integer.
func tjInt(raw []byte) (int64, bool) {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f == float64(int64(f)) {
		return int64(f), true
	}
	return 0, false
}

// tjField returns the raw value of member key of object raw (nil when
// absent or when raw is not an object).
func tjField(raw []byte, key string) []byte {
	var out []byte
	if len(raw) == 0 {
		return nil
	}
	tjMembers(raw, 0, 0, func(k, v []byte) bool {
		if string(k) == key {
			out = v
			return false
		}
		return true
	})
	return out
}

// tjFirstType returns the string value of an object's first member when
// that member is "type" ("" otherwise), without scanning the rest.
func tjFirstType(v []byte) string {
	i := tjWS(v, 0)
	if i >= len(v) || v[i] != '{' {
		return ""
	}
	i = tjWS(v, i+1)
	if !bytes.HasPrefix(v[i:], []byte(`"type"`)) {
		return ""
	}
	i = tjWS(v, i+len(`"type"`))
	if i >= len(v) || v[i] != ':' {
		return ""
	}
	i = tjWS(v, i+1)
	if i >= len(v) || v[i] != '"' {
		return ""
	}
	e, ok := tjSkipString(v, i)
	if !ok {
		return ""
	}
	s, _ := tjStr(v[i:e])
	return s
}

func tjCopy(b []byte) json.RawMessage { return append(json.RawMessage(nil), b...) }

// tjSafe returns raw (a value the scanner accepted) as valid JSON: as it
// is when it holds no control bytes and is valid UTF-8; compacted when
// that makes it so (white space between tokens); else re-encoded (a string
// with its bytes coerced to UTF-8, anything else as a JSON string of its
// bytes).
func tjSafe(raw []byte) []byte {
	clean := true
	for _, c := range raw {
		if c < 0x20 {
			clean = false
			break
		}
	}
	if clean && utf8.Valid(raw) {
		if len(raw) == 0 {
			return []byte("null")
		}
		return raw
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err == nil && utf8.Valid(buf.Bytes()) {
		return buf.Bytes()
	}
	if s, ok := tjStr(raw); ok {
		return tjQuote(s)
	}
	return tjQuote(string(raw))
}

// tjQuote encodes s as a JSON string the way encoding/json does with
// HTML escaping off (invalid UTF-8 becomes U+FFFD, written as itself).
func tjQuote(s string) []byte {
	return tjAppendQuote(make([]byte, 0, len(s)+2), s)
}

func tjAppendQuote(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
			i++
			continue
		}
		if c < 0x80 {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexd[r&0xf])
			i += size
			start = i
		default:
			i += size
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
