package proxy

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/stubbackend"
)

// ScreenshotEnv names a file the dashboard test saves its screenshot to
// (default: the test's temporary directory, removed afterwards).
const screenshotEnv = "GIT_LOSSLESS_DASHBOARD_PNG"

// chromiumPath finds a Chromium binary. Without one the dashboard test is
// skipped on a developer's machine, and fails in CI (CI=true), where
// .ci/run installs the Debian package.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: the dashboard test must run in CI (apt-get install chromium)")
	}
	t.Skip("chromium not installed (apt-get install chromium); the dashboard test runs in CI")
	return ""
}

// headless runs Chromium headless on url with extra flags and returns its
// standard output. Each run gets a fresh profile, and the page's script
// runs until the virtual time budget is spent (network waits do not
// spend it), so what is dumped or shot is the page after its polls.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}
	args = append(append(args, extra...), url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, tail(stderr.Bytes(), 2000))
	}
	return stdout.Bytes()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

var (
	compactionRowRe = regexp.MustCompile(`<tr class="compaction" data-before="(\d+)" data-after="(\d+)">`)
	beforeBarRe     = regexp.MustCompile(`<div class="fill before" style="width:\s*([\d.]+)%;?">`)
	afterBarRe      = regexp.MustCompile(`<div class="fill after" style="width:\s*([\d.]+)%;?">`)
	renderedRe      = regexp.MustCompile(`<body data-rendered="(\d+)">`)
)

// The dashboard in a real browser: after traffic that compacts, the page
// served by the proxy shows each compaction as a before → after bar, and
// the test keeps a screenshot of it.
func TestDashboardInChromium(t *testing.T) {
	bin := chromiumPath(t)
	st := &stubbackend.Server{Kind: stubbackend.LlamaCpp, Window: 8192}
	up, err := st.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir, store := bareRepo(t, "")
	cfg := DefaultConfig()
	cfg.Listen, cfg.Upstream, cfg.Store, cfg.Writer = "127.0.0.1:0", up, store, "proxy-dashboard"
	cfg.LogPath = filepath.Join(dir, "lossless", "proxy", LogFile)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Run(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	base := "http://" + srv.Addr

	// The demo's session: compactions from turn 7 on.
	c := stubbackend.NewConversation("stub-model", "You are a careful code reviewer.")
	for i := 1; i <= 10; i++ {
		c.User(stubbackend.DemoTurn(i))
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(c.Body(false)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: HTTP %d", i, resp.StatusCode)
		}
		c.Assistant(fmt.Sprintf("Reviewed module %d.", i))
	}
	ictx, icancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer icancel()
	if err := srv.Proxy.Idle(ictx); err != nil {
		t.Fatal(err)
	}
	stats := srv.Proxy.Stats()
	if stats.Compacted == 0 {
		t.Fatal("the traffic compacted nothing: test setup")
	}

	// 1. The rendered DOM, after the page's script has polled the proxy.
	dom := headless(t, bin, base+"/lossless/health", "--dump-dom")
	if m := renderedRe.FindSubmatch(dom); m == nil {
		t.Fatalf("the dashboard never rendered the proxy's data:\n%s", tail(dom, 3000))
	}
	rows := compactionRowRe.FindAllSubmatch(dom, -1)
	if len(rows) != stats.Compacted {
		t.Fatalf("%d compaction rows on the dashboard, the proxy made %d compactions:\n%s", len(rows), stats.Compacted, tail(dom, 3000))
	}
	for _, r := range rows {
		before, _ := strconv.Atoi(string(r[1]))
		after, _ := strconv.Atoi(string(r[2]))
		if before <= after || after <= 0 {
			t.Errorf("compaction row %d → %d tokens", before, after)
		}
	}
	bb, ab := beforeBarRe.FindAllSubmatch(dom, -1), afterBarRe.FindAllSubmatch(dom, -1)
	if len(bb) != len(rows) || len(ab) != len(rows) {
		t.Fatalf("%d before bars and %d after bars for %d compactions", len(bb), len(ab), len(rows))
	}
	for i := range bb {
		b, _ := strconv.ParseFloat(string(bb[i][1]), 64)
		a, _ := strconv.ParseFloat(string(ab[i][1]), 64)
		if !(a > 0 && a < b && b <= 100) {
			t.Errorf("bar %d: before %.1f%%, after %.1f%% of the track", i, b, a)
		}
	}
	// Errors the client saw are on the page: unreachable, cut, looped.
	if !bytes.Contains(dom, []byte(`<div class="v">0 / 0 / 0</div><div class="k">upstream errors / cuts / loops</div>`)) {
		t.Errorf("the dashboard lacks the upstream errors / cuts / loops card:\n%s", tail(dom, 3000))
	}
	// No session's tools crowd its window: no advice (toolbudget_test.go
	// shows one).
	if !bytes.Contains(dom, []byte(`<section id="advice" hidden="">`)) {
		t.Errorf("the tool budget advice is shown for a session without tools:\n%s", tail(dom, 3000))
	}
	// Stale recalls and the lines they quoted, as the stats count them.
	if card := fmt.Sprintf(`<div class="v">%d / %d</div><div class="k">recalls / lines</div>`, stats.Recalls, stats.RecallLines); !bytes.Contains(dom, []byte(card)) {
		t.Errorf("the dashboard lacks the card %s:\n%s", card, tail(dom, 3000))
	}
	if !bytes.Contains(dom, []byte(" → ")) || !bytes.Contains(dom, []byte(`<tr data-session="`)) {
		t.Errorf("the dashboard lacks the before → after text or the session row:\n%s", tail(dom, 3000))
	}

	// 2. A screenshot: a valid PNG of the window's size, with the after
	// bars' green (#3fa66b) on it.
	shot := os.Getenv(screenshotEnv)
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "dashboard.png")
	} else if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	headless(t, bin, base+"/lossless/health", "--screenshot="+shot, "--window-size=1280,1000", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 1000 {
		t.Fatalf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	if n := countColor(img, 0x3f, 0xa6, 0x6b, 8); n < 50 {
		t.Errorf("the screenshot shows %d pixels of the after-bar green; no bar drawn?", n)
	}
	t.Logf("dashboard screenshot: %s (%d compactions shown)", shot, len(rows))
}

// countColor counts pixels within tol of r, g, b on every channel.
func countColor(img image.Image, r, g, b uint8, tol int) int {
	near := func(v uint32, want uint8) bool {
		d := int(v>>8) - int(want)
		return d >= -tol && d <= tol
	}
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if near(cr, r) && near(cg, g) && near(cb, b) {
				n++
			}
		}
	}
	return n
}
