package blame_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// gitEnv isolates git from the user's configuration.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
	return append(env, extra...)
}

type repo struct {
	t   testing.TB
	dir string
	st  *gitstore.Store
	now time.Time
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	r := &repo{t: t, dir: dir, now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	r.git("init", "-q", "-b", "main")
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	return r
}

// tick moves the scripted clock on a minute: every event and commit has
// its own time, in the order the script runs them.
func (r *repo) tick() time.Time {
	r.now = r.now.Add(time.Minute)
	return r.now
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	out, err := r.gitEnv(nil, args...)
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func (r *repo) gitEnv(env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = gitEnv(env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (r *repo) writeFile(p string, content []byte) {
	r.t.Helper()
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, content, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// commit commits everything as the given author, at the scripted clock.
func (r *repo) commit(author, msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	stamp := r.tick().Format(time.RFC3339)
	out, err := r.gitEnv([]string{"GIT_COMMITTER_DATE=" + stamp, "GIT_AUTHOR_DATE=" + stamp, "GIT_AUTHOR_NAME=" + author},
		"commit", "-q", "-m", msg)
	if err != nil {
		r.t.Fatalf("git commit: %v\n%s", err, out)
	}
	return r.git("rev-parse", "HEAD")
}

// agent is a scripted model context.
type agent struct {
	writer, session, harness, sub string
}

func (r *repo) event(a agent, op, tool, key, path string, content []byte) gitstore.Event {
	r.t.Helper()
	e := gitstore.Event{TS: r.tick(), Session: a.session, Agent: a.sub, Sidechain: a.sub != "", Op: gitstore.Op(op), Source: "hook",
		View: "full", Tool: tool, Key: key, Harness: a.harness}
	e.SetPath(path)
	res, err := r.st.Append(context.Background(), a.writer, []gitstore.Record{{Event: e, Content: content, HasContent: true}})
	if err != nil {
		r.t.Fatal(err)
	}
	return res.Events[0]
}

// span archives a conversation span of the agent's context.
func (r *repo) span(a agent, kind, tool, key string, content string) {
	r.t.Helper()
	e := gitstore.Event{TS: r.tick(), Session: a.session, Agent: a.sub, Sidechain: a.sub != "", Op: "span", Source: "sweep",
		Tool: tool, Key: key, Harness: a.harness}
	e.Extra = map[string]json.RawMessage{"kind": json.RawMessage(fmt.Sprintf("%q", kind))}
	if _, err := r.st.Append(context.Background(), a.writer, []gitstore.Record{{Event: e, Content: []byte(content), HasContent: true}}); err != nil {
		r.t.Fatal(err)
	}
}

// doc is the test's own bookkeeping of a file: each line's text and who
// wrote it ("" a person, else the writer that did), kept by applying every
// scripted change to it. Blame must find the same owners from the archive
// and git alone.
type doc []owned

type owned struct{ text, owner string }

func (d doc) bytes() []byte {
	var b strings.Builder
	for _, l := range d {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// insert puts lines before index at (0-based), owned by owner.
func (d doc) insert(at int, owner string, lines ...string) doc {
	add := make(doc, len(lines))
	for i, l := range lines {
		add[i] = owned{l, owner}
	}
	out := append(doc{}, d[:at]...)
	out = append(out, add...)
	return append(out, d[at:]...)
}

// set replaces the text of line at, which becomes owner's.
func (d doc) set(at int, owner, text string) doc {
	out := append(doc{}, d...)
	out[at] = owned{text, owner}
	return out
}

func (d doc) del(at, n int) doc {
	out := append(doc{}, d[:at]...)
	return append(out, d[at+n:]...)
}

// find is the index of the line with this text (which the script keeps
// unique where it looks lines up).
func (d doc) find(t testing.TB, text string) int {
	t.Helper()
	for i, l := range d {
		if l.text == text {
			return i
		}
	}
	t.Fatalf("no line %q", text)
	return -1
}
