package meter_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// gitEnv isolates git from the user's configuration.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "LOSSLESS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
}

type repo struct {
	t   testing.TB
	dir string
	st  *gitstore.Store
	seq map[string]int // keys per writer
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	r := &repo{t: t, dir: dir, seq: map[string]int{}}
	r.git("init", "-q", "-b", "main")
	r.open()
	return r
}

func (r *repo) open() {
	r.t.Helper()
	off := false
	st, err := gitstore.OpenDir(r.dir, gitstore.Options{Fsync: &off})
	if err != nil {
		r.t.Fatal(err)
	}
	r.st = st
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = gitEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

func (r *repo) write(p, content string) {
	r.t.Helper()
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// ev is one event of a scenario.
type ev struct {
	at      time.Time
	session string
	agent   string
	op      string
	path    string
	view    string // "" = full
	content string // archived content (file ops)
}

// append stores e on its session's writer (cc-<session>), as the hooks
// and the sweep do.
func (r *repo) append(e ev) {
	r.t.Helper()
	writer := gitstore.WriterName("cc-", e.session)
	r.seq[writer]++
	view := e.view
	if view == "" && e.op != "compact" {
		view = "full"
	}
	rec := gitstore.Record{Event: gitstore.Event{
		TS: e.at, Session: e.session, Agent: e.agent, Sidechain: e.agent != "",
		Source: "hook", Op: gitstore.Op(e.op), View: view, Key: fmt.Sprintf("k-%s-%d", writer, r.seq[writer]),
	}}
	if e.op == "compact" {
		rec.Source = "sweep"
	} else {
		rec.SetPath(e.path)
		rec.Content, rec.HasContent = []byte(e.content), true
	}
	if _, err := r.st.Append(context.Background(), writer, []gitstore.Record{rec}); err != nil {
		r.t.Fatal(err)
	}
}

func count(t testing.TB, s string) int64 {
	t.Helper()
	n, err := tokens.CountText(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
