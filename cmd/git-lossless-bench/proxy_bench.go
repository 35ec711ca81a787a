package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/proxy"
)

// benchProxyOpts configures `git lossless bench proxy`.
type benchProxyOpts struct {
	turns    int
	seed     uint64
	backend  string // stub kind: openai (estimate), llamacpp or vllm (exact counts)
	window   int
	clients  int
	duration time.Duration
	fsync    bool
	pairs    int // paired repeats of a fitting request, via the proxy and direct
}

func defaultBenchProxyOpts() benchProxyOpts {
	return benchProxyOpts{turns: 40, seed: 1, backend: stubbackend.OpenAI, window: 8192, clients: 16, duration: 2 * time.Second, fsync: true, pairs: 200}
}

// benchProxyResult is what one run measured. Added latencies are in ms.
type benchProxyResult struct {
	TokensBefore, TokensAfter int64
	Compactions, Summaries    int
	Reused, Spills, FailOpen  int
	Plain, Compacting         []float64 // per session request, client-measured
	PlainInt, CompactingInt   []float64 // per session request, as the proxy logged it
	// The compacting requests split by whether they wrote a span (a new
	// summary or a spill: the durable archive write is in their latency)
	// or were served from the memo (no write).
	SpanWriting, MemoReuse       []float64
	SpanWritingInt, MemoReuseInt []float64
	SpanMs                       []float64 // the span write alone, as the proxy logged it
	// Pairs: a fitting request sent many times, through the proxy and
	// directly in turn; one added latency per pair.
	Pairs []float64
	// JournalPairs: fitting requests of growing sessions (one or two new
	// messages each) sent through a proxy with full capture on and one
	// with it off, in turn; one difference per pair. Journal is what the
	// capturing proxy archived.
	JournalPairs            []float64
	Journal                 proxy.JournalStats
	HopMs                   float64
	ProxyRPS, DirectRPS     float64
	LoadViaMs, LoadDirectMs []float64 // per-request latency under the concurrent load
	Answered                int
	// Recall: the session's last request with a question naming its
	// first file, through a proxy with stale recall on and one with it
	// off, paired (proxy_bench_recall.go).
	Recall *recallPairs
}

func pctl(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	return c[int(p*float64(len(c)-1)+0.5)]
}

// runBenchProxy is `git lossless bench proxy`: a scripted agent session
// through the real proxy (and its durable span writes) against an
// in-process stub upstream, then pass-through throughput.
func runBenchProxy(ctx context.Context, e *env, o benchProxyOpts) error {
	fmt.Fprintf(e.Stdout, "git lossless bench proxy --turns %d --seed %d\n", o.turns, o.seed)
	fmt.Fprintf(e.Stdout, "  machine   %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(e.Stdout, "  upstream  in-process stub (%s, %s-token window, rejects larger), loopback HTTP\n", o.backend, cli.Commas(int64(o.window)))
	fmt.Fprintf(e.Stdout, "  session   %d-turn scripted agent session: a tool call reading a 2-12 KB file every turn, a user message every 5th\n", o.turns)
	fsync := "fsync on (temp object, fsync, rename, ref lock)"
	if !o.fsync {
		fsync = "fsync off"
	}
	parent, _ := benchParent()
	fmt.Fprintf(e.Stdout, "  archive   temporary git archive under %s, spans written before forwarding, %s\n", parent, fsync)
	fmt.Fprintf(e.Stdout, "  disk      %s\n\n", diskLine(filepath.Join(parent, fmt.Sprintf("floor-%d", os.Getpid()))))
	r, err := benchProxy(ctx, o)
	if err != nil {
		return err
	}
	all := append(append([]float64(nil), r.Plain...), r.Compacting...)
	fmt.Fprintf(e.Stdout, "tokens_before=%d tokens_after=%d compactions=%d p50_added_ms=%.2f p95_added_ms=%.2f\n\n",
		r.TokensBefore, r.TokensAfter, r.Compactions, pctl(all, 0.5), pctl(all, 0.95))
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	target := func(v []float64, limit float64, what string) string {
		if len(v) == 0 {
			return what + ": no sample"
		}
		if pctl(v, 0.5) <= limit {
			return what + ": MET"
		}
		return what + ": MISSED"
	}
	row := func(name string, v, internal []float64, tgt string) {
		in := ""
		if len(internal) > 0 {
			in = fmt.Sprintf("%.3f", pctl(internal, 0.5))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%s\t%s\n", name, len(v), pctl(v, 0.5), pctl(v, 0.95), in, tgt)
	}
	fmt.Fprintln(tw, "added latency (ms)\trequests\tp50\tp95\tproxy-internal p50\ttarget")
	row("non-compacting, session turns", r.Plain, r.PlainInt, target(r.Plain, 0.5, "p50 <= 0.5 ms"))
	row("non-compacting, paired repeats", r.Pairs, nil, target(r.Pairs, 0.5, "p50 <= 0.5 ms"))
	row("non-compacting, journal capture on - off (paired)", r.JournalPairs, nil, target(r.JournalPairs, 0.5, "p50 <= 0.5 ms"))
	row("compacting, all", r.Compacting, r.CompactingInt, target(r.Compacting, 3, "p50 <= 3 ms incl. the durable span write"))
	row("compacting, writing a span", r.SpanWriting, r.SpanWritingInt, target(r.SpanWriting, 3, "p50 <= 3 ms incl. the durable span write"))
	row("  the span write alone", r.SpanMs, nil, "")
	row("compacting, summary from the memo", r.MemoReuse, r.MemoReuseInt, "(no span written)")
	row("all session requests", all, nil, "reference: 6.27 / 11.01 ms")
	if rc := r.Recall; rc != nil {
		row("compacted, stale recall on", rc.On, nil, "(summary from the memo)")
		row("compacted, same request, recall off", rc.Off, nil, "(summary from the memo)")
		row("  recall on - off, paired", rc.Diff, nil, target(rc.Diff, 1, "p50 <= 1 ms"))
	}
	tw.Flush()
	fmt.Fprintf(e.Stdout, "\n  %d/%d turns answered; %d compactions (%d new summaries, %d from the memo), %d spills, %d fail-open\n",
		r.Answered, o.turns, r.Compactions, r.Summaries, r.Reused, r.Spills, r.FailOpen)
	if r.TokensBefore > 0 {
		fmt.Fprintf(e.Stdout, "  kept out of the window: %s tokens (%.1f%%)\n", cli.Commas(r.TokensBefore-r.TokensAfter), 100*float64(r.TokensBefore-r.TokensAfter)/float64(r.TokensBefore))
	}
	fmt.Fprintf(e.Stdout, "  journal capture: %d messages archived in %d appends (%d already stored), %d dropped, %d failed\n",
		r.Journal.Messages, r.Journal.Batches, r.Journal.Duplicates, r.Journal.Dropped, r.Journal.Failed)
	if rc := r.Recall; rc != nil {
		fmt.Fprintf(e.Stdout, "  stale recall: %d of %d requests through the recall proxy quoted archived lines (%d lines)\n", rc.Recalls, len(rc.On)+3, rc.Lines)
	}
	fmt.Fprintf(e.Stdout, "  pass-through, %d concurrent clients, %s: %s req/s through the proxy, %s req/s direct\n",
		o.clients, o.duration, cli.Commas(int64(r.ProxyRPS)), cli.Commas(int64(r.DirectRPS)))
	fmt.Fprintf(e.Stdout, "  under that load: p50 latency %.3f ms through the proxy, %.3f ms direct (%d and %d requests)\n",
		pctl(r.LoadViaMs, 0.5), pctl(r.LoadDirectMs, 0.5), len(r.LoadViaMs), len(r.LoadDirectMs))
	fmt.Fprintf(e.Stdout, "\nAdded = round trip through the proxy - the stub's own time for the forwarded request - one direct\n")
	fmt.Fprintf(e.Stdout, "round trip's overhead (%.3f ms). Session requests that fit are sent 5 more times each way and the\n", r.HopMs)
	fmt.Fprintf(e.Stdout, "medians compared; paired repeats send the session's first request %d times each way, in turn, one\n", o.pairs)
	fmt.Fprintf(e.Stdout, "difference per pair. Journal pairs send %d turns of 8-turn sessions through a second proxy on the same\n", o.pairs)
	fmt.Fprintf(e.Stdout, "archive with lossless.proxy.capture journal and through the first, in turn, one difference per pair\n")
	fmt.Fprintf(e.Stdout, "(its background appends run while later requests are measured); the stale-recall pairs send the\n")
	fmt.Fprintf(e.Stdout, "session's last request, with a question naming its first file, %d times through a proxy with recall\n", o.pairs)
	fmt.Fprintf(e.Stdout, "on and one with it off, in turn. Other compacting requests are measured once and include their\n")
	fmt.Fprintf(e.Stdout, "summary calls to the stub and, when they write a span, the fsynced span write. Reference\n")
	fmt.Fprintf(e.Stdout, "(context-guardian, over all requests):\n")
	fmt.Fprintf(e.Stdout, "tokens_before=1130722 tokens_after=161141 compactions=27 p50_added_ms=6.27 p95_added_ms=11.01.\n")
	if r.Answered != o.turns {
		return cli.FailedError{Msg: fmt.Sprintf("bench proxy: %d of %d turns answered", r.Answered, o.turns)}
	}
	return nil
}

// benchProxy runs the measurement.
func benchProxy(ctx context.Context, o benchProxyOpts) (*benchProxyResult, error) {
	// The archive lives where repositories do (benchParent), not in the
	// system temp dir, whose file creation can cost far more.
	parent, err := benchParent()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("bench proxy: %w", err)
	}
	root, err := os.MkdirTemp(parent, "proxy-")
	if err != nil {
		return nil, fmt.Errorf("bench proxy: %w", err)
	}
	defer os.RemoveAll(root)
	extra := ""
	if !o.fsync {
		extra = "[lossless]\n\tfsync = false\n"
	}
	st, err := proxyArchiveDir(root, extra)
	if err != nil {
		return nil, err
	}
	backend := &stubbackend.Server{Kind: o.backend, Window: o.window, Model: "bench-coder",
		Reply: func(*stubbackend.Request, []json.RawMessage) string { return "Read it; next file." }}
	upURL, err := backend.Start()
	if err != nil {
		return nil, err
	}
	defer backend.Close()
	cfg := proxy.DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Store, cfg.Writer = "127.0.0.1:0", upURL, st, "proxy-bench"
	cfg.LogPath = filepath.Join(root, proxy.LogFile)
	if o.backend == stubbackend.OpenAI {
		cfg.Window = o.window
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	srv, err := proxy.Run(pctx, cfg)
	if err != nil {
		return nil, err
	}
	base := "http://" + srv.Addr
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, DisableCompression: true}}
	session := "bench-session"
	post := func(url string, body []byte) (int, string, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			return 0, "", 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proxy.SessionHeader, session)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", 0, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal(data, &out)
		text := ""
		if len(out.Choices) > 0 {
			text = out.Choices[0].Message.Content
		}
		return resp.StatusCode, text, d, err
	}
	// Warm up connections and backend detection (not measured).
	session = "bench-warm-up"
	warm := stubbackend.NewConversation("bench-coder", "warm-up")
	warm.User("hello")
	for i := 0; i < 20; i++ {
		post(base, warm.Body(false))
		post(upURL, warm.Body(false))
	}

	res := &benchProxyResult{}
	type sample struct {
		rtt, service time.Duration
		compacting   bool
		plainAdded   float64
	}
	var samples []sample
	var hops []float64
	session = "bench-session"
	conv := stubbackend.NewConversation("bench-coder", "You are a coding agent working in a Go repository. Use the tools; be brief.")
	var firstBody []byte
	for _, step := range stubbackend.AgentScript(o.turns, o.seed) {
		if step.User != "" {
			conv.User(step.User)
		}
		conv.ToolCall(step.CallID, "read_file", `{"path":"`+step.Path+`"}`, step.Result)
		body := conv.Body(false)
		if firstBody == nil {
			firstBody = body
		}
		n0 := len(backend.Requests())
		code, text, rtt, err := post(base, body)
		if err != nil {
			return nil, err
		}
		if code == 200 {
			res.Answered++
		}
		var main *stubbackend.Request
		for _, r := range backend.Requests()[n0:] {
			if !r.Summary && r.Path == "/v1/chat/completions" {
				main = r
			}
		}
		if main == nil {
			return nil, fmt.Errorf("the stub saw no forwarded request")
		}
		s := sample{rtt: rtt, service: main.Duration, compacting: !bytes.Equal(main.Body, body)}
		if !s.compacting {
			// A request that fits is sent again, alternately through the
			// proxy and directly, and the medians compared: one sample on
			// a busy machine says little.
			var via, dir []float64
			session = "bench-repeat"
			for rep := 0; rep < 5; rep++ {
				for _, target := range []string{base, upURL} {
					n1 := len(backend.Requests())
					_, _, d, err := post(target, body)
					if err != nil || len(backend.Requests()) <= n1 {
						continue
					}
					x := float64(d-backend.Requests()[len(backend.Requests())-1].Duration) / 1e6
					if target == base {
						via = append(via, x)
					} else {
						dir = append(dir, x)
						hops = append(hops, x)
					}
				}
			}
			session = "bench-session"
			s.plainAdded = pctl(via, 0.5) - pctl(dir, 0.5)
		}
		samples = append(samples, s)
		if text == "" {
			text = "(no answer)"
		}
		conv.Assistant(text)
	}
	if len(hops) == 0 {
		// Every request compacted: measure the hop with a small request.
		for i := 0; i < 20; i++ {
			n1 := len(backend.Requests())
			_, _, drtt, err := post(upURL, warm.Body(false))
			if err == nil {
				hops = append(hops, float64(drtt-backend.Requests()[n1].Duration)/1e6)
			}
		}
	}
	res.HopMs = pctl(hops, 0.5)
	for _, s := range samples {
		if s.compacting {
			res.Compacting = append(res.Compacting, float64(s.rtt-s.service)/1e6-res.HopMs)
		} else {
			res.Plain = append(res.Plain, s.plainAdded)
		}
	}

	// Paired repeats of a fitting request (the session's first): many
	// samples of the non-compacting path, each pair in alternating order
	// so that neither side always runs warm.
	if len(firstBody) > 0 {
		session = "bench-pairs"
		backend.Reset()
		one := func(url string) (float64, bool) {
			_, _, d, err := post(url, firstBody)
			reqs := backend.Requests()
			if err != nil || len(reqs) == 0 {
				return 0, false
			}
			return float64(d-reqs[len(reqs)-1].Duration) / 1e6, true
		}
		for i := 0; i < o.pairs; i++ {
			var via, dir float64
			var ok1, ok2 bool
			if i%2 == 0 {
				via, ok1 = one(base)
				dir, ok2 = one(upURL)
			} else {
				dir, ok2 = one(upURL)
				via, ok1 = one(base)
			}
			if ok1 && ok2 {
				res.Pairs = append(res.Pairs, via-dir)
			}
		}
		backend.Reset()
	}

	// Journal capture, paired: a second proxy on the same archive with
	// capture journal, and the first (capture off), take the same
	// requests in turn. The requests are turns of short sessions (8 turns
	// each, fitting the window), so that each brings new messages to
	// journal, as a real session's turns do.
	if o.pairs > 0 {
		jcfg := cfg
		jcfg.Writer, jcfg.LogPath, jcfg.Capture = "proxy-bench-journal", "-", proxy.CaptureJournal
		jctx, jstop := context.WithCancel(ctx)
		jsrv, err := proxy.Run(jctx, jcfg)
		if err != nil {
			jstop()
			return nil, err
		}
		jbase := "http://" + jsrv.Addr
		backend.Reset()
		var jconv *stubbackend.Conversation
		one := func(url string, body []byte) (float64, bool) {
			n0 := len(backend.Requests())
			_, _, d, err := post(url, body)
			reqs := backend.Requests()
			if err != nil || len(reqs) <= n0 || !bytes.Equal(reqs[len(reqs)-1].Body, body) {
				return 0, false // failed, or compacted: not the path measured
			}
			return float64(d-reqs[len(reqs)-1].Duration) / 1e6, true
		}
		for i := 0; i < o.pairs; i++ {
			if i%8 == 0 {
				session = fmt.Sprintf("bench-journal-%d", i/8)
				jconv = stubbackend.NewConversation("bench-coder", "You are a coding agent working in a Go repository. Use the tools; be brief.")
			}
			jconv.User(fmt.Sprintf("Turn %d: read internal/pkg%d/file%d.go and tell me what its exported functions do, "+
				"then whether any of them ignores an error it should return; keep it short.", i%8+1, i/8, i))
			body := jconv.Body(false)
			var on, off float64
			var ok1, ok2 bool
			if i%2 == 0 {
				on, ok1 = one(jbase, body)
				off, ok2 = one(base, body)
			} else {
				off, ok2 = one(base, body)
				on, ok1 = one(jbase, body)
			}
			if ok1 && ok2 {
				res.JournalPairs = append(res.JournalPairs, on-off)
			}
			jconv.Assistant(fmt.Sprintf("file%d.go: three exported functions; Parse drops an error from Close.", i))
		}
		jstop()
		if err := jsrv.Wait(); err != nil { // flushes the journal
			return nil, err
		}
		res.Journal = jsrv.Proxy.Stats().Journal
		backend.Reset()
	}

	// Stale recall, paired: the session's last request and a question
	// naming its first file, which only the folded turns hold.
	if steps := stubbackend.AgentScript(o.turns, o.seed); len(steps) > 0 && o.pairs > 0 {
		rc := &stubbackend.Conversation{Model: conv.Model, Messages: append([]map[string]any(nil), conv.Messages...)}
		rc.User("What did we change in " + steps[0].Path + " at the start?")
		backend.Reset()
		res.Recall, err = benchRecall(ctx, o, upURL, backend, client, rc.Body(false))
		if err != nil {
			return nil, err
		}
		for i := range res.Recall.On {
			res.Recall.On[i] -= res.HopMs
			res.Recall.Off[i] -= res.HopMs
		}
		backend.Reset()
	}

	// Pass-through throughput: small fitting requests from 16 clients.
	session = "bench-throughput"
	small := stubbackend.NewConversation("bench-coder", "sys")
	small.User("What does the archive writer do?")
	sb := small.Body(false)
	rps := func(url string) (float64, []float64) {
		var n atomic.Int64
		deadline := time.Now().Add(o.duration)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var lat []float64
		for c := 0; c < o.clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []float64
				for time.Now().Before(deadline) {
					if code, _, d, err := post(url, sb); err == nil && code == 200 {
						n.Add(1)
						mine = append(mine, float64(d)/1e6)
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return float64(n.Load()) / o.duration.Seconds(), lat
	}
	backend.Reset()
	res.ProxyRPS, res.LoadViaMs = rps(base)
	backend.Reset()
	res.DirectRPS, res.LoadDirectMs = rps(upURL)
	backend.Reset()

	// Counts from the proxy's own log (every request it handled), once
	// the proxy has stopped and recorded everything it answered.
	stop()
	if err := srv.Wait(); err != nil {
		return nil, err
	}
	lines, err := readProxyLog(cfg.LogPath)
	if err != nil {
		return nil, err
	}
	sess := "bench-session"
	k := 0
	for _, l := range lines {
		if l.Session != sess {
			continue
		}
		if k < len(samples) && samples[k].compacting {
			added := float64(samples[k].rtt-samples[k].service)/1e6 - res.HopMs
			if len(l.Spans) > 0 {
				res.SpanWriting = append(res.SpanWriting, added)
				res.SpanWritingInt = append(res.SpanWritingInt, l.AddedMs)
				res.SpanMs = append(res.SpanMs, l.SpanMs)
			} else {
				res.MemoReuse = append(res.MemoReuse, added)
				res.MemoReuseInt = append(res.MemoReuseInt, l.AddedMs)
			}
		}
		k++
		res.TokensBefore += int64(l.Before)
		res.TokensAfter += int64(l.After)
		if l.Compacted {
			res.Compactions++
			res.CompactingInt = append(res.CompactingInt, l.AddedMs)
		} else {
			res.PlainInt = append(res.PlainInt, l.AddedMs)
		}
		if l.Summarised {
			res.Summaries++
		}
		if l.Reused {
			res.Reused++
		}
		res.Spills += l.Spills
		if l.FailOpen != "" {
			res.FailOpen++
		}
	}
	return res, nil
}

// benchProxyFlags registers the flags of `git lossless bench proxy` on the
// bench command's flag set and returns its dispatcher: handled is true when
// args select the proxy bench.
func benchProxyFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	d := defaultBenchProxyOpts()
	turns := fs.Int("turns", d.turns, "bench proxy: turns of the scripted agent session; bench drift: user turns of its conversation (default 30 there)")
	seed := fs.Uint64("seed", d.seed, "bench proxy: seed of the scripted session's content")
	backend := fs.String("backend", d.backend, "bench proxy: stub upstream kind: openai (estimated counts), llamacpp or vllm (exact counts)")
	clients := fs.Int("clients", d.clients, "bench proxy: concurrent clients for the pass-through rate")
	duration := fs.Duration("duration", d.duration, "bench proxy: how long to measure the pass-through rate")
	noFsync := fs.Bool("no-fsync", false, "bench proxy: write spans without fsync")
	pairs := fs.Int("pairs", d.pairs, "bench proxy: paired repeats of a fitting request (through the proxy, then direct)")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "proxy" {
			return false, nil
		}
		o := d
		o.turns, o.seed, o.backend, o.clients, o.duration, o.fsync, o.pairs = *turns, *seed, *backend, *clients, *duration, !*noFsync, *pairs
		switch {
		case o.turns < 1:
			return true, cli.Usagef("--turns must be at least 1")
		case o.clients < 1:
			return true, cli.Usagef("--clients must be at least 1")
		case o.duration <= 0:
			return true, cli.Usagef("--duration must be positive")
		case o.pairs < 0:
			return true, cli.Usagef("--pairs must not be negative")
		}
		switch o.backend {
		case stubbackend.OpenAI, stubbackend.LlamaCpp, stubbackend.VLLM:
		default:
			return true, cli.Usagef("--backend %q: use openai, llamacpp or vllm", o.backend)
		}
		return true, runBenchProxy(ctx, e, o)
	}
}

// recallPairs is the stale-recall measurement of `bench proxy`: one
// compacted request, whose last user message names a detail only the
// folded turns hold, sent alternately through a proxy with recall on and
// one with it off (same upstream, same settings otherwise, the summary
// already in each one's memo). Added latencies in ms; Diff has one
// difference per pair.
type recallPairs struct {
	On, Off, Diff []float64
	Recalls       int // requests the recall proxy quoted lines into
	Lines         int
}

// benchRecall runs the recall pairs against upURL. body is the request.
func benchRecall(ctx context.Context, o benchProxyOpts, upURL string, backend *stubbackend.Server, client *http.Client, body []byte) (*recallPairs, error) {
	start := func(on bool) (*proxy.Server, context.CancelFunc, error) {
		cfg := proxy.DefaultConfig()
		cfg.Listen, cfg.Upstream, cfg.Archive, cfg.Writer, cfg.LogPath = "127.0.0.1:0", upURL, &proxy.MemoryArchive{}, "proxy-bench-recall", "-"
		cfg.Recall = on
		if o.backend == stubbackend.OpenAI {
			cfg.Window = o.window
		}
		pctx, stop := context.WithCancel(ctx)
		srv, err := proxy.Run(pctx, cfg)
		if err != nil {
			stop()
			return nil, nil, err
		}
		return srv, stop, nil
	}
	onSrv, stopOn, err := start(true)
	if err != nil {
		return nil, err
	}
	defer func() { stopOn(); onSrv.Wait() }()
	offSrv, stopOff, err := start(false)
	if err != nil {
		return nil, err
	}
	defer func() { stopOff(); offSrv.Wait() }()

	// one sends body through srv and returns its added latency: the round
	// trip less the stub's time for the forwarded request.
	one := func(srv *proxy.Server) (float64, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", "http://"+srv.Addr+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proxy.SessionHeader, "bench-recall")
		n0 := len(backend.Chat())
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("bench proxy: recall request: HTTP %d", resp.StatusCode)
		}
		chats := backend.Chat()
		if len(chats) <= n0 {
			return 0, fmt.Errorf("bench proxy: the stub saw no forwarded recall request")
		}
		return float64(d-chats[len(chats)-1].Duration) / 1e6, nil
	}
	// Each proxy summarises the request once; every later send is served
	// from its memo.
	for _, srv := range []*proxy.Server{onSrv, offSrv} {
		for i := 0; i < 3; i++ {
			if _, err := one(srv); err != nil {
				return nil, err
			}
		}
	}
	r := &recallPairs{}
	for i := 0; i < o.pairs; i++ {
		order := []*proxy.Server{onSrv, offSrv}
		if i%2 == 1 {
			order = []*proxy.Server{offSrv, onSrv}
		}
		var on, off float64
		for _, srv := range order {
			x, err := one(srv)
			if err != nil {
				return nil, err
			}
			if srv == onSrv {
				on = x
			} else {
				off = x
			}
		}
		r.On, r.Off, r.Diff = append(r.On, on), append(r.Off, off), append(r.Diff, on-off)
	}
	if err := onSrv.Proxy.Idle(ctx); err != nil {
		return nil, err
	}
	st := onSrv.Proxy.Stats()
	r.Recalls, r.Lines = st.Recalls, st.RecallLines
	if off := offSrv.Proxy.Stats(); off.Compacted == 0 || st.Compacted == 0 {
		return nil, fmt.Errorf("bench proxy: the recall request was not compacted (%d, %d compactions)", st.Compacted, off.Compacted)
	}
	return r, nil
}
