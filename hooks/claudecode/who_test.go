package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// codexEvent records one event of the Codex context codex-s2 through the
// store, as its adapter would (harness field set).
func (r *hookRig) codexEvent(op, path, content string, ts time.Time) {
	r.t.Helper()
	rec := gitstore.Record{Event: gitstore.Event{TS: ts, Session: "s2", Source: "hook", Op: gitstore.Op(op), View: "full", Harness: "codex", Tool: "apply_patch"},
		File: path, Content: []byte(content), HasContent: true}
	rec.SetPath(r.store().RelPath(path))
	if _, err := r.store().Append(context.Background(), "codex-s2", []gitstore.Record{rec}); err != nil {
		r.t.Fatal(err)
	}
}

// guardArgs asks pre-tool-use about an Edit through hooks.RunArgs, the
// hook program's entry, and returns the deny reason ("" = allowed).
func (r *hookRig) guardArgs(id, path string) string {
	r.t.Helper()
	p := map[string]any{"session_id": r.session, "transcript_path": r.tpath, "cwd": r.dir, "hook_event_name": "PreToolUse",
		"tool_name": "Edit", "tool_use_id": id, "tool_input": map[string]any{"file_path": path, "old_string": "a", "new_string": "b"}}
	b, _ := json.Marshal(p)
	var out, errb bytes.Buffer
	code := hooks.RunArgs(context.Background(), []hooks.Harness{New()}, []string{"claude-code", "pre-tool-use"},
		hooks.Env{Stdin: bytes.NewReader(b), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: r.now})
	if code != 0 || errb.Len() != 0 {
		r.t.Fatalf("pre-tool-use: code %d stderr %q", code, errb.String())
	}
	if out.Len() == 0 {
		return ""
	}
	var d struct {
		H struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &d); err != nil || d.H.Decision != "deny" {
		r.t.Fatalf("unexpected guard output %q", out.String())
	}
	return d.H.Reason
}

func presenceOf(t *testing.T, r *hookRig, paths ...string) []hooks.FilePresence {
	t.Helper()
	fps, err := hooks.Presence(context.Background(), r.store(), hooks.PresenceOptions{Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	return fps
}

// TestWhoTwoContexts: a Claude Code context and a Codex context read a
// file; Codex edits it. who lists Codex as holding the current version,
// Claude Code a stale one, and Codex as the last writer; Claude Code's
// next edit is denied naming the Codex session and when it changed the
// file.
func TestWhoTwoContexts(t *testing.T) {
	r := newHookRig(t)
	p := r.write("shared.go", "package a\n")
	r.read("", "toolu_1", p, "package a\n")                 // cc-sess-1 at 10:00:01
	r.codexEvent("read", p, "package a\n", r.now())         // 10:00:02
	r.write("shared.go", "package a // codex\n")            // Codex's edit lands on disk
	edited := r.now()                                       // 10:00:03
	r.codexEvent("edit", p, "package a // codex\n", edited) //

	fps := presenceOf(t, r, p)
	if len(fps) != 1 || fps[0].Path != "shared.go" || !fps[0].Exists {
		t.Fatalf("presence %+v", fps)
	}
	fp := fps[0]
	if len(fp.Holders) != 2 {
		t.Fatalf("holders %+v", fp.Holders)
	}
	cur, stale := fp.Holders[0], fp.Holders[1]
	if cur.State != hooks.HeldCurrent || cur.Writer != "codex-s2" || cur.Harness != "codex" || cur.Op != "edit" || cur.Blob != fp.DiskBlob {
		t.Errorf("current holder %+v (disk %s)", cur, fp.DiskBlob)
	}
	if stale.State != hooks.HeldStale || stale.Writer != "cc-sess-1" || stale.Session != "sess-1" || stale.Op != "read" || stale.Blob != gitstore.BlobID([]byte("package a\n")) {
		t.Errorf("stale holder %+v", stale)
	}
	if lw := fp.LastWriter; lw == nil || lw.Writer != "codex-s2" || lw.Op != "edit" || !lw.TS.Equal(edited) || !lw.Current {
		t.Errorf("last writer %+v", fp.LastWriter)
	}
	// Every file any context saw: the same one file.
	if all := presenceOf(t, r); len(all) != 1 || all[0].Path != "shared.go" || len(all[0].Holders) != 2 {
		t.Errorf("presence of every file %+v", all)
	}

	reason := r.guardArgs("toolu_2", p)
	want := "it was changed by codex session s2 at " + edited.UTC().Format(time.RFC3339) + ", after this context read it."
	if !strings.Contains(reason, want) || !strings.Contains(reason, "The file changed on disk after you last saw it") {
		t.Fatalf("deny reason %q lacks %q", reason, want)
	}
	// Codex's own context holds the current version: no denial to name.
	// And a change the archive does not know keeps the old wording.
	q := r.write("other.go", "x\n")
	r.read("", "toolu_3", q, "x\n")
	r.write("other.go", "y\n")
	if reason := r.guard("", "toolu_4", q); !strings.Contains(reason, "someone or something else edited it.") || strings.Contains(reason, "changed by") {
		t.Errorf("unknown change: %q", reason)
	}
}

// TestWhoSubagentChange: a change made in another context of the same
// session (a subagent) is named with its subagent.
func TestWhoSubagentChange(t *testing.T) {
	r := newHookRig(t)
	p := r.write("f.txt", "one\n")
	r.read("", "toolu_1", p, "one\n")
	r.write("f.txt", "two\n")
	ts := r.now()
	rec := gitstore.Record{Event: gitstore.Event{TS: ts, Session: r.session, Agent: "a9", Source: "hook", Op: "write", View: "full", Harness: "claude-code"},
		File: p, Content: []byte("two\n"), HasContent: true}
	rec.SetPath("f.txt")
	if _, err := r.store().Append(context.Background(), "cc-"+r.session, []gitstore.Record{rec}); err != nil {
		t.Fatal(err)
	}
	want := "changed by claude-code session sess-1 (subagent a9) at " + ts.UTC().Format(time.RFC3339)
	if reason := r.guard("", "toolu_2", p); !strings.Contains(reason, want) {
		t.Fatalf("reason %q lacks %q", reason, want)
	}
	fp := presenceOf(t, r, p)[0]
	if len(fp.Holders) != 2 || fp.Holders[0].Agent != "a9" || fp.Holders[0].State != hooks.HeldCurrent || fp.Holders[1].State != hooks.HeldStale {
		t.Errorf("holders %+v", fp.Holders)
	}
}

// TestWhoEdgeCases: a deleted file (every hold stale), a file never seen
// (no holders), a symlink (the holds of its target), a path outside the
// repository, a deny-listed file (accessed, no content), a partial read.
func TestWhoEdgeCases(t *testing.T) {
	r := newHookRig(t)
	gone := r.write("gone.txt", "bye\n")
	r.read("", "toolu_1", gone, "bye\n")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	fp := presenceOf(t, r, gone)[0]
	if fp.Exists || fp.DiskBlob != "" || len(fp.Holders) != 1 || fp.Holders[0].State != hooks.HeldStale {
		t.Errorf("deleted: %+v", fp)
	}

	never := r.write("never.txt", "n\n")
	fp = presenceOf(t, r, never)[0]
	if !fp.Exists || len(fp.Holders) != 0 || fp.LastWriter != nil {
		t.Errorf("never seen: %+v", fp)
	}

	target := r.write("target.txt", "t\n")
	link := filepath.Join(r.dir, "link.txt")
	if err := os.Symlink("target.txt", link); err != nil {
		t.Fatal(err)
	}
	r.read("", "toolu_2", link, "t\n")
	for _, p := range []string{link, target} {
		fps := presenceOf(t, r, p)
		if len(fps) != 1 || fps[0].Path != "target.txt" || len(fps[0].Holders) != 1 || fps[0].Holders[0].State != hooks.HeldCurrent {
			t.Errorf("symlink via %s: %+v", p, fps)
		}
	}

	outside := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(outside, []byte("o\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fp = presenceOf(t, r, outside)[0]
	if fp.Path != outside || len(fp.Holders) != 0 {
		t.Errorf("outside: %+v", fp)
	}

	env := r.write(".env", "SECRET=1\n")
	r.read("", "toolu_3", env, "SECRET=1\n")
	fp = presenceOf(t, r, env)[0]
	if !fp.Denied || !fp.Exists || fp.DiskBlob != "" || len(fp.Holders) != 1 || fp.Holders[0].State != hooks.HeldAccessed || fp.Holders[0].Blob != "" {
		t.Errorf("deny-listed: %+v", fp)
	}

	big := r.write("big.txt", "1\n2\n3\n4\n")
	r.post("", "Read", "toolu_4", map[string]any{"file_path": big, "offset": 2, "limit": 2},
		map[string]any{"type": "text", "file": map[string]any{"filePath": big, "content": "2\n3", "numLines": 2, "startLine": 2, "totalLines": 5}})
	fp = presenceOf(t, r, big)[0]
	if len(fp.Holders) != 1 || fp.Holders[0].State != hooks.HeldPartial {
		t.Errorf("partial: %+v", fp)
	}
}

// BenchmarkGuardDriftDeny: the pre-tool-use drift denial in process, when
// the reason names another context's change (the archive searched across
// writers) and when no other context changed the file (searched, none).
func BenchmarkGuardDriftDeny(b *testing.B) {
	r := newHookRig(b)
	p := r.write("shared.go", "package a\n")
	r.read("", "toolu_1", p, "package a\n")
	r.write("shared.go", "package a // codex\n")
	r.codexEvent("edit", p, "package a // codex\n", r.now())
	q := r.write("other.go", "x\n")
	r.read("", "toolu_3", q, "x\n")
	r.write("other.go", "y\n")
	for _, c := range []struct{ name, path, want string }{{"named", p, "changed by codex"}, {"unknown", q, "someone or something else"}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				if reason := r.guardArgs("toolu_b"+strconv.Itoa(i), c.path); !strings.Contains(reason, c.want) {
					b.Fatalf("reason %q", reason)
				}
			}
		})
	}
}

// TestWhoAfterCompaction: after a swept compaction boundary, who says
// "compacted" exactly where the guard denies as compacted away, and
// "current" for the file re-attached after the boundary.
func TestWhoAfterCompaction(t *testing.T) {
	r := newHookRig(t)
	a := r.write("a.go", "package a\n")
	b := r.write("b.go", "package b\n")
	r.read("", "toolu_ra", a, "package a\n")
	r.read("", "toolu_rb", b, "package b\n")
	t1 := r.now()
	appendTranscript(t, r.tpath,
		r.ccReadUse("", "u1", t1, "toolu_ra", a), r.ccReadResult("", "u2", t1, "toolu_ra", a, "package a\n"),
		r.ccReadUse("", "u3", t1, "toolu_rb", b), r.ccReadResult("", "u4", t1, "toolu_rb", b, "package b\n"))
	tb := r.now()
	appendTranscript(t, r.tpath, r.ccBoundary("", "ub", tb), r.ccAttach("", "ua", tb, a, "package a\n"))
	if _, err := hooks.SweepTranscript(context.Background(), r.store(), New(), r.tpath, hooks.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, fp := range presenceOf(t, r) {
		if len(fp.Holders) != 1 {
			t.Fatalf("%s: holders %+v", fp.Path, fp.Holders)
		}
		states[fp.Path] = fp.Holders[0].State + " " + string(fp.Holders[0].Op)
	}
	if states["a.go"] != "current attach" || states["b.go"] != "compacted read" {
		t.Errorf("states %v", states)
	}
	if reason := r.guard("", "toolu_ea", a); reason != "" {
		t.Errorf("guard denies a.go: %s", reason)
	}
	if reason := r.guard("", "toolu_eb", b); !strings.Contains(reason, "compacted") {
		t.Errorf("guard on b.go: %q", reason)
	}
}
