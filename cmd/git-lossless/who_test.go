package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks"
)

// TestWhoCommand: a Claude Code context (cc-s1) and a Codex context
// (codex-s2) read a file, Codex edits it. `who` (run from a subdirectory,
// the path relative to it) lists Codex's context as current, Claude Code's
// as stale and Codex as the last writer; Claude Code's next edit, through
// the hook program, is denied naming the Codex session.
func TestWhoCommand(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	sub := filepath.Join(repo, "sub")
	writeFile(t, filepath.Join(repo, "f.go"), []byte("package f\n"))
	writeFile(t, filepath.Join(sub, "x.txt"), []byte("x\n"))
	sb.ok(repo, "record", "--op", "read", "--writer", "cc-s1", "--session", "s1", "f.go")
	sb.ok(repo, "record", "--op", "read", "--writer", "codex-s2", "--session", "s2", "f.go")
	writeFile(t, filepath.Join(repo, "f.go"), []byte("package f // codex\n"))
	sb.ok(repo, "record", "--op", "edit", "--writer", "codex-s2", "--session", "s2", "f.go")

	var doc struct {
		Files []hooks.FilePresence `json:"files"`
	}
	r := sb.ok(sub, "who", "--json", "../f.go")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("who --json is not one document: %v\n%s", err, r.stdout)
	}
	if len(doc.Files) != 1 || doc.Files[0].Path != "f.go" || len(doc.Files[0].Holders) != 2 {
		t.Fatalf("who --json: %s", r.stdout)
	}
	fp := doc.Files[0]
	if h := fp.Holders[0]; h.State != "current" || h.Writer != "codex-s2" || h.Harness != "codex" || h.Session != "s2" {
		t.Errorf("current holder %+v", h)
	}
	if h := fp.Holders[1]; h.State != "stale" || h.Writer != "cc-s1" || h.Harness != "claude-code" || h.Op != "read" {
		t.Errorf("stale holder %+v", h)
	}
	if lw := fp.LastWriter; lw == nil || lw.Writer != "codex-s2" || lw.Op != "edit" || !lw.Current {
		t.Errorf("last writer %+v", fp.LastWriter)
	}

	// Every file: f.go only (x.txt was never seen); the table.
	r = sb.ok(repo, "who")
	for _, want := range []string{"f.go  (on disk ", "last written by codex session s2 at ", "(edit, the version on disk)", "current  codex ", "stale    claude-code "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("who table lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "x.txt") {
		t.Errorf("who lists a file never seen:\n%s", r.stdout)
	}
	if r = sb.ok(repo, "who", "sub/x.txt"); !strings.Contains(r.stdout, "no context has seen it") {
		t.Errorf("who of a file never seen:\n%s", r.stdout)
	}

	payload, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": repo, "hook_event_name": "PreToolUse", "transcript_path": filepath.Join(sb.root, "none.jsonl"),
		"tool_name": "Edit", "tool_use_id": "toolu_9", "tool_input": map[string]any{"file_path": filepath.Join(repo, "f.go"), "old_string": "f", "new_string": "g"}})
	cmd := exec.Command(e2eBin, "hook", "claude-code", "pre-tool-use")
	cmd.Dir, cmd.Env, cmd.Stdin = repo, sb.env, bytes.NewReader(payload)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() != 0 {
		t.Fatalf("hook: %v %s", err, errb.String())
	}
	if !strings.Contains(out.String(), `"permissionDecision":"deny"`) || !strings.Contains(out.String(), "it was changed by codex session s2 at ") || !strings.Contains(out.String(), "after this context read it.") {
		t.Errorf("deny does not name the Codex session: %s", out.String())
	}
}
