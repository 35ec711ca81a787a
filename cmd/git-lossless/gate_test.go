package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/secrets"
)

// hookRun runs `git lossless hook EVENT` in dir with a payload on stdin.
func hookRun(t *testing.T, dir, payload string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"-C", dir, "hook"}, args...), &env{Stdin: strings.NewReader(payload), Stdout: &out, Stderr: &errb, Getenv: os.Getenv})
	return code, out.String(), errb.String()
}

// The hostile run's reproductions (issue 19, item 5): `record --session
// sess-ghp_…`, `--agent password=…` and a file named token=ghp_….txt were
// pushed with exit 0. A value the user passes is now refused before
// anything is written, naming the flag and showing the secret masked; a
// session id from a hook payload is recorded (the writer's name is the
// hashed form, never the id) and held back by the push, with the file
// name, at a real bare remote that then holds nothing; --allow-secrets
// sends it all.
func TestPushGateMetadata(t *testing.T) {
	repo, bare := pushWorld(t)
	tok := pushToken()
	file := filepath.Join(repo, "f.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, value string }{
		{"--session", "sess-" + tok},
		{"--agent", "password=hunter2verysecretvalue"},
		{"--writer", "cli-" + tok},
		{"--key", "k-" + tok},
	} {
		code, out, errOut := pushCLI(t, repo, "record", "--op", "read", c.flag, c.value, "f.txt")
		if code != exitUsage || !strings.Contains(errOut, c.flag+" ") || !strings.Contains(errOut, "holds a secret") {
			t.Errorf("record %s: exit %d\n%s%s", c.flag, code, out, errOut)
		}
		if strings.Contains(out+errOut, tok) || strings.Contains(out+errOut, "hunter2verysecretvalue") {
			t.Errorf("record %s shows the secret: %s%s", c.flag, out, errOut)
		}
	}
	if refs := archiveRefs(t, repo); refs != "" {
		t.Fatalf("a refused record wrote: %s", refs)
	}
	if code, _, errOut := pushCLI(t, repo, "prune", "--session", "x", "--reason", "leaked "+tok); code != exitUsage || !strings.Contains(errOut, "--reason") {
		t.Errorf("prune --reason with a secret: exit %d %s", code, errOut)
	}

	// From outside: a hook payload whose session id holds a key, and a
	// file whose name does.
	payload := `{"session_id":"sess-` + tok + `","cwd":"` + repo + `","hook_event_name":"PostToolUse","tool_name":"Read","tool_use_id":"toolu_1",` +
		`"tool_input":{"file_path":"` + file + `"},"tool_response":{"type":"text","file":{"filePath":"` + file + `","content":"hello\n","numLines":2,"startLine":1,"totalLines":2}}}`
	if code, _, errOut := hookRun(t, repo, payload, "post-tool-use"); code != 0 || errOut != "" {
		t.Fatalf("post-tool-use: %d %s", code, errOut)
	}
	refs := archiveRefs(t, repo)
	if refs == "" || strings.Contains(refs, tok) || strings.Contains(refs, tok[4:20]) {
		t.Fatalf("the hook's writer: %q (empty, or named after the session id)", refs)
	}
	named := "token=" + tok + ".txt"
	if err := os.WriteFile(filepath.Join(repo, named), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := pushCLI(t, repo, "record", "--op", "read", "-q", named); code != exitOK {
		t.Fatalf("record %s: exit %d\n%s%s", named, code, out, errOut)
	}

	code, out, errOut := pushCLI(t, repo, "push", bare)
	if code != exitFailed || !strings.Contains(out, "refused (2)") || !strings.Contains(errOut, "held back") {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	mask := secrets.Mask([]byte(tok))
	for _, want := range []string{"event field session holds 1 secret(s): github-token " + mask, "event field path holds 1 secret(s): github-token " + mask, "token=" + mask + ".txt"} {
		if !strings.Contains(out, want) {
			t.Errorf("push output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, tok) || strings.Contains(out+errOut, tok[4:20]) {
		t.Errorf("push shows the secret:\n%s%s", out, errOut)
	}
	if got := archiveRefs(t, bare); got != "" {
		t.Fatalf("a refused push sent: %s", got)
	}
	code, out, _ = pushCLI(t, repo, "push", "--dry-run", "--json", bare)
	rep := pushJSON(t, out)
	fields := map[string]bool{}
	for _, p := range rep.Problems {
		fields[p.Field] = true
	}
	if code != exitFailed || rep.Refused != 2 || !fields["session"] || !fields["path"] || strings.Contains(out, tok) {
		t.Fatalf("dry run: exit %d refused %d fields %v (or the secret shown)", code, rep.Refused, fields)
	}

	if code, out, errOut := pushCLI(t, repo, "push", "--allow-secrets", bare); code != exitOK || strings.Contains(out, tok) {
		t.Fatalf("push --allow-secrets: exit %d\n%s%s", code, out, errOut)
	}
	if got := archiveRefs(t, bare); got != archiveRefs(t, repo) {
		t.Fatalf("after --allow-secrets the remote differs:\n%s", got)
	}
}

// The receipts' notes ref row said "blobs 0 bytes 0" while a receipt blob
// left: `push --dry-run --json` now counts and lists the note blob, the
// text plan shows it, and it reaches the real remote.
func TestPushNotesCounted(t *testing.T) {
	repo, bare := pushWorld(t)
	res := pushAppend(t, repo, "w1", pushRead("a.txt", "a\n"))
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	note := []byte(`{"v":1,"paths":["a.txt"],"sessions":["s1"]}` + "\n")
	if _, err := st.WriteNote(context.Background(), "receipts-abc", res.Commit, note, nil); err != nil {
		t.Fatal(err)
	}
	code, out, _ := pushCLI(t, repo, "push", "--dry-run", "--json", bare)
	rep := pushJSON(t, out)
	if code != exitOK || len(rep.Plan.Notes) != 1 {
		t.Fatalf("dry run: exit %d %+v", code, rep.Plan)
	}
	if c := rep.Plan.Notes[0].Counts; c.Blobs != 1 || c.Bytes != int64(len(note)) || c.Objects != 3 || c.Batches != 1 {
		t.Fatalf("notes counts: %+v", c)
	}
	found := false
	for _, it := range rep.Plan.Items {
		if it.Kind == gitstore.ContentNote && it.TreePath == res.Commit && it.Bytes == int64(len(note)) {
			found = true
		}
	}
	if !found {
		t.Fatalf("the note is not listed: %+v", rep.Plan.Items)
	}
	code, out, _ = pushCLI(t, repo, "push", "--dry-run", bare)
	if code != exitOK || !regexp.MustCompile(`(?m)^NOTES REF \(receipts\) +COMMITS +NOTES +BYTES +UPDATE\nrefs/notes/lossless/receipts-abc +1 +1 +44 B +new$`).MatchString(out) {
		t.Fatalf("text plan:\n%s", out)
	}
	if code, out, errOut := pushCLI(t, repo, "push", bare); code != exitOK {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	if got := pushGit(t, bare, "notes", "--ref=lossless/receipts-abc", "show", res.Commit); got != string(note) {
		t.Fatalf("the remote's note: %q", got)
	}
}
