package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
)

// hopHeaders are connection-level headers a proxy must not forward.
var hopHeaders = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// copyHeaders copies end-to-end headers from src to dst.
func copyHeaders(dst, src http.Header) {
	var conn map[string]bool
	for _, v := range src.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				if conn == nil {
					conn = map[string]bool{}
				}
				conn[textproto.CanonicalMIMEHeaderKey(f)] = true
			}
		}
	}
	for k, vs := range src {
		if hopHeaders[k] || conn[k] {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

// copyResponseHeaders copies a backend's end-to-end response headers to
// the client's answer, except CORS headers: the proxy decides who may
// read its answers (origin.go), and a backend's
// "Access-Control-Allow-Origin: *" must not reach a browser through it.
func copyResponseHeaders(dst, src http.Header) {
	copyHeaders(dst, src)
	for k := range src {
		if strings.HasPrefix(textproto.CanonicalMIMEHeaderKey(k), "Access-Control-") {
			delete(dst, k)
		}
	}
}

// upstreamRequest builds the request to the backend for the client's r,
// with body as its body: same method, path, query and end-to-end headers.
// The Host is the backend's own: the client's Host has been checked
// (admit) and is never forwarded.
func (p *Proxy) upstreamRequest(ctx context.Context, r *http.Request, body io.Reader, length int64) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, p.up.url(r.URL.RequestURI()), body)
	if err != nil {
		return nil, err
	}
	copyHeaders(req.Header, r.Header)
	delete(req.Header, "Host")
	// Only well-formed hop ids go on; the transport appends this proxy's.
	req.Header.Del(HopHeader)
	if chain := hopChain(r.Header); len(chain) > 0 {
		req.Header.Set(HopHeader, strings.Join(chain, ", "))
	}
	req.Host = req.URL.Host
	if _, ok := r.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = nil // no Go default: forward what the client sent
	}
	req.ContentLength = length
	if length == 0 {
		req.Body = http.NoBody
	}
	return req, nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relay writes resp to w byte for byte, flushing after every chunk read,
// and feeds the same bytes to tee when set.
func relay(w http.ResponseWriter, resp *http.Response, tee io.Writer) error {
	return relayFrom(w, resp, resp.Body, tee)
}

// cutError is a backend that broke its answer off: the connection closed
// (or failed) inside a chunked answer or before the Content-Length it
// announced. Relayed is how many bytes of the body reached the client
// before the cut.
type cutError struct {
	relayed int64
	err     error
}

func (e *cutError) Error() string {
	return fmt.Sprintf("the backend broke the answer off after %d bytes: %v", e.relayed, e.err)
}

func (e *cutError) Unwrap() error { return e.err }

// relayFrom is relay with the body read from body: resp.Body, or what was
// already read of it followed by the rest.
//
// The backend's Content-Length goes to the client with its headers (the
// proxy never rewrites an answer), so a short body stays detectable. A
// failed read of body is returned as a *cutError, after everything read
// before it has been written and flushed; the caller then aborts the
// response (abortCut) rather than end it cleanly. (A read also fails when
// the client leaves, which cancels the backend's request: callers tell
// the two apart by the request's context.) A failed write (the client
// left) is returned as it is.
func relayFrom(w http.ResponseWriter, resp *http.Response, body io.Reader, tee io.Writer) error {
	copyResponseHeaders(w.Header(), resp.Header)
	w.Header().Del(HopHeader)
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	if fl != nil && strings.Contains(resp.Header.Get("Content-Type"), "event-stream") {
		fl.Flush() // a stream's headers go out before its first event
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var relayed int64
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			relayed += int64(n)
			if tee != nil {
				tee.Write(buf[:n])
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &cutError{relayed: relayed, err: err}
		}
	}
}

// errReader is a reader that fails with err: the rest of a body whose
// first part was read before the failure.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// abortCut ends an answer the backend broke off as a cut: what was
// written so far is flushed, and the connection is then closed without
// the end of the answer (no terminating chunk; a Content-Length left
// short). net/http does exactly that for a handler that panics with
// http.ErrAbortHandler, and logs nothing. A clean end would tell the
// client that a truncated answer was complete.
func abortCut(w http.ResponseWriter) {
	http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// writeBuffered sends a response whose body was already read.
func writeBuffered(w http.ResponseWriter, resp *http.Response, body []byte) {
	copyResponseHeaders(w.Header(), resp.Header)
	w.Header().Del(HopHeader)
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// usageScan watches a response go by and picks out the usage it reports:
// in the last JSON of a plain response, or in the events of a stream
// (OpenAI's final chunk with include_usage, Anthropic's message_start and
// message_delta).
type usageScan struct {
	sse     bool
	line    []byte
	body    []byte
	over    bool
	prompt  int
	output  int
	found   bool
	encoded bool // compressed: not readable
}

const usageBodyCap = 8 << 20

func newUsageScan(resp *http.Response) *usageScan {
	ct := resp.Header.Get("Content-Type")
	return &usageScan{
		sse:     strings.Contains(ct, "text/event-stream"),
		encoded: resp.Header.Get("Content-Encoding") != "" && resp.Header.Get("Content-Encoding") != "identity",
	}
}

func (u *usageScan) Write(p []byte) (int, error) {
	if u.encoded {
		return len(p), nil
	}
	if !u.sse {
		if len(u.body)+len(p) > usageBodyCap {
			u.over = true
		} else if !u.over {
			u.body = append(u.body, p...)
		}
		return len(p), nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(u.line)+len(p) < 1<<20 {
				u.line = append(u.line, p...)
			}
			break
		}
		u.line = append(u.line, p[:i]...)
		u.sseLine(u.line)
		u.line = u.line[:0]
		p = p[i+1:]
	}
	return len(p), nil
}

func (u *usageScan) sseLine(l []byte) {
	l = bytes.TrimRight(l, "\r")
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	u.parse(bytes.TrimSpace(data))
}

type usageObj struct {
	PromptTokens  *int `json:"prompt_tokens"`
	Completion    int  `json:"completion_tokens"`
	InputTokens   *int `json:"input_tokens"`
	OutputTokens  int  `json:"output_tokens"`
	CacheCreation int  `json:"cache_creation_input_tokens"`
	CacheRead     int  `json:"cache_read_input_tokens"`
}

func (u *usageScan) parse(data []byte) {
	var v struct {
		Usage   *usageObj `json:"usage"`
		Message *struct {
			Usage *usageObj `json:"usage"`
		} `json:"message"`
		// Responses API streams: response.completed {"response":{"usage"}}.
		Response *struct {
			Usage *usageObj `json:"usage"`
		} `json:"response"`
		PromptEvalCount *int `json:"prompt_eval_count"`
		EvalCount       int  `json:"eval_count"`
	}
	if json.Unmarshal(data, &v) != nil {
		return
	}
	use := func(o *usageObj) {
		if o == nil {
			return
		}
		if o.PromptTokens != nil && *o.PromptTokens > 0 {
			u.prompt, u.found = *o.PromptTokens, true
		}
		if o.InputTokens != nil && (*o.InputTokens > 0 || o.CacheRead > 0 || o.CacheCreation > 0) {
			u.prompt, u.found = *o.InputTokens+o.CacheRead+o.CacheCreation, true
		}
		if o.Completion > 0 {
			u.output = o.Completion
		}
		if o.OutputTokens > 0 {
			u.output = o.OutputTokens
		}
	}
	use(v.Usage)
	if v.Message != nil {
		use(v.Message.Usage)
	}
	if v.Response != nil {
		use(v.Response.Usage)
	}
	if v.PromptEvalCount != nil && *v.PromptEvalCount > 0 {
		u.prompt, u.found = *v.PromptEvalCount, true
		u.output = v.EvalCount
	}
}

// finish parses a plain response body.
func (u *usageScan) finish() {
	if u.sse || u.encoded || u.over || len(u.body) == 0 {
		if u.sse && len(u.line) > 0 {
			u.sseLine(u.line)
		}
		return
	}
	if bytes.Contains(u.body, []byte(`"usage"`)) || bytes.Contains(u.body, []byte(`"prompt_eval_count"`)) {
		u.parse(u.body)
	}
}
