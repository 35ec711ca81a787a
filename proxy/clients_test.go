package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
	"github.com/git-lossless/git-lossless/internal/testkit/codextest"
	"github.com/git-lossless/git-lossless/internal/testkit/npmcli"
	"github.com/git-lossless/git-lossless/internal/testkit/opencodetest"
	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/seal"
)

// The client matrix: each real coding client, installed from npm at a
// pinned version into the user cache dir (npmcli), pointed at the proxy
// in an isolated HOME, runs one scripted conversation that outgrows the
// window, against a scripted model on 127.0.0.1. A row passes when the
// client's requests reached the model through the proxy, the proxy
// compacted (nothing failed open), the largest request the client sent
// was over the window while none that reached the model was, every
// folded original is in the git archive (sealed; read back with git),
// and the scripted final answer reached the client's output.
//
// README.md's "Works with" table is this run's result:
//
//	go test ./proxy -run TestClientMatrix -count=1 -args -update-works-with
//
// rewrites it (date, version, PASS or the failure); a normal run never
// writes the source tree, and TestWorksWithTableCoversMatrix keeps the
// table's rows and versions in step with the matrix.
var updateWorksWith = flag.Bool("update-works-with", false, "rewrite README.md's Works with table from this run of TestClientMatrix")

// clientRow is one client of the matrix.
type clientRow struct {
	Client  string // as the table names it
	Package string // npm package
	Version string // pinned
	Route   string // the proxy route it speaks
	run     func(t *testing.T) clientRun
	// NotHere, when set, is why the client cannot be driven on this
	// machine, found by trying; the row records it instead of running.
	NotHere string
}

// qwenPackage is Qwen Code, pinned.
var qwenPackage = npmcli.Package{Name: "@qwen-code/qwen-code", Version: "0.24.4", Bin: "qwen",
	Check: func(bin string) error { return npmcli.CheckVersion(bin, "0.24.4") }}

var qwenInstaller = npmcli.NewInstaller(qwenPackage, "QWENTEST_BIN")

func clientRows() []clientRow {
	return []clientRow{
		{Client: "Claude Code", Package: "@anthropic-ai/claude-code", Version: claudetest.Version, Route: "/v1/messages", run: runClaudeThroughProxy},
		{Client: "Codex CLI", Package: "@openai/codex", Version: codextest.Version, Route: "/v1/responses", run: runCodexThroughProxy},
		{Client: "opencode", Package: "opencode-ai", Version: opencodetest.Version, Route: "/v1/chat/completions", run: runOpencodeThroughProxy},
		{Client: "Qwen Code", Package: qwenPackage.Name, Version: qwenPackage.Version, Route: "/v1/chat/completions", run: runQwenThroughProxy},
		{Client: "Crush", Package: "@charmland/crush", Version: "0.96.1", Route: "/v1/chat/completions",
			NotHere: "its npm package downloads the binary from github.com in a postinstall script (install.js: getaddrinfo ENOTFOUND github.com here), and the Go module proxy refuses github.com/charmbracelet/crush (403): no binary can be had on this machine"},
	}
}

// clientRun is what one client's session through the proxy showed.
type clientRun struct {
	Duration    time.Duration
	Requests    int // requests on the compacted route that reached the model through the proxy
	Compactions int
	Archived    int // spans in the git archive
	LargestSent int // tokens of the largest request the client sent
	Window      int
}

func TestClientMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real coding clients")
	}
	var mu sync.Mutex
	results := map[string]string{}
	for _, row := range clientRows() {
		t.Run(strings.ReplaceAll(row.Client, " ", "_"), func(t *testing.T) {
			if row.NotHere != "" {
				mu.Lock()
				results[row.Client] = "not driven here: " + row.NotHere
				mu.Unlock()
				t.Logf("%s %s: not driven: %s", row.Client, row.Version, row.NotHere)
				return
			}
			res := "FAIL"
			defer func() {
				if t.Failed() && res == "FAIL" {
					res = "FAIL (see the test log)"
				}
				mu.Lock()
				results[row.Client] = res
				mu.Unlock()
			}()
			r := row.run(t)
			if !t.Failed() {
				res = fmt.Sprintf("PASS: %d requests, %d compacted, %d spans; largest sent %d tokens, window %d",
					r.Requests, r.Compactions, r.Archived, r.LargestSent, r.Window)
			}
			t.Logf("%s %s through the proxy (%s): %s, %s", row.Client, row.Version, row.Route, r.Duration.Round(time.Millisecond), res)
		})
	}
	if *updateWorksWith {
		if err := writeWorksWith("../README.md", clientRows(), results, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

const worksWithBegin, worksWithEnd = "<!-- works-with:begin -->", "<!-- works-with:end -->"

// worksWithTable renders the matrix's results.
func worksWithTable(rows []clientRow, results map[string]string, day time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| Client | Version | Route | Result (%s) |\n|---|---|---|---|\n", day.UTC().Format("2006-01-02"))
	for _, r := range rows {
		res := results[r.Client]
		if res == "" {
			res = "not run"
		}
		fmt.Fprintf(&b, "| %s | `%s@%s` | `%s` | %s |\n", r.Client, r.Package, r.Version, r.Route, strings.ReplaceAll(res, "|", "\\|"))
	}
	return b.String()
}

func writeWorksWith(path string, rows []clientRow, results map[string]string, day time.Time) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i, j := bytes.Index(src, []byte(worksWithBegin)), bytes.Index(src, []byte(worksWithEnd))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s markers", path, worksWithBegin, worksWithEnd)
	}
	out := append([]byte(nil), src[:i+len(worksWithBegin)]...)
	out = append(out, '\n')
	out = append(out, worksWithTable(rows, results, day)...)
	out = append(out, src[j:]...)
	return os.WriteFile(path, out, 0o644)
}

// TestWorksWithTableCoversMatrix: README's table names every client of
// the matrix at its pinned version, and a client the matrix cannot drive
// with its reason.
func TestWorksWithTableCoversMatrix(t *testing.T) {
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(src, []byte(worksWithBegin)), bytes.Index(src, []byte(worksWithEnd))
	if i < 0 || j < i {
		t.Fatal("README.md has no Works with markers")
	}
	table := string(src[i:j])
	for _, r := range clientRows() {
		re := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(r.Client) + " \\| `" + regexp.QuoteMeta(r.Package+"@"+r.Version) + "` \\| [^|]+ \\| (.*) \\|$")
		m := re.FindStringSubmatch(table)
		if m == nil {
			t.Errorf("README's Works with table has no row for %s %s@%s: run go test ./proxy -run TestClientMatrix -args -update-works-with", r.Client, r.Package, r.Version)
			continue
		}
		if r.NotHere != "" && !strings.Contains(m[1], "not driven here") {
			t.Errorf("%s: the table says %q, want the reason it is not driven", r.Client, m[1])
		}
		if r.NotHere == "" && !strings.HasPrefix(m[1], "PASS") {
			t.Errorf("%s: the table says %q, not PASS", r.Client, m[1])
		}
	}
}

// throughProxy is a proxy in front of a scripted model, archiving into a
// bare git repository.
type throughProxy struct {
	srv    *Server
	store  *gitstore.Store
	dir    string
	writer string
	window int
	logs   *syncLines
	cancel context.CancelFunc
	once   sync.Once
}

func startThroughProxy(t *testing.T, upstream, backend, writer string, window, minSummary int) *throughProxy {
	t.Helper()
	dir, store := bareRepo(t, "")
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Backend, cfg.Window = "127.0.0.1:0", upstream, backend, window
	cfg.Store, cfg.Writer = store, writer
	cfg.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
	// Scripted models answer a request without tools (the summary call)
	// with a short fixed text; accept it as a summary.
	cfg.MinSummary = minSummary
	p := &throughProxy{store: store, dir: dir, writer: writer, window: window, logs: &syncLines{}}
	cfg.Logf = p.logs.add
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Run(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	p.srv, p.cancel = srv, cancel
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *throughProxy) url() string { return "http://" + p.srv.Addr }

func (p *throughProxy) stop(t *testing.T) {
	p.once.Do(func() {
		p.cancel()
		if err := p.srv.Wait(); err != nil {
			t.Errorf("proxy shutdown: %v", err)
		}
	})
}

// check stops the proxy and holds what every row must show: it
// compacted and never failed open, the client sent more than the window,
// the spans are in the archive and its seal verifies. folded holds
// texts the client sent that must be in the archive or in the last
// forwarded request (lastForwarded).
func (p *throughProxy) check(t *testing.T, folded []string, lastForwarded []byte) clientRun {
	t.Helper()
	p.stop(t)
	st := p.srv.Proxy.Stats()
	fo := 0
	for _, n := range st.FailOpen {
		fo += n
	}
	out := clientRun{Requests: st.Requests, Compactions: st.Compacted, Window: p.window}
	if st.Compacted == 0 || fo != 0 {
		t.Fatalf("compacted %d, fail-open %v\nproxy log:\n%s", st.Compacted, st.FailOpen, p.logs.String())
	}
	for _, e := range p.srv.Proxy.events.since(0) {
		if e.Kind == "compaction" {
			out.LargestSent = max(out.LargestSent, e.Before)
		}
	}
	if out.LargestSent <= p.window {
		t.Fatalf("the largest request the client sent held %d tokens, within the %d window: test setup", out.LargestSent, p.window)
	}
	ctx := context.Background()
	evs, err := p.store.Events(ctx, gitstore.Query{Op: "span", Source: "proxy"})
	if err != nil || len(evs) == 0 || len(evs) != st.Spans {
		t.Fatalf("spans in the archive: %d, stats %d (%v)", len(evs), st.Spans, err)
	}
	out.Archived = len(evs)
	if rep, err := p.store.Verify(ctx, p.writer, seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	if out, err := exec.Command("git", "--git-dir", p.dir, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
	objects := allObjects(t, p.dir)
	for _, text := range folded {
		esc := jsonEscaped(text)
		if !bytes.Contains(objects, esc) && !bytes.Contains(lastForwarded, esc) {
			t.Errorf("%.60q is neither archived nor forwarded", text)
		}
	}
	return out
}

// jsonEscaped is s as it appears inside a JSON string (no HTML escaping).
func jsonEscaped(s string) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)
	return bytes.Trim(bytes.TrimSpace(b.Bytes()), `"`)
}

// moduleFiles writes n large Go-like files into dir and returns their
// paths and a distinctive line of each (a line the file holds once).
func moduleFiles(t *testing.T, dir string, n, size int) (paths, lines []string) {
	t.Helper()
	for i := 1; i <= n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("module%d.go", i))
		code := stubbackend.Code(uint64(i), size)
		if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		lines = append(lines, distinctLine(code))
	}
	return paths, lines
}

// distinctLine is the longest line that occurs once in s.
func distinctLine(s string) string {
	count := map[string]int{}
	ls := strings.Split(s, "\n")
	for _, l := range ls {
		count[l]++
	}
	best := ""
	for _, l := range ls {
		if count[l] == 1 && len(l) > len(best) && len(l) < 200 {
			best = l
		}
	}
	return best
}

// The real Claude Code CLI through the proxy (ANTHROPIC_BASE_URL), in
// front of a scripted Anthropic model: the agent reads six large files
// in one turn.
func runClaudeThroughProxy(t *testing.T) clientRun {
	bin := claudetest.EnsureClaude(t)
	const marker = "PROXY-LONG-SESSION"
	const window = 60000
	work := t.TempDir()
	paths, lines := moduleFiles(t, work, 6, 40000)
	var steps []claudetest.Step
	for _, p := range paths {
		steps = append(steps, claudetest.Call("Read", map[string]any{"file_path": p}))
	}
	steps = append(steps, claudetest.Say("PROXY-DONE: all six modules read"))
	model := claudetest.NewModel(t, claudetest.Script{marker: steps})
	px := startThroughProxy(t, model.URL(), "anthropic", "proxy-claude", window, 16)

	r := claudetest.NewRunner(t, bin, model)
	r.BaseURL = px.url()
	r.Timeout = 120 * time.Second
	const pin = "Remember this: the release tag is lossless-k7731."
	res, err := r.Run(context.Background(), work, marker+": read the six modules, one after another. "+pin)
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, px.logs.String())
	}
	if res.IsError || !strings.Contains(res.Result, "PROXY-DONE") {
		t.Fatalf("the session did not complete: is_error %v, result %q\nproxy log:\n%s", res.IsError, res.Result, px.logs.String())
	}
	if got := model.ToolResults(marker); len(got) != len(paths) {
		t.Fatalf("the model saw %d of %d tool results", len(got), len(paths))
	}
	reqs := model.ScenarioRequests(marker)
	compacted := 0
	for _, q := range reqs {
		if bytes.Contains(q.Raw, []byte("[git-lossless: the first ")) {
			compacted++
			if !bytes.Contains(q.Raw, []byte(pin)) {
				t.Errorf("compacted request #%d lost the pinned fact", q.Seq)
			}
		}
		if len(q.Raw)/4 > window {
			t.Errorf("request #%d reached the model with about %d tokens, over the %d window", q.Seq, len(q.Raw)/4, window)
		}
	}
	if compacted == 0 {
		t.Fatal("no compacted request reached the model")
	}
	out := px.check(t, lines, reqs[len(reqs)-1].Raw)
	out.Duration = res.Duration
	return out
}

// The real Codex CLI through the proxy on the Responses route: a
// model_providers entry whose base_url is the proxy (wire_api
// "responses"); the agent reads eight large files with exec_command cat.
// Codex's own auto-compaction stays out of it: the model reports the
// tokens it received, far below Codex's limit for its model.
func runCodexThroughProxy(t *testing.T) clientRun {
	bin := codextest.EnsureCodex(t)
	const marker = "CODEX-PROXY-SESSION"
	const window = 40000
	work := t.TempDir()
	paths, lines := moduleFiles(t, work, 8, 24000)
	var steps []codextest.Step
	for _, p := range paths {
		steps = append(steps, codextest.Shell("cat "+filepath.Base(p)))
	}
	steps = append(steps, codextest.Say("CODEX-PROXY-DONE: all modules read"))
	model := codextest.NewModel(t, codextest.Script{marker: steps})
	px := startThroughProxy(t, strings.TrimSuffix(model.URL(), "/v1"), "openai", "proxy-codex", window, 5)

	r := codextest.NewRunner(t, bin, model)
	r.BaseURL = px.url() + "/v1"
	if err := r.WriteConfig(""); err != nil {
		t.Fatal(err)
	}
	r.Timeout = 150 * time.Second
	// The keep phrase is pinned: it survives the prompt being folded, and
	// the scripted model finds its scenario by the marker in it.
	const pin = "Remember this: the task is " + marker + "."
	res, err := r.Run(context.Background(), work, marker+": read every module with cat, one after another. "+pin)
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, px.logs.String())
	}
	if res.Failed || !strings.Contains(res.LastMessage, "CODEX-PROXY-DONE") {
		t.Fatalf("the session did not complete: failed %v, last message %q\nproxy log:\n%s", res.Failed, res.LastMessage, px.logs.String())
	}
	if got := model.ToolOutputs(marker); len(got) != len(paths) {
		t.Fatalf("the model saw %d of %d tool outputs", len(got), len(paths))
	}
	reqs := model.ScenarioRequests(marker)
	compacted := 0
	for _, q := range reqs {
		if q.Path != "/v1/responses" {
			t.Errorf("request #%d reached the model on %s", q.Seq, q.Path)
		}
		if bytes.Contains(q.Raw, []byte("[git-lossless: the first ")) {
			compacted++
		}
		if len(q.Raw)/4 > window {
			t.Errorf("request #%d reached the model with about %d tokens, over the %d window", q.Seq, len(q.Raw)/4, window)
		}
	}
	if compacted == 0 {
		t.Fatal("no compacted request reached the model")
	}
	if n := model.Kinds()["compact"]; n != 0 {
		t.Errorf("Codex compacted by itself (%d requests): the proxy's compaction was not what kept the session going", n)
	}
	out := px.check(t, lines, reqs[len(reqs)-1].Raw)
	out.Duration = res.Duration
	return out
}

// chatThroughProxy runs a chat-completions client (opencode, Qwen Code)
// against opencodetest's scripted chat model through the proxy: read
// names the client's read tool and its path argument.
type chatClient struct {
	marker string
	read   func(path string) opencodetest.Step
	run    func(ctx context.Context, model *opencodetest.Model, baseURL, work, prompt string) (output string, d time.Duration, err error)
}

func chatThroughProxy(t *testing.T, c chatClient) clientRun {
	const window = 40000
	work := t.TempDir()
	paths, lines := moduleFiles(t, work, 8, 24000)
	var steps []opencodetest.Step
	for _, p := range paths {
		steps = append(steps, c.read(p))
	}
	done := c.marker + "-DONE: all modules read"
	steps = append(steps, opencodetest.Say(done))
	model := opencodetest.NewModel(t, opencodetest.Script{c.marker: steps})
	px := startThroughProxy(t, strings.TrimSuffix(model.URL(), "/v1"), "openai", "proxy-"+strings.ToLower(c.marker), window, 5)
	const keep = "Remember this: the task is "
	out, d, err := c.run(context.Background(), model, px.url()+"/v1", work, c.marker+": read every module, one after another, with your read tool. "+keep+c.marker+".")
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s\nmodel:\n%s", err, px.logs.String(), model.Log())
	}
	if !strings.Contains(out, done) {
		t.Fatalf("the scripted answer did not reach the client's output:\n%s\nproxy log:\n%s\nmodel:\n%s", out, px.logs.String(), model.Log())
	}
	if got := model.ToolResults(c.marker); len(got) != len(paths) {
		t.Fatalf("the model saw %d of %d tool results\nmodel:\n%s", len(got), len(paths), model.Log())
	}
	reqs := model.ScenarioRequests(c.marker)
	compacted := 0
	for _, q := range reqs {
		if bytes.Contains(q.Raw, []byte("[git-lossless: the first ")) {
			compacted++
		}
		if len(q.Raw)/4 > window {
			t.Errorf("request #%d reached the model with about %d tokens, over the %d window", q.Seq, len(q.Raw)/4, window)
		}
	}
	if compacted == 0 {
		t.Fatalf("no compacted request reached the model\nmodel:\n%s", model.Log())
	}
	res := px.check(t, lines, reqs[len(reqs)-1].Raw)
	res.Duration = d
	return res
}

// opencode through the proxy: its openai-compatible provider's baseURL is
// the proxy; the window it believes is large, so it does not compact by
// itself.
func runOpencodeThroughProxy(t *testing.T) clientRun {
	bin := opencodetest.EnsureOpencode(t)
	deps := opencodetest.EnsurePluginDeps(t)
	return chatThroughProxy(t, chatClient{
		marker: "OPENCODE-PROXY",
		read:   opencodetest.Read,
		run: func(ctx context.Context, model *opencodetest.Model, baseURL, work, prompt string) (string, time.Duration, error) {
			r := opencodetest.NewRunner(t, bin, model)
			r.BaseURL, r.PluginDeps, r.Context = baseURL, deps, 1000000
			r.Timeout = 150 * time.Second
			res, err := r.Run(ctx, work, prompt)
			return res.Text, res.Duration, err
		},
	})
}

// Qwen Code through the proxy: `qwen --auth-type openai
// --openai-base-url PROXY/v1 -m MODEL --yolo -o json PROMPT` in an
// isolated HOME; its read tool is read_file {file_path}.
func runQwenThroughProxy(t *testing.T) clientRun {
	bin := qwenInstaller.Require(t)
	return chatThroughProxy(t, chatClient{
		marker: "QWEN-PROXY",
		read: func(p string) opencodetest.Step {
			return opencodetest.Call("read_file", map[string]any{"file_path": p})
		},
		run: func(ctx context.Context, model *opencodetest.Model, baseURL, work, prompt string) (string, time.Duration, error) {
			home := t.TempDir()
			ctx, cancel := context.WithTimeout(ctx, 150*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--auth-type", "openai", "--openai-api-key", "test",
				"--openai-base-url", baseURL, "-m", "mock-model", "--yolo", "-o", "json", prompt)
			cmd.Dir = work
			cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + home,
				"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
				"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "NO_COLOR=1", "TERM=dumb", "CI=1",
				"QWEN_CODE_DISABLE_UPDATE_CHECK=1"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 5 * time.Second
			start := time.Now()
			err := cmd.Run()
			d := time.Since(start)
			if err != nil {
				return stdout.String(), d, fmt.Errorf("qwen: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			return stdout.String(), d, nil
		},
	})
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
