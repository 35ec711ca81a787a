package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Proxy is the compacting proxy, an http.Handler. Create it with New (or
// run it with Start); it is safe for concurrent use.
type Proxy struct {
	cfg      Config
	up       *upstream
	client   *http.Client
	sessions *sessionTable
	archive  Archive
	log      *savingsLog
	events   *eventRing
	stats    *statCounters
	started  time.Time
	writer   string

	modelsMu sync.Mutex
	models   map[string]*modelState

	// inflight counts requests being handled (a response can reach the
	// client before its handler has recorded it).
	inflight atomic.Int64
}

// Idle waits up to d until no request is being handled, and reports
// whether that happened. A client can have its whole answer before the
// proxy has finished recording the exchange; tests call Idle before they
// read Stats or Usage.
func (p *Proxy) Idle(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for p.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// New returns a proxy for cfg (start from DefaultConfig or Load). It needs
// an Archive or a Store.
func New(cfg Config) (*Proxy, error) {
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
	p := &Proxy{
		cfg:      cfg,
		sessions: newSessionTable(cfg.Sessions),
		events:   newEventRing(512),
		stats:    newStatCounters(),
		started:  cfg.Now(),
		models:   map[string]*modelState{},
	}
	p.client = &http.Client{Transport: &http.Transport{
		Proxy:                 nil, // the backend is addressed directly
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // relay the backend's bytes as they are
		ExpectContinueTimeout: time.Second,
	}}
	p.up = newUpstream(base, p.client, cfg.Backend)
	p.writer = cfg.Writer
	if p.writer == "" {
		p.writer = gitstore.WriterName("proxy-", cfg.Listen)
	}
	switch {
	case cfg.Archive != nil:
		p.archive = cfg.Archive
	case cfg.Store != nil:
		if err := gitstore.ValidWriter(p.writer); err != nil {
			return nil, err
		}
		p.archive = &StoreArchive{Store: cfg.Store, Writer: p.writer}
	default:
		return nil, errors.New("proxy: no archive: set Config.Store or Config.Archive")
	}
	logPath := cfg.LogPath
	if logPath == "" && cfg.Store != nil {
		dir, err := cfg.Store.StateDir("proxy")
		if err != nil {
			return nil, err
		}
		logPath = dir + "/" + LogFile
	}
	if logPath != "" && logPath != "-" {
		l, err := openSavingsLog(logPath, cfg.Now())
		if err != nil {
			return nil, err
		}
		p.log = l
	}
	return p, nil
}

// Writer returns the archive writer the proxy's spans go to.
func (p *Proxy) Writer() string { return p.writer }

// Close releases the savings log. In-flight requests are not waited for.
func (p *Proxy) Close() error {
	if p.log != nil {
		return p.log.close()
	}
	return nil
}

// Start listens on cfg.Listen (refusing non-loopback addresses unless
// AllowRemote) and serves until ctx is done. It returns the bound address
// ("127.0.0.1:PORT"; useful with port 0) once the proxy accepts
// connections. The archive writer defaults to one named after that
// address.
func Start(ctx context.Context, cfg Config) (string, error) {
	ln, p, err := listen(cfg)
	if err != nil {
		return "", err
	}
	go func() {
		_ = p.Serve(ctx, ln)
		p.Close()
	}()
	return ln.Addr().String(), nil
}

// Listen binds cfg.Listen and creates the proxy, for callers that want
// to Serve themselves.
func Listen(cfg Config) (net.Listener, *Proxy, error) { return listen(cfg) }

func listen(cfg Config) (net.Listener, *Proxy, error) {
	if err := checkListen(cfg.Listen, cfg.AllowRemote); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Writer == "" {
		cfg.Writer = gitstore.WriterName("proxy-", ln.Addr().String())
	}
	p, err := New(cfg)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, p, nil
}

// Serve serves on ln until ctx is done, then shuts down (waiting up to 5 s
// for requests in flight).
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-errc
		return nil
	}
}

// ServeHTTP routes: /lossless/* is the proxy's own surface; POST
// /v1/chat/completions and /v1/messages are compacted; everything else
// passes through unchanged.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	defer p.inflight.Add(-1)
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/lossless/") || path == "/lossless":
		p.surface(w, r)
	case r.Method == http.MethodPost && path == "/v1/chat/completions":
		p.handleChat(w, r, openAI)
	case r.Method == http.MethodPost && path == "/v1/messages":
		p.handleChat(w, r, anthropic)
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

// windowFor returns the model's window, detecting it on first use and
// refreshing it in the background when stale.
func (p *Proxy) windowFor(ctx context.Context, kind, model string, ms *modelState) (int, string) {
	ms.mu.Lock()
	first := ms.detectedAt.IsZero() && !ms.detecting
	ttl := 5 * time.Minute
	if kind == kindOllama {
		ttl = 30 * time.Second
	}
	stale := !first && !ms.detecting && time.Since(ms.detectedAt) > ttl
	if first || stale {
		ms.detecting = true
	}
	ms.mu.Unlock()
	if first {
		n, src := p.up.detectWindow(ctx, kind, model)
		ms.setDetected(n, src, time.Now())
		if n > 0 {
			p.note(Event{Kind: "window", Model: model, Window: n, Detail: src})
		}
	} else if stale {
		p.refreshWindow(kind, model, ms)
	}
	return ms.window(p.cfg.Window)
}

func (p *Proxy) refreshWindow(kind, model string, ms *modelState) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*probeTimeout)
		defer cancel()
		n, src := p.up.detectWindow(ctx, kind, model)
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
	t0      time.Time
	d       dialect
	req     *request
	sess    *session
	ms      *modelState
	kind    string
	window  int
	winSrc  string
	budget  int
	before  int
	befSrc  string
	exact   bool
	res     *compactResult
	fail    string // fail-open reason
	sent    []byte
	sentCh  int
	sentTok int
	sentSrc string
	retried bool
	added   time.Duration
	calls   int // summary calls made, also by a compaction that failed
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
		return // the client went away while sending
	}
	req := parseRequest(body, d)
	if req == nil {
		p.failOpen(nil, "unparsable", errors.New("not a JSON object with a messages array"))
		p.forward(w, r, bytes.NewReader(body), int64(len(body)), d, "unparsable")
		return
	}
	x := &exchange{t0: t0, d: d, req: req, sent: body}
	x.sess = p.sessions.get(sessionKeyFor(r.Header, req), p.now())
	x.ms = p.model(req.model)
	x.kind = p.up.Kind(ctx)
	p.plan(ctx, x, r.Header)
	if x.window > 0 && x.before > x.budget {
		p.compact(ctx, x, r)
	}
	p.send(w, r, x)
}

// plan counts the request and sets its window and budget.
func (p *Proxy) plan(ctx context.Context, x *exchange, hdr http.Header) {
	x.window, x.winSrc = p.windowFor(ctx, x.kind, x.req.model, x.ms)
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
	if n, win, ok := p.up.countExact(ctx, x.kind, x.req, msgs, hdr); ok {
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
		p: p, r: x.req, s: x.sess, ms: x.ms, hdr: r.Header, path: r.URL.RequestURI(), kind: x.kind,
		window: x.window, budget: x.budget, before: x.before, exact: x.exact,
	}
	res, err := func() (res *compactResult, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &failOpen{reason: "internal", err: fmt.Errorf("panic: %v", v)}
			}
		}()
		return c.run(ctx)
	}()
	if res != nil {
		x.res = res
		x.calls += res.calls
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
	x.sent, x.sentCh, x.sentTok, x.sentSrc = res.body, res.chars, res.after, res.afterSrc
}

// send forwards x.sent and relays the answer. An overflow error for a
// request the proxy did not (or not enough) compact teaches it the window
// and is retried once, compacted.
func (p *Proxy) send(w http.ResponseWriter, r *http.Request, x *exchange) {
	ctx := r.Context()
	for {
		x.added = time.Since(x.t0)
		up, err := p.upstreamRequest(ctx, r, bytes.NewReader(x.sent), int64(len(x.sent)))
		if err != nil {
			p.badGateway(w, x.d, err)
			return
		}
		resp, err := p.client.Do(up)
		if err != nil {
			if ctx.Err() == nil {
				p.badGateway(w, x.d, err)
			}
			return
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 || resp.StatusCode == http.StatusInternalServerError {
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			ov, isOverflow := parseOverflow(resp.StatusCode, data)
			if isOverflow && !x.retried && p.learnOverflow(ctx, x, ov, r) {
				x.retried = true
				continue
			}
			writeBuffered(w, resp, data)
			p.finish(x, resp.StatusCode, nil)
			return
		}
		scan := newUsageScan(resp)
		err = relay(w, resp, scan)
		resp.Body.Close()
		scan.finish()
		if err != nil && ctx.Err() == nil {
			p.cfg.Logf("relay: %v", err)
		}
		p.finish(x, resp.StatusCode, scan)
		return
	}
}

// learnOverflow takes what an overflow error says (the window, the
// prompt's size) and compacts again. It reports whether there is a new
// request to send.
func (p *Proxy) learnOverflow(ctx context.Context, x *exchange, ov overflow, r *http.Request) bool {
	model := x.req.model
	if ov.window > 0 && x.ms.learn(ov.window, "overflow error") {
		p.note(Event{Kind: "window", Model: model, Window: ov.window, Detail: "overflow error"})
	}
	if ov.prompt > 0 {
		x.ms.observe(x.sentCh, ov.prompt)
	}
	p.stats.add(func(s *statCounters) { s.overflows++ })
	x.window, x.winSrc = x.ms.window(p.cfg.Window)
	if x.window <= 0 {
		return false
	}
	x.budget = p.budgetFor(x.window, x.req.maxOut)
	x.before, x.befSrc = x.ms.estimate(x.req.totalChars(), p.cfg.Margin), sourceEstimate
	if x.res == nil && ov.prompt > 0 {
		x.before, x.befSrc = ov.prompt, sourceReported
	}
	if x.before <= x.budget {
		x.before = x.budget + 1 // the backend says it does not fit
	}
	x.res, x.fail = nil, ""
	p.note(Event{Kind: "overflow", Session: x.sess.key, Model: model, Window: x.window, Before: x.before, Detail: "backend rejected the request; compacting and retrying once"})
	p.compact(ctx, x, r)
	return x.res != nil
}

func (p *Proxy) badGateway(w http.ResponseWriter, d dialect, err error) {
	msg := "git-lossless proxy: upstream " + p.up.base.String() + " unreachable: " + err.Error()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	var body []byte
	if d == anthropic {
		body, _ = marshalNoEscape(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": msg}})
	} else {
		body, _ = marshalNoEscape(map[string]any{"error": map[string]any{"message": msg, "type": "upstream_error", "code": "upstream_unreachable"}})
	}
	w.Write(body)
	p.stats.add(func(s *statCounters) { s.upstreamErrors++ })
}

// forward sends a body the proxy did not parse (too large, not JSON) on
// as it is, relaying the answer.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body io.Reader, length int64, d dialect, reason string) {
	up, err := p.upstreamRequest(r.Context(), r, body, length)
	if err != nil {
		p.badGateway(w, d, err)
		return
	}
	resp, err := p.client.Do(up)
	if err != nil {
		if r.Context().Err() == nil {
			p.badGateway(w, d, err)
		}
		return
	}
	defer resp.Body.Close()
	relay(w, resp, nil)
	p.stats.add(func(s *statCounters) { s.chatRequests++; s.forwarded++ })
	if p.log != nil {
		l := LogLine{TS: p.now(), Route: d.String(), Status: resp.StatusCode, FailOpen: reason}
		if err := p.log.write(&l); err != nil {
			p.cfg.Logf("warning: savings log: %v", err)
		}
	}
}

// passthrough relays any other route unchanged, streaming both ways.
func (p *Proxy) passthrough(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.ContentLength == 0 {
		body = nil
	}
	up, err := p.upstreamRequest(r.Context(), r, body, r.ContentLength)
	if err != nil {
		p.badGateway(w, openAI, err)
		return
	}
	resp, err := p.client.Do(up)
	if err != nil {
		if r.Context().Err() == nil {
			p.badGateway(w, openAI, err)
		}
		return
	}
	defer resp.Body.Close()
	relay(w, resp, nil)
	p.stats.add(func(s *statCounters) { s.passthrough++ })
}

// finish records the exchange: session usage, calibration, silent
// truncation, stats, events and the savings log.
func (p *Proxy) finish(x *exchange, status int, scan *usageScan) {
	now := p.now()
	reported := 0
	if scan != nil && scan.found {
		reported = scan.prompt
	}
	truncated := false
	if reported > 0 && status/100 == 2 {
		truncated = p.checkTruncation(x, reported)
		if !truncated {
			x.ms.observe(x.sentCh, reported)
			if x.ms.unlearnTruncation(reported) {
				x.window, x.winSrc = x.ms.window(p.cfg.Window)
			}
		}
		if x.kind == kindOllama {
			x.ms.mu.Lock()
			src := x.ms.detectedSrc
			x.ms.mu.Unlock()
			if src != "ollama /api/ps" {
				p.refreshWindow(x.kind, x.req.model, x.ms) // the model is loaded now: ps knows its runtime window
			}
		}
	}

	s := x.sess
	s.mu.Lock()
	s.requests++
	s.model, s.route = x.req.model, x.d
	s.window, s.winSrc = x.window, x.winSrc
	s.before, s.after = x.before, x.sentTok
	s.used, s.usedSrc = x.sentTok, x.sentSrc
	if reported > 0 && !truncated {
		s.used, s.usedSrc = reported, sourceReported
	}
	s.updated = now
	if truncated {
		s.truncations++
	}
	if x.res != nil {
		s.compactions++
		s.lastCompact = now
		if x.res.summarised {
			s.summaries++
		}
		if x.res.reused {
			s.reused++
		}
		s.spills += x.res.spills
	}
	s.mu.Unlock()

	ms := float64(x.added.Microseconds()) / 1000
	compacted := x.res != nil
	p.stats.add(func(st *statCounters) {
		st.chatRequests++
		if compacted {
			st.compacted++
			st.tokensBefore += int64(x.before)
			st.tokensAfter += int64(x.sentTok)
			if x.res.summarised {
				st.summaries++
			}
			if x.res.reused {
				st.reused++
			}
			st.spills += x.res.spills
			st.spans += len(x.res.spans)
			st.addedCompacting.add(ms)
		} else {
			st.forwarded++
			st.addedPlain.add(ms)
		}
		st.summaryCalls += x.calls
		if truncated {
			st.truncations++
		}
		if x.retried {
			st.retries++
		}
	})
	if compacted {
		ev := Event{Kind: "compaction", Session: s.key, Model: x.req.model, Window: x.window, Before: x.before, After: x.sentTok,
			Spans: x.res.spans, Reused: x.res.reused, Spills: x.res.spills, AddedMs: ms, Source: x.sentSrc}
		p.note(ev)
		what := "summarised"
		if x.res.reused {
			what = "summary reused"
		}
		if len(x.res.spans) > 0 {
			what += ", archived " + strings.Join(x.res.spans, " ")
		}
		p.cfg.Logf("compacted %s (%s): %d -> %d tokens of %d (%s), %s", s.key, x.req.model, x.before, x.sentTok, x.window, x.sentSrc, what)
	} else if p.cfg.Verbose {
		p.cfg.Logf("forwarded %s (%s): %d tokens of %d (%s), HTTP %d", s.key, x.req.model, x.sentTok, x.window, x.sentSrc, status)
	}
	if p.log != nil {
		l := LogLine{
			TS: now, Session: s.key, Model: x.req.model, Route: x.d.String(), Status: status,
			Window: x.window, Before: x.before, After: x.sentTok, CountSource: x.sentSrc, Reported: reported,
			Compacted: compacted, FailOpen: x.fail, Truncated: truncated, Retried: x.retried, AddedMs: ms,
		}
		if x.res != nil {
			l.Summarised, l.Reused, l.Spills, l.Spans = x.res.summarised, x.res.reused, x.res.spills, x.res.spans
			l.SummaryCalls, l.SummaryChars, l.Folded = x.res.calls, x.res.callChars, x.res.folded
		}
		if err := p.log.write(&l); err != nil {
			p.cfg.Logf("warning: savings log: %v", err)
		}
	}
}

// Truncation checks apply to prompts of at least truncMinTokens.
const truncMinTokens = 1024

// checkTruncation reports whether the backend read fewer prompt tokens
// than were sent (Ollama cuts the front of an over-long prompt without an
// error), and if so lowers the window to what it read.
func (p *Proxy) checkTruncation(x *exchange, reported int) bool {
	if x.sentTok < truncMinTokens || reported < 256 {
		return false
	}
	truncated := false
	_, samples := x.ms.calibration()
	switch {
	case x.sentSrc == sourceExact:
		truncated = reported < x.sentTok*9/10-8
	case samples >= 2 && (x.kind == kindOllama || x.kind == kindOpenAI):
		// A calibrated estimate is within about 20% on this traffic: a
		// backend that read less than 60% of it cut the prompt. (Servers
		// known to reject over-long prompts are not suspected on an
		// estimate.)
		truncated = float64(reported) < 0.6*float64(x.sentTok)
	}
	if !truncated {
		return false
	}
	if x.ms.learn(reported, "truncation") {
		p.note(Event{Kind: "window", Model: x.req.model, Window: reported, Detail: "silent truncation"})
	}
	x.window, x.winSrc = x.ms.window(p.cfg.Window)
	p.note(Event{Kind: "truncation", Session: x.sess.key, Model: x.req.model, Before: x.sentTok, After: reported,
		Detail: fmt.Sprintf("the backend read %d tokens of about %d sent: it cut the front of the prompt", reported, x.sentTok)})
	p.cfg.Logf("warning: silent truncation: session %s sent about %d tokens, the backend read %d; the window is lowered to %d", x.sess.key, x.sentTok, reported, reported)
	return true
}

// failOpen records a compaction that gave up.
func (p *Proxy) failOpen(x *exchange, reason string, err error) {
	ev := Event{Kind: "fail-open", Reason: reason}
	if err != nil {
		ev.Detail = err.Error()
	}
	if x != nil {
		x.fail = reason
		ev.Session, ev.Model, ev.Before, ev.Window = x.sess.key, x.req.model, x.before, x.window
	}
	p.note(ev)
	p.stats.add(func(s *statCounters) { s.failOpen[reason]++ })
	p.cfg.Logf("fail-open (%s): %v; the request goes upstream as the client sent it", reason, err)
}

// writeSpans archives spans durably.
func (p *Proxy) writeSpans(ctx context.Context, spans []*Span) error {
	if sa, ok := p.archive.(interface {
		WriteSpans(context.Context, []*Span) error
	}); ok {
		return sa.WriteSpans(ctx, spans)
	}
	for _, sp := range spans {
		if err := p.archive.WriteSpan(ctx, sp); err != nil {
			return err
		}
	}
	return nil
}
