package gemini

// Messages: the items of a message record, each part once (per epoch for
// calls, results and copied texts).

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// emitter gathers the items of one message, skipping the parts already
// handled (subs) and recording the ones it handles.
type emitter struct {
	c    *ChatReader
	m    *message
	meta transcript.LineMeta
	subs map[string]bool
	out  []transcript.Item
	// evidenceOnly: the message was read in an earlier epoch and is
	// still in the context after a boundary: only its evidence is
	// yielded again (keys tagged with the epoch); no spans.
	evidenceOnly bool
	block        int
}

func (e *emitter) take(sub string) bool {
	if e.subs[sub] {
		return false
	}
	e.subs[sub] = true
	return true
}

func (e *emitter) add(it transcript.Item) { e.out = append(e.out, it) }

func (e *emitter) spanKey(sub string) string { return "span:" + e.m.id + ":" + sub }

// text yields a text part. copyForm: the part is in the form the CLI
// gives a history it re-records (a model message's parts), and a text
// already yielded in this epoch is a copy of it, not said again.
func (e *emitter) text(sub, kind, role string, raw []byte, copyForm bool) {
	if !e.take(sub) || len(raw) <= 2 {
		return
	}
	dg := textDigest(kind, raw)
	if e.evidenceOnly || (copyForm && e.c.texts.has(dg)) {
		e.c.texts.add(dg)
		return
	}
	e.c.texts.add(dg)
	e.add(&transcript.TextSpan{LineMeta: e.meta, Kind: kind, Role: role, Block: e.block, Key: e.spanKey(sub), TextJSON: clone(raw)})
}

func clone(b []byte) json.RawMessage { return append(json.RawMessage(nil), b...) }

// jsonSafe is raw as a value ChatState can hold: json.Marshal refuses raw
// values that are not strict JSON (a control byte in a string), which a
// chat line the reader accepted may hold. A string is encoded again; any
// other such value is dropped.
func jsonSafe(raw []byte) json.RawMessage {
	if json.Valid(raw) {
		return clone(raw)
	}
	if s, ok := jsonscan.String(raw); ok {
		return jsonscan.Quote(s)
	}
	return nil
}

// emit returns a message's items, as the package doc says.
func (c *ChatReader) emit(m *message, subs map[string]bool, evidenceOnly bool) []transcript.Item {
	meta := c.meta()
	meta.UUID, meta.TS = m.id, m.ts
	if m.typ == "gemini" {
		meta.Model = m.model
	}
	e := &emitter{c: c, m: m, meta: meta, subs: subs, evidenceOnly: evidenceOnly}
	switch m.typ {
	case "user":
		if !evidenceOnly && c.userCopy(m, subs) {
			return nil
		}
		parts(m.content, func(i int, p []byte) {
			e.block = i
			if t, _ := partText(p); t != nil {
				e.text("c"+strconv.Itoa(i), "user", "user", t, false)
				return
			}
			if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
				c.functionResponse(e, fr)
			}
		})
	case "gemini":
		n := 0
		jsonscan.Elems(m.thoughts, func(v []byte) bool {
			e.block = n
			f, _ := fields(v, "subject", "description")
			subj, _ := jsonscan.String(f["subject"])
			desc, _ := jsonscan.String(f["description"])
			t := desc
			if subj != "" {
				t = "**" + subj + "** " + desc
			}
			e.text("t"+strconv.Itoa(n), "thinking", "assistant", jsonscan.Quote(t), false)
			n++
			return true
		})
		// The model's own text is a string; parts are the form of a
		// re-recorded history (and of the CLI's synthetic turns).
		copyForm := len(m.content) > 0 && m.content[0] != '"'
		parts(m.content, func(i int, p []byte) {
			e.block = i
			if t, thought := partText(p); t != nil {
				kind := "assistant"
				if thought {
					kind = "thinking"
				}
				e.text("c"+strconv.Itoa(i), kind, "assistant", t, copyForm)
				return
			}
			if fc := jsonscan.Field(p, "functionCall"); len(fc) > 0 && fc[0] == '{' {
				f, _ := fields(fc, "id", "name", "args")
				id, _ := jsonscan.String(f["id"])
				name, _ := jsonscan.String(f["name"])
				sub := "call:" + id
				if id == "" {
					sub = "c" + strconv.Itoa(i)
				}
				c.toolUse(e, sub, id, name, f["args"])
			}
		})
		n = 0
		jsonscan.Elems(m.toolCalls, func(v []byte) bool {
			e.block = n
			n++
			f, _ := fields(v, "id", "name", "args", "result", "status", "resultDisplay")
			id, _ := jsonscan.String(f["id"])
			name, _ := jsonscan.String(f["name"])
			if id == "" {
				return true
			}
			c.toolUse(e, "call:"+id, id, name, f["args"])
			status, _ := jsonscan.String(f["status"])
			if !finalStatus(status) {
				return true
			}
			c.result(e, id, name, f["args"], callResponse(f["result"], id), status, f["resultDisplay"])
			return true
		})
	}
	return e.out
}

// userCopy holds back a user message that may be the CLI's copy of one
// already yielded: every text of it was yielded in this epoch, and it
// answers no call that is not answered. When the CLI rewrites its history
// (tool output masking) it records every turn again under a new id, then
// lists them in a $set; a user who says the same thing twice is told
// apart by what follows (see release). It reports whether m was held.
func (c *ChatReader) userCopy(m *message, subs map[string]bool) bool {
	var texts []HeldText
	copyOf := true
	parts(m.content, func(i int, p []byte) {
		if !copyOf {
			return
		}
		if t, _ := partText(p); t != nil {
			if len(t) <= 2 {
				return
			}
			if !c.texts.has(textDigest("user", t)) || subs["c"+strconv.Itoa(i)] {
				copyOf = false
				return
			}
			texts = append(texts, HeldText{Msg: m.id, TS: m.ts, Key: "span:" + m.id + ":c" + strconv.Itoa(i), Block: i, Text: jsonSafe(t)})
			return
		}
		if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
			id, _ := jsonscan.String(jsonscan.Field(fr, "id"))
			if _, done := c.answered[id]; !done {
				copyOf = false
			}
		}
	})
	if !copyOf || len(texts) == 0 {
		return false
	}
	for k := range subsOf(m) {
		subs[k] = true
	}
	c.held = append(c.held, texts...)
	return true
}

// finalStatus: the CLI records a call once it completed (success, error,
// cancelled); other states, should a release record them, are not final.
func finalStatus(s string) bool {
	switch s {
	case "success", "error", "cancelled":
		return true
	}
	return false
}

// callResponse finds the function response of call id in a toolCalls
// entry's result: an array of parts (the functionResponse part, maybe
// with media parts beside it) or, from older releases, a string.
func callResponse(result []byte, id string) []byte {
	if len(result) == 0 {
		return nil
	}
	if result[0] == '"' {
		return []byte(`{"output":` + string(result) + `}`)
	}
	var out []byte
	jsonscan.Elems(result, func(v []byte) bool {
		fr := jsonscan.Field(v, "functionResponse")
		if len(fr) == 0 || fr[0] != '{' {
			return true
		}
		f, _ := fields(fr, "id", "response")
		rid, _ := jsonscan.String(f["id"])
		if out == nil || rid == id {
			out = f["response"]
		}
		return rid != id
	})
	return out
}

func isFileTool(name string) bool {
	switch name {
	case ToolReadFile, ToolWriteFile, ToolReplace:
		return true
	}
	return false
}

func (c *ChatReader) argPathAbs(args []byte) string {
	p, ok := argPath(args)
	if !ok {
		return ""
	}
	abs, _ := resolvePath(p, c.opt.Cwd, nil)
	return abs
}

// toolUse yields a call, once per epoch.
func (c *ChatReader) toolUse(e *emitter, sub, id, name string, args []byte) {
	if !e.take(sub) {
		return
	}
	if len(args) == 0 || args[0] != '{' {
		args = []byte("{}")
	}
	if id != "" {
		if _, answered := c.answered[id]; !answered {
			var keep json.RawMessage
			if isFileTool(name) || name == ToolReadManyFiles {
				keep = jsonSafe(args)
			}
			c.remember(id, name, keep)
		}
		if c.used.has(id) {
			return // the CLI's copy of a call already yielded
		}
		c.used.add(id)
	}
	if e.evidenceOnly {
		return
	}
	tu := &transcript.ToolUse{LineMeta: e.meta, ID: id, Name: name, Input: clone(args), Block: e.block, SpanKey: e.spanKey(sub)}
	if isFileTool(name) {
		tu.Path = c.argPathAbs(args)
	}
	e.add(tu)
}

// functionResponse handles a functionResponse part of a user message: the
// result the model receives, paired with its call by id.
func (c *ChatReader) functionResponse(e *emitter, fr []byte) {
	f, _ := fields(fr, "id", "name", "response")
	id, _ := jsonscan.String(f["id"])
	name, _ := jsonscan.String(f["name"])
	var args []byte
	if p := c.pending[id]; p != nil {
		args = p.Args
		if name == "" {
			name = p.Name
		}
	}
	status := "success"
	if resp := f["response"]; len(resp) > 0 && resp[0] == '{' && !isNull(jsonscan.Field(resp, "error")) {
		status = "error"
	}
	c.result(e, id, name, args, f["response"], status, nil)
}

// responseText is the text of a function response object: its output
// (or, for a failure, its error) when a string, else the object itself.
func responseText(resp []byte) (text json.RawMessage, isString bool) {
	if len(resp) == 0 || resp[0] != '{' {
		return json.RawMessage(`""`), true
	}
	f, _ := fields(resp, "output", "error", "content")
	for _, k := range []string{"output", "error", "content"} {
		if isJSONString(f[k]) {
			return f[k], true
		}
	}
	return resp, false
}

// result yields the result of call id once per epoch: a ToolResult span
// and the evidence of a file tool's success.
func (c *ChatReader) result(e *emitter, id, name string, args, resp []byte, status string, display []byte) {
	sub := "result:" + id
	if id == "" || !e.take(sub) {
		return
	}
	if _, done := c.answered[id]; done {
		return // the same result again (the CLI records it twice)
	}
	raw, isString := responseText(resp)
	out := ""
	if isString {
		out, _ = jsonscan.String(raw)
	}
	isErr := status != "success"
	if !e.evidenceOnly {
		r := &transcript.ToolResult{LineMeta: e.meta, ToolUseID: id, IsError: isErr, ContentJSON: clone(raw),
			Tool: name, Block: e.block, SpanKey: e.spanKey(sub)}
		if len(display) > 0 && (display[0] == '{' || display[0] == '"') {
			r.ToolUseResult = clone(display)
		}
		if isFileTool(name) {
			r.Path = c.argPathAbs(args)
		}
		e.add(r)
	}
	c.forget(id)
	evidence := false
	if !isErr && isString && args != nil {
		for n, s := range c.seenOf(name, args, out, display) {
			key := "seen:" + e.m.id + ":" + id
			if name == ToolReadManyFiles {
				key += ":" + strconv.Itoa(n)
			}
			if e.evidenceOnly && c.epoch != "" {
				key += "@" + strings.TrimPrefix(c.epoch, "compact:")
			}
			e.add(&transcript.FileSeen{LineMeta: e.meta, Path: s.Path, Content: s.Content, HasContent: s.HasContent,
				View: s.View, Op: s.Op, Tool: s.Tool, Key: key})
			evidence = true
		}
	}
	c.answer(id, digest(string(raw)), evidence)
}

// seenOf is the evidence of a successful file tool's result: reads only
// when their text is exactly the file's (a read without it yields no
// evidence here), edits with or without content.
func (c *ChatReader) seenOf(name string, args []byte, out string, display []byte) []Seen {
	var all []Seen
	switch name {
	case ToolReadFile:
		ra, err := parseReadFileArgs(args)
		path := c.argPathAbs(args)
		if err != nil || path == "" {
			return nil
		}
		all = []Seen{readSeen(path, ra, out, display)}
	case ToolReadManyFiles:
		all, _ = readManySeen(out, display)
	case ToolWriteFile, ToolReplace:
		path := c.argPathAbs(args)
		if path == "" && len(display) > 0 && display[0] == '{' {
			if p, ok := jsonscan.String(jsonscan.Field(display, "filePath")); ok && filepath.IsAbs(p) {
				path = filepath.Clean(p)
			}
		}
		if path == "" {
			return nil
		}
		return []Seen{editSeen(name, path, args, display)}
	}
	var withText []Seen
	for _, s := range all {
		if s.HasContent {
			withText = append(withText, s)
		}
	}
	return withText
}

// subsOf lists every part of a message a reader could yield (so that a
// message taken as handled yields none of them again).
func subsOf(m *message) map[string]bool {
	subs := map[string]bool{}
	parts(m.content, func(i int, p []byte) {
		subs["c"+strconv.Itoa(i)] = true
		if fc := jsonscan.Field(p, "functionCall"); len(fc) > 0 && fc[0] == '{' {
			if id, _ := jsonscan.String(jsonscan.Field(fc, "id")); id != "" {
				subs["call:"+id] = true
			}
		}
		if fr := jsonscan.Field(p, "functionResponse"); len(fr) > 0 && fr[0] == '{' {
			if id, _ := jsonscan.String(jsonscan.Field(fr, "id")); id != "" {
				subs["result:"+id] = true
			}
		}
	})
	n := 0
	jsonscan.Elems(m.thoughts, func([]byte) bool {
		subs["t"+strconv.Itoa(n)] = true
		n++
		return true
	})
	jsonscan.Elems(m.toolCalls, func(v []byte) bool {
		if id, _ := jsonscan.String(jsonscan.Field(v, "id")); id != "" {
			subs["call:"+id] = true
			if st, _ := jsonscan.String(jsonscan.Field(v, "status")); finalStatus(st) {
				subs["result:"+id] = true
			}
		}
		return true
	})
	return subs
}

// appended handles a message line. The CLI appends a message when it is
// created and again, whole, each time it changes; only the last message
// changes (tokens; tool calls, added once completed). A new message
// yields all its parts; the last one again yields the parts it did not
// have before; an older one (a replay) yields nothing. Held user texts
// are released before the first item a later message yields.
func (c *ChatReader) appended(m *message, tl *transcript.Line) {
	var items []transcript.Item
	switch {
	case m.id == c.last:
		items = c.emit(m, c.lastSubs, false)
	case c.isSeen(m.id):
		c.last, c.lastSubs = m.id, subsOf(m)
	default:
		c.markSeen(m.id)
		c.last, c.lastSubs = m.id, map[string]bool{}
		items = c.emit(m, c.lastSubs, false)
	}
	if len(items) > 0 {
		c.release(tl)
		tl.Items = append(tl.Items, items...)
	}
}
