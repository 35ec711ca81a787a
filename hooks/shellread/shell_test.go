package shellread_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// fixture is the tree every shell test runs in, created afresh per case.
var fixture = map[string]string{
	"hello.txt":      "hello world\n",
	"thirty.txt":     thirtyLines(),
	"nonl.txt":       "a\n\nb",
	"crlf.txt":       "one\r\ntwo\r\nthree\r\n",
	"empty.txt":      "",
	"blank.txt":      "\n\n  \nmiddle\n\n\t\n",
	"allblank.txt":   "\n \n",
	"utf8.txt":       "héllo\n\u00a0\n",
	"my file.txt":    "spaced\n",
	"weird'name.txt": "quote\n",
	"$dollar.txt":    "dollar\n",
	"-dash.txt":      "dash\n",
	"sub/inner.txt":  "inner\n",
	"nul.bin":        "a\x00b\n",
	"latin1.txt":     "caf\xe9\n",
	"section.txt":    "top\n\\:\\:\nbody\n",
	"b.txt":          "bee\n",
	"tab\tname.txt":  "tabbed\n",
}

func thirtyLines() string {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('0' + i%10)))
		b.WriteString("\n")
	}
	return b.String()
}

// lines returns lines a..b (1-based, inclusive) of s, newlines kept.
func lines(s string, a, b int) string {
	ls := strings.SplitAfter(s, "\n")
	return strings.Join(ls[a-1:b], "")
}

// newFixture writes the fixture, a symlink link.txt -> hello.txt and a
// directory dir, into a fresh temporary directory.
func newFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range fixture {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("hello.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shq quotes s for a POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runShell runs command with /bin/sh -c in dir, as a harness runs a
// model's shell call, and returns its stdout: what Codex hands the model.
// The environment is minimal (no CDPATH, HOME in the test's own
// directory) so that a login shell (bash -lc) prints nothing of its own.
func runShell(t testing.TB, dir, command string) []byte {
	t.Helper()
	sh := testkit.NeedTool(t, "sh")
	c := exec.Command(sh, "-c", command)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LC_ALL=C"}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	_ = c.Run() // a near-miss may fail; its stdout is what the model gets
	return out.Bytes()
}

// claudeTrimJS is the function Claude Code 2.1.328's Bash tool applies to
// stdout before the model sees it (minified name O9n in its bundle),
// copied from the binary.
const claudeTrimJS = "function O9n(e){let o=e.split(`\n`),r=0;while(r<o.length&&o[r]?.trim()===\"\")r++;" +
	"let g=o.length-1;while(g>=0&&o[g]?.trim()===\"\")g--;if(r>g)return\"\";return o.slice(r,g+1).join(`\n`)}"

// claudeTrim runs Claude Code's own trim over each output with node and
// returns what Claude Code's Bash tool hands the model.
func claudeTrim(t *testing.T, outputs [][]byte) [][]byte {
	t.Helper()
	node := testkit.NeedTool(t, "node")
	in := make([]string, len(outputs))
	for i, o := range outputs {
		in[i] = string(o)
	}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	script := claudeTrimJS + `
let s="";process.stdin.setEncoding("utf8");process.stdin.on("data",d=>s+=d);
process.stdin.on("end",()=>process.stdout.write(JSON.stringify(JSON.parse(s).map(O9n))));`
	c := exec.Command(node, "-e", script)
	c.Stdin = bytes.NewReader(js)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(outputs) {
		t.Fatalf("node output %q: %v", out, err)
	}
	res := make([][]byte, len(got))
	for i, g := range got {
		res[i] = []byte(g)
	}
	return res
}
