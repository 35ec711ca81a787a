package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The frame guard stands between the client and the SDK's transport.
//
// The SDK's IO transport decodes the input as one JSON stream and ends
// the session on the first value it cannot use: a line that is not JSON,
// an empty batch, an id that is an object, a "jsonrpc" other than "2.0",
// or a line over its 16 MB buffer. `git lossless mcp` then exited and the
// agent lost its server for the rest of the session. So every frame — one
// line of stdin, as the MCP stdio transport defines it — is read and
// judged here first: a frame the SDK can serve is handed to it unchanged;
// any other is answered here with the JSON-RPC 2.0 error the specification
// names, and the next frame is read. The SDK never sees a frame that could
// end the session, and the server ends only when stdin ends (or stdout
// fails).

const (
	// MaxFrameBytes caps one inbound frame (one line, without its newline).
	// The largest frame a client has reason to send this server is a
	// tools/call with a path, a query or a session id: well under 64 KiB.
	// A cap of 1 MiB leaves that sixteen-fold room, and bounds what the
	// server holds for its client: MaxInFlight frames at most, so a few
	// tens of MB in the worst case, where the SDK's own 16 MB line buffer
	// let one frame cost hundreds. A longer line is read through and
	// dropped without being kept (only its first MaxFrameBytes and last
	// bytes, to find its id) and answered with an invalid-request error.
	MaxFrameBytes = 1 << 20
	// MaxInFlight caps the calls being served at once. Each call runs in
	// its own goroutine in the SDK, and the tools start git; a client that
	// sends more calls before the answers come back gets a "server busy"
	// error (code -32000) for the calls over the cap, and the rest are
	// served as usual. Claude Code calls a handful of tools at a time.
	MaxInFlight = 32
	// maxNesting caps how deep a frame's arrays and objects nest: no
	// request of the protocol nests more than a few levels, and a frame of
	// a hundred thousand '[' must cost one scan, not a recursion.
	maxNesting = 64
	// eofDrain is how long the server, once stdin has ended, waits for the
	// calls in flight to be answered before it ends: a client that writes
	// its requests and closes its end still gets its answers.
	eofDrain = 30 * time.Second
)

// JSON-RPC 2.0 error codes (https://www.jsonrpc.org/specification#error_object).
const (
	codeParseError     = -32700 // not JSON (or not UTF-8, or nested too deep)
	codeInvalidRequest = -32600 // JSON, but not a request or a response we can serve
	codeInvalidParams  = -32602 // params neither an object nor an array
	codeServerBusy     = -32000 // MaxInFlight calls are being served
)

// frameGuard is one client's frame guard: the SDK reads the frames it
// passes through reader() and writes its own frames through writer().
type frameGuard struct {
	in  *bufio.Reader
	buf []byte // the frame being read, up to MaxFrameBytes
	// tail keeps the end of an over-cap frame, where a client that writes
	// "id" last (the TypeScript SDK does) put it.
	tail    []byte
	pending []byte // a judged frame (with its newline) the SDK has not read yet
	eof     bool
	drain   time.Duration

	wmu  sync.Mutex // one frame at a time on stdout
	out  io.Writer
	werr error

	mu        sync.Mutex
	cond      *sync.Cond
	inFlight  map[string]string // calls handed to the SDK and not answered yet: idKey -> method
	closed    bool              // the SDK closed the session
	outFailed bool              // a write to stdout failed
	timedOut  bool              // eofDrain passed
}

func newFrameGuard(in io.Reader, out io.Writer) *frameGuard {
	g := &frameGuard{in: bufio.NewReaderSize(in, 64<<10), out: out, inFlight: map[string]string{}, drain: eofDrain}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *frameGuard) reader() io.ReadCloser  { return guardReader{g} }
func (g *frameGuard) writer() io.WriteCloser { return guardWriter{g} }

type guardReader struct{ g *frameGuard }

// Read hands the SDK the next frame it can serve, answering the others.
func (r guardReader) Read(p []byte) (int, error) {
	g := r.g
	for len(g.pending) == 0 {
		if g.eof {
			g.waitAnswered()
			return 0, io.EOF
		}
		frame, over, size, err := g.readFrame()
		if over {
			if werr := g.answer(overCapID(g.buf, g.tail), codeInvalidRequest,
				fmt.Sprintf("invalid request: a frame of %d bytes is over the cap of %d bytes (MaxFrameBytes); it was discarded", size, MaxFrameBytes)); werr != nil {
				return 0, werr
			}
		} else if werr := g.judge(frame); werr != nil {
			return 0, werr
		}
		if errors.Is(err, io.EOF) {
			g.eof = true
		} else if err != nil {
			return 0, fmt.Errorf("read stdin: %w", err)
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// Close is the SDK closing the session: stdin is the caller's.
func (r guardReader) Close() error {
	g := r.g
	g.mu.Lock()
	g.closed = true
	g.cond.Broadcast()
	g.mu.Unlock()
	return nil
}

type guardWriter struct{ g *frameGuard }

// Write is one frame of the SDK's (its transport writes each message,
// newline included, in one call). An answer frees its call's slot, before
// it is written: once the client has the answer it may reuse the id.
func (w guardWriter) Write(p []byte) (int, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(p, &m) == nil && m.Method == nil {
		if key, ok := idKey(m.ID); ok {
			w.g.answered(key)
		}
	}
	return w.g.write(p)
}

// Close leaves stdout open: it is the caller's.
func (guardWriter) Close() error { return nil }

// write puts one whole frame on stdout; after a failed write every write
// fails (and the session ends: stdout is gone).
func (g *frameGuard) write(p []byte) (int, error) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if g.werr != nil {
		return 0, g.werr
	}
	n, err := g.out.Write(p)
	if err != nil {
		g.werr = fmt.Errorf("write stdout: %w", err)
		g.mu.Lock()
		g.outFailed = true
		g.cond.Broadcast()
		g.mu.Unlock()
		return n, g.werr
	}
	return n, nil
}

// answer writes an error response; id nil is null (the id could not be
// read).
func (g *frameGuard) answer(id json.RawMessage, code int, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg}})
	if err != nil { // id is always valid JSON: a bug
		return fmt.Errorf("encode an error response: %w", err)
	}
	_, err = g.write(append(b, '\n'))
	return err
}

// readFrame reads one line. A line over MaxFrameBytes is read through to
// its end without being kept: over is set, buf holds its first
// MaxFrameBytes bytes at most and tail its last ones. size is the line's
// length without its newline. At the end of the input, err is io.EOF and
// frame holds what came after the last newline.
func (g *frameGuard) readFrame() (frame []byte, over bool, size int64, err error) {
	g.buf, g.tail = g.buf[:0], g.tail[:0]
	for {
		chunk, rerr := g.in.ReadSlice('\n')
		if rerr == nil {
			chunk = chunk[:len(chunk)-1]
		}
		size += int64(len(chunk))
		if !over && len(g.buf)+len(chunk) > MaxFrameBytes {
			over = true
		}
		if over {
			g.tail = append(g.tail, chunk...)
			if n := len(g.tail); n > tailKeep {
				g.tail = append(g.tail[:0], g.tail[n-tailKeep:]...)
			}
		} else {
			g.buf = append(g.buf, chunk...)
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		return g.buf, over, size, rerr
	}
}

// tailKeep is how much of an over-cap frame's end is kept to find its id.
const tailKeep = 512

// judge hands frame to the SDK when it can serve it, and answers it
// otherwise (a notification, which has no id, is dropped without answer).
func (g *frameGuard) judge(frame []byte) error {
	frame = bytes.TrimSpace(frame) // "\r\n" line ends, blank lines
	if len(frame) == 0 {
		return nil
	}
	v := check(frame)
	if v.isBatch {
		for _, a := range v.batch {
			if err := g.answer(a.id, a.code, a.msg); err != nil {
				return err
			}
		}
		return nil
	}
	if v.code != 0 {
		if v.notification {
			return nil
		}
		return g.answer(v.id, v.code, v.msg)
	}
	if v.call != "" {
		g.mu.Lock()
		switch _, inUse := g.inFlight[v.call]; {
		case inUse:
			g.mu.Unlock()
			// Answered with a null id: answering with the id would settle
			// the call in flight that holds it.
			return g.answer(nil, codeInvalidRequest, fmt.Sprintf("invalid request: id %s is in use by a call not answered yet", v.id))
		case len(g.inFlight) >= MaxInFlight:
			g.mu.Unlock()
			return g.answer(v.id, codeServerBusy, fmt.Sprintf("server busy: %d calls are being served (MaxInFlight); call again when one is answered", MaxInFlight))
		}
		g.inFlight[v.call] = v.method
		g.mu.Unlock()
	}
	g.pending = append(append(g.pending[:0], frame...), '\n')
	return nil
}

// answered frees the slot of the call whose answer was just written.
func (g *frameGuard) answered(key string) {
	g.mu.Lock()
	delete(g.inFlight, key)
	g.cond.Broadcast()
	g.mu.Unlock()
}

// waitAnswered waits, after the end of stdin, until every call handed to
// the SDK has been answered, the session closed, stdout failed, or
// g.drain passed. A subscriptions/listen call (protocol 2026-07-28) is
// not waited for: it lasts until the client cancels it, and the client
// is gone; the SDK cancels it at the end of the input.
func (g *frameGuard) waitAnswered() {
	t := time.AfterFunc(g.drain, func() {
		g.mu.Lock()
		g.timedOut = true
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer t.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.waiting() && !g.closed && !g.outFailed && !g.timedOut {
		g.cond.Wait()
	}
}

// waiting reports whether a call that will end by itself is in flight
// (g.mu held).
func (g *frameGuard) waiting() bool {
	for _, m := range g.inFlight {
		if m != "subscriptions/listen" {
			return true
		}
	}
	return false
}

// verdict is what check decided about a frame.
type verdict struct {
	code         int             // 0: hand it to the SDK
	msg          string          // the error's message
	id           json.RawMessage // the id to answer with (nil: null)
	notification bool            // no id: never answered
	call         string          // idKey of a call handed to the SDK
	method       string          // its method
	isBatch      bool            // a batch: never handed to the SDK
	batch        []answerTo      // the batch's answers
}

type answerTo struct {
	id   json.RawMessage
	code int
	msg  string
}

// check judges one frame (a line without its newline and surrounding
// space). Everything the SDK's decoding would choke on, or would read
// differently from what was sent, is refused here:
//
//   - not UTF-8, nested deeper than maxNesting, or not one JSON value:
//     parse error (-32700), id null;
//   - an array (a batch: MCP 2025-06-18 removed batching, and the SDK's
//     handling of batches ends the session on a reused id): an
//     invalid-request error for each call in it, by its id;
//   - not an object, an object with a key twice at any depth (which one
//     counts depends on the parser), "jsonrpc" not "2.0", an id that is
//     not a string or an integer of at most 2^53 in magnitude (the SDK
//     reads ids as float64 and would answer another id; "1.5" or 2^64
//     would be answered as 1 or -2^63), a method that is not a string, a
//     response without exactly one of result and error: invalid request
//     (-32600), with the id when it could be read;
//   - params neither an object nor an array (nor null): invalid params
//     (-32602).
//
// An unknown method is the SDK's to answer (-32601), as are params of the
// wrong shape for their method (-32602).
func check(frame []byte) verdict {
	if !utf8.Valid(frame) {
		return verdict{code: codeParseError, msg: "parse error: the frame is not valid UTF-8"}
	}
	if depth := nesting(frame); depth > maxNesting {
		return verdict{code: codeParseError, msg: fmt.Sprintf("parse error: the frame nests arrays and objects more than %d deep", maxNesting)}
	}
	var raw json.RawMessage
	if err := json.Unmarshal(frame, &raw); err != nil {
		return verdict{code: codeParseError, msg: "parse error: " + err.Error()}
	}
	if frame[0] == '[' {
		return verdict{isBatch: true, batch: checkBatch(frame)}
	}
	if frame[0] != '{' {
		return verdict{code: codeInvalidRequest, msg: "invalid request: a frame must be a JSON object"}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(frame, &m); err != nil {
		return verdict{code: codeInvalidRequest, msg: "invalid request: " + err.Error()}
	}
	idRaw, hasID := m["id"]
	method, hasMethod := m["method"]
	key, idOK := idKey(idRaw)
	var v verdict
	switch {
	case !hasID || string(idRaw) == "null":
		v.notification = hasMethod
	case idOK:
		v.id = idRaw
	case idRaw[0] == '-' || idRaw[0] >= '0' && idRaw[0] <= '9':
		v.id = idRaw // echoed as sent, so the client can match it
	}
	bad := func(code int, format string, a ...any) verdict {
		v.code, v.msg = code, fmt.Sprintf(format, a...)
		return v
	}
	if k, dup := duplicateKey(frame); dup {
		if k == "id" {
			v.id = nil
		}
		return bad(codeInvalidRequest, "invalid request: the key %q appears twice in one object", k)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return bad(codeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if hasID && !idOK && string(idRaw) != "null" {
		return bad(codeInvalidRequest, "invalid request: an id must be a string or an integer between -2^53 and 2^53, got %s", clip(idRaw))
	}
	if hasMethod {
		if method[0] != '"' {
			return bad(codeInvalidRequest, "invalid request: method must be a string")
		}
		if p, ok := m["params"]; ok && p[0] != '{' && p[0] != '[' && string(p) != "null" {
			return bad(codeInvalidParams, "invalid params: params must be an object or an array")
		}
	} else {
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if !idOK || hasResult == hasError {
			return bad(codeInvalidRequest, "invalid request: neither a request (no method) nor a response (an id and exactly one of result and error)")
		}
	}
	// What the SDK reads the frame with must read it too.
	if _, err := jsonrpc.DecodeMessage(frame); err != nil {
		return bad(codeInvalidRequest, "invalid request: %v", err)
	}
	if hasMethod && idOK {
		v.call = key
		_ = json.Unmarshal(method, &v.method)
	}
	return v
}

// checkBatch answers a batch: one invalid-request error per call in it
// (by its id), and one with a null id for the elements that are neither
// calls nor notifications (or for an empty batch). A batch of
// notifications only gets no answer.
func checkBatch(frame []byte) []answerTo {
	const msg = "invalid request: batches are not supported (MCP 2025-06-18 removed them); send each message on its own line"
	var elems []json.RawMessage
	_ = json.Unmarshal(frame, &elems) // frame is valid JSON
	var out []answerTo
	other := len(elems) == 0
	for _, e := range elems {
		var m map[string]json.RawMessage
		if len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &m) != nil {
			other = true
			continue
		}
		_, hasMethod := m["method"]
		idRaw, hasID := m["id"]
		if _, ok := idKey(idRaw); ok && hasMethod {
			out = append(out, answerTo{idRaw, codeInvalidRequest, msg})
		} else if !hasMethod || hasID && string(idRaw) != "null" {
			other = true
		}
	}
	if other {
		out = append(out, answerTo{nil, codeInvalidRequest, msg})
	}
	return out
}

// idKey is the key of a usable id: a JSON string, or an integer literal
// of at most 2^53 in magnitude (what the SDK's float64 reading keeps
// exactly). The same id written by the SDK in its answer has the same key.
func idKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	}
	if !intLiteral().Match(raw) {
		return "", false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return "", false
	}
	return "n" + strconv.FormatInt(n, 10), true
}

// intLiteral is compiled on first use: every command links this package,
// few serve MCP, and start-up time counts for each.
var intLiteral = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`) })

// nesting is how deep arrays and objects nest in a frame (one pass, no
// recursion; brackets inside strings do not count).
func nesting(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// duplicateKey finds a key that appears twice in one object, at any
// depth, of a valid JSON frame.
func duplicateKey(frame []byte) (string, bool) {
	type object struct {
		keys      map[string]bool
		expectKey bool
	}
	var stack []*object // nil entries are arrays
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // io.EOF: the end
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil {
					top.expectKey = true // the next token after this value is a key
				}
				if t == '{' {
					stack = append(stack, &object{keys: map[string]bool{}, expectKey: true})
				} else {
					stack = append(stack, nil)
				}
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.expectKey {
				if top.keys[t] {
					return t, true
				}
				top.keys[t] = true
				top.expectKey = false
				continue
			}
			if top != nil {
				top.expectKey = true
			}
		default:
			if top != nil {
				top.expectKey = true
			}
		}
	}
}

// tailID finds `"id": <string or integer>` as the last member of an
// over-cap frame's top-level object.
var tailID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[{,]\s*"id"\s*:\s*("(?:[^"\\\x00-\x1f]|\\.){0,256}"|-?[0-9]{1,17})\s*}\s*$`)
})

// overCapID is the id of an over-cap frame, when its first bytes (head)
// or its last (tail) show one at the top level; nil (null) otherwise.
func overCapID(head, tail []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				break
			}
			var val json.RawMessage
			if err := dec.Decode(&val); err != nil {
				break
			}
			if k, _ := kt.(string); k == "id" {
				if _, ok := idKey(val); ok {
					return val
				}
				return nil
			}
		}
	}
	if m := tailID().FindSubmatch(tail); m != nil {
		if _, ok := idKey(m[1]); ok {
			return json.RawMessage(bytes.Clone(m[1]))
		}
	}
	return nil
}

// clip shortens a raw value quoted in an error message.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
