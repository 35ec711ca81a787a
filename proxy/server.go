package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Proxy is the compacting proxy, an http.Handler. Create it with New (or
// run it with Run or Start); it is safe for concurrent use.
type Proxy struct {
	cfg      Config
	up       *upstream
	client   *http.Client
	sessions *sessionTable
	archive  Archive
	// journal is full capture's writer (journal.go); nil when off.
	journal *journal
	log     *savingsLog
	events  *eventRing
	stats   *statCounters
	started time.Time
	writer  string
	// id names this proxy in HopHeader (loop.go); random per process.
	id string
	// selfChecked is the listen address checkUpstreamNotSelf has passed.
	selfChecked string

	modelsMu sync.Mutex
	models   map[string]*modelState

	// active counts requests being handled (a response can reach the
	// client before its handler has recorded it).
	active *activity

	// guard decides who may talk to the proxy (origin.go).
	guard *guard
	// logged are the refusals already logged (logOnce).
	logMu  sync.Mutex
	logged map[string]bool

	// hooks are failure-injection points for this package's tests; nil
	// in production.
	hooks hooks
}

// hooks are points on the request path where tests inject a failure (a
// panic) to prove the proxy fails open. They live on the Proxy rather
// than in a package variable so that tests cannot see each other's.
type hooks struct {
	plan    func() // before the window and the count are worked out
	compact func() // at the start of a compaction
	recall  func() // at the start of a stale recall
	send    func() // before the request goes upstream
	relay   func() // as each piece of the answer is relayed
	finish  func() // before the exchange is recorded
}

// hookWriter runs a hook on every write, then writes to w.
type hookWriter struct {
	w    io.Writer
	hook func()
}

func (h hookWriter) Write(b []byte) (int, error) {
	h.hook()
	return h.w.Write(b)
}

func runHook(h func()) {
	if h != nil {
		h()
	}
}

// activity counts requests in flight and lets callers wait, without
// polling, for a moment when there are none: idle is a channel closed
// whenever the count is zero and replaced when it leaves zero.
type activity struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func newActivity() *activity {
	c := make(chan struct{})
	close(c)
	return &activity{idle: c}
}

func (a *activity) begin() {
	a.mu.Lock()
	if a.n == 0 {
		a.idle = make(chan struct{})
	}
	a.n++
	a.mu.Unlock()
}

func (a *activity) end() {
	a.mu.Lock()
	a.n--
	if a.n == 0 {
		close(a.idle)
	}
	a.mu.Unlock()
}

func (a *activity) idleChan() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.idle
}

// Idle waits until no request is being handled, or ctx ends. A client
// can have its whole answer before the proxy has finished recording the
// exchange (the savings log line, the session's usage, the stats); tests
// and tools call Idle before they read Stats, Usage or the log.
func (p *Proxy) Idle(ctx context.Context) error {
	select {
	case <-p.active.idleChan():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("proxy: waiting for requests in flight: %w", ctx.Err())
	}
}

// New returns a proxy for cfg (start from DefaultConfig or Load). It needs
// an Archive or a Store.
func New(ctx context.Context, cfg Config) (*Proxy, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base, _ := url.Parse(cfg.Upstream)
	base.Path = strings.TrimSuffix(strings.TrimRight(base.Path, "/"), "/v1")
	base.RawQuery, base.Fragment = "", ""
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	// Client text in log lines is escaped: one call, one line.
	cfg.Logf = escapeLogf(cfg.Logf)
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = defaultBodyTimeout
	}
	g, err := newGuard(&cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.AllowHosts) > 0 && !g.remote {
		cfg.Logf("warning: allow-host is ignored: it applies only with allow-remote and a non-loopback listen address (listen %s)", cfg.Listen)
	}
	p := &Proxy{
		cfg:      cfg,
		sessions: newSessionTable(cfg.Sessions),
		events:   newEventRing(512),
		stats:    newStatCounters(),
		started:  cfg.Now(),
		models:   map[string]*modelState{},
		active:   newActivity(),
		guard:    g,
		logged:   map[string]bool{},
		id:       newInstanceID(),
	}
	// Every request upstream carries the hop header (loop.go).
	p.client = &http.Client{Transport: &hopTransport{id: p.id, base: &http.Transport{
		Proxy:                 nil, // the backend is addressed directly
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // relay the backend's bytes as they are
		ExpectContinueTimeout: time.Second,
	}}}
	p.up = newUpstream(base, p.client, cfg.Backend)
	p.writer = cfg.Writer
	if p.writer == "" {
		p.writer = gitstore.WriterName("proxy-", cfg.Listen)
		if cfg.Store != nil {
			// Per clone by construction: two machines proxying on the
			// same address never write to one writer.
			w, err := cfg.Store.OwnWriterName(ctx, gitstore.FamilyProxy, cfg.Listen)
			if err != nil {
				return nil, err
			}
			p.writer = w
		}
	}
	switch {
	case cfg.Archive != nil:
		p.archive = cfg.Archive
	case cfg.Store != nil:
		if err := cfg.Store.CheckWritable(ctx, p.writer); err != nil {
			return nil, fmt.Errorf("proxy writer: %w", err)
		}
		p.archive = &StoreArchive{Store: cfg.Store, Writer: p.writer}
	default:
		return nil, errors.New("proxy: no archive: set Config.Store or Config.Archive")
	}
	if cfg.Capture == CaptureJournal {
		sink, ok := p.archive.(JournalArchive)
		if !ok {
			return nil, fmt.Errorf("proxy: capture %s: the archive (%T) cannot take journal spans", CaptureJournal, p.archive)
		}
		var ids func() hash.Hash
		if sa, ok := p.archive.(*StoreArchive); ok {
			if ids, err = journalIDHash(ctx, sa.Store); err != nil {
				return nil, fmt.Errorf("proxy: capture %s: %w", CaptureJournal, err)
			}
		}
		p.journal = newJournal(sink, ids, cfg.Sessions, cfg.Logf)
	}
	logPath := cfg.LogPath
	if logPath == "" && cfg.Store != nil {
		dir, err := cfg.Store.StateDir(ctx, "proxy")
		if err != nil {
			return nil, err
		}
		logPath = dir + "/" + LogFile
	}
	if logPath != "" && logPath != "-" {
		l, err := openSavingsLog(logPath, cfg.Now())
		if err != nil {
			if p.journal != nil {
				p.journal.close()
			}
			return nil, err
		}
		p.log = l
	}
	return p, nil
}

// Writer returns the archive writer the proxy's spans go to.
func (p *Proxy) Writer() string { return p.writer }

// Close writes what full capture has queued (journal.go), then releases
// the savings log. In-flight requests are not waited for.
func (p *Proxy) Close() error {
	if p.journal != nil {
		p.journal.close()
	}
	if p.log != nil {
		return p.log.close()
	}
	return nil
}

// Server is a proxy serving on its own listener, as Run returns it.
type Server struct {
	// Addr is the bound address ("127.0.0.1:PORT"; useful with port 0).
	Addr string
	// Proxy is the handler, for Idle, Usage and Stats without HTTP.
	Proxy *Proxy

	done chan struct{}
	err  error
}

// Wait blocks until the server has stopped: its context ended, every
// request it accepted has been answered and recorded, and the savings log
// is closed. Only then is the log complete, so a caller that reads it
// (the demo, the bench) waits here first. It returns what Serve returned.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Run listens on cfg.Listen (refusing non-loopback addresses unless
// AllowRemote, and an upstream that is the proxy's own address:
// ErrUpstreamIsSelf) and serves until ctx is done. It returns once the proxy
// accepts connections. The archive writer defaults to one named after the
// bound address.
func Run(ctx context.Context, cfg Config) (*Server, error) {
	ln, p, err := listen(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), Proxy: p, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := p.Serve(ctx, ln)
		if cerr := p.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("proxy: close savings log: %w", cerr)
		}
		s.err = err
	}()
	return s, nil
}

// Start is Run for callers that need only the bound address.
func Start(ctx context.Context, cfg Config) (string, error) {
	s, err := Run(ctx, cfg)
	if err != nil {
		return "", err
	}
	return s.Addr, nil
}

// Listen binds cfg.Listen and creates the proxy, for callers that want
// to Serve themselves.
func Listen(ctx context.Context, cfg Config) (net.Listener, *Proxy, error) { return listen(ctx, cfg) }

func listen(ctx context.Context, cfg Config) (net.Listener, *Proxy, error) {
	if err := checkListen(cfg.Listen, cfg.AllowRemote); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Writer == "" && cfg.Store != nil {
		w, err := cfg.Store.OwnWriterName(ctx, gitstore.FamilyProxy, ln.Addr().String())
		if err != nil {
			ln.Close()
			return nil, nil, err
		}
		cfg.Writer = w
	} else if cfg.Writer == "" {
		cfg.Writer = gitstore.WriterName("proxy-", ln.Addr().String())
	}
	p, err := New(ctx, cfg)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	if err := p.checkSelf(ctx, ln); err != nil {
		p.Close()
		ln.Close()
		return nil, nil, err
	}
	return ln, p, nil
}

// checkSelf refuses to serve on ln when the upstream is ln itself
// (checkUpstreamNotSelf), once per listen address.
func (p *Proxy) checkSelf(ctx context.Context, ln net.Listener) error {
	addr := ln.Addr().String()
	if p.selfChecked == addr {
		return nil
	}
	if err := checkUpstreamNotSelf(ctx, p.cfg.Upstream, ln.Addr()); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	p.selfChecked = addr
	return nil
}

// Serve serves on ln until ctx is done, then shuts down: it stops
// accepting, waits (up to 5 s) for the requests in flight to be answered
// and recorded, and returns. When the upstream is ln itself it closes ln
// and returns ErrUpstreamIsSelf without serving.
//
// What it waits for is the handlers (Idle), not the connections: a client
// may hold a connection it dialled but never sent a request on, which
// http.Server.Shutdown would wait 5 s for. Once no handler is running,
// such connections are closed.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	if err := p.checkSelf(ctx, ln); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- srv.Shutdown(sctx) }() // stop accepting, close idle connections
		err := p.Idle(sctx)
		if err == nil {
			select {
			case err = <-done:
			case <-time.After(100 * time.Millisecond):
				// Every handler has returned: what is left are
				// connections without a request.
				err = srv.Close()
				<-done
			}
		} else {
			srv.Close()
			<-done
		}
		<-errc
		if err != nil {
			return fmt.Errorf("proxy: shutdown: %w", err)
		}
		return nil
	}
}

// ServeHTTP routes: /lossless/* is the proxy's own surface; POST
// /v1/chat/completions and /v1/messages are compacted; everything else
// passes through unchanged. Before any of it, on every route, a request
// that has come round a loop is refused (checkLoop), a request whose
// Host does not name the proxy or that a browser sent for a web page is
// refused (admit), and the body gets its time limit.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.active.begin()
	defer p.active.end()
	if why := p.checkLoop(r); why != "" {
		p.refuseLoop(w, r, why)
		return
	}
	cors, ok := p.admit(w, r)
	if !ok {
		return
	}
	p.limitBody(w, r)
	if cors != "" {
		w = &corsWriter{ResponseWriter: w, origin: cors}
	}
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/lossless/") || path == "/lossless":
		p.surface(w, r)
	case r.Method == http.MethodPost && path == "/v1/chat/completions":
		p.handleChat(w, r, openAI)
	case r.Method == http.MethodPost && path == "/v1/messages":
		p.handleChat(w, r, anthropic)
	case r.Method == http.MethodPost && path == "/v1/responses":
		p.handleChat(w, r, responses)
	default:
		p.passthrough(w, r)
	}
}

func (p *Proxy) now() time.Time { return p.cfg.Now() }

func (p *Proxy) model(name string) *modelState {
	p.modelsMu.Lock()
	defer p.modelsMu.Unlock()
	m := p.models[name]
	if m == nil {
		m = &modelState{}
		p.models[name] = m
	}
	return m
}

// Detection (kind, window) outlives the request that triggers it: its
// result is cached for every later request, so a client that gives up
// must not leave a failed detection behind. It runs on a context detached
// from the request's, bounded by detectTimeout.
const detectTimeout = 3 * probeTimeout

// detachedContext is ctx without its cancellation, with detectTimeout.
func detachedContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), detectTimeout)
}

// windowFor returns the model's window, detecting it on first use and
// refreshing it in the background when stale. auth is the client's
// credentials: a backend behind a gateway may answer probes only with
// them.
func (p *Proxy) windowFor(ctx context.Context, kind, model string, ms *modelState, auth http.Header) (int, string) {
	ms.mu.Lock()
	first := ms.detectedAt.IsZero() && !ms.detecting
	ttl := 5 * time.Minute
	if kind == kindOllama || ms.detected == 0 {
		// Ollama's runtime window changes as models load; a backend that
		// said nothing yet (or failed to answer) is asked again soon.
		ttl = 30 * time.Second
	}
	stale := !first && !ms.detecting && time.Since(ms.detectedAt) > ttl
	if first || stale {
		ms.detecting = true
	}
	ms.mu.Unlock()
	if first {
		dctx, cancel := detachedContext(ctx)
		n, src := p.up.detectWindow(dctx, kind, model, auth)
		cancel()
		ms.setDetected(n, src, time.Now())
		if n > 0 {
			p.note(Event{Kind: "window", Model: model, Window: n, Detail: src})
		}
	} else if stale {
		p.refreshWindow(kind, model, ms, auth)
	}
	return ms.window(p.cfg.Window)
}

func (p *Proxy) refreshWindow(kind, model string, ms *modelState, auth http.Header) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), detectTimeout)
		defer cancel()
		n, src := p.up.detectWindow(ctx, kind, model, auth)
		ms.mu.Lock()
		old := ms.detected
		ms.mu.Unlock()
		ms.setDetected(n, src, time.Now())
		if n > 0 && n != old {
			p.note(Event{Kind: "window", Model: model, Window: n, Detail: src})
		}
	}()
}

// budgetFor is min(window × threshold, window − reserve), the reserve
// being the request's max_tokens or the configured one, at most a quarter
// of the window.
func (p *Proxy) budgetFor(window, maxOut int) int {
	reserve := p.cfg.Reserve
	if maxOut > 0 {
		reserve = maxOut
	}
	if reserve > window/4 {
		reserve = window / 4
	}
	return min(int(float64(window)*p.cfg.Threshold), window-reserve)
}

// exchange is one compactable request on its way.
type exchange struct {
	stateful bool // a Responses request with previous_response_id (responses.go)
	t0       time.Time
	d        dialect
	req      *request
	sess     *session
	ms       *modelState
	kind     string
	window   int
	winSrc   string
	budget   int
	before   int
	befSrc   string
	exact    bool
	res      *compactResult
	fail     string // fail-open reason
	sent     []byte
	sentCh   int
	sentTok  int
	sentSrc  string
	retried  bool
	// cut: the backend broke the answer off (relayFailed); relayed: the
	// answer has been relayed to its end or its cut.
	cut     bool
	relayed bool
	added   time.Duration
	// Summary calls made and their input characters, counted also for a
	// compaction that failed: the backend did that work either way.
	calls     int
	callChars int
	// auth is the client's credentials, for the proxy's own calls on its
	// behalf (detection, counting, summaries).
	auth http.Header
}

var errTooLarge = errors.New("body too large")

// readBody reads at most max bytes; errTooLarge means more remain (the
// bytes read so far are returned).
func readBody(r io.Reader, max, hint int64, buf []byte) ([]byte, error) {
	if hint > 0 && int64(cap(buf)) < min(hint, max)+1 {
		buf = make([]byte, 0, min(hint, max)+1)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return buf, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// bodyPool recycles request body buffers: a long conversation is resent
// whole every turn, and a fresh buffer each time is most of the garbage
// the proxy makes. Buffers over 4 MiB are not kept.
var bodyPool = sync.Pool{New: func() any { return new([]byte) }}

func (p *Proxy) handleChat(w http.ResponseWriter, r *http.Request, d dialect) {
	t0 := time.Now()
	ctx := r.Context()
	bp := bodyPool.Get().(*[]byte)
	body, err := readBody(r.Body, p.cfg.MaxBody, r.ContentLength, *bp)
	defer func() {
		// Nothing keeps the body past the request: spans are written and
		// memos hold hashes, not bytes.
		if cap(body) <= 4<<20 {
			*bp = body[:0]
			bodyPool.Put(bp)
		}
	}()
	if errors.Is(err, errTooLarge) {
		// Too large to read: pass it on as it streams.
		p.failOpen(nil, "body-too-large", fmt.Errorf("over %d bytes", p.cfg.MaxBody))
		p.forward(w, r, io.MultiReader(bytes.NewReader(body), r.Body), r.ContentLength, d, "body-too-large")
		return
	}
	if err != nil {
		if bodyTimedOut(r) {
			p.answerBodyTimeout(w, r)
		}
		return // the client went away while sending
	}
	x, err := p.prepare(ctx, r, body, d, t0)
	if err != nil {
		reason := "internal"
		var fo *failOpen
		if errors.As(err, &fo) {
			reason = fo.reason
		}
		p.failOpen(x, reason, err)
		p.forward(w, r, bytes.NewReader(body), int64(len(body)), d, reason)
		return
	}
	p.send(w, r, x)
}

// panicError turns a recovered panic into a fail-open error, logging the
// stack (the event and the stats keep only the message).
func (p *Proxy) panicError(v any) error {
	p.cfg.Logf("internal error: panic: %v\n%s", v, rawLog(debug.Stack()))
	return &failOpen{reason: "internal", err: fmt.Errorf("panic: %v", v)}
}

// prepare parses the request, counts it and, when it is over its budget,
// compacts it. Any panic on the way is recovered into a fail-open error:
// the caller then forwards the client's exact bytes. An error other than
// a panic means the body is not a chat request the proxy can read.
func (p *Proxy) prepare(ctx context.Context, r *http.Request, body []byte, d dialect, t0 time.Time) (x *exchange, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = p.panicError(v)
		}
	}()
	req := parseRequest(body, d)
	if req == nil {
		return nil, &failOpen{reason: "unparsable", err: errors.New("not a JSON object with a messages array")}
	}
	x = &exchange{t0: t0, d: d, req: req, sent: body, auth: authHeaders(r.Header)}
	x.sess = p.sessions.get(sessionKeyFor(r.Header, req), p.now())
	// A Responses request naming previous_response_id holds only the new
	// turn (the server has the rest): counted, forwarded as it is.
	x.stateful = req.stateful
	if p.journal != nil && !x.stateful {
		p.journal.observe(x.sess.key, req, p.now())
	}
	x.ms = p.model(req.model)
	x.kind = p.up.Kind(ctx, x.auth)
	p.plan(ctx, x)
	p.checkToolBudget(ctx, x)
	if x.window > 0 && x.before > x.budget && !x.stateful {
		p.compact(ctx, x, r)
	}
	return x, nil
}

// plan counts the request and sets its window and budget.
func (p *Proxy) plan(ctx context.Context, x *exchange) {
	runHook(p.hooks.plan)
	x.window, x.winSrc = p.windowFor(ctx, x.kind, x.req.model, x.ms, x.auth)
	chars := x.req.totalChars()
	x.before, x.befSrc = x.ms.estimate(chars, p.cfg.Margin), sourceEstimate
	x.sentCh, x.sentTok, x.sentSrc = chars, x.before, x.befSrc
	if x.window <= 0 {
		return
	}
	x.budget = p.budgetFor(x.window, x.req.maxOut)
	// Ask the tokenizer only when the estimate could be wrong enough to
	// matter: within a factor of 2 (4 before any calibration).
	_, samples := x.ms.calibration()
	factor := 2
	if samples == 0 {
		factor = 4
	}
	// Counting a long conversation exactly costs the backend a full
	// tokenization: skip it when the calibrated estimate is clearly over
	// (the compacted request is still counted exactly before it is sent).
	x.exact = p.up.canCountExact(x.kind, x.req.d)
	if x.before*factor < x.budget || samples >= 2 && x.before > x.budget*3/2 {
		return
	}
	msgs := x.req.body[x.req.msgsAt.start:x.req.msgsAt.end]
	if n, win, ok := p.up.countExact(ctx, x.kind, x.req, msgs, x.auth); ok {
		x.ms.observe(chars, n)
		x.before, x.befSrc = n, sourceExact
		x.sentTok, x.sentSrc = n, sourceExact
		if win > 0 && x.ms.learn(win, "vLLM /tokenize") {
			x.window, x.winSrc = x.ms.window(p.cfg.Window)
			x.budget = p.budgetFor(x.window, x.req.maxOut)
		}
	}
}

// compact runs the compaction, failing open on any error or panic.
func (p *Proxy) compact(ctx context.Context, x *exchange, r *http.Request) {
	x.sess.work.Lock()
	defer x.sess.work.Unlock()
	c := &compaction{
		p: p, r: x.req, s: x.sess, ms: x.ms, hdr: x.auth, path: r.URL.RequestURI(), kind: x.kind,
		window: x.window, budget: x.budget, before: x.before, exact: x.exact,
	}
	res, err := func() (res *compactResult, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = p.panicError(v)
			}
		}()
		return c.run(ctx)
	}()
	if res != nil {
		x.calls += res.calls
		x.callChars += res.callChars
	}
	if err != nil {
		reason := "internal"
		var fo *failOpen
		var se *summaryError
		switch {
		case errors.As(err, &fo):
			reason = fo.reason
		case errors.As(err, &se):
			reason = se.reason
		}
		if ctx.Err() != nil {
			reason = "client-gone"
		}
		p.failOpen(x, reason, err)
		x.res = nil
		x.sent, x.sentCh, x.sentTok, x.sentSrc = x.req.body, x.req.totalChars(), x.before, x.befSrc
		return
	}
	x.res = res
	x.sent, x.sentCh, x.sentTok, x.sentSrc = res.body, res.chars, res.after, res.afterSrc
}
