package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-lossless/git-lossless/hooks/claudecode"
)

// The frame guard's tests: a hostile client writes raw frames and reads
// raw answers, here over pipes to the server in this process (these
// tests) and over the real `git lossless mcp` process's stdio
// (stdio_test.go). After every bad frame a ping must be answered.

// answerWait bounds one wait for an answer, so that a server that stops
// answering fails the test with the frames seen rather than hanging it.
// It is never an assertion on how long anything takes.
const answerWait = 2 * time.Minute

// rpcFrame is one frame the server wrote.
type rpcFrame struct {
	raw    string
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (f rpcFrame) id() string {
	if f.ID == nil {
		return "null"
	}
	return string(f.ID)
}

// rawClient writes frames to a server's stdin and reads every line of its
// stdout, failing the test on a line that is not a JSON-RPC 2.0 message.
type rawClient struct {
	t      testing.TB
	in     io.WriteCloser
	frames chan rpcFrame
}

func newRawClient(t testing.TB, in io.WriteCloser, out io.Reader) *rawClient {
	c := &rawClient{t: t, in: in, frames: make(chan rpcFrame, 1<<16)}
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			if err := jsonRPCLine(line); err != nil {
				t.Errorf("stdout holds something other than a JSON-RPC frame: %v: %.300q", err, line)
				continue
			}
			var f rpcFrame
			_ = json.Unmarshal([]byte(line), &f)
			f.raw = line
			c.frames <- f
		}
		if err := sc.Err(); err != nil {
			t.Errorf("read stdout: %v", err)
		}
	}()
	return c
}

// jsonRPCLine checks that line is one JSON-RPC 2.0 message: "jsonrpc"
// "2.0" and either a method or an id with exactly one of result and error
// (an error with an integer code and a message).
func jsonRPCLine(line string) error {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return fmt.Errorf(`"jsonrpc" is %s`, m["jsonrpc"])
	}
	if _, ok := m["method"]; ok {
		return nil
	}
	if _, ok := m["id"]; !ok {
		return fmt.Errorf("neither a method nor an id")
	}
	_, hasResult := m["result"]
	e, hasError := m["error"]
	if hasResult == hasError {
		return fmt.Errorf("not exactly one of result and error")
	}
	if hasError {
		var we struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		}
		if json.Unmarshal(e, &we) != nil || we.Code == nil || we.Message == nil {
			return fmt.Errorf("error %s is not {code, message}", e)
		}
	}
	return nil
}

func (c *rawClient) send(frame []byte) {
	c.t.Helper()
	if _, err := c.in.Write(append(bytes.Clone(frame), '\n')); err != nil {
		c.t.Fatalf("write a frame to the server: %v", err)
	}
}

// next returns the next frame the server wrote; ok is false at the end of
// its output.
func (c *rawClient) next() (rpcFrame, bool) {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		return f, ok
	case <-time.After(answerWait):
		c.t.Fatalf("no frame from the server in %s", answerWait)
		return rpcFrame{}, false
	}
}

// until reads frames until one has id, and returns it and the frames
// before it.
func (c *rawClient) until(id string) (rpcFrame, []rpcFrame) {
	c.t.Helper()
	var before []rpcFrame
	for {
		f, ok := c.next()
		if !ok {
			c.t.Fatalf("the server's output ended before the answer to id %s; frames: %v", id, raws(before))
		}
		if f.id() == id && f.Method == nil {
			return f, before
		}
		before = append(before, f)
	}
}

// ping sends a ping and requires its answer; it returns the frames the
// server wrote before that answer.
func (c *rawClient) ping(id string) []rpcFrame {
	c.t.Helper()
	c.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
	f, before := c.until(id)
	if f.Error != nil || string(f.Result) != "{}" {
		c.t.Fatalf("ping %s answered %s", id, f.raw)
	}
	return before
}

func (c *rawClient) initialize() {
	c.t.Helper()
	c.send([]byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`))
	if f, _ := c.until(`"init"`); f.Error != nil {
		c.t.Fatalf("initialize: %s", f.raw)
	}
	c.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// rest closes stdin and returns every frame the server writes until its
// output ends.
func (c *rawClient) rest() []rpcFrame {
	c.t.Helper()
	if err := c.in.Close(); err != nil {
		c.t.Fatal(err)
	}
	var out []rpcFrame
	for {
		f, ok := c.next()
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

func raws(fs []rpcFrame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.raw)
	}
	return out
}

// frameCase is one hostile frame and the answer it must get.
type frameCase struct {
	name  string
	frame []byte
	code  int    // the error code of the answer; 0: no answer at all
	id    string // the answer's id as JSON ("null")
}

// hostileFrames are the frames of the hostile run and more: each must be
// answered as the JSON-RPC 2.0 specification says (or not at all, for a
// notification), and the server must serve the next frame.
func hostileFrames() []frameCase {
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	deepValid := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	return []frameCase{
		{"not JSON", []byte(`{not json}`), codeParseError, "null"},
		{"empty batch", []byte(`[]`), codeInvalidRequest, "null"},
		{"batch of numbers", []byte(`[1,2,3]`), codeInvalidRequest, "null"},
		{"batch with a call", []byte(`[` + ping(`"b1"`) + `]`), codeInvalidRequest, `"b1"`},
		{"batch of notifications", []byte(`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`), 0, ""},
		{"invalid UTF-8 in a string", []byte("{\"jsonrpc\":\"2.0\",\"id\":\"u1\",\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}"), codeParseError, "null"},
		{"invalid UTF-8 outside strings", []byte("\xc3\x28"), codeParseError, "null"},
		{"100,000 unclosed [", []byte(strings.Repeat("[", 100000)), codeParseError, "null"},
		{"100,000 nested arrays", []byte(deepValid), codeParseError, "null"},
		{"nested 100,000 deep in params", []byte(`{"jsonrpc":"2.0","id":"d1","method":"ping","params":{"a":` + deepValid + `}}`), codeParseError, "null"},
		{"params a string", []byte(`{"jsonrpc":"2.0","id":"p1","method":"tools/list","params":"x"}`), codeInvalidParams, `"p1"`},
		{"params a number", []byte(`{"jsonrpc":"2.0","id":"p2","method":"tools/call","params":5}`), codeInvalidParams, `"p2"`},
		{"params of the wrong shape (the SDK answers)", []byte(`{"jsonrpc":"2.0","id":"p3","method":"tools/list","params":{"cursor":5}}`), codeInvalidParams, `"p3"`},
		{"tools/call arguments an array", []byte(`{"jsonrpc":"2.0","id":"p4","method":"tools/call","params":{"name":"search","arguments":[1]}}`), 0, `"p4"`}, // a tool error, checked below
		{"notification with params a number", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized","params":7}`), 0, ""},
		{"notification with a bad requestId", []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}`), 0, ""},
		{"unknown notification", []byte(`{"jsonrpc":"2.0","method":"notifications/whatever"}`), 0, ""},
		{"notification not JSON-RPC 2.0", []byte(`{"jsonrpc":"1.0","method":"notifications/initialized"}`), 0, ""},
		{"id an object", []byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`), codeInvalidRequest, "null"},
		{"id an array", []byte(`{"jsonrpc":"2.0","id":[1],"method":"ping"}`), codeInvalidRequest, "null"},
		{"id a boolean", []byte(`{"jsonrpc":"2.0","id":true,"method":"ping"}`), codeInvalidRequest, "null"},
		{"id 2^64", []byte(`{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}`), codeInvalidRequest, "18446744073709551616"},
		{"id 2^53+1", []byte(`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`), codeInvalidRequest, "9007199254740993"},
		{"id 1.5", []byte(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`), codeInvalidRequest, "1.5"},
		{"id 2^53 is served", []byte(ping("9007199254740992")), -1, "9007199254740992"},
		{"id -2^53 is served", []byte(ping("-9007199254740992")), -1, "-9007199254740992"},
		{"duplicate id", []byte(`{"jsonrpc":"2.0","id":"a","id":"b","method":"ping"}`), codeInvalidRequest, "null"},
		{"duplicate method", []byte(`{"jsonrpc":"2.0","id":"m2","method":"ping","method":"tools/list"}`), codeInvalidRequest, `"m2"`},
		{"duplicate key in arguments", []byte(`{"jsonrpc":"2.0","id":"k1","method":"tools/call","params":{"name":"read_file","arguments":{"path":"main.go","path":".git/config"}}}`), codeInvalidRequest, `"k1"`},
		{"NUL after the object", []byte(ping(`"n1"`) + "\x00"), codeParseError, "null"},
		{"NUL inside a string", []byte("{\"jsonrpc\":\"2.0\",\"id\":\"n2\",\"method\":\"pi\x00ng\"}"), codeParseError, "null"},
		{"escaped NUL in a method", []byte(`{"jsonrpc":"2.0","id":"n3","method":"pi\u0000ng"}`), codeMethodNotFound, `"n3"`},
		{"unknown method", []byte(`{"jsonrpc":"2.0","id":"u2","method":"no/such/method"}`), codeMethodNotFound, `"u2"`},
		{"jsonrpc 1.0", []byte(`{"jsonrpc":"1.0","id":"v1","method":"ping"}`), codeInvalidRequest, `"v1"`},
		{"no jsonrpc", []byte(`{"id":"v2","method":"ping"}`), codeInvalidRequest, `"v2"`},
		{"method a number", []byte(`{"jsonrpc":"2.0","id":"v3","method":5}`), codeInvalidRequest, `"v3"`},
		{"empty object", []byte(`{}`), codeInvalidRequest, "null"},
		{"neither request nor response", []byte(`{"jsonrpc":"2.0","id":"r1"}`), codeInvalidRequest, `"r1"`},
		{"response with result and error", []byte(`{"jsonrpc":"2.0","id":"r2","result":{},"error":{"code":1,"message":"x"}}`), codeInvalidRequest, `"r2"`},
		{"response with an error a string", []byte(`{"jsonrpc":"2.0","id":"r3","error":"x"}`), codeInvalidRequest, `"r3"`},
		{"response to nothing", []byte(`{"jsonrpc":"2.0","id":"r4","result":{}}`), 0, ""},
		{"a number", []byte(`5`), codeInvalidRequest, "null"},
		{"a string", []byte(`"ping"`), codeInvalidRequest, "null"},
		{"null", []byte(`null`), codeInvalidRequest, "null"},
		{"two objects on one line", []byte(ping(`"t1"`) + ping(`"t2"`)), codeParseError, "null"},
		{"blank line", []byte(""), 0, ""},
		{"spaces and tabs", []byte(" \t "), 0, ""},
		{"CRLF line end", []byte(ping(`"crlf"`) + "\r"), -1, `"crlf"`},
		{"a lone brace", []byte(`{`), codeParseError, "null"},
		{"a lone quote", []byte(`"`), codeParseError, "null"},
		{"binary junk", []byte("\x01\x02\x03\xef\xbb\xbf\x7f"), codeParseError, "null"},
	}
}

// codeMethodNotFound is the SDK's answer to an unknown method.
const codeMethodNotFound = -32601

// runFrameCases sends every case, then a ping, and checks the answers.
func runFrameCases(t *testing.T, c *rawClient, cases []frameCase) {
	for i, fc := range cases {
		c.send(fc.frame)
		pingID := fmt.Sprintf(`"after-%d"`, i)
		before := c.ping(pingID)
		if fc.code == 0 && fc.id == "" {
			if len(before) > 0 {
				t.Errorf("%s: answered %v, want no answer", fc.name, raws(before))
			}
			continue
		}
		// The SDK answers the frames it serves in its own goroutines: the
		// answer may come after the ping's.
		found := false
		for _, f := range before {
			if f.id() == fc.id && !found {
				found = true
				checkAnswer(t, fc, f)
			} else {
				t.Errorf("%s: an unexpected frame %s", fc.name, f.raw)
			}
		}
		if !found {
			f, more := c.until(fc.id)
			for _, m := range more {
				t.Errorf("%s: an unexpected frame %s", fc.name, m.raw)
			}
			checkAnswer(t, fc, f)
		}
	}
}

func checkAnswer(t *testing.T, fc frameCase, f rpcFrame) {
	t.Helper()
	switch fc.code {
	case -1:
		if f.Error != nil || f.Result == nil {
			t.Errorf("%s: answered %s, want a result", fc.name, f.raw)
		}
		return
	case 0:
		if f.Error != nil || !strings.Contains(string(f.Result), `"isError":true`) {
			t.Errorf("%s: answered %s, want a tool error", fc.name, f.raw)
		}
		return
	}
	if f.Error == nil || f.Error.Code != fc.code || f.id() != fc.id {
		t.Errorf("%s: answered %s, want error %d with id %s", fc.name, f.raw, fc.code, fc.id)
	}
}

// testServe runs a server over the fixture's archive on pipes and returns
// a client and a channel that gets Serve's result.
func testServe(t *testing.T, f *fixture, setup func(*Server)) (*rawClient, <-chan error) {
	t.Helper()
	srv := New(Config{Store: f.st, Version: "test", Harness: claudecode.New(), Getenv: claudeEnv(t.TempDir())})
	if setup != nil {
		setup(srv)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := srv.Serve(ctx, inR, outW)
		// A server that ended reads no more: the client's writes fail
		// instead of blocking.
		inR.CloseWithError(fmt.Errorf("the server ended: %v", err))
		outW.Close()
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		inR.Close()
		outR.Close()
	})
	return newRawClient(t, inW, outR), done
}

func serveResult(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(answerWait):
		t.Fatalf("Serve did not return after stdin ended")
		return nil
	}
}

// TestHostileFramesKeepServing: every hostile frame gets the JSON-RPC
// error the specification names (or nothing, for a notification), the
// next ping is answered, stdout holds only JSON-RPC frames, and the
// server ends cleanly when stdin ends.
func TestHostileFramesKeepServing(t *testing.T) {
	f := newFixture(t)
	c, done := testServe(t, f, nil)
	c.initialize()
	runFrameCases(t, c, hostileFrames())
	if rest := c.rest(); len(rest) > 0 {
		t.Errorf("frames after the last ping: %v", raws(rest))
	}
	if err := serveResult(t, done); err != nil {
		t.Fatalf("Serve: %v, want nil at the end of stdin", err)
	}
}

// TestFrameCap: a frame of exactly MaxFrameBytes is served; one byte more
// is answered with an invalid-request error carrying its id (found at the
// start or, as the TypeScript SDK writes it, at the end), or a null id,
// and the next frame is served. A 64 MB frame is read through without
// being kept: the server allocates a small part of it.
func TestFrameCap(t *testing.T) {
	f := newFixture(t)
	c, done := testServe(t, f, nil)
	c.initialize()

	exact := func(id string, size int) []byte {
		head := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping","params":{"_meta":{"pad":"`
		tail := `"}}}`
		return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
	}
	c.send(exact(`"at-cap"`, MaxFrameBytes))
	if a, _ := c.until(`"at-cap"`); a.Error != nil {
		t.Errorf("a frame of MaxFrameBytes: %s", a.raw)
	}
	c.send(exact(`"over-cap"`, MaxFrameBytes+1))
	if a, _ := c.until(`"over-cap"`); a.Error == nil || a.Error.Code != codeInvalidRequest || !strings.Contains(a.Error.Message, "over the cap") {
		t.Errorf("a frame of MaxFrameBytes+1: %s", a.raw)
	}
	c.ping(`"p1"`)

	// 20 MB, the id last (as the TypeScript SDK orders its keys).
	big := `{"method":"tools/call","params":{"name":"search","arguments":{"query":"` + strings.Repeat("a", 20<<20) + `"}},"jsonrpc":"2.0","id":"tail-id"}`
	c.send([]byte(big))
	if a, _ := c.until(`"tail-id"`); a.Error == nil || a.Error.Code != codeInvalidRequest {
		t.Errorf("a 20 MB frame with its id last: %s", a.raw)
	}
	c.ping(`"p2"`)
	// No id anywhere: null.
	c.send([]byte(`{"jsonrpc":"2.0","method":"x","params":{"q":"` + strings.Repeat("b", 2<<20) + `"}}`))
	before := c.ping(`"p3"`)
	if len(before) != 1 || before[0].id() != "null" || before[0].Error == nil || before[0].Error.Code != codeInvalidRequest {
		t.Errorf("an over-cap frame without an id: %v", raws(before))
	}

	// 64 MB in 64 KB writes: what the server allocates meanwhile is far
	// below the frame (it would be over 64 MB if the frame were kept).
	chunk := bytes.Repeat([]byte("z"), 64<<10)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before0 := ms.TotalAlloc
	if _, err := c.in.Write([]byte(`{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"p":"`)); err != nil {
		t.Fatal(err)
	}
	for range 1024 {
		if _, err := c.in.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	c.send([]byte(`"}}`))
	if a, _ := c.until(`"huge"`); a.Error == nil || !strings.Contains(a.Error.Message, "67108") {
		t.Errorf("a 64 MB frame: %s", a.raw)
	}
	runtime.ReadMemStats(&ms)
	if alloc := ms.TotalAlloc - before0; alloc > 16<<20 {
		t.Errorf("reading a 64 MB frame allocated %d bytes: the frame is kept", alloc)
	}
	c.ping(`"p4"`)
	if rest := c.rest(); len(rest) > 0 {
		t.Errorf("frames after the last ping: %v", raws(rest))
	}
	if err := serveResult(t, done); err != nil {
		t.Fatal(err)
	}
}

// blockingTool adds a tool "block" whose calls wait until release is
// closed, and returns a channel that gets a value each time a call
// starts.
func blockingTool(release <-chan struct{}) (func(*Server), <-chan struct{}) {
	started := make(chan struct{}, 1024)
	return func(s *Server) {
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "block"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return plain("released"), nil, nil
		})
	}, started
}

func blockCall(id string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
}

// TestInFlightCap: MaxInFlight calls that do not finish hold every slot;
// the calls after them are answered "server busy" (-32000) at once, an id
// still in flight is refused, and once the calls finish each is answered
// and the server serves again.
func TestInFlightCap(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	setup, started := blockingTool(release)
	c, done := testServe(t, f, setup)
	c.initialize()
	for i := range MaxInFlight {
		c.send(blockCall(fmt.Sprint(i)))
	}
	for range MaxInFlight {
		select {
		case <-started:
		case <-time.After(answerWait):
			t.Fatal("the blocking calls did not start")
		}
	}
	for i := range 5 {
		id := fmt.Sprintf(`"busy-%d"`, i)
		c.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
		if a, before := c.until(id); a.Error == nil || a.Error.Code != codeServerBusy || len(before) > 0 {
			t.Fatalf("call %d over the cap: %s (after %v)", i, a.raw, raws(before))
		}
	}
	c.send(blockCall("3")) // id 3 is in flight
	if a, before := c.until("null"); a.Error == nil || a.Error.Code != codeInvalidRequest || !strings.Contains(a.Error.Message, "in use") || len(before) > 0 {
		t.Fatalf("a reused id: %s (after %v)", a.raw, raws(before))
	}
	close(release)
	seen := map[string]bool{}
	for len(seen) < MaxInFlight {
		a, _ := c.next()
		if a.Error != nil || !strings.Contains(string(a.Result), "released") || seen[a.id()] {
			t.Fatalf("answer %s", a.raw)
		}
		seen[a.id()] = true
	}
	c.ping(`"after"`)
	if rest := c.rest(); len(rest) > 0 {
		t.Errorf("frames after the last ping: %v", raws(rest))
	}
	if err := serveResult(t, done); err != nil {
		t.Fatal(err)
	}
}

// TestEOFAnswersCallsInFlight: stdin ends (mid-frame) while a call is
// being served: the partial frame is a parse error, the call is answered
// when it finishes, and Serve returns nil after that.
func TestEOFAnswersCallsInFlight(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	setup, started := blockingTool(release)
	c, done := testServe(t, f, setup)
	c.initialize()
	c.send(blockCall(`"slow"`))
	<-started
	if _, err := c.in.Write([]byte(`{"jsonrpc":"2.0","id":"cut","method":"pi`)); err != nil {
		t.Fatal(err)
	}
	if err := c.in.Close(); err != nil {
		t.Fatal(err)
	}
	if a, before := c.until("null"); a.Error == nil || a.Error.Code != codeParseError || len(before) > 0 {
		t.Fatalf("the cut frame: %s (after %v)", a.raw, raws(before))
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v with a call in flight", err)
	default:
	}
	close(release)
	if a, _ := c.until(`"slow"`); a.Error != nil || !strings.Contains(string(a.Result), "released") {
		t.Fatalf("the call in flight: %s", a.raw)
	}
	if err := serveResult(t, done); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	// A last frame without its newline is served, then the end.
	c2, done2 := testServe(t, f, nil)
	c2.initialize()
	if _, err := c2.in.Write([]byte(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	rest := c2.rest()
	if len(rest) != 1 || rest[0].id() != `"last"` || rest[0].Error != nil {
		t.Fatalf("a last frame without a newline: %v", raws(rest))
	}
	if err := serveResult(t, done2); err != nil {
		t.Fatal(err)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct {
	mu sync.Mutex
	n  int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(p) > w.n {
		return 0, io.ErrClosedPipe
	}
	w.n -= len(p)
	return len(p), nil
}

// TestStdoutFailureEnds: when stdout fails the server ends with the
// error (the only end besides the end of stdin), whether the failed write
// was an answer of the SDK's or of the guard's.
func TestStdoutFailureEnds(t *testing.T) {
	f := newFixture(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, first := range []string{initialize, `{not json}`} {
		srv := New(Config{Store: f.st, Version: "test", Harness: claudecode.New(), Getenv: claudeEnv(t.TempDir())})
		inR, inW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), inR, &failingWriter{n: 0}) }()
		go func() {
			// Writes block until read; the server stops reading when it ends.
			inW.Write([]byte(first + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"))
		}()
		err := serveResult(t, done)
		inW.Close()
		if err == nil {
			t.Errorf("%s: Serve returned nil with stdout failing", first)
		}
	}
}

// TestCheckUnit pins check's verdicts on the frames the SDK reads
// differently from what was sent.
func TestCheckUnit(t *testing.T) {
	for frame, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                  0,
		`{"jsonrpc":"2.0","id":"x","method":"ping","params":null}`:                  0,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}`:                      0,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/x"}`:                    0,
		`{"jsonrpc":"2.0","id":-0,"method":"ping"}`:                                 0,
		`{"jsonrpc":"2.0","id":01,"method":"ping"}`:                                 codeParseError,
		`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`:                                codeInvalidRequest,
		`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`:                           0,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":{"b":1,"b":2}}}`:     codeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[{"b":1},{"b":2}]}}`: 0,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":{"b":1},"b":2}}`:     0,
	} {
		if v := check([]byte(frame)); v.code != want {
			t.Errorf("%s: code %d (%s), want %d", frame, v.code, v.msg, want)
		}
	}
}

// TestPanicInAToolKeepsServing: a tool that panics (a bug reached by some
// argument) gets an internal error (-32603) for its call, the panic is
// reported through Warn, and the next call is served. Before, the panic
// in the SDK's goroutine ended the process.
func TestPanicInAToolKeepsServing(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var warned []string
	c, done := testServe(t, f, func(s *Server) {
		s.cfg.Warn = func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "boom"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			var m map[string]int
			m["x"] = 1 // assignment to a nil map: a panic
			return nil, nil, nil
		})
	})
	c.initialize()
	for i := range 3 {
		id := fmt.Sprintf(`"boom-%d"`, i)
		c.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"boom","arguments":{}}}`))
		if a, _ := c.until(id); a.Error == nil || a.Error.Code != -32603 || !strings.Contains(a.Error.Message, "tools/call") {
			t.Fatalf("a panicking tool: %s", a.raw)
		}
		c.ping(fmt.Sprintf(`"after-%d"`, i))
	}
	if rest := c.rest(); len(rest) > 0 {
		t.Errorf("frames after the last ping: %v", raws(rest))
	}
	if err := serveResult(t, done); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 3 || !strings.Contains(warned[0], "nil map") || !strings.Contains(warned[0], "goroutine") {
		t.Errorf("warnings %q", warned)
	}
}

// TestEOFDoesNotWaitForListen: a subscriptions/listen call (protocol
// 2026-07-28) lasts until the client cancels it; when stdin ends the
// server does not wait for it (with a drain of an hour, Serve returns),
// while a call that ends by itself is still waited for.
func TestEOFDoesNotWaitForListen(t *testing.T) {
	f := newFixture(t)
	c, done := testServe(t, f, func(s *Server) { s.eofDrain = time.Hour })
	c.send([]byte(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`))
	if a, _ := c.next(); a.Method == nil || *a.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen: %s", a.raw)
	}
	for _, a := range c.rest() {
		if a.id() != `"L"` {
			t.Errorf("after the end of stdin: %s", a.raw)
		}
	}
	if err := serveResult(t, done); err != nil {
		t.Fatal(err)
	}
}
