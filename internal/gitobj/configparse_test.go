package gitobj

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitConfigList is `git config --list -z --file f` as (key, value) pairs,
// or ok false when git rejects the file.
func gitConfigList(t *testing.T, f string) (pairs []string, ok bool) {
	t.Helper()
	cmd := exec.Command("git", "config", "--list", "-z", "--file", f)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if _, isExit := err.(*exec.ExitError); !isExit {
			t.Fatalf("git config: %v", err)
		}
		return nil, false
	}
	for _, e := range strings.Split(string(out), "\x00") {
		if e == "" {
			continue
		}
		k, v, _ := strings.Cut(e, "\n")
		pairs = append(pairs, k+"="+v)
	}
	return pairs, true
}

func ourConfigList(b []byte) ([]string, bool) {
	var pairs []string
	err := parseConfig(b, func(k, v string) { pairs = append(pairs, k+"="+v) })
	return pairs, err == nil
}

func checkConfigAgainstGit(t *testing.T, dir string, i int, text string) (accepted bool) {
	t.Helper()
	f := filepath.Join(dir, fmt.Sprintf("c%d", i))
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	want, wantOK := gitConfigList(t, f)
	got, gotOK := ourConfigList([]byte(text))
	if wantOK != gotOK {
		t.Fatalf("config %q: git accepts it: %v, we accept it: %v (git: %q, ours: %q)", text, wantOK, gotOK, want, got)
	}
	if wantOK && strings.Join(want, "\x00") != strings.Join(got, "\x00") {
		t.Fatalf("config %q:\n git  %q\n ours %q", text, want, got)
	}
	return wantOK
}

// TestConfigParseMatchesGit holds parseConfig to real git on the rules its
// doc lists, one case each, and then on 400 files assembled at random from
// the same pieces (valid and broken), accept/reject included.
func TestConfigParseMatchesGit(t *testing.T) {
	dir := t.TempDir()
	cases := []string{
		"",
		"[core]\n\tbare = true\n",
		"[core]\n\tbare\n",
		"\xef\xbb\xbf[core]\nbare = false\n",
		"[core]\r\n\tbare = true\r\n",
		"[Core]\n\tBare = TRUE\n",
		"[remote \"Origin\"]\n\turl = x\n",
		"[remote \"a\\\"b\\\\c\\d\"]\n\turl = x\n",
		"[remote.Origin]\n\turl = x\n",
		"[core] bare = true\n",
		"[a]\nb = \"  quoted  \"  tail  \n",
		"[a]\nb = one\\\ntwo\n",
		"[a]\nb = x\\ty\\nz\\bw\\\\\\\"\n",
		"[a]\nb = x\\q\n",
		"[a]\nb = \"unterminated\n",
		"[a]\nb = v ; comment\nc = v # comment\nd = \"v ; not\"\n",
		"[a]\nb = \t  spaced \t out \t \n",
		"[a]\nb=\n",
		"[a]\nb-c1 = v\n",
		"[a]\n1b = v\n",
		"[a]\nb # comment\n",
		"[a]\nb junk\n",
		"b = v\n",
		"[]\nb = v\n",
		"[ \"sub\"]\nb = v\n",
		"[a \"sub\n\"]\nb = v\n",
		"[a\n",
		"[a \"s\"x]\nb = v\n",
		"[a b]\n",
		"[a_b]\n",
		"[a]\nb = v\\",
		"[a]\nb = v",
		"# only a comment",
		"; [a]\n[b]\nc = d\n",
		"[a]\nb = 1\nb = 2\n[a]\nb = 3\n",
		"[a \"x\"]\n[a \"X\"]\nk = v\n",
		"[a]\nk = \"\"\n",
		"[a]\nk = \"a\"\"b\"\n",
		"[a]\nk = a\rb\n",
		"[a]\tk = v\n",
	}
	for i, c := range cases {
		checkConfigAgainstGit(t, dir, i, c)
	}
	pieces := []string{
		"[core]", "[Remote \"Or\\\"ig\"]", "[a.B]", "[x \"\"]", "[", "]", "\"", "\\", "\\\n", "\\t", "\\q",
		"key", "Key-2", "9k", " = ", "=", "value", "  ", "\t", "#c", ";c", "\r\n", "\n", "\n", "\n",
		"\"q u\"", "\xef\xbb\xbf", "\r", ".", "_",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for i := range 400 {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteString("[s]\n")
		}
		for range 1 + rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if checkConfigAgainstGit(t, dir, len(cases)+i, b.String()) {
			accepted++
		}
	}
	// Both sides of the rule are exercised, not only rejection.
	if accepted < 40 || accepted > 360 {
		t.Fatalf("git accepted %d of 400 random files: the pieces no longer exercise both outcomes", accepted)
	}
	t.Logf("git accepted %d of 400 random files, rejected %d; we agreed on each", accepted, 400-accepted)
}
