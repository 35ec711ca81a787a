package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestJSONShapesDocumented runs every command docs/json.md lists on a
// small archive and holds its output to the documented form (one
// document, or JSON lines of one shape) and top-level members.
func TestJSONShapesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `git lossless ([^`]+)` \\| (document|lines) \\| (.*) \\|$").FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 12 {
		t.Fatalf("docs/json.md lists %d commands: the table is broken", len(rows))
	}
	a := newSmallArchive(t, map[string]string{"FILE": "package b\n\nfunc B() {}\n", "b.go": "package b\n\nfunc B() {}\n"})
	home, cli := a.home, a.cli
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
	a.must([]string{"record", "--op", "read", "--session", "s1", "FILE", "b.go"}, []string{"record", "--op", "edit", "--session", "s2", "b.go"},
		[]string{"key", "generate", "--name", "T", "--email", "t@example.com"}, []string{"receipt", "HEAD"})
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
