package proxy

// The second half of an exchange: sending it upstream (compacted or as it
// came), relaying the response, learning a window from an overflow, and
// finishing (the request log, the truncation check, failing open).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// errBodyParse is how much of an error response is read to tell whether
// it reports an overflow; the rest is relayed unread.
const errBodyParse = 1 << 20

// trackWriter notes whether anything of the response has been written,
// so that a panic before that can still fail open.
type trackWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackWriter) WriteHeader(code int) { t.wrote = true; t.ResponseWriter.WriteHeader(code) }

func (t *trackWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

func (t *trackWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *trackWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// send forwards x.sent and relays the answer. An overflow error for a
// request the proxy did not (or not enough) compact teaches it the window
// and is retried once, compacted. A panic before the answer has started
// fails open (the client's exact bytes go upstream); after, the panic is
// logged and counted, and an answer it interrupted is aborted.
func (p *Proxy) send(w http.ResponseWriter, r *http.Request, x *exchange) {
	tw := &trackWriter{ResponseWriter: w}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v) // abortCut: the backend cut the answer, recorded already
		}
		err := p.panicError(v)
		if tw.wrote {
			// Too late to fail open: the answer has started. The proxy
			// goes on serving; an answer the panic interrupted is cut off
			// as a cut (abortCut), never ended as if complete.
			p.note(Event{Kind: "fail-open", Reason: "internal-after-answer", Session: x.sess.key, Model: x.req.model, Detail: err.Error()})
			p.stats.add(func(s *statCounters) { s.failOpen["internal-after-answer"]++ })
			if !x.relayed {
				abortCut(tw)
			}
			return
		}
		p.failOpen(x, "internal", err)
		p.forward(w, r, bytes.NewReader(x.req.body), int64(len(x.req.body)), x.d, "internal")
	}()
	p.sendUpstream(tw, r, x)
}

func (p *Proxy) sendUpstream(w http.ResponseWriter, r *http.Request, x *exchange) {
	ctx := r.Context()
	for {
		runHook(p.hooks.send)
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
			// Read enough to recognise an overflow; relay everything.
			head, rerr := io.ReadAll(io.LimitReader(resp.Body, errBodyParse+1))
			whole := rerr == nil && len(head) <= errBodyParse
			ov, isOverflow := parseOverflow(resp.StatusCode, head)
			if isOverflow && whole && !x.retried {
				resp.Body.Close()
				if p.learnOverflow(ctx, x, ov, r) {
					x.retried = true
					continue
				}
				writeBuffered(w, resp, head)
				x.relayed = true
				p.finish(x, resp.StatusCode, nil)
				return
			}
			var rest io.Reader = resp.Body
			if rerr != nil {
				// The backend failed inside its error answer: relay what
				// came, then the failure.
				rest = errReader{rerr}
			}
			err := relayFrom(w, resp, io.MultiReader(bytes.NewReader(head), rest), nil)
			resp.Body.Close()
			x.relayed = true
			x.cut = p.relayFailed(r, x.sess.key, x.req.model, err)
			p.finish(x, resp.StatusCode, nil)
			if x.cut {
				abortCut(w)
			}
			return
		}
		scan := newUsageScan(resp)
		var tee io.Writer = scan
		if p.hooks.relay != nil {
			tee = hookWriter{scan, p.hooks.relay}
		}
		err = relay(w, resp, tee)
		resp.Body.Close()
		x.relayed = true
		scan.finish()
		x.cut = p.relayFailed(r, x.sess.key, x.req.model, err)
		p.finish(x, resp.StatusCode, scan)
		if x.cut {
			abortCut(w)
		}
		return
	}
}

// relayFailed looks at what relaying an answer returned: a cut by the
// backend (while the client is still there) is counted, noted and logged,
// and reported true, and the caller must then record the exchange and
// abortCut the answer; any other error (the client left) is logged.
func (p *Proxy) relayFailed(r *http.Request, session, model string, err error) bool {
	if err == nil || r.Context().Err() != nil {
		return false
	}
	var cut *cutError
	if !errors.As(err, &cut) {
		p.cfg.Logf("relay: %v", err)
		return false
	}
	p.stats.add(func(s *statCounters) { s.upstreamCuts++ })
	p.note(Event{Kind: "upstream-cut", Session: session, Model: model, Detail: r.Method + " " + r.URL.Path + ": " + cut.Error()})
	p.cfg.Logf("upstream cut: %s %s: %v; the client's answer is broken off too", r.Method, r.URL.Path, cut)
	return true
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
		switch {
		case bodyTimedOut(r):
			p.answerBodyTimeout(w, r)
		case r.Context().Err() == nil:
			p.badGateway(w, d, err)
		}
		return
	}
	err = relay(w, resp, nil)
	resp.Body.Close()
	cut := p.relayFailed(r, "", "", err)
	p.stats.add(func(s *statCounters) { s.chatRequests++; s.forwarded++ })
	if p.log != nil {
		l := LogLine{TS: p.now(), Route: d.String(), Status: resp.StatusCode, FailOpen: reason, UpstreamCut: cut}
		if err := p.log.write(&l); err != nil {
			p.cfg.Logf("warning: savings log: %v", err)
		}
	}
	if cut {
		abortCut(w)
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
		switch {
		case bodyTimedOut(r):
			p.answerBodyTimeout(w, r)
		case r.Context().Err() == nil:
			p.badGateway(w, openAI, err)
		}
		return
	}
	err = relay(w, resp, nil)
	resp.Body.Close()
	cut := p.relayFailed(r, "", "", err)
	p.stats.add(func(s *statCounters) { s.passthrough++ })
	if cut {
		abortCut(w)
	}
}

// finish records the exchange: session usage, calibration, silent
// truncation, stats, events and the savings log.
func (p *Proxy) finish(x *exchange, status int, scan *usageScan) {
	runHook(p.hooks.finish)
	now := p.now()
	reported := 0
	if scan != nil && scan.found {
		reported = scan.prompt
	}
	truncated := false
	if reported > 0 && status/100 == 2 {
		truncated = p.checkTruncation(x, reported)
		if !truncated && !p.atKnownWindow(x, reported) {
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
				p.refreshWindow(x.kind, x.req.model, x.ms, x.auth) // the model is loaded now: ps knows its runtime window
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
			if x.res.recallLines > 0 {
				st.recalls++
				st.recallLines += x.res.recallLines
			}
			if x.res.recallErr != nil {
				st.recallErrors++
			}
		} else {
			st.forwarded++
			st.addedPlain.add(ms)
		}
		if x.stateful {
			st.stateful++
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
			Spans: x.res.spans, Reused: x.res.reused, Spills: x.res.spills, AddedMs: ms, Source: x.sentSrc,
			RecallLines: x.res.recallLines}
		p.note(ev)
		what := "summarised"
		if x.res.reused {
			what = "summary reused"
		}
		if len(x.res.spans) > 0 {
			what += ", archived " + strings.Join(x.res.spans, " ")
		}
		if x.res.recallLines > 0 {
			what += fmt.Sprintf(", recalled %d lines from %s", x.res.recallLines, strings.Join(x.res.recallSpans, " "))
		}
		if x.res.recallErr != nil {
			what += fmt.Sprintf(", recall failed open: %v", x.res.recallErr)
		}
		p.cfg.Logf("compacted %s (%s): %d -> %d tokens of %d (%s), %s", s.key, x.req.model, x.before, x.sentTok, x.window, x.sentSrc, what)
	} else if p.cfg.Verbose {
		p.cfg.Logf("forwarded %s (%s): %d tokens of %d (%s), HTTP %d", s.key, x.req.model, x.sentTok, x.window, x.sentSrc, status)
	}
	if p.log != nil {
		l := LogLine{
			TS: now, Session: s.key, Model: x.req.model, Route: x.d.String(), Status: status,
			Window: x.window, Before: x.before, After: x.sentTok, CountSource: x.sentSrc, Reported: reported,
			Compacted: compacted, Stateful: x.stateful, FailOpen: x.fail, Truncated: truncated, Retried: x.retried, UpstreamCut: x.cut, AddedMs: ms,
		}
		// Summary calls are logged for failed compactions too, as the
		// stats count them: savings and stats must agree.
		l.SummaryCalls, l.SummaryChars = x.calls, x.callChars
		if x.res != nil {
			l.Summarised, l.Reused, l.Spills, l.Spans = x.res.summarised, x.res.reused, x.res.spills, x.res.spans
			l.Folded = x.res.folded
			l.SpanMs = float64(x.res.spanWrite.Microseconds()) / 1000
			if x.res.recallLines > 0 {
				l.Recalls, l.RecallLines = 1, x.res.recallLines
			}
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
//
// With an exact count the test is direct. With an estimate it must hold
// before any calibration too (the first long request of a session is the
// one most likely to be cut), and must not trust a calibration that a
// cut report could already have bent: until two samples agree, the
// request is compared with the plain bytes/3.5 estimate.
func (p *Proxy) checkTruncation(x *exchange, reported int) bool {
	if x.sentTok < truncMinTokens || reported < 256 {
		return false
	}
	truncated := false
	switch {
	case x.sentSrc == sourceExact:
		truncated = reported < x.sentTok*9/10-8
	case x.kind == kindOllama || x.kind == kindOpenAI:
		// (Servers known to reject over-long prompts are not suspected on
		// an estimate.)
		est, floor, over := x.sentTok, 0.6, 1.125
		if _, samples := x.ms.calibration(); samples < 2 {
			// The raw estimate is within a factor of about 1.5 on code and
			// prose; dense JSON and CJK read more tokens, never fewer.
			est, floor, over = rawEstimate(x.sentCh, p.cfg.Margin), 0.5, 1.25
		}
		truncated = float64(reported) < floor*float64(est)
		// A report pinned at (or just under) a window the backend may
		// have, for a request estimated well over it, is a cut.
		for _, w := range p.cutWindows(x) {
			if nearWindow(reported, w) && float64(est) > over*float64(w) {
				truncated = true
			}
		}
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

// rawEstimate is the uncalibrated token estimate of chars (estimate
// basis), with the configured margin.
func rawEstimate(chars int, margin float64) int {
	return int(math.Ceil(float64(chars) / charsPerToken * margin))
}

// nearWindow reports whether a prompt count sits at or just under window
// w (within an eighth): where a backend that cuts prompts leaves them.
func nearWindow(n, w int) bool { return w > 0 && n <= w && n >= w-w/8 }

// cutWindows lists the windows a backend that truncates silently might be
// cutting prompts to: the detected one, Ollama's default, the learned and
// configured ones. Backends that reject over-long prompts list none.
func (p *Proxy) cutWindows(x *exchange) []int {
	if x.kind != kindOllama && x.kind != kindOpenAI {
		return nil
	}
	ms := x.ms
	ms.mu.Lock()
	ws := []int{ms.detected, ms.learned, p.cfg.Window, x.window}
	ms.mu.Unlock()
	if x.kind == kindOllama {
		ws = append(ws, ollamaDefaultWindow)
	}
	return ws
}

// atKnownWindow reports whether a reported count sits at a window the
// backend may cut to. Such a report does not calibrate the estimate: if
// it was a cut that went unnoticed, it would teach the estimate that
// prompts are smaller than they are, and every later truncation would go
// unnoticed too.
func (p *Proxy) atKnownWindow(x *exchange, reported int) bool {
	for _, w := range p.cutWindows(x) {
		if nearWindow(reported, w) {
			return true
		}
	}
	return false
}

// failOpen records a compaction that gave up.
func (p *Proxy) failOpen(x *exchange, reason string, err error) {
	ev := Event{Kind: "fail-open", Reason: reason}
	if err != nil {
		ev.Detail = err.Error()
	}
	if x != nil {
		x.fail = reason
		ev.Before, ev.Window = x.before, x.window
		if x.sess != nil {
			ev.Session = x.sess.key
		}
		if x.req != nil {
			ev.Model = x.req.model
		}
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
