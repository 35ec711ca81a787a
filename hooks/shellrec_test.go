package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// TestShellReadsHostile attacks the runtime's shell-read rule as a hostile
// model or repository would: a shell read of the git directory's config
// (a remote URL with a password), of a symlink to it, and of a
// deny-listed .env is recorded as an access and nothing of the file
// reaches an object (checked with git cat-file over every object); an
// output that is not the file (changed since, piped, two files) is no
// evidence; only the plain read of an ordinary file is.
func TestShellReadsHostile(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	const password = "hunter2-Zq3vX9kL2m"
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("[remote \"origin\"]\n\turl = https://me:"+password+"@example.com/r.git\n")...)
	write(".git/config", string(cfg))
	if err := os.Symlink(filepath.Join(".git", "config"), filepath.Join(dir, "cfg-link")); err != nil {
		t.Fatal(err)
	}
	write(".env", "DB_PASSWORD="+password+"\n")
	write("ok.txt", "plain text\n")
	write("two.txt", "second\n")

	h := fakeHarness{"test-harness", "t-"}
	clock := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	n := 0
	shell := func(cmd, out string) {
		t.Helper()
		n++
		b, _ := json.Marshal(map[string]any{"s": "s1", "cwd": dir, "tool": "sh", "id": "sh-" + string(rune('a'+n)), "sh": map[string]string{"cmd": cmd, "out": out}})
		var stdout, stderr bytes.Buffer
		clock = clock.Add(time.Second)
		if code := RunArgs(context.Background(), []Harness{h}, []string{"test-harness", "after"}, Env{Stdin: bytes.NewReader(b), Stdout: &stdout, Stderr: &stderr,
			Getenv: func(string) string { return "" }, Now: func() time.Time { return clock }}); code != 0 || stdout.Len() != 0 {
			t.Fatalf("%s: exit %d stdout %q stderr %q", cmd, code, stdout.String(), stderr.String())
		}
	}
	shell("cat .git/config", string(cfg))
	shell("cat cfg-link", string(cfg))
	shell("cat .env", "DB_PASSWORD="+password+"\n")
	shell("cat ok.txt | head", "plain text\n")
	shell("cat ok.txt two.txt", "plain text\nsecond\n")
	shell("cat ok.txt", "plain text, as it was before an edit\n")
	shell("cat ok.txt", "plain text\n")

	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Writers: []string{"t-s1"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Op != "read" {
			continue
		}
		got = append(got, e.Path+" excluded="+map[bool]string{true: "yes", false: "no"}[e.Excluded]+" blob="+map[bool]string{true: "yes", false: "no"}[e.Blob != ""])
	}
	want := []string{".git/config excluded=yes blob=no", "cfg-link excluded=yes blob=no", ".env excluded=yes blob=no", "ok.txt excluded=no blob=yes"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reads recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Nothing of the git config or the .env is in any object.
	out, err := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(password)) || bytes.Contains(out, []byte("[remote \"origin\"]")) {
		t.Fatal("a shell read of the git directory or of a deny-listed file reached an object")
	}
}
