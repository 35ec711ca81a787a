package cctranscript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/git-lossless/git-lossless/hooks/shellread"
	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Parser reads a transcript from an offset, line by line.
type Parser struct {
	br      *bufio.Reader
	off     int64
	buf     []byte
	pending map[string]*pendingCall
	seq     int64
	stats   transcript.Stats
}

// NewParser reads r, whose first byte is at offset of the
// transcript (offsets in lines are transcript offsets).
func NewParser(r io.Reader, offset int64) *Parser { return NewParserSize(r, offset, 256<<10) }

// NewParserSize is NewParser reading through a buffer of about size bytes
// (4 KiB to 256 KiB): the size of what is left to read, when known,
// spares a small transcript the zeroing of a large buffer (an import
// opens thousands). Lines longer than the buffer are read all the same.
func NewParserSize(r io.Reader, offset int64, size int64) *Parser {
	return &Parser{
		br:      bufio.NewReaderSize(r, int(max(4<<10, min(256<<10, size)))),
		off:     offset,
		pending: map[string]*pendingCall{},
	}
}

// Offset is the offset after the last complete line read: where the next
// read must start.
func (p *Parser) Offset() int64 { return p.off }

// Stats returns the counts so far.
func (p *Parser) Stats() transcript.Stats { return p.stats }

// pendingCall is a call waiting for its result, with the order it was
// remembered in (the oldest is forgotten first).
type pendingCall struct {
	transcript.PendingToolUse
	seq int64
}

// Pending returns the tool calls still waiting for their results, oldest
// first.
func (p *Parser) Pending() []transcript.PendingToolUse {
	calls := make([]*pendingCall, 0, len(p.pending))
	for _, c := range p.pending {
		calls = append(calls, c)
	}
	slices.SortFunc(calls, func(a, b *pendingCall) int { return int(a.seq - b.seq) })
	out := make([]transcript.PendingToolUse, len(calls))
	for i, c := range calls {
		out[i] = c.PendingToolUse
	}
	return out
}

// SetPending restores calls saved from an earlier parse.
func (p *Parser) SetPending(ts []transcript.PendingToolUse) {
	for _, t := range ts {
		if t.ID != "" {
			p.remember(t)
		}
	}
}

func (p *Parser) remember(t transcript.PendingToolUse) {
	p.seq++
	p.pending[t.ID] = &pendingCall{PendingToolUse: t, seq: p.seq}
	if len(p.pending) > transcript.MaxPendingToolUses {
		var oldest *pendingCall
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
func (p *Parser) Next() (*transcript.Line, error) {
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

func (p *Parser) readLine() ([]byte, error) {
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
func (p *Parser) ParseLine(line []byte) *transcript.Line {
	tl := &transcript.Line{}
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

// envelope holds the top-level fields of a line, raw.
type envelope struct {
	typ, uuid, ts, session, agent, cwd, subtype []byte
	sidechain, compactSummary                   bool
	message, toolUseResult, attachment, meta    []byte
}

// interesting line types: everything else is skipped on sight.
func wantType(t string) bool {
	switch t {
	case "user", "assistant", "attachment", "system":
		return true
	}
	return false
}

func (p *Parser) parse(line []byte, tl *transcript.Line) {
	i := jsonscan.WS(line, 0)
	if i == len(line) {
		tl.Skipped = true // blank line
		return
	}
	var env envelope
	skip := false
	peek := func(k, rest []byte) bool {
		// An attachment is read only when it is a file: decide from its
		// first member, without scanning the (big) rest of the line.
		if string(k) == "attachment" {
			if t := firstType(rest); t != "" && t != "file" {
				skip = true
				return false
			}
		}
		return true
	}
	// The line is checked once, here, escapes included; the values taken
	// from it are re-scanned with jsonscan.Quotes, much cheaper for text
	// with many escapes (source code).
	end, st := jsonscan.Object(line, i, jsonscan.Escapes, peek, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			env.typ = v
			if s, ok := jsonscan.String(v); !ok || !wantType(s) {
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
	})
	if env.typ != nil {
		tl.Type, _ = jsonscan.String(env.typ)
	}
	if skip {
		tl.Skipped = true
		return
	}
	if st != jsonscan.OK || jsonscan.WS(line, end) != len(line) {
		tl.Invalid = true
		tl.Type = ""
		return
	}
	m := &tl.LineMeta
	m.UUID, _ = jsonscan.String(env.uuid)
	m.SessionID, _ = jsonscan.String(env.session)
	m.Agent, _ = jsonscan.String(env.agent)
	m.Cwd, _ = jsonscan.String(env.cwd)
	m.Sidechain = env.sidechain
	if s, ok := jsonscan.String(env.ts); ok {
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
		if s, _ := jsonscan.String(env.subtype); s == "compact_boundary" {
			cb := &transcript.CompactBoundary{LineMeta: tl.LineMeta}
			if env.meta != nil {
				jsonscan.Members(env.meta, func(k, v []byte) bool {
					if string(k) == "trigger" {
						cb.Trigger, _ = jsonscan.String(v)
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

// block is one block of message.content.
type block struct {
	typ, text, thinking, id, name, input, toolUseID, content []byte
	isError                                                  bool
}

func blocks(content []byte, fn func(i int, b *block)) {
	n := 0
	jsonscan.Elems(content, func(v []byte) bool {
		var b block
		jsonscan.Members(v, func(k, v []byte) bool {
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
func spanKeys(uuid string, items []transcript.Item) {
	if uuid == "" {
		return
	}
	n := 0
	for _, it := range items {
		switch it.(type) {
		case *transcript.TextSpan, *transcript.ToolUse, *transcript.ToolResult, *transcript.CompactSummary:
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
		case *transcript.TextSpan:
			x.Key = key(x.Block)
		case *transcript.ToolUse:
			x.SpanKey = key(x.Block)
		case *transcript.ToolResult:
			x.SpanKey = key(x.Block)
		case *transcript.CompactSummary:
			x.Key = key(0)
		}
	}
}

func (p *Parser) parseAssistant(tl *transcript.Line, env *envelope) {
	var content, model []byte
	jsonscan.Members(env.message, func(k, v []byte) bool {
		switch string(k) {
		case "content":
			content = v
		case "model":
			model = v
		}
		return content == nil || model == nil
	})
	if content == nil {
		tl.Skipped = true
		return
	}
	// The model that wrote the message; "<synthetic>" marks a message
	// Claude Code made up itself (an API error, an interruption).
	if m, _ := jsonscan.String(model); m != "<synthetic>" {
		tl.Model = m
	}
	if content[0] == '"' {
		if !emptyString(content) {
			tl.Items = append(tl.Items, &transcript.TextSpan{LineMeta: tl.LineMeta, Kind: "assistant", Role: "assistant", TextJSON: clone(content)})
		}
	} else {
		blocks(content, func(i int, b *block) {
			t, _ := jsonscan.String(b.typ)
			switch t {
			case "text":
				if b.text != nil && !emptyString(b.text) {
					tl.Items = append(tl.Items, &transcript.TextSpan{LineMeta: tl.LineMeta, Kind: "assistant", Role: "assistant", Block: i, TextJSON: clone(b.text)})
				}
			case "thinking":
				if b.thinking != nil && !emptyString(b.thinking) {
					tl.Items = append(tl.Items, &transcript.TextSpan{LineMeta: tl.LineMeta, Kind: "thinking", Role: "assistant", Block: i, TextJSON: clone(b.thinking)})
				}
			case "tool_use":
				id, _ := jsonscan.String(b.id)
				name, _ := jsonscan.String(b.name)
				if id == "" {
					return
				}
				tu := &transcript.ToolUse{LineMeta: tl.LineMeta, ID: id, Name: name, Block: i}
				if b.input != nil {
					tu.Input = clone(b.input)
				} else {
					tu.Input = json.RawMessage("{}")
				}
				pt := transcript.PendingToolUse{ID: id, Name: name}
				if isFileTool(name) {
					tu.Path = inputPath(tu.Input, tl.Cwd)
					pt.Path = tu.Path
					pt.Input = transcript.SafeJSON(tu.Input)
				} else if name == "Bash" {
					// A shell read of one file names it on the call's and
					// the result's spans, so that the deny list withholds
					// a denied file's content (`cat .env`) from them as
					// from the evidence. It is no evidence here: only the
					// hook proves the output against the disk.
					tu.Path = shellReadPath(tu.Input, tl.Cwd)
					pt.Path = tu.Path
				}
				p.remember(pt)
				tl.Items = append(tl.Items, tu)
			}
		})
	}
	spanKeys(tl.UUID, tl.Items)
}

// shellReadPath is the file a Bash command reads when hooks/shellread
// recognises it as a read of one file, absolute against cwd ("" else).
func shellReadPath(input []byte, cwd string) string {
	var cmd string
	jsonscan.Members(input, func(k, v []byte) bool {
		if string(k) == "command" {
			cmd, _ = jsonscan.String(v)
		}
		return true
	})
	r, err := shellread.Parse(cmd)
	if err != nil || cwd == "" || !filepath.IsAbs(cwd) {
		return ""
	}
	name := r.Resolve(cwd)
	if !filepath.IsAbs(name) {
		return ""
	}
	return filepath.Clean(name)
}

func isFileTool(name string) bool {
	switch name {
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// inputPath returns the file a tool input names, absolute.
func inputPath(input []byte, cwd string) string {
	var fp, np string
	jsonscan.Members(input, func(k, v []byte) bool {
		switch string(k) {
		case "file_path":
			fp, _ = jsonscan.String(v)
		case "notebook_path":
			np, _ = jsonscan.String(v)
		}
		return true
	})
	if fp == "" {
		fp = np
	}
	return absPath(fp, cwd)
}

func absPath(p, cwd string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) && cwd != "" && filepath.IsAbs(cwd) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

func (p *Parser) parseUser(tl *transcript.Line, env *envelope) {
	content := jsonscan.Field(env.message, "content")
	if content == nil {
		tl.Skipped = true
		return
	}
	if env.compactSummary {
		tl.Items = append(tl.Items, &transcript.CompactSummary{LineMeta: tl.LineMeta, TextJSON: clone(content)})
		spanKeys(tl.UUID, tl.Items)
		return
	}
	if content[0] == '"' {
		if !emptyString(content) {
			tl.Items = append(tl.Items, &transcript.TextSpan{LineMeta: tl.LineMeta, Kind: "user", Role: "user", TextJSON: clone(content)})
		}
		spanKeys(tl.UUID, tl.Items)
		return
	}
	var results []*transcript.ToolResult
	blocks(content, func(i int, b *block) {
		t, _ := jsonscan.String(b.typ)
		switch t {
		case "text":
			if b.text != nil && !emptyString(b.text) {
				tl.Items = append(tl.Items, &transcript.TextSpan{LineMeta: tl.LineMeta, Kind: "user", Role: "user", Block: i, TextJSON: clone(b.text)})
			}
		case "tool_result":
			id, _ := jsonscan.String(b.toolUseID)
			r := &transcript.ToolResult{LineMeta: tl.LineMeta, ToolUseID: id, IsError: b.isError, Block: i}
			if b.content != nil {
				r.ContentJSON = clone(b.content)
			} else {
				r.ContentJSON = json.RawMessage(`""`)
			}
			results = append(results, r)
			tl.Items = append(tl.Items, r)
		}
	})
	spanKeys(tl.UUID, tl.Items)
	if len(results) == 1 && env.toolUseResult != nil && string(env.toolUseResult) != "null" {
		results[0].ToolUseResult = clone(env.toolUseResult)
	}
	for _, r := range results {
		var pt *transcript.PendingToolUse
		if c := p.pending[r.ToolUseID]; r.ToolUseID != "" && c != nil {
			pt = &c.PendingToolUse
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

func (p *Parser) parseAttachment(tl *transcript.Line, env *envelope) {
	a := env.attachment
	if a == nil {
		tl.Skipped = true
		return
	}
	var typ, filename, content []byte
	jsonscan.Members(a, func(k, v []byte) bool {
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
	if t, _ := jsonscan.String(typ); t != "file" || content == nil || tl.UUID == "" {
		tl.Skipped = true
		return
	}
	// content: {"type":"text","file":{filePath, content, numLines, startLine, totalLines}}
	var ctyp, file []byte
	jsonscan.Members(content, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			ctyp = v
		case "file":
			file = v
		}
		return true
	})
	if t, _ := jsonscan.String(ctyp); t != "text" || file == nil {
		tl.Skipped = true // image, notebook, pdf...: no text to archive
		return
	}
	rf := readFileOf(file)
	if !rf.hasContent {
		tl.Skipped = true
		return
	}
	path := rf.filePath
	if path == "" {
		path, _ = jsonscan.String(filename)
	}
	view, ok := rf.view(nil, nil)
	if !ok || path == "" {
		tl.Skipped = true
		return
	}
	tl.Items = append(tl.Items, &transcript.FileSeen{
		LineMeta: tl.LineMeta, Path: absPath(path, tl.Cwd), Content: rf.content, HasContent: true,
		View: view, Op: gitstore.OpAttach, Key: "attach:" + tl.UUID,
	})
}

// readFile is a Read result's (or a file attachment's) file object.
