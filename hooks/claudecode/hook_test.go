package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// hookRig is a temporary repository and a session, driven through Run
// exactly as Claude Code drives the binary.
type hookRig struct {
	t       testing.TB
	dir     string
	session string
	tpath   string
	mu      sync.Mutex
	clock   time.Time // the hooks' clock: each run takes the next second
}

func newHookRig(t testing.TB) *hookRig {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	return &hookRig{t: t, dir: dir, session: "sess-1", tpath: filepath.Join(t.TempDir(), "sess-1.jsonl"),
		clock: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
}

// now is the time of the next hook run (a second after the last one).
func (r *hookRig) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock = r.clock.Add(time.Second)
	return r.clock
}

func (r *hookRig) write(name, content string) string {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// hook runs one event with payload fields merged over the common ones.
func (r *hookRig) hook(event string, fields map[string]any) (stdout, stderr string, code int) {
	r.t.Helper()
	p := map[string]any{"session_id": r.session, "transcript_path": r.tpath, "cwd": r.dir, "hook_event_name": event}
	for k, v := range fields {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	var out, errb bytes.Buffer
	code = hooks.Run(context.Background(), New(), event, hooks.Env{Stdin: bytes.NewReader(b), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: r.now})
	return out.String(), errb.String(), code
}

func (r *hookRig) read(agent, id, path, content string) {
	r.t.Helper()
	f := map[string]any{"tool_name": "Read", "tool_use_id": id, "tool_input": map[string]any{"file_path": path},
		"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": path, "content": content, "numLines": strings.Count(content, "\n") + 1, "startLine": 1, "totalLines": strings.Count(content, "\n") + 1}}}
	if agent != "" {
		f["agent_id"] = agent
	}
	if _, errs, code := r.hook("PostToolUse", f); code != 0 || errs != "" {
		r.t.Fatalf("post-tool-use: code %d stderr %q", code, errs)
	}
}

// guard asks pre-tool-use about an Edit and returns the deny reason ("" = allowed).
func (r *hookRig) guard(agent, id, path string) string {
	r.t.Helper()
	f := map[string]any{"tool_name": "Edit", "tool_use_id": id, "tool_input": map[string]any{"file_path": path, "old_string": "a", "new_string": "b"}}
	if agent != "" {
		f["agent_id"] = agent
	}
	out, errs, code := r.hook("PreToolUse", f)
	if code != 0 {
		r.t.Fatalf("pre-tool-use exit %d", code)
	}
	if strings.Contains(errs, "internal error") {
		r.t.Fatalf("pre-tool-use failed internally: %s", errs)
	}
	if out == "" {
		return ""
	}
	var d struct {
		H struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.H.Decision != "deny" {
		r.t.Fatalf("unexpected guard output %q", out)
	}
	return d.H.Reason
}

func (r *hookRig) store() *gitstore.Store {
	st, err := gitstore.OpenDir(r.dir, gitstore.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	return st
}

func TestPostToolUseReadArchivesShownContent(t *testing.T) {
	r := newHookRig(t)
	p := r.write("hello.txt", "hello world\n")
	r.read("", "toolu_1", p, "hello world\n")
	evs, err := r.store().Events(context.Background(), gitstore.Query{Session: r.session})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v %v", evs, err)
	}
	e := evs[0]
	if e.Op != "read" || e.Path != "hello.txt" || e.Key != "toolu_1" || e.Tool != "Read" || e.View != "full" || e.Source != "hook" {
		t.Fatalf("event %+v", e)
	}
	if e.Blob != gitstore.BlobID([]byte("hello world\n")) {
		t.Fatalf("blob %s", e.Blob)
	}
	if string(e.Extra["disk_blob"]) != `"`+e.Blob+`"` {
		t.Fatalf("disk_blob %s", e.Extra["disk_blob"])
	}
	// The same result again (a sweep, a retry) is stored once.
	r.read("", "toolu_1", p, "hello world\n")
	evs, _ = r.store().Events(context.Background(), gitstore.Query{Session: r.session})
	if len(evs) != 1 {
		t.Fatalf("duplicate evidence stored: %d events", len(evs))
	}
}

// TestEventsNameTheirHarness: what Claude Code's hooks, restore and the
// sweep record carries "harness":"claude-code" in the stored line, which
// plain git shows, and goes to the writer cc-<session>.
func TestEventsNameTheirHarness(t *testing.T) {
	r := newHookRig(t)
	p := r.write("hello.txt", "hello world\n")
	r.read("", "toolu_1", p, "hello world\n")
	ref := "refs/lossless/" + Prefix + r.session
	if got := swGit(t, r.dir, "cat-file", "-p", ref+":events.jsonl"); !strings.Contains(got, `"harness":"claude-code"`) || !strings.Contains(got, `"op":"read"`) {
		t.Fatalf("git cat-file -p %s:events.jsonl = %s, want a read naming its harness", ref, got)
	}
	other := r.write("other.txt", "other\n")
	if reason := r.guard("", "toolu_2", other); reason == "" {
		t.Fatal("edit of an unseen file allowed")
	}
	if _, err := hooks.Restore(context.Background(), r.store(), hooks.RestoreOptions{Harness: New(), Session: r.session, Files: []string{other}}); err != nil {
		t.Fatal(err)
	}
	evs, err := r.store().Events(context.Background(), gitstore.Query{Writers: []string{hooks.Writer(New(), r.session)}})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, e := range evs {
		ops[string(e.Op)] = true
		if e.Harness != Name {
			t.Errorf("%s event without its harness: %s", e.Op, e.Raw)
		}
	}
	if !ops["read"] || !ops["deny"] || !ops["restore"] {
		t.Fatalf("ops %v, want read, deny and restore", ops)
	}
}

func TestGuardDecisions(t *testing.T) {
	r := newHookRig(t)
	p := r.write("main.go", "package main\n")
	if reason := r.guard("", "toolu_e1", p); !strings.Contains(reason, "has not seen") {
		t.Fatalf("blind edit not denied: %q", reason)
	}
	if got, _ := os.ReadFile(p); string(got) != "package main\n" {
		t.Fatal("guard changed the file")
	}
	// A subagent's read does not vouch for the main context.
	r.read("agent7", "toolu_s1", p, "package main\n")
	if reason := r.guard("", "toolu_e2", p); reason == "" {
		t.Fatal("main edit allowed on a subagent's read")
	}
	if reason := r.guard("agent7", "toolu_e3", p); reason != "" {
		t.Fatalf("subagent edit after its own read denied: %s", reason)
	}
	// The main context reads: allowed; drift: denied.
	r.read("", "toolu_r1", p, "package main\n")
	if reason := r.guard("", "toolu_e4", p); reason != "" {
		t.Fatalf("edit after read denied: %s", reason)
	}
	r.write("main.go", "package main // changed behind the agent\n")
	if reason := r.guard("", "toolu_e5", p); !strings.Contains(reason, "changed on disk") {
		t.Fatalf("drift not denied: %q", reason)
	}
	// Creating a new file is allowed.
	if reason := r.guard("", "toolu_e6", filepath.Join(r.dir, "new.go")); reason != "" {
		t.Fatalf("create denied: %s", reason)
	}
	// A partial read fails open.
	q := r.write("big.txt", "1\n2\n3\n4\n")
	r.hook("PostToolUse", map[string]any{"tool_name": "Read", "tool_use_id": "toolu_p", "tool_input": map[string]any{"file_path": q, "offset": 2, "limit": 1},
		"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": q, "content": "2", "numLines": 1, "startLine": 2, "totalLines": 5}}})
	r.write("big.txt", "1\n2\n3\n4\n5\n")
	if reason := r.guard("", "toolu_e7", q); reason != "" {
		t.Fatalf("edit after partial read denied: %s", reason)
	}
	evs, _ := r.store().Events(context.Background(), gitstore.Query{Op: "deny"})
	if len(evs) != 3 {
		t.Fatalf("recorded %d denials, want 3", len(evs))
	}
}

func TestGuardOffAndFailOpen(t *testing.T) {
	r := newHookRig(t)
	p := r.write("a.txt", "a\n")
	b, _ := json.Marshal(map[string]any{"session_id": r.session, "cwd": r.dir, "tool_name": "Edit", "tool_input": map[string]any{"file_path": p}})
	var out, errb bytes.Buffer
	code := hooks.Run(context.Background(), New(), "pre-tool-use", hooks.Env{Stdin: bytes.NewReader(b), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			if k == "LOSSLESS_GUARD" {
				return "off"
			}
			return ""
		}})
	if code != 0 || out.Len() != 0 {
		t.Fatalf("LOSSLESS_GUARD=off: code %d out %q", code, out.String())
	}
	for _, in := range []string{"", "null", "[]", "{bad", `{"cwd":"/x"}`, strings.Repeat("x", 1000)} {
		out.Reset()
		errb.Reset()
		code := hooks.Run(context.Background(), New(), "pre-tool-use", hooks.Env{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		if code != 0 || out.Len() != 0 {
			t.Fatalf("input %q: code %d stdout %q", in, code, out.String())
		}
		if n := strings.Count(errb.String(), "\n"); n != 1 {
			t.Fatalf("input %q: want one stderr line, got %q", in, errb.String())
		}
	}
}

// TestGuardConcurrentHooks runs reads and guards of one session at once:
// every decision must be the one its own context's evidence gives.
func TestGuardConcurrentHooks(t *testing.T) {
	r := newHookRig(t)
	var paths []string
	for i := 0; i < 6; i++ {
		paths = append(paths, r.write("f"+string(rune('a'+i))+".txt", "content "+string(rune('a'+i))+"\n"))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := ""
			if i%2 == 1 {
				agent = "sub" + string(rune('0'+i))
			}
			content, _ := os.ReadFile(p)
			r.read(agent, "toolu_cr"+string(rune('a'+i)), p, string(content))
			if reason := r.guard(agent, "toolu_ce"+string(rune('a'+i)), p); reason != "" {
				errs <- "own read, denied: " + reason
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// Each subagent's file is still unseen by the main context.
	for i, p := range paths {
		if i%2 == 1 {
			if reason := r.guard("", "toolu_cm"+string(rune('a'+i)), p); reason == "" {
				t.Errorf("main context allowed to edit %s seen only by a subagent", p)
			}
		}
	}
}

// A partial Read is archived as the lines shown, with the blob of the
// file they were cut from when the disk still holds them (a receipt can
// then tell a partial view of the committed version from one of another
// version), and without it when the file changed in between.
func TestPostToolUsePartialReadNamesItsVersion(t *testing.T) {
	r := newHookRig(t)
	whole := "one\ntwo\nthree\n"
	p := r.write("part.txt", whole)
	partial := func(id, shown string) gitstore.Event {
		t.Helper()
		f := map[string]any{"tool_name": "Read", "tool_use_id": id, "tool_input": map[string]any{"file_path": p, "offset": 2, "limit": 1},
			"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": p, "content": shown, "numLines": 1, "startLine": 2, "totalLines": 4}}}
		if _, errs, code := r.hook("PostToolUse", f); code != 0 || errs != "" {
			t.Fatalf("post-tool-use: code %d stderr %q", code, errs)
		}
		evs, err := r.store().Events(context.Background(), gitstore.Query{Session: r.session, Key: id})
		if err != nil || len(evs) != 1 {
			t.Fatalf("events %v %v", evs, err)
		}
		return evs[0]
	}
	e := partial("toolu_p1", "two")
	if e.View != "lines:2-2" || e.Blob != gitstore.BlobID([]byte("two")) {
		t.Fatalf("partial read archived as %+v", e)
	}
	if got, want := string(e.Extra["disk_blob"]), `"`+gitstore.BlobID([]byte(whole))+`"`; got != want {
		t.Fatalf("disk_blob %s, want %s", got, want)
	}
	r.write("part.txt", "one\nTWO\nthree\n") // changed before the hook ran
	if e := partial("toolu_p2", "two"); e.Extra["disk_blob"] != nil {
		t.Fatalf("disk_blob %s vouches for a file that no longer holds the lines shown", e.Extra["disk_blob"])
	}
}
