package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// Hook-level tests of recording and of the guard against compactions,
// driven through Run with payloads and transcripts shaped as Claude Code
// 2.1.328 writes them (see shared/reference/claude-code.md).

// post runs post-tool-use for a tool result and fails on any complaint.
func (r *hookRig) post(agent, tool, id string, input, response map[string]any) {
	r.t.Helper()
	f := map[string]any{"tool_name": tool, "tool_use_id": id, "tool_input": input, "tool_response": response}
	if agent != "" {
		f["agent_id"] = agent
	}
	if _, errs, code := r.hook("PostToolUse", f); code != 0 || errs != "" {
		r.t.Fatalf("post-tool-use %s: code %d stderr %q", tool, code, errs)
	}
}

// events returns the session's archived events of op.
func (r *hookRig) events(op string) []gitstore.Event {
	r.t.Helper()
	evs, err := r.store().Events(context.Background(), gitstore.Query{Session: r.session, Op: gitstore.Op(op)})
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

func (r *hookRig) blob(id string) string {
	r.t.Helper()
	b, err := r.store().Objects().Blob(context.Background(), id)
	if err != nil {
		r.t.Fatalf("blob %s: %v", id, err)
	}
	return string(b)
}

// subTranscript is where Claude Code writes subagent agent's transcript.
func (r *hookRig) subTranscript(agent string) string {
	return filepath.Join(strings.TrimSuffix(r.tpath, ".jsonl"), "subagents", "agent-"+agent+".jsonl")
}

// ccLine is one transcript line of the rig's session in context agent
// ("" = main) at ts: fields are the line's own members as JSON text.
func (r *hookRig) ccLine(agent, uuid string, ts time.Time, fields string) string {
	env := `"parentUuid":null,"isSidechain":` + map[bool]string{true: "true", false: "false"}[agent != ""]
	if agent != "" {
		env += `,"agentId":"` + agent + `"`
	}
	return `{` + env + `,` + fields + `,"uuid":"` + uuid + `","timestamp":"` + ts.UTC().Format("2006-01-02T15:04:05.000Z") +
		`","cwd":` + jsonQ(r.dir) + `,"sessionId":"` + r.session + `","version":"2.1.328"}` + "\n"
}

func jsonQ(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (r *hookRig) ccReadUse(agent, uuid string, ts time.Time, id, path string) string {
	return r.ccLine(agent, uuid, ts, `"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"`+id+`","name":"Read","input":{"file_path":`+jsonQ(path)+`}}]}`)
}

func (r *hookRig) ccReadResult(agent, uuid string, ts time.Time, id, path, content string) string {
	n := strings.Count(content, "\n") + 1
	file := `{"filePath":` + jsonQ(path) + `,"content":` + jsonQ(content) + `,"numLines":` + strconv.Itoa(n) + `,"startLine":1,"totalLines":` + strconv.Itoa(n) + `}`
	return r.ccLine(agent, uuid, ts, `"type":"user","message":{"role":"user","content":[{"tool_use_id":"`+id+`","type":"tool_result","content":`+jsonQ("1\t"+content)+`}]},"toolUseResult":{"type":"text","file":`+file+`}`)
}

func (r *hookRig) ccBoundary(agent, uuid string, ts time.Time) string {
	return r.ccLine(agent, uuid, ts, `"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":12345}`)
}

func (r *hookRig) ccAttach(agent, uuid string, ts time.Time, path, content string) string {
	n := strings.Count(content, "\n") + 1
	file := `{"filePath":` + jsonQ(path) + `,"content":` + jsonQ(content) + `,"numLines":` + strconv.Itoa(n) + `,"startLine":1,"totalLines":` + strconv.Itoa(n) + `}`
	return r.ccLine(agent, uuid, ts, `"type":"attachment","attachment":{"type":"file","filename":`+jsonQ(path)+`,"content":{"type":"text","file":`+file+`}}`)
}

func evKeys(evs []gitstore.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Op)+":"+e.Key+":"+e.View)
	}
	return out
}

// appendTranscript appends lines to a transcript file.
func appendTranscript(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPostToolUseRecordsWriteEditMultiEditNotebookEdit(t *testing.T) {
	r := newHookRig(t)
	// Write: the content written, as the model wrote it.
	w := r.write("w.txt", "written\n")
	r.post("", "Write", "toolu_w", map[string]any{"file_path": w, "content": "written\n"},
		map[string]any{"type": "create", "filePath": w, "content": "written\n"})
	// Edit, MultiEdit, NotebookEdit: the file's content from disk after
	// the tool ran (their results carry no new content).
	e := r.write("e.go", "package e // edited\n")
	r.post("", "Edit", "toolu_e", map[string]any{"file_path": e, "old_string": "x", "new_string": "edited"},
		map[string]any{"filePath": e, "oldString": "x", "newString": "edited", "originalFile": "package e // x\n"})
	m := r.write("m.go", "package m // two edits\n")
	r.post("sub1", "MultiEdit", "toolu_m", map[string]any{"file_path": m, "edits": []any{map[string]any{"old_string": "a", "new_string": "two"}}},
		map[string]any{"filePath": m, "originalFile": "package m // a\n"})
	nb := r.write("n.ipynb", `{"cells":[{"source":"print(1)"}]}`)
	r.post("", "NotebookEdit", "toolu_n", map[string]any{"notebook_path": nb, "new_source": "print(1)"},
		map[string]any{"new_source": "print(1)"})

	want := map[string]struct{ op, tool, path, agent, content string }{
		"toolu_w": {"write", "Write", "w.txt", "", "written\n"},
		"toolu_e": {"edit", "Edit", "e.go", "", "package e // edited\n"},
		"toolu_m": {"edit", "MultiEdit", "m.go", "sub1", "package m // two edits\n"},
		"toolu_n": {"edit", "NotebookEdit", "n.ipynb", "", `{"cells":[{"source":"print(1)"}]}`},
	}
	got := map[string]gitstore.Event{}
	for _, op := range []string{"write", "edit"} {
		for _, e := range r.events(op) {
			got[e.Key] = e
		}
	}
	if len(got) != len(want) {
		t.Fatalf("recorded %d events, want %d: %+v", len(got), len(want), got)
	}
	for key, w := range want {
		e, ok := got[key]
		if !ok {
			t.Fatalf("no event with key %s", key)
		}
		if string(e.Op) != w.op || e.Tool != w.tool || e.Path != w.path || e.Agent != w.agent || e.Sidechain != (w.agent != "") || e.Source != "hook" || e.View != "full" {
			t.Errorf("%s: %+v", key, e)
		}
		if c := r.blob(e.Blob); c != w.content {
			t.Errorf("%s: content %q, want %q", key, c, w.content)
		}
	}
	// What the model wrote or edited is current for it: no read needed.
	for _, c := range []struct{ agent, path string }{{"", w}, {"", e}, {"sub1", m}, {"", nb}} {
		if reason := r.guard(c.agent, "toolu_g_"+filepath.Base(c.path), c.path); reason != "" {
			t.Errorf("edit of %s after its own write/edit denied: %s", c.path, reason)
		}
	}
	// ... and not for another context.
	if reason := r.guard("", "toolu_g_m_main", m); reason == "" {
		t.Error("main context allowed to edit a file only a subagent edited")
	}
}

// TestFileUnchangedKeepsDriftCheck: Claude Code answers a repeated Read
// of an unchanged file with file_unchanged and no content. The earlier
// read must stay the latest evidence, so a change on disk afterwards is
// still caught; the hook and the sweep agree on recording nothing for it.
func TestFileUnchangedKeepsDriftCheck(t *testing.T) {
	r := newHookRig(t)
	p := r.write("f.go", "package f\n")
	r.read("", "toolu_r1", p, "package f\n")
	r.post("", "Read", "toolu_r2", map[string]any{"file_path": p},
		map[string]any{"type": "file_unchanged", "file": map[string]any{"filePath": p}})
	if evs := r.events("read"); len(evs) != 1 || evs[0].Key != "toolu_r1" {
		t.Fatalf("file_unchanged recorded: %d read events (%v)", len(evs), evKeys(evs))
	}
	if reason := r.guard("", "toolu_e1", p); reason != "" {
		t.Fatalf("edit after read + file_unchanged denied: %s", reason)
	}
	r.write("f.go", "package f // changed behind the agent\n")
	if reason := r.guard("", "toolu_e2", p); !strings.Contains(reason, "changed on disk") {
		t.Fatalf("drift after file_unchanged not denied: %q", reason)
	}

	// The sweep of the same two results records the same: one read.
	t0 := r.now()
	appendTranscript(t, r.tpath,
		r.ccReadUse("", "u1", t0, "toolu_r1", p), r.ccReadResult("", "u2", t0, "toolu_r1", p, "package f\n"),
		r.ccReadUse("", "u3", t0, "toolu_r2", p),
		r.ccLine("", "u4", t0, `"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_r2","type":"tool_result","content":"File unchanged since last read."}]},"toolUseResult":{"type":"file_unchanged","file":{"filePath":`+jsonQ(p)+`}}`))
	st := r.store()
	s, err := hooks.SweepTranscript(context.Background(), st, New(), r.tpath, hooks.SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Evidence != 1 {
		t.Fatalf("the sweep derived %d pieces of evidence from a read and a file_unchanged, want 1", s.Evidence)
	}
}

// TestGuardCompactionByTranscriptOrder: after a compaction, only what the
// context was shown after its compact_boundary line counts. Claude Code
// re-attaches files in the same millisecond as the boundary line: they
// are after it because they follow it in the transcript. Checked with the
// boundary still unswept (the guard reads it past the cursor) and swept.
func TestGuardCompactionByTranscriptOrder(t *testing.T) {
	for _, swept := range []bool{false, true} {
		t.Run(map[bool]string{false: "unswept", true: "swept"}[swept], func(t *testing.T) {
			r := newHookRig(t)
			a := r.write("a.go", "package a\n")
			b := r.write("b.go", "package b\n")
			c := r.write("c.go", "package c\n")
			r.read("", "toolu_ra", a, "package a\n")
			r.read("", "toolu_rb", b, "package b\n")
			t1 := r.now()
			appendTranscript(t, r.tpath,
				r.ccReadUse("", "u1", t1, "toolu_ra", a), r.ccReadResult("", "u2", t1, "toolu_ra", a, "package a\n"),
				r.ccReadUse("", "u3", t1, "toolu_rb", b), r.ccReadResult("", "u4", t1, "toolu_rb", b, "package b\n"),
				// c.go read from the transcript alone (no hook record),
				// before the compaction, with a LATER timestamp than the
				// boundary: transcript order must still put it before.
				r.ccReadUse("", "u5", t1.Add(time.Hour), "toolu_rc", c), r.ccReadResult("", "u6", t1.Add(time.Hour), "toolu_rc", c, "package c\n"))
			if swept {
				if _, err := hooks.SweepTranscript(context.Background(), r.store(), New(), r.tpath, hooks.SweepOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []string{a, b, c} {
				if reason := r.guard("", "toolu_pre_"+filepath.Base(p), p); reason != "" {
					t.Fatalf("before the compaction, edit of %s denied: %s", p, reason)
				}
			}
			tb := r.now()
			appendTranscript(t, r.tpath, r.ccBoundary("", "ub", tb), r.ccAttach("", "ua", tb, a, "package a\n"))
			if swept {
				if _, err := hooks.SweepTranscript(context.Background(), r.store(), New(), r.tpath, hooks.SweepOptions{}); err != nil {
					t.Fatal(err)
				}
				if evs := r.events("attach"); len(evs) != 1 || swExtra(evs[0], "epoch") != "compact:ub" {
					t.Fatalf("attachment archived as %+v", evs)
				}
			}
			if reason := r.guard("", "toolu_e_a", a); reason != "" {
				t.Errorf("edit of a file re-attached in the boundary's millisecond denied: %s", reason)
			}
			for _, p := range []string{b, c} {
				if reason := r.guard("", "toolu_e_"+filepath.Base(p), p); !strings.Contains(reason, "compacted") {
					t.Errorf("edit of %s seen only before the compaction: %q, want a compacted deny", p, reason)
				}
			}
			// A read after the compaction counts again; the re-attached
			// version is still checked against the disk.
			r.read("", "toolu_rb2", b, "package b\n")
			if reason := r.guard("", "toolu_e_b2", b); reason != "" {
				t.Errorf("edit after a fresh read denied: %s", reason)
			}
			r.write("a.go", "package a // changed behind the agent\n")
			if reason := r.guard("", "toolu_e_a2", a); !strings.Contains(reason, "changed on disk") {
				t.Errorf("drift of a re-attached file: %q", reason)
			}
		})
	}
}

// TestPreCompactMarkAloneKeepsEvidence: PreCompact fires before the
// compaction, which may still fail. Its mark is recorded, but without the
// transcript's compact_boundary line nothing the context saw is lost.
func TestPreCompactMarkAloneKeepsEvidence(t *testing.T) {
	r := newHookRig(t)
	p := r.write("a.go", "package a\n")
	r.read("", "toolu_r", p, "package a\n")
	appendTranscript(t, r.tpath, r.ccReadUse("", "u1", r.now(), "toolu_r", p))
	if _, errs, code := r.hook("PreCompact", map[string]any{"trigger": "manual"}); code != 0 || errs != "" {
		t.Fatalf("pre-compact: %d %q", code, errs)
	}
	marks := r.events("precompact")
	if len(marks) != 1 || !strings.HasPrefix(marks[0].Key, "precompact:") || swExtra(marks[0], "trigger") != "manual" {
		t.Fatalf("pre-compact mark %+v", marks)
	}
	if n := len(r.events("compact")); n != 0 {
		t.Fatalf("%d compaction boundaries recorded without a compact_boundary line", n)
	}
	// The pre-compact sweep archived the transcript line with the mark.
	if n := len(r.events("span")); n != 1 {
		t.Fatalf("pre-compact sweep archived %d spans, want 1", n)
	}
	if reason := r.guard("", "toolu_e", p); reason != "" {
		t.Fatalf("a compaction that did not happen took the read away: %s", reason)
	}
}

// TestCompactionIsPerContext: a compaction of one context (a subagent's
// own transcript, or the main one) leaves the other contexts' evidence
// alone.
func TestCompactionIsPerContext(t *testing.T) {
	r := newHookRig(t)
	m := r.write("m.go", "package m\n")
	s := r.write("s.go", "package s\n")
	const agent = "a1b2c3"
	r.read("", "toolu_rm", m, "package m\n")
	r.read(agent, "toolu_rs", s, "package s\n")
	appendTranscript(t, r.tpath, r.ccReadUse("", "u1", r.now(), "toolu_rm", m))
	appendTranscript(t, r.subTranscript(agent), r.ccReadUse(agent, "v1", r.now(), "toolu_rs", s))

	// The subagent is compacted: its own read is gone, main's stays.
	appendTranscript(t, r.subTranscript(agent), r.ccBoundary(agent, "vb", r.now()))
	if reason := r.guard(agent, "toolu_es", s); !strings.Contains(reason, "compacted") {
		t.Fatalf("subagent edit after its compaction: %q", reason)
	}
	if reason := r.guard("", "toolu_em", m); reason != "" {
		t.Fatalf("main edit denied after a subagent's compaction: %s", reason)
	}
	// The subagent reads again; then main is compacted: the subagent's
	// fresh read stays.
	r.read(agent, "toolu_rs2", s, "package s\n")
	appendTranscript(t, r.tpath, r.ccBoundary("", "ub", r.now()))
	if reason := r.guard("", "toolu_em2", m); !strings.Contains(reason, "compacted") {
		t.Fatalf("main edit after main's compaction: %q", reason)
	}
	if reason := r.guard(agent, "toolu_es2", s); reason != "" {
		t.Fatalf("subagent edit denied after main's compaction: %s", reason)
	}
	// The same once both transcripts are swept into the archive.
	if _, err := hooks.SweepSession(context.Background(), r.store(), New(), r.tpath, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	if reason := r.guard(agent, "toolu_es3", s); reason != "" {
		t.Fatalf("swept: subagent edit denied: %s", reason)
	}
	if reason := r.guard("", "toolu_em3", m); !strings.Contains(reason, "compacted") {
		t.Fatalf("swept: main edit after main's compaction: %q", reason)
	}
}

// TestPostToolUseSweepsInTheSameAppend: post-tool-use archives its result
// and the context transcript's new lines together, and moves the cursor,
// so the guard has only the newest lines left to read.
func TestPostToolUseSweepsInTheSameAppend(t *testing.T) {
	r := newHookRig(t)
	p := r.write("a.go", "package a\n")
	appendTranscript(t, r.tpath, r.ccReadUse("", "u1", r.now(), "toolu_r", p))
	r.read("", "toolu_r", p, "package a\n")
	st := r.store()
	w, err := st.WriterHead(context.Background(), gitstore.WriterName("cc-", r.session))
	if err != nil || w.Seq != 2 {
		t.Fatalf("writer after one post-tool-use: %+v %v, want 2 events", w, err)
	}
	if c := readCursor(t.Context(), st, r.tpath); c == nil || c.Offset != swSize(t, r.tpath) {
		t.Fatalf("cursor %+v, want at the end of the transcript", c)
	}
	// One batch commit holds both (as plain git sees the writer's ref).
	if n := strings.TrimSpace(swGit(t, r.dir, "rev-list", "--count", "refs/lossless/"+gitstore.WriterName("cc-", r.session))); n != "1" {
		t.Fatalf("%s batch commits, want 1", n)
	}
	// The transcript's own record of the result later adds nothing.
	appendTranscript(t, r.tpath, r.ccReadResult("", "u2", r.now(), "toolu_r", p, "package a\n"))
	s, err := hooks.SweepTranscript(context.Background(), st, New(), r.tpath, hooks.SweepOptions{})
	if err != nil || s.Evidence != 1 || s.Deduped != 1 {
		t.Fatalf("sweep of the result line: %+v %v", s, err)
	}
	if n := len(r.events("read")); n != 1 {
		t.Fatalf("%d read events, want 1", n)
	}
}

// TestHookFailuresAreOneLine: whatever fails, and however many things do,
// a hook prints one line on stderr and exits 0.
func TestHookFailuresAreOneLine(t *testing.T) {
	r := newHookRig(t)
	// session-end: the main transcript is missing AND its subagents
	// directory cannot be listed (a file is in its place): two errors.
	tp := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(strings.TrimSuffix(tp, ".jsonl"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(strings.TrimSuffix(tp, ".jsonl"), 0o755); err == nil {
		t.Fatal("setup: expected a file in the way")
	}
	for _, c := range []struct {
		event  string
		fields map[string]any
	}{
		{"SessionEnd", map[string]any{"transcript_path": tp}},
		{"PreCompact", map[string]any{"transcript_path": tp}},
		{"SubagentStop", map[string]any{"transcript_path": tp, "agent_id": "zz"}},
		{"PostToolUse", map[string]any{"transcript_path": tp, "tool_name": "Edit", "tool_use_id": "t", "tool_input": map[string]any{"file_path": filepath.Join(r.dir, "gone.go")}}},
		{"PreToolUse", map[string]any{"cwd": filepath.Join(r.dir, "no-such-dir"), "tool_name": "Edit", "tool_input": map[string]any{"file_path": "/x"}}},
		{"NoSuchEvent", nil},
	} {
		out, errs, code := r.hook(c.event, c.fields)
		if code != 0 || out != "" {
			t.Errorf("%s: code %d stdout %q", c.event, code, out)
		}
		if strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "(ignored)\n") || !strings.HasPrefix(errs, "git-lossless: hook") {
			t.Errorf("%s: stderr %q, want one line", c.event, errs)
		}
	}
}

// BenchmarkGuardDecision is the pre-tool-use hook's whole decision in one
// process (payload decode, archive open, cursor and tail check, the
// archive search, the disk hash, the decision) on a session writer
// holding 10,000 events: an allowed edit of a file read in this context,
// and a denied one (which also appends the denial).
func BenchmarkGuardDecision(b *testing.B) {
	dir := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	const session = "bench-guard"
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]gitstore.Record, 10_000)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range recs {
		recs[i] = gitstore.Record{Event: gitstore.Event{TS: base.Add(time.Duration(i) * time.Millisecond), Session: session,
			Source: "hook", Op: "read", Tool: "Read", View: "full", Key: "fill-" + strconv.Itoa(i)},
			Content: []byte("filler " + strconv.Itoa(i) + "\n"), HasContent: true}
		recs[i].SetPath("filler/f" + strconv.Itoa(i) + ".go")
	}
	if _, err := st.Import(context.Background(), gitstore.WriterName("cc-", session), recs, 50); err != nil {
		b.Fatal(err)
	}
	seen := filepath.Join(dir, "seen.go")
	never := filepath.Join(dir, "never.go")
	for _, p := range []string{seen, never} {
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	tpath := filepath.Join(b.TempDir(), session+".jsonl")
	if err := os.WriteFile(tpath, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	payload := func(tool, id, path string, resp any) []byte {
		m := map[string]any{"session_id": session, "transcript_path": tpath, "cwd": dir, "tool_name": tool, "tool_use_id": id,
			"tool_input": map[string]any{"file_path": path, "old_string": "x", "new_string": "y"}}
		if resp != nil {
			m["tool_response"] = resp
		}
		out, _ := json.Marshal(m)
		return out
	}
	env := func(in []byte, out *bytes.Buffer) hooks.Env {
		return hooks.Env{Stdin: bytes.NewReader(in), Stdout: out, Stderr: out, Getenv: func(string) string { return "" }}
	}
	var out bytes.Buffer
	hooks.Run(context.Background(), New(), "post-tool-use", env(payload("Read", "toolu_seen", seen, map[string]any{"type": "text",
		"file": map[string]any{"filePath": seen, "content": "package x\n", "numLines": 2, "startLine": 1, "totalLines": 2}}), &out))
	if out.Len() > 0 {
		b.Fatalf("post-tool-use: %s", out.String())
	}
	for _, c := range []struct {
		name string
		path string
		deny bool
	}{{"allow", seen, false}, {"deny", never, true}} {
		b.Run(c.name, func(b *testing.B) {
			in := payload("Edit", "toolu_edit", c.path, nil)
			for b.Loop() {
				out.Reset()
				hooks.Run(context.Background(), New(), "pre-tool-use", env(in, &out))
				if denied := strings.Contains(out.String(), `"deny"`); denied != c.deny {
					b.Fatalf("decision %q", out.String())
				}
			}
		})
	}
}
