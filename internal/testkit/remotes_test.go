package testkit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// commit writes a file in the work tree dir, commits it and returns the
// commit id; msg makes each commit, and so each id, distinct.
func commit(t *testing.T, dir string, env []string, msg string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte(msg+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, env, "add", "file.txt")
	Git(t, dir, env, "commit", "-q", "-m", msg)
	return Git(t, dir, env, "rev-parse", "HEAD")
}

// lsRemote lists the refs of url as git ls-remote sees them over the
// transport, by name.
func lsRemote(t *testing.T, dir string, env []string, url string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	for _, line := range strings.Split(Git(t, dir, env, "ls-remote", url), "\n") {
		if id, name, ok := strings.Cut(line, "\t"); ok {
			refs[name] = id
		}
	}
	return refs
}

// wantRefs fails the test unless got holds exactly want.
func wantRefs(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: refs %v, want %v", what, got, want)
		return
	}
	for name, id := range want {
		if got[name] != id {
			t.Errorf("%s: refs %v, want %v", what, got, want)
			return
		}
	}
}

// wantRev fails the test unless rev resolves to want in the repository dir.
func wantRev(t *testing.T, dir, rev, want string) {
	t.Helper()
	if got := Git(t, dir, nil, "rev-parse", "--verify", "-q", rev); got != want {
		t.Errorf("%s in %s = %s, want %s", rev, dir, got, want)
	}
}

// roundTrip pushes a branch and a custom ref from a fresh repository to
// url, the server of the empty bare repository bare, checks them on the
// server's disk and over the transport, fetches them back into a clone,
// then pushes a fast-forward and a deletion and fetches those (with
// --prune) too: what git lossless push and fetch ask of a remote.
func roundTrip(t *testing.T, bare, url string, env []string) {
	t.Helper()
	work := t.TempDir()
	Git(t, work, env, "init", "-q", "-b", "main")
	c1 := commit(t, work, env, "one")
	Git(t, work, env, "push", "-q", url, "HEAD:refs/heads/main")
	c2 := commit(t, work, env, "two")
	Git(t, work, env, "push", "-q", url, "HEAD:refs/lossless/w")

	wantRev(t, bare, "refs/heads/main", c1)
	wantRev(t, bare, "refs/lossless/w", c2)
	wantRefs(t, "ls-remote after push", lsRemote(t, work, env, url),
		map[string]string{"HEAD": c1, "refs/heads/main": c1, "refs/lossless/w": c2})

	clone := filepath.Join(t.TempDir(), "clone")
	Git(t, "", env, "clone", "-q", url, clone)
	wantRev(t, clone, "HEAD", c1)
	wantRev(t, clone, "refs/remotes/origin/main", c1)
	Git(t, clone, env, "fetch", "-q", url, "refs/lossless/w:refs/lossless/w")
	wantRev(t, clone, "refs/lossless/w", c2)
	if got := Git(t, clone, nil, "cat-file", "-t", c2); got != "commit" {
		t.Errorf("fetched %s is a %q, want its commit object", c2, got)
	}

	Git(t, work, env, "push", "-q", url, "HEAD:refs/heads/main", ":refs/lossless/w")
	wantRefs(t, "ls-remote after fast-forward and delete", lsRemote(t, work, env, url),
		map[string]string{"HEAD": c2, "refs/heads/main": c2})
	Git(t, clone, env, "fetch", "-q", "--prune", url,
		"refs/heads/main:refs/remotes/origin/main", "refs/lossless/*:refs/lossless/*")
	wantRev(t, clone, "refs/remotes/origin/main", c2)
	if out, err := TryGit(t, clone, nil, "rev-parse", "--verify", "-q", "refs/lossless/w"); err == nil {
		t.Errorf("refs/lossless/w = %s in the clone after fetch --prune, want it pruned", out)
	}
}

func TestServeDaemon(t *testing.T) {
	t.Parallel()
	bare := NewBare(t, "remote.git")
	url := ServeDaemon(t, bare)
	if !strings.HasPrefix(url, "git://127.0.0.1:") || !strings.HasSuffix(url, "/remote.git") {
		t.Fatalf("URL %s, want git://127.0.0.1:PORT/remote.git", url)
	}
	roundTrip(t, bare, url, nil)
}

func TestServeHTTP(t *testing.T) {
	t.Parallel()
	bare := NewBare(t, "remote.git")
	url := ServeHTTP(t, bare)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/remote.git") {
		t.Fatalf("URL %s, want http://127.0.0.1:PORT/remote.git", url)
	}
	roundTrip(t, bare, url, nil)
}

func TestServeHTTPAuth(t *testing.T) {
	t.Parallel()
	// Shell and git-config metacharacters, to show CredentialHelper quotes.
	const user, password = "alice", `pa ss'"$(false);\n#`
	bare := NewBare(t, "remote.git")
	url := ServeHTTPAuth(t, bare, user, password)
	if strings.Contains(url, "alice") {
		t.Fatalf("URL %s carries credentials", url)
	}

	// Each subtest has a HOME of its own, so a helper set with --global
	// in one is unknown to the others.
	t.Run("no credentials", func(t *testing.T) {
		_, err := TryGit(t, "", nil, "ls-remote", url)
		if err == nil || !strings.Contains(err.Error(), "could not read Username") {
			t.Fatalf("ls-remote without credentials: %v; want git to find none", err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		_, err := TryGit(t, "", nil, "-c", "credential.helper="+CredentialHelper(user, "wrong"), "ls-remote", url)
		if err == nil || !strings.Contains(err.Error(), "Authentication failed") {
			t.Fatalf("ls-remote with a wrong password: %v; want the server to refuse it", err)
		}
	})
	t.Run("helper in repository config", func(t *testing.T) {
		work := t.TempDir()
		Git(t, work, nil, "init", "-q", "-b", "main")
		Git(t, work, nil, "config", "credential.helper", CredentialHelper(user, password))
		c := commit(t, work, nil, "local")
		Git(t, work, nil, "push", "-q", url, "HEAD:refs/lossless/local")
		wantRev(t, bare, "refs/lossless/local", c)
		Git(t, work, nil, "push", "-q", url, ":refs/lossless/local")
	})
	t.Run("helper in global config", func(t *testing.T) {
		Git(t, "", nil, "config", "--global", "credential.helper", CredentialHelper(user, password))
		roundTrip(t, bare, url, nil)
	})
}

func TestServeSSH(t *testing.T) {
	t.Parallel()
	bare := NewBare(t, "remote.git")
	url, env := ServeSSH(t, bare)
	if want := "ssh://" + SSHHost + bare; url != want {
		t.Fatalf("URL %s, want %s", url, want)
	}
	roundTrip(t, bare, url, env)

	// The scp-like form users write (host:path) reaches the same
	// repository through the same alias.
	wantRefs(t, "ls-remote host:path", lsRemote(t, "", env, SSHHost+":"+bare),
		map[string]string{"HEAD": Git(t, bare, nil, "rev-parse", "HEAD"), "refs/heads/main": Git(t, bare, nil, "rev-parse", "HEAD")})
}

// TestServersStop checks that a server, and every process it started for
// the connections it served, is gone once its test has ended.
func TestServersStop(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc to list processes")
	}
	t.Parallel()
	servers := map[string]func(t *testing.T, bare string) (string, []string){
		"daemon": func(t *testing.T, bare string) (string, []string) { return ServeDaemon(t, bare), nil },
		"http":   func(t *testing.T, bare string) (string, []string) { return ServeHTTP(t, bare), nil },
		"ssh":    func(t *testing.T, bare string) (string, []string) { return ServeSSH(t, bare) },
	}
	for name, serve := range servers {
		var root string
		t.Run(name, func(t *testing.T) {
			bare := NewBare(t, "remote.git")
			root = filepath.Dir(filepath.Dir(bare)) // this subtest's temporary directories
			url, env := serve(t, bare)
			work := t.TempDir()
			Git(t, work, env, "init", "-q", "-b", "main")
			commit(t, work, env, "one")
			Git(t, work, env, "push", "-q", url, "HEAD:refs/heads/main")
			lsRemote(t, work, env, url)
		})
		if root == "" {
			continue // skipped
		}
		if pids := processesMentioning(t, root); len(pids) > 0 {
			t.Errorf("%s: processes %v still run with %s on their command line", name, pids, root)
		}
	}
}

// processesMentioning lists the processes whose command line holds s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && aliveName(e.Name()) {
			pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return pids
}

// aliveName reports whether the /proc entry name is a running process.
func aliveName(name string) bool {
	pid, err := strconv.Atoi(name)
	return err == nil && alive(pid)
}

func TestGitIsHermetic(t *testing.T) {
	// As when tests run from a git hook, which sets GIT_DIR, and on a
	// machine whose global configuration would change git's behaviour.
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "nonexistent"))
	repo := t.TempDir()
	Git(t, repo, nil, "init", "-q")
	if got := Git(t, repo, nil, "rev-parse", "--git-dir"); got != ".git" {
		t.Errorf("git dir %q, want .git: an inherited GIT_DIR leaked in", got)
	}
	if got := Git(t, repo, nil, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("HEAD %s, want refs/heads/main from the test HOME's configuration", got)
	}
	home := t.TempDir()
	if got, _ := TryGit(t, repo, []string{"HOME=" + home}, "config", "--global", "user.name"); got != "" {
		t.Errorf("user.name %q under a HOME without configuration, want none", got)
	}
	_, err := TryGit(t, repo, nil, "rev-parse", "--verify", "no-such-ref")
	if err == nil || !strings.Contains(err.Error(), "fatal:") {
		t.Errorf("error %v, want git's stderr in it", err)
	}
}

// recorder is a testing.TB that records Skipf and Fatalf and ends the
// goroutine like the real ones, so that NeedTool's verdict can be checked.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(string, ...any) {
	r.skipped = true
	runtime.Goexit()
}
func (r *recorder) Fatalf(string, ...any) {
	r.failed = true
	runtime.Goexit()
}

func TestNeedTool(t *testing.T) {
	if p := NeedTool(t, "git"); !filepath.IsAbs(p) {
		t.Errorf("NeedTool(git) = %q, want an absolute path", p)
	}
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			NeedTool(r, "testkit-no-such-tool")
		}()
		<-done
		if want := ci == "true"; r.failed != want || r.skipped == want {
			t.Errorf("CI=%q: missing tool failed=%v skipped=%v, want failed=%v", ci, r.failed, r.skipped, want)
		}
	}
}

// TestStartServerRetriesTakenPort hands git daemon a port that another
// listener holds, as when a process takes the chosen port before the
// server binds it, and checks that startServer moves to another port.
func TestStartServerRetriesTakenPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port

	git := NeedTool(t, "git")
	bare := NewBare(t, "remote.git")
	home := newHome(t)
	attempts := 0
	port := startServer(t, "git daemon", func(port int) (*exec.Cmd, string) {
		attempts++
		if attempts == 1 {
			port = taken
		}
		cmd := exec.Command(git, "daemon", "--reuseaddr", "--export-all", "--verbose",
			"--base-path="+filepath.Dir(bare), "--listen=127.0.0.1", "--port="+strconv.Itoa(port))
		cmd.Env = hermeticEnv(home)
		return cmd, daemonReady
	})
	if attempts < 2 || port == taken {
		t.Fatalf("served on port %d after %d attempts; want another port than the taken %d", port, attempts, taken)
	}
	Git(t, "", nil, "ls-remote", fmt.Sprintf("git://127.0.0.1:%d/remote.git", port))
}
