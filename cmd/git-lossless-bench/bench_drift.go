package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/proxy"
)

// `git lossless bench drift --upstream URL --model M [--turns N]`: how
// many facts survive the proxy's summaries on the user's own model. Five
// facts with distinctive tokens are planted in the first turns of a
// scripted conversation padded with tool results, sent through an
// in-process proxy whose archive is a temporary directory; every summary
// the proxy asks of the upstream is read as it comes back, and the last
// forwarded request is searched too. The run is made twice: with the
// proxy's summary memo (one session, each summary extends the last) and
// without it (every request under a new session id, so each compaction
// summarises from scratch), to show what the memo costs in drift and
// saves in summariser calls and input.
//
// It talks only to --upstream: the proxy's upstream is a relay in this
// process that forwards to that URL and nowhere else.

// driftFacts are the planted facts: distinctive tokens a summary either
// keeps word for word or loses.
var driftFacts = [5]struct{ token, sentence string }{
	{"47213", "The dev server must listen on port 47213, nothing else."},
	{"internal/ledger/reconcile_v2.go", "The bug lives in internal/ledger/reconcile_v2.go; only touch that file."},
	{"Oyelaran", "Reviews go to Adaeze Oyelaran, who owns the ledger."},
	{"ledger.flush_interval_ms", "The config key to change is ledger.flush_interval_ms, set it to 250."},
	{"v3.14.159", "Pin the client library at v3.14.159; later versions break the build."},
}

// driftOpts configures `git lossless bench drift`.
type driftOpts struct {
	upstream, model string
	turns, window   int
	keep            string
}

// driftCall is one summary the proxy asked of the upstream.
type driftCall struct {
	inChars int
	text    string
}

// driftRun is what one pass (memo on or off) saw.
type driftRun struct {
	summaries []driftCall
	last      []byte // the last forwarded (non-summary) request
	answered  int
}

// driftRelay forwards every request to the one upstream and records the
// summary calls and the last forwarded request.
type driftRelay struct {
	upstream string
	client   *http.Client
	mu       sync.Mutex
	run      *driftRun
}

func (d *driftRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, d.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := d.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if r.Method == http.MethodPost {
		d.mu.Lock()
		if r.Header.Get("X-Lossless-Summary") != "" {
			d.run.summaries = append(d.run.summaries, driftCall{inChars: promptChars(body), text: answerContent(data)})
		} else if strings.HasSuffix(r.URL.Path, "/chat/completions") || strings.HasSuffix(r.URL.Path, "/messages") {
			d.run.last = body
		}
		d.mu.Unlock()
	}
	for k, v := range resp.Header {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(data)
}

// promptChars is the characters of a chat request's message contents.
func promptChars(body []byte) int {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return len(body)
	}
	n := 0
	for _, m := range req.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			n += len(s)
		} else {
			n += len(m.Content)
		}
	}
	return n
}

// answerContent is the text of an OpenAI or Anthropic style answer.
func answerContent(data []byte) string {
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Content []struct{ Text string } `json:"content"`
	}
	if json.Unmarshal(data, &out) != nil {
		return string(data)
	}
	var b strings.Builder
	for _, c := range out.Choices {
		b.WriteString(c.Message.Content)
	}
	for _, c := range out.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// factsIn returns which facts (1-based) text holds.
func factsIn(text string) []int {
	var kept []int
	for i, f := range driftFacts {
		if strings.Contains(text, f.token) {
			kept = append(kept, i+1)
		}
	}
	return kept
}

func factList(f []int) string {
	if len(f) == 0 {
		return "none"
	}
	s := make([]string, len(f))
	for i, n := range f {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

// benchDriftFlags registers the flags of `git lossless bench drift` on
// the bench command's flag set and returns its dispatcher. --turns is
// shared with `bench proxy` (default 40 there, 30 here when not given).
func benchDriftFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	upstream := fs.String("upstream", "", "bench drift: the model server to summarise with (required; the only host contacted)")
	model := fs.String("model", "", "bench drift: the model name to send (required)")
	window := fs.Int("window", 0, "bench drift: context window in tokens (0: the proxy learns it from the upstream)")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "drift" {
			return false, nil
		}
		o := driftOpts{upstream: strings.TrimRight(*upstream, "/"), model: *model, turns: 30, window: *window}
		if f := fs.Lookup("turns"); f != nil && f.Changed {
			fmt.Sscan(f.Value.String(), &o.turns)
		}
		if f := fs.Lookup("keep"); f != nil {
			o.keep = f.Value.String()
		}
		switch {
		case o.upstream == "":
			return true, cli.Usagef("bench drift: --upstream URL is required (there is no default model server)")
		case !strings.HasPrefix(o.upstream, "http://") && !strings.HasPrefix(o.upstream, "https://"):
			return true, cli.Usagef("bench drift: --upstream %q: give an http:// or https:// URL", o.upstream)
		case o.model == "":
			return true, cli.Usagef("bench drift: --model is required")
		case o.turns < 5:
			return true, cli.Usagef("bench drift: --turns must be at least 5 (the facts are planted in the first five)")
		case o.window < 0:
			return true, cli.Usagef("bench drift: --window must not be negative")
		}
		return true, runBenchDrift(ctx, e, o)
	}
}

// runBenchDrift runs both passes and prints the report.
func runBenchDrift(ctx context.Context, e *env, o driftOpts) error {
	dir, cleanup, err := benchDir(o.keep, "drift-", false)
	if err != nil {
		return fmt.Errorf("bench drift: %w", err)
	}
	defer cleanup()
	fmt.Fprintf(e.Stdout, "git lossless bench drift --upstream %s --model %s --turns %d\n", o.upstream, o.model, o.turns)
	fmt.Fprintf(e.Stdout, "  facts     five planted in the first five user turns: ")
	for i, f := range driftFacts {
		fmt.Fprintf(e.Stdout, "%d=%s ", i+1, f.token)
	}
	fmt.Fprintln(e.Stdout)
	on, err := driftPass(ctx, o, filepath.Join(dir, "memo-on"), true)
	if err != nil {
		return err
	}
	off, err := driftPass(ctx, o, filepath.Join(dir, "memo-off"), false)
	if err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		r    *driftRun
	}{{"memo on", on}, {"memo off", off}} {
		fmt.Fprintf(e.Stdout, "\n%s: %d summaries\n", p.name, len(p.r.summaries))
		tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "summary\tinput chars\tfacts kept\twhich")
		for i, s := range p.r.summaries {
			k := factsIn(s.text)
			fmt.Fprintf(tw, "%d\t%d\t%d of 5\t%s\n", i+1, s.inChars, len(k), factList(k))
		}
		tw.Flush()
		k := factsIn(string(p.r.last))
		fmt.Fprintf(e.Stdout, "  last forwarded request: %d of 5 facts survive (%s)\n", len(k), factList(k))
	}
	fmt.Fprintln(e.Stdout, "\ntotals")
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tsummariser calls\tinput chars\tfacts surviving at the end\tturns answered")
	for _, p := range []struct {
		name string
		r    *driftRun
	}{{"memo on", on}, {"memo off", off}} {
		chars := 0
		for _, s := range p.r.summaries {
			chars += s.inChars
		}
		k := factsIn(string(p.r.last))
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d of 5 (%s)\t%d/%d\n", p.name, len(p.r.summaries), chars, len(k), factList(k), p.r.answered, o.turns)
	}
	tw.Flush()
	if o.keep != "" {
		fmt.Fprintf(e.Stdout, "  archives kept in %s\n", dir)
	}
	if len(on.summaries) == 0 && len(off.summaries) == 0 {
		return cli.FailedError{Msg: "bench drift: the proxy asked for no summary (raise --turns or give a smaller --window)"}
	}
	return nil
}

// driftPass sends the scripted conversation through a new proxy and
// relay; memo off sends every request under a new session id.
func driftPass(ctx context.Context, o driftOpts, root string, memo bool) (*driftRun, error) {
	// Under --keep a previous run's archive of the same pass is replaced;
	// nothing else in the kept directory is touched.
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("bench drift: %w", err)
	}
	st, err := proxyArchiveDir(root, "")
	if err != nil {
		return nil, fmt.Errorf("bench drift: archive: %w", err)
	}
	run := &driftRun{}
	relay := &driftRelay{upstream: o.upstream, run: run,
		client: &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench drift: relay: %w", err)
	}
	hs := &http.Server{Handler: relay}
	go hs.Serve(ln)
	defer hs.Close()
	cfg := proxy.DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Store, cfg.Writer = "127.0.0.1:0", "http://"+ln.Addr().String(), st, "bench-drift"
	cfg.LogPath = filepath.Join(root, proxy.LogFile)
	if o.window > 0 {
		cfg.Window = o.window
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	srv, err := proxy.Run(pctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench drift: proxy: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
	conv := stubbackend.NewConversation(o.model, "You are a coding agent working in a Go repository. Use the tools; be brief.")
	for i := 0; i < o.turns; i++ {
		if i < len(driftFacts) {
			conv.User(driftFacts[i].sentence + " Read the next file.")
		} else if i%5 == 0 {
			conv.User(fmt.Sprintf("Carry on with step %d.", i))
		}
		path := fmt.Sprintf("internal/pad/file_%02d.go", i)
		conv.ToolCall(fmt.Sprintf("call_%d", i), "read_file", `{"path":"`+path+`"}`, stubbackend.Code(uint64(i+1), 3000))
		req, err := http.NewRequestWithContext(ctx, "POST", "http://"+srv.Addr+"/v1/chat/completions", bytes.NewReader(conv.Body(false)))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		session := "bench-drift"
		if !memo {
			session = fmt.Sprintf("bench-drift-%d", i)
		}
		req.Header.Set(proxy.SessionHeader, session)
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("bench drift: turn %d: %w", i+1, err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("bench drift: turn %d: %w", i+1, err)
		}
		text := "(no answer)"
		if resp.StatusCode == 200 {
			run.answered++
			if t := answerContent(data); t != "" {
				text = t
			}
		}
		conv.Assistant(text)
	}
	relay.mu.Lock()
	defer relay.mu.Unlock()
	out := *run
	return &out, nil
}
