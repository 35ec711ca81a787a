package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/codextest"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/seal"
)

// The real Codex CLI through the proxy on the Responses route: a
// model_providers entry whose base_url is the proxy (wire_api
// "responses"), a scripted Responses model behind it, and a window far
// smaller than the session grows to. The agent reads eight large files
// with exec_command `cat`; the proxy folds the growing conversation
// (calls kept with their outputs, reasoning with its turn), archives
// what it folds, and the session completes with the scripted answer.
// Codex's own auto-compaction stays out of it: the model reports the
// tokens it received, far below Codex's limit for its model.
func TestCodexThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	run := runCodexThroughProxy(t)
	t.Logf("codex exec through the proxy: %s; %d requests upstream, %d compacted, %d spans; largest request sent %d tokens, window %d",
		run.Duration.Round(time.Millisecond), run.Requests, run.Compactions, run.Archived, run.LargestSent, run.Window)
}

// clientRun is what one real client's session through the proxy showed.
type clientRun struct {
	Version         string
	Duration        time.Duration
	Requests        int // model requests that reached the backend through the proxy
	Compactions     int // requests the proxy compacted
	Archived        int // spans in the git archive
	LargestSent     int // tokens of the largest request the client sent
	Window          int
	FinalAnswerSeen bool
}

const codexMarker = "CODEX-PROXY-SESSION"

// runCodexThroughProxy drives the session and fails the test unless every
// check holds; it returns the figures.
func runCodexThroughProxy(t *testing.T) clientRun {
	t.Helper()
	bin := codextest.EnsureCodex(t)
	const window = 40000
	const files = 8
	work := t.TempDir()
	var steps []codextest.Step
	for i := 1; i <= files; i++ {
		name := fmt.Sprintf("module%d.go", i)
		if err := os.WriteFile(filepath.Join(work, name), []byte(stubbackend.Code(uint64(i), 24000)), 0o644); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, codextest.Shell("cat "+name))
	}
	steps = append(steps, codextest.Say("CODEX-PROXY-DONE: all modules read"))
	model := codextest.NewModel(t, codextest.Script{codexMarker: steps})

	dir, store := bareRepo(t, "")
	cfg := DefaultConfig()
	cfg.Listen, cfg.Backend, cfg.Window = "127.0.0.1:0", "openai", window
	cfg.Upstream = strings.TrimSuffix(model.URL(), "/v1")
	cfg.Store, cfg.Writer = store, "proxy-codex"
	cfg.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
	// The scripted model answers a request without tools (the proxy's
	// summary call) with a short fixed text; accept it as a summary.
	cfg.MinSummary = 5
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

	r := codextest.NewRunner(t, bin, model)
	r.BaseURL = "http://" + srv.Addr + "/v1"
	if err := r.WriteConfig(""); err != nil {
		t.Fatal(err)
	}
	r.Timeout = 150 * time.Second
	// The keep phrase is pinned: it survives the prompt being folded, and
	// the scripted model finds its scenario by the marker in it.
	const pin = "Remember this: the task is " + codexMarker + "."
	res, err := r.Run(context.Background(), work, codexMarker+": read every module with cat, one after another. "+pin)
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, logs.String())
	}
	stop()
	out := clientRun{Version: codextest.Version, Duration: res.Duration, Window: window}
	out.FinalAnswerSeen = strings.Contains(res.LastMessage, "CODEX-PROXY-DONE")
	if res.Failed || !out.FinalAnswerSeen {
		t.Fatalf("the session did not complete: failed %v, last message %q\nproxy log:\n%s", res.Failed, res.LastMessage, logs.String())
	}
	st := srv.Proxy.Stats()
	fo := 0
	for _, n := range st.FailOpen {
		fo += n
	}
	out.Requests, out.Compactions = st.Requests, st.Compacted
	if st.Compacted == 0 || fo != 0 {
		t.Fatalf("compacted %d, fail-open %v\nproxy log:\n%s", st.Compacted, st.FailOpen, logs.String())
	}
	if got := model.ToolOutputs(codexMarker); len(got) != files {
		t.Fatalf("the model saw %d of %d tool outputs", len(got), files)
	}
	compacted := 0
	for _, q := range model.ScenarioRequests(codexMarker) {
		if q.Path != "/v1/responses" {
			t.Errorf("request #%d reached the model on %s", q.Seq, q.Path)
		}
		if bytes.Contains(q.Raw, []byte("[git-lossless: the first ")) {
			compacted++
		}
		if q.Tokens > window {
			t.Errorf("request #%d reached the model with %d tokens, over the %d window", q.Seq, q.Tokens, window)
		}
	}
	if compacted == 0 {
		t.Fatal("no compacted request reached the model")
	}
	if model.Kinds()["compact"] != 0 {
		t.Errorf("Codex compacted by itself (%d requests): the proxy's compaction was not what kept the session going", model.Kinds()["compact"])
	}
	for _, e := range srv.Proxy.events.since(0) {
		if e.Kind == "compaction" {
			out.LargestSent = max(out.LargestSent, e.Before)
		}
	}
	if out.LargestSent <= window {
		t.Fatalf("the largest request Codex sent held %d tokens, within the %d window: test setup", out.LargestSent, window)
	}
	evs, err := store.Events(context.Background(), gitstore.Query{Op: "span", Source: "proxy"})
	if err != nil || len(evs) == 0 || len(evs) != st.Spans {
		t.Fatalf("spans in the archive: %d, stats %d (%v)", len(evs), st.Spans, err)
	}
	out.Archived = len(evs)
	if rep, err := store.Verify(context.Background(), "proxy-codex", seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// Every tool output the model saw is in a git object or still in
	// the last request: nothing folded was lost.
	objects := allObjects(t, dir)
	last := model.ScenarioRequests(codexMarker)
	tail := last[len(last)-1].Raw
	for _, o := range model.ToolOutputs(codexMarker) {
		head := o.Text
		if i := strings.Index(head, "package "); i >= 0 {
			head = head[i:]
		}
		head = head[:min(len(head), 80)]
		// Spans hold the items as JSON: look for the text JSON-escaped.
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		e.Encode(head)
		esc := bytes.Trim(bytes.TrimSpace(enc.Bytes()), `"`)
		if !bytes.Contains(objects, esc) && !bytes.Contains(tail, esc) {
			t.Errorf("the output of %s is neither archived nor forwarded", o.CallID)
		}
	}
	return out
}
