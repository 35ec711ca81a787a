// Package blamedata builds the fixture blame is measured on: a repository
// whose one file grew under a person and two agent contexts, every agent
// write archived as the hooks archive it, every commit made by the real
// git (fast-import), and the test's own bookkeeping of who wrote each line
// of the final file, so a bench can report accuracy beside speed.
package blamedata

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Params size the fixture.
type Params struct {
	Lines     int // lines of the file the person starts with
	Writes    int // agent writes (edits) over the history
	PerCommit int // agent writes between commits
	Seed      int64
}

// Default is the target: a file near 5,000 lines whose history
// holds 2,000 agent writes.
var Default = Params{Lines: 3000, Writes: 2000, PerCommit: 4, Seed: 21}

// Fixture is a built repository.
type Fixture struct {
	Dir     string
	File    string   // repository-relative
	Owners  []string // per line of the file at HEAD: the writer, "" a person
	Commits int
	Writes  int
	Lines   int
}

type line struct{ text, owner string }

// Writers of the two agent contexts.
var writers = []struct{ name, session, harness, tool string }{
	{"cc-bench-alpha", "bench-alpha", "claude-code", "Edit"},
	{"codex-bench-beta", "bench-beta", "codex", "apply_patch"},
}

// Build makes the fixture in dir (created; must not exist or be empty).
func Build(ctx context.Context, dir string, p Params) (*Fixture, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	git := func(stdin []byte, args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := git(nil, "init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(p.Seed))
	n := 0
	gen := func() string {
		n++
		switch r := rng.Intn(10); {
		case r == 0:
			return ""
		case r == 1:
			return "}"
		case r == 2:
			return "\t}"
		default:
			return fmt.Sprintf("\tv%d := compute(a%d, %d) // step %d", n, rng.Intn(50), rng.Intn(1000), n)
		}
	}
	var doc []line
	for i := 0; i < p.Lines; i++ {
		doc = append(doc, line{gen(), ""})
	}
	render := func() []byte {
		var b bytes.Buffer
		for _, l := range doc {
			b.WriteString(l.text)
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	const file = "big.go"
	var stream bytes.Buffer
	t := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	commits := 0
	commit := func(author, msg string) {
		t = t.Add(time.Minute)
		content := render()
		commits++
		fmt.Fprintf(&stream, "commit refs/heads/main\nmark :%d\nauthor %s <%s@example.com> %d +0000\ncommitter %s <%s@example.com> %d +0000\ndata %d\n%s\n",
			commits, author, strings.ToLower(author), t.Unix(), author, strings.ToLower(author), t.Unix(), len(msg), msg)
		if commits > 1 {
			fmt.Fprintf(&stream, "from :%d\n", commits-1)
		}
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", file, len(content), content)
	}
	commit("Pat", "start")
	recs := make([][]gitstore.Record, len(writers))
	event := func(w int, op gitstore.Op, key string) {
		t = t.Add(time.Second)
		wr := writers[w]
		e := gitstore.Event{TS: t, Session: wr.session, Source: "hook", Op: op, View: "full", Harness: wr.harness, Key: key}
		if op != gitstore.OpRead {
			e.Tool = wr.tool
		}
		e.SetPath(file)
		recs[w] = append(recs[w], gitstore.Record{Event: e, Content: render(), HasContent: true})
	}
	personEdited := true
	for i := 0; i < p.Writes; i++ {
		w := (i / 7) % len(writers)
		if personEdited {
			event(w, "read", "")
		}
		personEdited = false
		at := rng.Intn(len(doc))
		switch rng.Intn(4) {
		case 0: // rewrite a line
			doc[at] = line{gen(), writers[w].name}
		case 1: // remove a line
			doc = append(doc[:at], doc[at+1:]...)
		default: // insert a block
			k := 1 + rng.Intn(3)
			add := make([]line, k)
			for j := range add {
				add[j] = line{gen(), writers[w].name}
			}
			doc = append(doc[:at], append(add, doc[at:]...)...)
		}
		event(w, "edit", fmt.Sprintf("call-%d", i))
		if (i+1)%p.PerCommit == 0 {
			if rng.Intn(2) == 0 { // the person touches the file before committing
				at := rng.Intn(len(doc))
				doc[at] = line{gen(), ""}
				doc = append(doc[:at], append([]line{{gen(), ""}}, doc[at:]...)...)
				personEdited = true
			}
			commit("Pat", fmt.Sprintf("work %d", i+1))
		}
	}
	commit("Pat", "last")
	if err := git(stream.Bytes(), "fast-import", "--quiet"); err != nil {
		return nil, err
	}
	if err := git(nil, "reset", "-q", "--hard", "main"); err != nil {
		return nil, err
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		return nil, err
	}
	for w, rs := range recs {
		if len(rs) == 0 {
			continue
		}
		if _, err := st.ImportWith(ctx, writers[w].name, rs, gitstore.ImportOptions{}); err != nil {
			return nil, fmt.Errorf("import %s: %w", writers[w].name, err)
		}
	}
	f := &Fixture{Dir: dir, File: file, Commits: commits, Writes: p.Writes, Lines: len(doc)}
	for _, l := range doc {
		f.Owners = append(f.Owners, l.owner)
	}
	return f, nil
}

// Path is the file's absolute path.
func (f *Fixture) Path() string { return filepath.Join(f.Dir, f.File) }
