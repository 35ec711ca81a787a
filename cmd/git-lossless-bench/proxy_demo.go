package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
	"github.com/git-lossless/git-lossless/proxy"
	"github.com/git-lossless/git-lossless/seal"
)

const (
	demoProxyTurns  = 12
	demoProxyWindow = 8192
	demoProxyModel  = "demo-coder"
	demoProxyWriter = "proxy-demo"
	demoProxyPin    = "the release branch is called lossless-2026 and must not be force-pushed"
)

var demoTurnRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Turn (\d+)\.`) })

// demoProxyReply is the scripted assistant's answer to turn i.
func demoProxyReply(i int) string {
	return fmt.Sprintf("Module %d reviewed: rename the two counters, hoist the constant, and add a test for the zero case.", i)
}

// demoPost sends one chat request and returns the status and the answer.
func demoPost(ctx context.Context, client *http.Client, base string, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer demo-key")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &out)
	if resp.StatusCode == 200 && len(out.Choices) > 0 {
		return resp.StatusCode, out.Choices[0].Message.Content, nil
	}
	return resp.StatusCode, out.Error.Message, nil
}

type demoTurnResult struct {
	prompt      int // tokens of the whole conversation (the stub's count)
	direct      int // HTTP status direct
	viaProxy    int // HTTP status through the proxy
	forwarded   int // tokens the backend received through the proxy
	what        string
	answerMatch bool
}

// demoProxy runs the demo and prints its table. It fails (exit 1) when a
// step does not behave as described.
func demoProxy(ctx context.Context, out io.Writer, keep bool) (err error) {
	root, err := os.MkdirTemp("", "git-lossless-demo-proxy-")
	if err != nil {
		return fmt.Errorf("demo proxy: %w", err)
	}
	defer func() {
		if keep {
			fmt.Fprintf(out, "\nKept %s: the archive is %s (try: git -C %s lossless span SPAN_ID).\n", root, filepath.Join(root, "archive.git"), filepath.Join(root, "archive.git"))
			return
		}
		os.RemoveAll(root)
	}()
	st, err := proxyArchiveDir(root, "")
	if err != nil {
		return fmt.Errorf("demo proxy: %w", err)
	}
	backend := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: demoProxyWindow, Model: demoProxyModel,
		Reply: func(r *stubbackend.Request, msgs []json.RawMessage) string {
			last := msgs[len(msgs)-1]
			if m := demoTurnRe().FindSubmatch(last); m != nil {
				n := 0
				fmt.Sscan(string(m[1]), &n)
				return demoProxyReply(n)
			}
			return "ok"
		}}
	upURL, err := backend.Start()
	if err != nil {
		return fmt.Errorf("demo proxy: stub backend: %w", err)
	}
	defer backend.Close()

	fmt.Fprintf(out, "git lossless demo proxy: one scripted %d-turn session against a stub backend\n", demoProxyTurns)
	fmt.Fprintf(out, "(llama.cpp-style, %s-token window, rejects larger requests), sent directly\n", cli.Commas(demoProxyWindow))
	fmt.Fprintf(out, "and through the proxy. Each turn the user pastes a ~4 KB file; the client\n")
	fmt.Fprintf(out, "resends the whole history, as chat clients do. Nothing outside %s is touched.\n\n", root)

	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 30 * time.Second}
	res := make([]demoTurnResult, demoProxyTurns+1)
	system := "You are a careful code reviewer for a Go project."

	// 1. Direct.
	conv := stubbackend.NewConversation(demoProxyModel, system)
	for i := 1; i <= demoProxyTurns; i++ {
		conv.User(stubbackend.DemoTurn(i))
		status, _, err := demoPost(ctx, client, upURL, conv.Body(false))
		if err != nil {
			return fmt.Errorf("demo proxy: turn %d direct: %w", i, err)
		}
		reqs := backend.Chat()
		res[i].direct = status
		res[i].prompt = reqs[len(reqs)-1].Prompt
		conv.Assistant(demoProxyReply(i))
	}
	backend.Reset()

	// 2. Through the proxy.
	cfg := proxy.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Upstream = upURL
	cfg.Store = st
	cfg.Writer = demoProxyWriter
	cfg.LogPath = filepath.Join(root, proxy.LogFile)
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	srv, err := proxy.Run(pctx, cfg)
	if err != nil {
		return fmt.Errorf("demo proxy: %w", err)
	}
	base := "http://" + srv.Addr
	conv = stubbackend.NewConversation(demoProxyModel, system)
	for i := 1; i <= demoProxyTurns; i++ {
		conv.User(stubbackend.DemoTurn(i))
		status, answer, err := demoPost(ctx, client, base, conv.Body(false))
		if err != nil {
			return fmt.Errorf("demo proxy: turn %d via proxy: %w", i, err)
		}
		res[i].viaProxy = status
		res[i].answerMatch = answer == demoProxyReply(i)
		if reqs := backend.Chat(); len(reqs) > 0 {
			res[i].forwarded = reqs[len(reqs)-1].Prompt
		}
		conv.Assistant(demoProxyReply(i))
	}
	// The client has each answer before the proxy has logged the exchange:
	// stop the proxy and wait until it has recorded everything it
	// answered, or the last turn's log line may not be there yet.
	stop()
	if err := srv.Wait(); err != nil {
		return fmt.Errorf("demo proxy: %w", err)
	}

	// What the proxy did, from its request log.
	lines, err := readProxyLog(cfg.LogPath)
	if err != nil {
		return fmt.Errorf("demo proxy: %w", err)
	}
	compacted, written, reused := 0, 0, 0
	for i, l := range lines {
		if i+1 > demoProxyTurns {
			break
		}
		switch {
		case l.Summarised:
			res[i+1].what = "compacted: new summary, originals in " + strings.Join(l.Spans, " ")
			compacted++
			written++
		case l.Reused:
			res[i+1].what = "compacted: summary reused (memo)"
			compacted++
			reused++
		case l.Compacted:
			res[i+1].what = "compacted"
			compacted++
		case l.FailOpen != "":
			res[i+1].what = "fail-open: " + l.FailOpen
		default:
			res[i+1].what = "forwarded as sent"
		}
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "turn\tprompt\tdirect\tvia proxy\tforwarded\t \twhat the proxy did")
	firstFail := 0
	directOK, proxyOK := 0, 0
	for i := 1; i <= demoProxyTurns; i++ {
		r := res[i]
		d := "200 answered"
		if r.direct != 200 {
			d = fmt.Sprintf("%d too long", r.direct)
			if firstFail == 0 {
				firstFail = i
			}
		} else {
			directOK++
		}
		v := "200 answered"
		if r.viaProxy != 200 || !r.answerMatch {
			v = fmt.Sprintf("%d FAILED", r.viaProxy)
		} else {
			proxyOK++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t \t%s\n", i, cli.Commas(int64(r.prompt)), d, v, cli.Commas(int64(r.forwarded)), r.what)
	}
	tw.Flush()

	// The archive: verify the proxy's writer and count the originals.
	rep, err := st.Verify(ctx, demoProxyWriter, seal.Options{})
	if err != nil {
		return fmt.Errorf("demo proxy: verify: %w", err)
	}
	rpt, err := proxy.Savings(ctx, st, cfg.LogPath, time.Time{}, time.Now().Add(time.Second))
	if err != nil {
		return fmt.Errorf("demo proxy: %w", err)
	}
	pinKept := true
	for _, r := range backend.Chat() {
		if bytes.Contains(r.Body, []byte("[git-lossless:")) && !bytes.Contains(r.Body, []byte(demoProxyPin)) {
			pinKept = false
		}
	}

	fmt.Fprintln(out)
	if firstFail > 0 {
		fmt.Fprintf(out, "direct:     %d/%d answered; rejected from turn %d on (over the %s-token window)\n", directOK, demoProxyTurns, firstFail, cli.Commas(demoProxyWindow))
	} else {
		fmt.Fprintf(out, "direct:     %d/%d answered\n", directOK, demoProxyTurns)
	}
	fmt.Fprintf(out, "via proxy:  %d/%d answered; %d requests compacted (%d new summaries, %d from the memo), %d originals archived in %d spans\n",
		proxyOK, demoProxyTurns, compacted, written, reused, rpt.MessagesKept, rpt.Spans)
	fmt.Fprintf(out, "tokens:     %s sent by the client -> %s forwarded: %s kept out of the window\n", cli.Commas(rpt.TokensBefore), cli.Commas(rpt.TokensAfter), cli.Commas(rpt.TokensKeptOut))
	if rep.OK() {
		fmt.Fprintf(out, "archive:    OK %s: %d entries, every span sealed (seal %.16s)\n", rep.Writer, rep.Entries, rep.Head)
	} else {
		fmt.Fprintf(out, "archive:    BREAK %s: %s\n", rep.Writer, rep.Break.Kind)
	}
	if pinKept {
		fmt.Fprintf(out, "pinned:     %q kept verbatim in every compacted request\n", demoProxyPin)
	} else {
		fmt.Fprintf(out, "pinned:     LOST %q\n", demoProxyPin)
	}

	var fails []string
	if firstFail == 0 {
		fails = append(fails, "the direct session never overflowed")
	}
	if proxyOK != demoProxyTurns {
		fails = append(fails, fmt.Sprintf("only %d/%d turns answered through the proxy", proxyOK, demoProxyTurns))
	}
	for _, r := range backend.Chat() {
		if r.Prompt > demoProxyWindow {
			fails = append(fails, "the proxy forwarded a request over the window")
			break
		}
	}
	if !rep.OK() || rpt.Spans == 0 {
		fails = append(fails, "the archive does not verify or holds no span")
	}
	if !pinKept {
		fails = append(fails, "a pinned fact was lost")
	}
	if len(fails) > 0 {
		fmt.Fprintf(out, "\nUNEXPECTED: %s\n", strings.Join(fails, "; "))
		return cli.FailedError{Msg: "demo proxy: " + strings.Join(fails, "; ")}
	}
	fmt.Fprintln(out, "\nDemo OK.")
	return nil
}

// readProxyLog reads a savings log.
func readProxyLog(path string) ([]proxy.LogLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []proxy.LogLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var l proxy.LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// runDemoProxy is `git lossless demo proxy`: a stub backend with an
// 8,192-token window that rejects anything larger, and one scripted
// 12-turn session sent to it directly and through the proxy.
func runDemoProxy(ctx context.Context, e *env, keep bool) error {
	return demoProxy(ctx, e.Stdout, keep)
}

// proxyArchiveDir creates a bare repository for the demo and bench
// without running git.
func proxyArchiveDir(root, extraConfig string) (*gitstore.Store, error) {
	dir := filepath.Join(root, "archive.git")
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "refs/lossless"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	files := map[string]string{
		"HEAD":   "ref: refs/heads/main\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n" + extraConfig,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return nil, err
		}
	}
	return gitstore.Open(gitstore.Location{GitDir: dir, CommonDir: dir}, gitstore.Options{})
}
