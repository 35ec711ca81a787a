package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/secrets"
)

const (
	recallSession = "9e33e208-2b1c-4064-b54f-efdf0f79781b"
	recallSample  = "../../testdata/claude-code-2.1.328/transcripts/-home-dev-project/" + recallSession + ".jsonl"
)

// TestRecallCLI drives every recall subcommand the way a user types them,
// over the real 2.1.328 transcript swept by the session-end hook into a
// real repository, with one prompt holding planted credentials (redaction
// off, so the archive keeps them): --json decodes, the planted prompt
// ranks first for an exact term, a stem and a typo, the secrets are
// masked everywhere unless --no-mask, bad input is a usage error, and the
// index is derived state that can be deleted or rebuilt.
func TestRecallCLI(t *testing.T) {
	f := newClaudeFixture(t)
	if out, err := exec.Command("git", "-C", f.repo, "config", "lossless.redact", "off").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	p := testkit.PlantedSecrets(7)
	raw, err := os.ReadFile(recallSample)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte("/home/dev/project"), []byte(f.repo))
	prompt, _ := json.Marshal(map[string]any{
		"parentUuid": nil, "type": "user", "uuid": "11111111-2222-4333-8444-555555555555", "timestamp": "2026-12-02T16:30:00.000Z",
		"cwd": f.repo, "sessionId": recallSession, "version": "2.1.328",
		"message": map[string]any{"role": "user", "content": "the compaction of the ledger uses GITHUB_TOKEN=" + p["github"] + " and the heron key " + p["slack"]},
	})
	raw = append(raw, append(prompt, '\n')...)
	transcript := filepath.Join(f.base, "projects", "p", recallSession+".jsonl")
	if err := os.MkdirAll(filepath.Dir(transcript), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(transcript, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	end := hookPayload(t, map[string]any{"session_id": recallSession, "cwd": f.repo, "hook_event_name": "SessionEnd", "transcript_path": transcript, "reason": "exit"})
	if code, out, errOut := f.runIn(t, f.repo, end, "hook", "session-end"); code != 0 || out != "" || errOut != "" {
		t.Fatalf("session-end: %d %q %q", code, out, errOut)
	}
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := f.run(t, f.repo, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	values := []string{p["github"], p["slack"]}
	noSecrets := func(what, out string) {
		t.Helper()
		for _, v := range values {
			if strings.Contains(out, v) {
				t.Errorf("%s shows a planted secret:\n%s", what, out)
			}
		}
	}

	// digests: one group per context, the session named, words masked.
	out := ok("recall", "digests", "--json")
	var ds []struct {
		Session string `json:"session"`
		Spans   int    `json:"spans"`
		Words   string `json:"words"`
	}
	if err := json.Unmarshal([]byte(out), &ds); err != nil || len(ds) == 0 {
		t.Fatalf("digests --json: %v\n%s", err, out)
	}
	for _, d := range ds {
		if d.Session != recallSession || d.Spans == 0 {
			t.Errorf("digest %+v", d)
		}
	}
	noSecrets("digests --json", out)
	if out := ok("recall", "digests", "--session", recallSession); !strings.Contains(out, "session "+recallSession) || !strings.Contains(out, "please edit") {
		t.Errorf("digests:\n%s", out)
	}
	if out := ok("recall", "digests", "--session", "no-such-session"); !strings.Contains(out, "no spans archived") {
		t.Errorf("digests of an unknown session:\n%s", out)
	}

	// search: exact, stem, typo, all rank the planted prompt first.
	type hits struct {
		Hits []struct {
			ID      string `json:"id"`
			Kind    string `json:"kind"`
			Snippet string `json:"snippet"`
		} `json:"hits"`
		Total int `json:"total"`
	}
	var planted string
	for _, q := range []string{"ledger", "compacting ledger", "ledgre"} {
		out := ok("recall", "search", q, "--json")
		var h hits
		if err := json.Unmarshal([]byte(out), &h); err != nil || h.Total == 0 {
			t.Fatalf("search %q: %v\n%s", q, err, out)
		}
		if !strings.Contains(h.Hits[0].Snippet, "ledger") || h.Hits[0].Kind != "user_prompt" {
			t.Errorf("search %q: first hit %+v", q, h.Hits[0])
		}
		if planted == "" {
			planted = h.Hits[0].ID
		} else if h.Hits[0].ID != planted {
			t.Errorf("search %q: first hit %s, want %s", q, h.Hits[0].ID, planted)
		}
		noSecrets("search "+q, out)
	}
	out = ok("recall", "search", "ledger")
	if !strings.Contains(out, planted) || !strings.Contains(out, "GITHUB_TOKEN="+secrets.Mask([]byte(p["github"]))) {
		t.Errorf("search text: want the span id and the token masked with its name:\n%s", out)
	}
	noSecrets("search text", out)
	// A secret's value is not a search term: nothing printable comes back.
	out = ok("recall", "search", p["github"], "--json")
	noSecrets("search for the token", out)
	if out := ok("recall", "search", "ledger", "--kind", "tool_result", "--json"); !strings.Contains(out, `"total": 0`) {
		t.Errorf("--kind tool_result finds the prompt:\n%s", out)
	}

	// open: masked by default, verbatim with --no-mask, a line range.
	out = ok("recall", "open", planted)
	if !strings.Contains(out, "# "+planted) || !strings.Contains(out, "ledger") {
		t.Errorf("open:\n%s", out)
	}
	noSecrets("open", out)
	if out := ok("recall", "open", planted, "--no-mask"); !strings.Contains(out, p["github"]) || !strings.Contains(out, p["slack"]) {
		t.Errorf("open --no-mask: want the archived text verbatim:\n%s", out)
	}
	out = ok("recall", "open", planted, "--lines", "1-1", "--json")
	var sp struct {
		ID    string   `json:"id"`
		Lines []string `json:"lines"`
	}
	if err := json.Unmarshal([]byte(out), &sp); err != nil || sp.ID != planted || len(sp.Lines) != 1 {
		t.Errorf("open --lines 1-1 --json: %v\n%s", err, out)
	}
	noSecrets("open --json", out)

	// file: the versions of main.go this session saw, and their state.
	out = ok("recall", "file", "main.go", "--json")
	var vs []struct {
		Session string `json:"session"`
		Blob    string `json:"blob"`
		State   string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &vs); err != nil || len(vs) == 0 {
		t.Fatalf("file main.go --json: %v\n%s", err, out)
	}
	for _, v := range vs {
		if v.Session != recallSession || len(v.Blob) != 40 || v.State == "" {
			t.Errorf("version %+v", v)
		}
	}
	if out := ok("recall", "file", "no/such/file.go"); !strings.Contains(out, "no archived version of no/such/file.go") {
		t.Errorf("file of an unknown path:\n%s", out)
	}

	// Bad input: usage errors or a named failure, nothing printed as a hit.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"recall"}, exitUsage, "usage: git lossless recall"},
		{[]string{"recall", "bogus"}, exitUsage, "unknown recall subcommand"},
		{[]string{"recall", "search"}, exitUsage, "usage: git lossless recall search"},
		{[]string{"recall", "open", planted, "--lines", "9-1"}, exitUsage, "--lines"},
		{[]string{"recall", "open", planted, "--lines", "999"}, exitUsage, "the span has"},
		{[]string{"recall", "digests", "--since", "yesterday"}, exitUsage, "--since"},
		{[]string{"recall", "open", "cc-nosuch#7"}, exitError, "recall search QUERY"},
	} {
		code, out, errOut := f.run(t, f.repo, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", c.args, code, errOut, out, c.code, c.want)
		}
	}

	// The index is derived: deleted, it is rebuilt on the next query;
	// --reindex rebuilds it on demand; its files are private.
	dir := filepath.Join(f.repo, ".git", "lossless", "recall")
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if want := os.FileMode(0o600); fi.IsDir() {
			want = 0o700
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		} else if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the index is not under .git/lossless/recall: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if out := ok("recall", "search", "ledger"); !strings.Contains(out, planted) {
		t.Errorf("search after the index was deleted:\n%s", out)
	}
	if out := ok("recall", "--reindex"); !strings.Contains(out, "recall index rebuilt") {
		t.Errorf("--reindex: %s", out)
	}
	if out := ok("recall", "--reindex", "search", "ledger"); !strings.Contains(out, planted) {
		t.Errorf("--reindex search:\n%s", out)
	}
}
