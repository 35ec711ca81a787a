package receipt_test

import (
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// The worked example of the package documentation: one session's main
// agent reads README.md and src/app.go, edits src/app.go, reads .env
// (deny-listed), and a subagent reads part of src/util.go; afterwards a
// human changes README.md again and adds docs/notes.md, and all of it is
// committed.
func exampleInput() note.Input {
	content := map[string]string{}
	blob := func(s string) string {
		id := gitstore.BlobID([]byte(s))
		content[id] = s
		return id
	}
	readme1 := blob("# Inventory\n\nA tiny service.\n")
	readme2 := blob("# Inventory\n\nA tiny service, edited by hand.\n")
	app1 := blob("package main\n\nfunc main() {}\n")
	app2 := blob("package main\n\nfunc main() { println(\"low stock\") }\n")
	utilLines := blob("// lowStock reports whether an item needs reordering.\nfunc lowStock(n int) bool { return n < 20 }\n")
	appLine := blob("func main() { println(\"low stock\") }\n")
	notes := blob("notes written by hand\n")
	span := blob(`{"kind":"user","role":"user","text":"Flag low stock in main."}`)
	span2 := blob(`{"kind":"assistant","role":"assistant","text":"I will read the files first, then edit src/app.go."}`)
	env := gitstore.BlobID([]byte("DB_PASSWORD=hunter2\n"))

	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	const w = "cc-0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b"
	const sess = "0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b"
	seq := int64(0)
	ev := func(sec int, op, path, b, view, agent string) gitstore.Event {
		seq++
		e := gitstore.Event{Seq: seq, TS: t0.Add(time.Duration(sec) * time.Second), Session: sess, Agent: agent,
			Sidechain: agent != "", Path: path, Blob: b, Source: "hook", Op: gitstore.Op(op), View: view, Writer: w}
		if b != "" {
			e.Bytes = int64(len(content[b]))
		}
		if op == "span" {
			e.Source, e.Path, e.View = "sweep", "", ""
		}
		return e
	}
	events := []gitstore.Event{
		ev(5, "span", "", span, "", ""),
		ev(6, "span", "", span2, "", ""),
		ev(10, "read", "README.md", readme1, "full", ""),
		ev(20, "read", "src/app.go", app1, "full", ""),
		ev(30, "edit", "src/app.go", app2, "full", ""),
		ev(40, "read", ".env", "", "full", ""),
		ev(50, "read", "src/util.go", utilLines, "lines:3-4", "a4b9c2d1e0f3"),
		ev(55, "read", "src/app.go", appLine, "lines:3-3", "a4b9c2d1e0f3"),
	}
	events[5].Excluded = true
	return note.Input{
		Commit:    "5c8e0d2a9f7b4e1c3a6d8f0b2e4c6a8d0f1b3e5a",
		Tree:      "9e1d4c7b2a5f8e3d6c9b0a1f4e7d2c5b8a3f6e9d",
		Parents:   []string{"1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"},
		Committed: t0.Add(10 * time.Minute).Unix(),
		From:      t0.Add(-time.Hour).Unix(),
		HasFrom:   true,
		Changes: []note.Change{
			{Path: ".env", Change: note.Added, Mode: "100644", Blob: env},
			{Path: "README.md", Change: note.Modified, Mode: "100644", Blob: readme2},
			{Path: "docs/notes.md", Change: note.Added, Mode: "100644", Blob: notes},
			{Path: "src/app.go", Change: note.Modified, Mode: "100644", Blob: app2},
		},
		Events: events,
		Heads: map[string]gitstore.WriterInfo{
			w: {Name: w, Seq: 9, Seal: "43ad41f2c0abb366f5d50e44fa933bc6b679e1278d190ec0094a8dcaeed9c06a"},
		},
		TreeBlob: func(p string) (string, bool) {
			m := map[string]string{".env": env, "README.md": readme2, "docs/notes.md": notes, "src/app.go": app2,
				"src/util.go": gitstore.BlobID([]byte("package main\n\n// lowStock reports whether an item needs reordering.\nfunc lowStock(n int) bool { return n < 20 }\n"))}
			b, ok := m[p]
			return b, ok
		},
		Denied: func(p string) bool { return p == ".env" },
		Tokens: func(evs []*gitstore.Event) []int64 {
			out := make([]int64, len(evs))
			for i, e := range evs {
				n, err := tokens.CountText(tokens.ModelText(e, []byte(content[e.Blob])))
				if err != nil {
					n = -1
				}
				out[i] = n
			}
			return out
		},
		Issued: t0.Add(12 * time.Minute),
	}
}

// Compute applies the membership rule to a commit and the events around
// it; Marshal writes the receipt's canonical text, the body that is
// clear-signed and stored as the note.
func Example() {
	r, err := note.Compute(exampleInput())
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := r.Marshal()
	if err != nil {
		fmt.Println(err)
		return
	}
	os.Stdout.Write(body)
	// Output:
	// git-lossless receipt v1
	// commit 5c8e0d2a9f7b4e1c3a6d8f0b2e4c6a8d0f1b3e5a
	// tree 9e1d4c7b2a5f8e3d6c9b0a1f4e7d2c5b8a3f6e9d
	// parent 1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d
	// committed 1767323400
	// window 1767319200 1767323400
	// issued 2026-01-02T03:12:00Z
	// tokenizer o200k_base
	// path A excluded 100644 - w1#6 .env
	// path M changed-after 100644 0c41cb6f34c3a680d4be32f1c9194919f591fe90 w1#3 README.md
	// path A unseen 100644 b2169e83fab09d2f0a9dbf136d3d86cbe24d39d7 - docs/notes.md
	// path M written 100644 a1c67c5be597dfeabda4e519437b67e2855354b7 w1#5 src/app.go
	// context c1 session 0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b agent main events 6 first 2026-01-02T03:00:05Z last 2026-01-02T03:00:40Z
	// context c2 session 0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b agent a4b9c2d1e0f3 events 2 first 2026-01-02T03:00:50Z last 2026-01-02T03:00:55Z
	// read c1 excluded read - full w1#6 .env
	// read c1 stale read 9a182c8e1e73fc26ca92b7e71a042dfc705cac55 full w1#3 README.md
	// read c1 superseded read 38dd16da61accb1a8de6ac8709d2e65ef4a51a4a full w1#4 src/app.go
	// read c1 current edit a1c67c5be597dfeabda4e519437b67e2855354b7 full w1#5 src/app.go
	// read c2 partial read f543bd3809a8fbd2d7463c74ef96f1e5d8be11ae lines:3-3 w1#8 src/app.go
	// read c2 partial read f45496b32df80d70fa19389de8e55e5dca388fbb lines:3-4 w1#7 src/util.go
	// spans c1 2 w1#1-2
	// spans c2 0 -
	// tokens c1 files 27 spans 19
	// tokens c2 files 35 spans 0
	// tokens total files 62 spans 19
	// writer w1 cc-0f5a7c1e-2b1d-4e8a-9c3f-5d6e7f809a1b entries 1-8 head 9 43ad41f2c0abb366f5d50e44fa933bc6b679e1278d190ec0094a8dcaeed9c06a
	// coverage paths 4 written 1 seen 0 changed-after 1 unseen 1 excluded 1
	// coverage contexts 2 events 8 sources hook,sweep
	// note Observed: what 2 agent contexts read, edited and wrote through recorded tool calls, and the conversation spans of those whose transcripts were swept.
	// note Not observed: changes made outside the agents' file tools (shell commands, editors, git itself); they show only as changed-after or unseen.
	// note Withheld: the content of deny-listed paths; their access is recorded, their content is in no object and no blob id is named.
	// note Partial: some versions were shown only in part (view lines:A-B); the read set does not compare them with the tree, a path the agents saw only in part is seen only if the archived version is the committed blob, and their tokens count the lines shown.
	// note No conversation spans are archived for 1 context: no transcript of theirs was swept before the commit.
	// note Events recorded after this receipt was issued, or timed after the commit, are not part of it.
}
