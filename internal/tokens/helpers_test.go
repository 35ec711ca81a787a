package tokens_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// tokRepo is a fresh repository's archive, for counting what it holds.
type tokRepo struct {
	t  testing.TB
	st *gitstore.Store
}

func newRepo(t testing.TB) *tokRepo {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		t.Fatal(err)
	}
	return &tokRepo{t: t, st: st}
}

// rec is one event to record and its content.
type rec struct {
	at      time.Time
	session string
	agent   string
	op      string
	path    string
	content string
	view    string
	none    bool // no content
}

func (r *tokRepo) record(writer string, recs ...rec) []gitstore.Event {
	r.t.Helper()
	var out []gitstore.Event
	for _, x := range recs {
		e := gitstore.Event{TS: x.at, Session: x.session, Agent: x.agent, Sidechain: x.agent != "", Op: gitstore.Op(x.op), Source: "hook", View: x.view}
		if e.View == "" && x.op != "span" {
			e.View = "full"
		}
		e.SetPath(x.path)
		g := gitstore.Record{Event: e}
		if !x.none {
			g.Content, g.HasContent = []byte(x.content), true
		}
		res, err := r.st.Append(context.Background(), writer, []gitstore.Record{g})
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, res.Events...)
	}
	return out
}
