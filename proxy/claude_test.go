package proxy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/seal"
)

// The real Claude Code CLI through the proxy (ANTHROPIC_BASE_URL), in
// front of a scripted Anthropic upstream, with a window far smaller than
// the session grows to: the agent reads six large files in one turn; the
// proxy compacts the growing conversation (archiving what it folds into
// the git archive) so that no request the upstream sees outgrows the
// window, and the session completes with every tool call answered.
func TestClaudeCodeThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Claude Code CLI")
	}
	bin := claudetest.EnsureClaude(t)

	const marker = "PROXY-LONG-SESSION"
	const window = 60000
	work := t.TempDir()
	var steps []claudetest.Step
	for i := 1; i <= 6; i++ {
		path := filepath.Join(work, fmt.Sprintf("module%d.go", i))
		if err := os.WriteFile(path, []byte(stubbackend.Code(uint64(i), 40000)), 0o644); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, claudetest.Call("Read", map[string]any{"file_path": path}))
	}
	steps = append(steps, claudetest.Say("PROXY-DONE: all six modules read"))
	model := claudetest.NewModel(t, claudetest.Script{marker: steps})

	dir, store := bareRepo(t, "")
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Backend, cfg.Window = "127.0.0.1:0", model.URL(), "anthropic", window
	cfg.Store, cfg.Writer = store, "proxy-claude"
	cfg.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
	// The scripted upstream answers a request without tools (the proxy's
	// summary call) with a short fixed text; accept it as a summary.
	cfg.MinSummary = 16
	var logs syncLines
	cfg.Logf = logs.add
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Run(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := srv.Wait(); err != nil {
				t.Errorf("proxy shutdown: %v", err)
			}
		}
	}
	defer stop()

	r := claudetest.NewRunner(t, bin, model)
	r.BaseURL = "http://" + srv.Addr
	r.Timeout = 120 * time.Second
	const pin = "Remember this: the release tag is lossless-k7731."
	res, err := r.Run(context.Background(), work, marker+": read the six modules, one after another. "+pin)
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, logs.String())
	}
	stop()
	if res.IsError || !strings.Contains(res.Result, "PROXY-DONE") {
		t.Fatalf("the session did not complete: is_error %v, result %q\nproxy log:\n%s", res.IsError, res.Result, logs.String())
	}

	st := srv.Proxy.Stats()
	fo := 0
	for _, n := range st.FailOpen {
		fo += n
	}
	if st.Compacted == 0 || fo != 0 {
		t.Fatalf("compacted %d, fail-open %v\nproxy log:\n%s", st.Compacted, st.FailOpen, logs.String())
	}
	// Every tool call was answered, and the model saw each result.
	if got := model.ToolResults(marker); len(got) != 6 {
		t.Fatalf("the model saw %d of 6 tool results", len(got))
	}
	// What reached the upstream: compacted requests carry the summary
	// naming their spans, and none outgrew the window.
	// The user's keep-phrase survives the prompt being folded away.
	compacted := 0
	for _, q := range model.ScenarioRequests(marker) {
		if bytes.Contains(q.Raw, []byte("[git-lossless: the first ")) {
			compacted++
			if !bytes.Contains(q.Raw, []byte(pin)) {
				t.Errorf("compacted request #%d lost the pinned fact", q.Seq)
			}
		}
	}
	if compacted == 0 {
		t.Fatal("no compacted request reached the upstream")
	}
	largest := 0
	for _, q := range model.Requests() {
		if q.Kind == "scenario" {
			largest = max(largest, len(q.Raw)/4)
		}
	}
	if largest > window {
		t.Errorf("a request reached the upstream with about %d tokens, over the %d window", largest, window)
	}
	// Without the proxy the session would have overflowed: the client
	// sent requests larger than the window.
	sent := 0
	for _, e := range srv.Proxy.events.since(0) {
		if e.Kind == "compaction" {
			sent = max(sent, e.Before)
		}
	}
	if sent <= window {
		t.Fatalf("the largest request the client sent held %d tokens, within the %d window: test setup", sent, window)
	}
	// The originals are in the archive, sealed.
	evs, err := store.Events(context.Background(), gitstore.Query{Op: "span", Source: "proxy"})
	if err != nil || len(evs) == 0 {
		t.Fatalf("spans in the archive: %d (%v)", len(evs), err)
	}
	if rep, err := store.Verify(context.Background(), "proxy-claude", seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	t.Logf("claude -p through the proxy: %s, %d turns; %d requests, %d compacted (%d summaries, %d from the memo), %d spans; largest request sent %d tokens, forwarded %d, window %d",
		res.Duration.Round(time.Millisecond), res.NumTurns, st.Requests, st.Compacted, st.Summaries, st.SummariesReused, len(evs), sent, largest, window)
}

// syncLines collects log lines from the proxy's goroutines.
type syncLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *syncLines) add(format string, a ...any) {
	s.mu.Lock()
	s.lines = append(s.lines, fmt.Sprintf(format, a...))
	s.mu.Unlock()
}

func (s *syncLines) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}
