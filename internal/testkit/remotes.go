package testkit

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The servers below serve a bare repository over the transports a user's
// git push and git fetch use (git://, http://, ssh://), on 127.0.0.1,
// with the real git binaries on both ends: what the tests exercise is
// what a user's git does, not a reimplementation of the protocols.

const (
	// startTimeout bounds the wait for a server to accept connections. It
	// is generous because a loaded CI machine can take seconds to start a
	// process; the wait polls, so a fast start costs milliseconds.
	startTimeout = time.Minute
	// stopGrace is how long a server may take to exit after SIGTERM, and
	// its leftover connection processes after that, before SIGKILL.
	stopGrace = 10 * time.Second
	// bindAttempts bounds the retries when another process takes the
	// chosen port between choosing it and the server binding it.
	bindAttempts = 8
)

// ServeDaemon serves the bare repository bareDir with git daemon, pushes
// enabled, and returns its URL, git://127.0.0.1:PORT/<base name of
// bareDir>. The daemon and the processes it started are stopped when the
// test ends.
func ServeDaemon(t testing.TB, bareDir string) string {
	t.Helper()
	git := NeedTool(t, "git")
	base, name := splitRepo(t, bareDir)
	home := newHome(t)
	port := startServer(t, "git daemon", func(port int) (*exec.Cmd, string) {
		cmd := exec.Command(git, "daemon",
			"--reuseaddr", "--export-all", "--enable=receive-pack",
			"--informative-errors", "--verbose",
			"--base-path="+base,
			"--listen=127.0.0.1", "--port="+strconv.Itoa(port))
		cmd.Dir = base
		cmd.Env = hermeticEnv(home)
		return cmd, daemonReady
	})
	return fmt.Sprintf("git://127.0.0.1:%d/%s", port, name)
}

// daemonReady is what git daemon --verbose logs once it listens.
const daemonReady = "Ready to rumble"

// ServeHTTP serves the bare repository bareDir over smart HTTP, with git
// http-backend run as a CGI program by an in-process server, pushes
// enabled, and returns its URL, http://127.0.0.1:PORT/<base name of
// bareDir>. The server stops when the test ends.
func ServeHTTP(t testing.TB, bareDir string) string {
	t.Helper()
	return serveHTTP(t, bareDir, "", "")
}

// ServeHTTPAuth is ServeHTTP behind HTTP basic authentication: every
// request without user and password is answered 401, as a private
// repository on a forge is. The URL carries no credentials; give them to
// git as a user would, with a credential helper (see CredentialHelper),
// so that tests show that git's credential helpers are honoured.
func ServeHTTPAuth(t testing.TB, bareDir, user, password string) string {
	t.Helper()
	if user == "" || strings.Contains(user, ":") {
		t.Fatalf("ServeHTTPAuth: user %q is empty or holds a colon", user)
	}
	return serveHTTP(t, bareDir, user, password)
}

// CredentialHelper returns a value for git's credential.helper setting,
// in the inline shell form users write in their configuration, that
// answers git's "get" with user and password and ignores "store" and
// "erase". Both are shell-quoted, so any characters but newlines work.
func CredentialHelper(user, password string) string {
	return "!f() { cat >/dev/null; if test \"$1\" = get; then printf '%s\\n' " +
		shellQuote("username="+user) + " " + shellQuote("password="+password) + "; fi; }; f"
}

// serveHTTP implements ServeHTTP, and ServeHTTPAuth when user is set.
func serveHTTP(t testing.TB, bareDir, user, password string) string {
	t.Helper()
	git := NeedTool(t, "git")
	root, name := splitRepo(t, bareDir)
	logs := &syncBuffer{}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Dir:  root,
		// A CGI program inherits only what is listed here (and PATH).
		// http.receivepack is given as configuration in the environment,
		// which enables pushes as the repository's config would without
		// changing the repository under test.
		Env: []string{
			"HOME=" + newHome(t),
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
		},
		Logger: log.New(logs, "cgi: ", 0),
		Stderr: logs,
	}
	var h http.Handler = backend
	if user != "" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="testkit", charset="UTF-8"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			// As a web server does for an authenticated request: git
			// http-backend names the pusher in reflogs after it.
			b := *backend
			b.Env = append(slices.Clip(backend.Env), "REMOTE_USER="+u)
			b.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(logs, "http: ", 0)
	srv.Start()
	t.Cleanup(func() {
		// Close waits for the requests in flight, and so for their git
		// http-backend processes.
		srv.Close()
		if t.Failed() {
			t.Logf("git http-backend on %s logged:\n%s", srv.URL, logs.String())
		}
	})
	return srv.URL + "/" + url.PathEscape(name)
}

// splitRepo returns the absolute parent directory of the repository
// bareDir and its base name, which the servers take as the root they
// serve and the path in the URL.
func splitRepo(t testing.TB, bareDir string) (root, name string) {
	t.Helper()
	abs, err := filepath.Abs(bareDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		t.Fatalf("repository %s: not a directory (%v)", abs, err)
	}
	return filepath.Dir(abs), filepath.Base(abs)
}

// process is a server started by startServer.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string        // file holding its stdout and stderr
	done chan struct{} // closed once cmd.Wait has returned
	err  error         // cmd.Wait's result, written before done is closed
}

// errExited says that the server process ended before accepting
// connections.
var errExited = errors.New("exited before accepting connections")

// startServer runs the server that build returns for a port on
// 127.0.0.1 and returns that port once the server accepts connections.
// build also returns the line the server logs once it listens. The server
// is stopped when the test ends.
//
// The port comes from the kernel (listen on port 0, close) and is handed
// to the server, which leaves a window in which another process can take
// it: then the server fails to bind and exits, and startServer tries
// another port. In that window a TCP connect alone would be answered by
// the other process, so readiness needs the server's own word (its log
// line) and a connect that succeeds, both polled, not assumed after a
// sleep.
func startServer(t testing.TB, name string, build func(port int) (cmd *exec.Cmd, ready string)) int {
	t.Helper()
	logDir := t.TempDir()
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		cmd, ready := build(port)
		p := &process{
			name: name,
			cmd:  cmd,
			log:  filepath.Join(logDir, fmt.Sprintf("attempt%d.log", attempt)),
			done: make(chan struct{}),
		}
		// A file rather than a pipe: Wait then returns when the server
		// exits, whatever its children do with the descriptor.
		f, err := os.Create(p.log)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		setProcessGroup(cmd)
		err = cmd.Start()
		f.Close()
		if err != nil {
			t.Fatalf("starting %s: %v", name, err)
		}
		go func() {
			p.err = cmd.Wait()
			close(p.done)
		}()
		t.Cleanup(func() { p.stop(t) })

		err = p.awaitListening(port, ready)
		switch {
		case err == nil:
			return port
		case errors.Is(err, errExited) && attempt < bindAttempts && bindFailed(p.output()):
			t.Logf("%s could not bind 127.0.0.1:%d, taken meanwhile; trying another port", name, port)
		default:
			t.Fatalf("%s on 127.0.0.1:%d: %v; its output:\n%s", name, port, err, p.output())
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// bindFailed reports whether a server's output says it could not bind
// its port (git daemon: "Could not bind to ...", sshd: "Bind to port ...
// failed: Address already in use").
func bindFailed(output string) bool {
	s := strings.ToLower(output)
	return strings.Contains(s, "address already in use") || strings.Contains(s, "bind")
}

// awaitListening polls until the server has logged ready and accepts a
// TCP connection on 127.0.0.1:port, and fails when it exits first or
// startTimeout passes.
//
// The probe shows in the server's log as a client that hung up at once
// (git daemon: "the remote end hung up unexpectedly"; sshd:
// "kex_exchange_identification: Connection closed").
func (p *process) awaitListening(port int, ready string) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	pause := 5 * time.Millisecond
	for {
		err := fmt.Errorf("has not logged %q", ready)
		if strings.Contains(p.output(), ready) {
			var c net.Conn
			if c, err = net.DialTimeout("tcp4", addr, time.Second); err == nil {
				c.Close()
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w (%v)", errExited, p.err)
		default:
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %v", startTimeout, err)
		}
		select {
		case <-p.done:
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// stop ends the server, then waits for the processes it had started to
// end too, so that none outlives the test. When the test failed, it logs
// the server's output.
func (p *process) stop(t testing.TB) {
	select {
	case <-p.done: // a failed attempt, or a server that died on its own
	default:
		// Listed before the server dies: its orphans get a new parent.
		kids := descendants(p.cmd.Process.Pid)
		terminate(p.cmd.Process, kids, false)
		if !within(p.done, stopGrace) {
			terminate(p.cmd.Process, kids, true)
			<-p.done
		}
		if live := awaitGone(kids); len(live) > 0 {
			terminate(p.cmd.Process, live, true)
			if live = awaitGone(live); len(live) > 0 {
				t.Errorf("%s: processes %v outlived SIGKILL", p.name, live)
			}
		}
	}
	if t.Failed() {
		t.Logf("%s (exit: %v) output:\n%s", p.name, p.err, p.output())
	}
}

// output returns what the server wrote to stdout and stderr so far.
func (p *process) output() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	return string(b)
}

// within reports whether done is closed within d.
func within(done <-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// awaitGone polls until none of pids runs, for at most stopGrace, and
// returns those still running.
func awaitGone(pids []int) []int {
	deadline := time.Now().Add(stopGrace)
	for {
		var live []int
		for _, pid := range pids {
			if alive(pid) {
				live = append(live, pid)
			}
		}
		if len(live) == 0 || time.Now().After(deadline) {
			return live
		}
		pids = live
		time.Sleep(10 * time.Millisecond)
	}
}

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// syncBuffer is a bytes.Buffer safe for concurrent writers, such as the
// request handlers of an HTTP server.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
