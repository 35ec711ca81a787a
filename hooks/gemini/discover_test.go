package gemini

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	cases := []struct {
		env  func(string) string
		want string
	}{
		{env("HOME", "/home/u"), "/home/u/.gemini"},
		{env("HOME", "/home/u", "GEMINI_CLI_HOME", "/iso"), "/iso/.gemini"},
		{env("HOME", "/home/u", "SANDBOX", "sandbox-exec"), "/home/u/.cache/.gemini"},
		{env("HOME", "/home/u", "SANDBOX", "docker"), "/home/u/.gemini"},
		{env(), ""},
		{env("HOME", "rel"), ""},
	}
	for i, c := range cases {
		got, err := Dir(c.env)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("%d: %q %v, want %q", i, got, err, c.want)
		}
	}
}

func TestFindChatsSamples(t *testing.T) {
	dir := filepath.Join(sampleDir, "home", ".gemini")
	chats, skips, err := FindChats(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range chats {
		rel, _ := filepath.Rel(dir, c.Path)
		got = append(got, fmt.Sprintf("%s %s %s %q %s", rel, c.Project, c.SessionID, c.Agent, c.ProjectDir))
		if c.Size <= 0 || c.ModTime.IsZero() {
			t.Errorf("%s: size %d time %v", rel, c.Size, c.ModTime)
		}
		if o := c.Options(); o.SessionID != c.SessionID || o.Agent != c.Agent || o.Cwd != c.ProjectDir {
			t.Errorf("%s: options %+v", rel, o)
		}
	}
	want := []string{
		`tmp/ws/chats/cc106cda-29a0-4431-b783-fe844bfef7e2/6fdbd512-609c-493b-aadc-22b51e047dc6.jsonl ws cc106cda-29a0-4431-b783-fe844bfef7e2 "6fdbd512-609c-493b-aadc-22b51e047dc6" /home/dev/project`,
		`tmp/ws/chats/session-2026-12-05T14-18-bc53530f.jsonl ws bc53530f-3b83-48a7-aa7c-3e22ac0b6e48 "" /home/dev/project`,
		`tmp/ws/chats/session-2026-12-05T14-20-08c76717.jsonl ws 08c76717-9950-4f87-8b0d-6c2ff32d49ed "" /home/dev/project`,
		`tmp/ws/chats/session-2026-12-05T15-14-cc106cda.jsonl ws cc106cda-29a0-4431-b783-fe844bfef7e2 "" /home/dev/project`,
		`tmp/ws/chats/session-2026-12-06T02-51-bf202774.jsonl ws bf202774-e8d2-4f16-992e-d94e1ca27e99 "" /home/dev/project`,
		`tmp/ws/chats/session-2026-12-06T02-52-79fc6120.jsonl ws 79fc6120-6331-44a9-84d5-6511409b2c03 "" /home/dev/project`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("chats:\n%s", diffLines(want, got))
	}
	if len(skips) != 0 {
		t.Errorf("skips %+v", skips)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// FindChats on a tree with what a real ~/.gemini also holds: projects
// without a registry entry, a legacy directory named by the project's
// hash, old .json chats, backups, links.
func TestFindChatsTree(t *testing.T) {
	dir := t.TempDir()
	if chats, skips, err := FindChats(dir); err != nil || chats != nil || skips != nil {
		t.Fatalf("an empty dir: %v %v %v", chats, skips, err)
	}
	head := func(session, project, kind string) string {
		return `{"sessionId":"` + session + `","projectHash":"` + projectHash(project) + `","startTime":"x","lastUpdated":"x","kind":"` + kind + `"}` + "\n"
	}
	write(t, filepath.Join(dir, "projects.json"), `{"projects":{"/src/app":"app","/src/lib":"lib"}}`)
	chats := filepath.Join(dir, "tmp", "app", "chats")
	write(t, filepath.Join(chats, "session-2026-01-01T00-00-aaaaaaaa.jsonl"), head("aaaaaaaa-1", "/src/app", "main"))
	// A chat of another project under this short name: its hash decides.
	write(t, filepath.Join(chats, "session-2026-01-01T00-01-bbbbbbbb.jsonl"), head("bbbbbbbb-1", "/src/lib", "main"))
	write(t, filepath.Join(chats, "aaaaaaaa-1", "cccc.jsonl"), head("cccc", "/src/app", "subagent"))
	write(t, filepath.Join(chats, "session-old.json"), `{"sessionId":"old"}`)
	write(t, filepath.Join(chats, "session-2026-01-01T00-00-aaaaaaaa.jsonl.unreadable-1"), "x")
	write(t, filepath.Join(chats, "session-nohead.jsonl"), `{"id":"m","type":"user","content":"x"}`+"\n")
	write(t, filepath.Join(chats, "session-empty.jsonl"), "")
	if err := os.Symlink(filepath.Join(chats, "session-2026-01-01T00-00-aaaaaaaa.jsonl"), filepath.Join(chats, "session-link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(chats, "x.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A legacy directory named by the project's hash, and one whose
	// owner only its marker names.
	legacy := filepath.Join(dir, "tmp", projectHash("/src/lib"), "chats")
	write(t, filepath.Join(legacy, "session-2025-01-01T00-00-dddddddd.jsonl"), `{"sessionId":"dddddddd-1","projectHash":"elsewhere"}`+"\n")
	write(t, filepath.Join(dir, "tmp", "tool", ".project_root"), "/src/tool\n")
	write(t, filepath.Join(dir, "tmp", "tool", "chats", "session-2026-01-02T00-00-eeeeeeee.jsonl"), `{"sessionId":"eeeeeeee-1","projectHash":"x","kind":"main"}`+"\n")
	write(t, filepath.Join(dir, "tmp", "bin", "rg"), "not a project")

	found, skips, err := FindChats(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range found {
		rel, _ := filepath.Rel(dir, c.Path)
		got = append(got, fmt.Sprintf("%s %s %q %s", rel, c.SessionID, c.Agent, c.ProjectDir))
	}
	h := projectHash("/src/lib")
	want := []string{
		`tmp/` + h + `/chats/session-2025-01-01T00-00-dddddddd.jsonl dddddddd-1 "" /src/lib`,
		`tmp/app/chats/aaaaaaaa-1/cccc.jsonl aaaaaaaa-1 "cccc" /src/app`,
		`tmp/app/chats/session-2026-01-01T00-00-aaaaaaaa.jsonl aaaaaaaa-1 "" /src/app`,
		`tmp/app/chats/session-2026-01-01T00-01-bbbbbbbb.jsonl bbbbbbbb-1 "" /src/lib`,
		`tmp/tool/chats/session-2026-01-02T00-00-eeeeeeee.jsonl eeeeeeee-1 "" /src/tool`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("chats:\n%s", diffLines(want, got))
	}
	var gotSkips []string
	for _, s := range skips {
		gotSkips = append(gotSkips, filepath.Base(s.Path)+": "+s.Reason)
	}
	wantSkips := []string{
		"session-2026-01-01T00-00-aaaaaaaa.jsonl.unreadable-1: " + SkipNotChat,
		"session-empty.jsonl: " + SkipNoSessionID,
		"session-link.jsonl: " + SkipSymlink,
		"session-nohead.jsonl: " + SkipNoSessionID,
		"session-old.json: " + SkipLegacyJSON,
	}
	if !slices.Equal(gotSkips, wantSkips) {
		t.Errorf("skips:\n%s", diffLines(wantSkips, gotSkips))
	}

	write(t, filepath.Join(dir, "projects.json"), `{"projects":["/src/app"]}`)
	if _, _, err := FindChats(dir); err == nil || !strings.Contains(err.Error(), "projects.json") {
		t.Errorf("a registry the CLI would reject: %v", err)
	}
}
