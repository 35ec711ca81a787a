package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestJSONShapesDocumented runs every command docs/json.md lists on a
// small archive and holds its output to the documented form (one
// document, or JSON lines of one shape) and top-level members.
func TestJSONShapesDocumented(t *testing.T) {
	gitBin := docsGit(t)
	doc, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `git lossless ([^`]+)` \\| (document|lines) \\| (.*) \\|$").FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 12 {
		t.Fatalf("docs/json.md lists %d commands: the table is broken", len(rows))
	}
	home, repo, origin := t.TempDir(), t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"init", "-q", "--bare", origin}, {"-C", repo, "init", "-q"}, {"-C", repo, "config", "user.email", "t@example.com"},
		{"-C", repo, "config", "user.name", "T"}, {"-C", repo, "remote", "add", "origin", origin}} {
		if out, err := exec.Command(gitBin, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	for _, f := range []string{"FILE", "b.go"} {
		if err := os.WriteFile(filepath.Join(repo, f), []byte("package b\n\nfunc B() {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(gitBin, "-C", repo, "add", ".").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v %s", err, out)
	}
	if out, err := exec.Command(gitBin, "-C", repo, "commit", "-qm", "one").CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v %s", err, out)
	}
	getenv := func(k string) string {
		switch k {
		case "HOME":
			return home
		case "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GIT_DIR":
			return ""
		}
		return os.Getenv(k)
	}
	t.Setenv("HOME", home)
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: repo, Getenv: getenv})
		return code, out.String(), errb.String()
	}
	// A past Claude Code session for import, and a signed receipt.
	sample := "../../testdata/claude-code-2.1.328/transcripts/-home-dev-project/9e33e208-2b1c-4064-b54f-efdf0f79781b.jsonl"
	projects := filepath.Join(home, ".claude", "projects", "-home-dev-project")
	if err := os.MkdirAll(projects, 0o700); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(sample); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(projects, filepath.Base(sample)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"record", "--op", "read", "--session", "s1", "FILE", "b.go"}, {"record", "--op", "edit", "--session", "s2", "b.go"},
		{"key", "generate", "--name", "T", "--email", "t@example.com"}, {"receipt", "HEAD"}} {
		if code, _, errOut := cli(args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, errOut)
		}
	}
	for _, row := range rows {
		args := strings.Fields(strings.ReplaceAll(row[1], "QUERY", "package"))
		code, out, errOut := cli(args...)
		if code != exitOK {
			t.Errorf("git lossless %s: exit %d\n%s", row[1], code, errOut)
			continue
		}
		var values []any
		switch row[2] {
		case "document":
			var v any
			dec := json.NewDecoder(strings.NewReader(out))
			if err := dec.Decode(&v); err != nil || dec.More() {
				t.Errorf("git lossless %s: not one JSON document (%v):\n%s", row[1], err, out)
				continue
			}
			values = append(values, v)
		case "lines":
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			for _, l := range lines {
				var v map[string]any
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Errorf("git lossless %s: a line is not one JSON object (%v): %s", row[1], err, l)
				}
				values = append(values, v)
			}
			if row[1] != "receipt list --json" && len(lines) < 2 {
				t.Errorf("git lossless %s: %d lines, the fixture should give several", row[1], len(lines))
			}
		}
		if strings.HasPrefix(row[3], "(") {
			for _, v := range values {
				if _, ok := v.([]any); !ok {
					t.Errorf("git lossless %s: not an array", row[1])
				}
			}
			continue
		}
		for _, v := range values {
			m, ok := v.(map[string]any)
			if !ok {
				t.Errorf("git lossless %s: not an object", row[1])
				continue
			}
			for _, k := range strings.Split(row[3], ",") {
				if _, ok := m[strings.TrimSpace(k)]; !ok {
					t.Errorf("git lossless %s: no member %q (has %v)", row[1], strings.TrimSpace(k), keysOf(m))
				}
			}
		}
	}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
