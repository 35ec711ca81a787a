package shellread_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/shellread"
)

type readCase struct {
	cmd     string // {dir} is replaced by the quoted fixture directory
	path    string // Read.Path; {dir} is replaced by the fixture directory
	view    string
	content string // the file bytes seen
	// trimmedNothing: Claude Code's trim leaves nothing of this output
	// (ErrNothingShown under BlankEdgesTrimmed).
	trimmedNothing bool
}

var thirty = fixture["thirty.txt"]

var readCases = []readCase{
	{cmd: "cat hello.txt", path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: "cat -- hello.txt", path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: "cat -- -dash.txt", path: "-dash.txt", view: "full", content: "dash\n"},
	{cmd: "  cat\thello.txt  ", path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: "'cat' hello.txt", path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: "cat thirty.txt", path: "thirty.txt", view: "full", content: thirty},
	{cmd: "sed -n '2,4p' thirty.txt", path: "thirty.txt", view: "lines:2-4", content: lines(thirty, 2, 4)},
	{cmd: "sed -n 7p thirty.txt", path: "thirty.txt", view: "lines:7-7", content: lines(thirty, 7, 7)},
	{cmd: "sed -n '28,$p' thirty.txt", path: "thirty.txt", view: "lines:28-30", content: lines(thirty, 28, 30)},
	{cmd: `sed -n "28,\$p" thirty.txt`, path: "thirty.txt", view: "lines:28-30", content: lines(thirty, 28, 30)},
	{cmd: "sed -n '1,$p' thirty.txt", path: "thirty.txt", view: "full", content: thirty},
	{cmd: "sed -n '1,100p' thirty.txt", path: "thirty.txt", view: "full", content: thirty},
	{cmd: `sed -n "25,40p" thirty.txt`, path: "thirty.txt", view: "lines:25-30", content: lines(thirty, 25, 30)},
	{cmd: "sed -n 3,3p thirty.txt", path: "thirty.txt", view: "lines:3-3", content: lines(thirty, 3, 3)},
	{cmd: "nl -ba thirty.txt", path: "thirty.txt", view: "full", content: thirty},
	{cmd: "nl -ba nonl.txt", path: "nonl.txt", view: "full", content: "a\n\nb"},
	{cmd: "nl -ba crlf.txt", path: "crlf.txt", view: "full", content: fixture["crlf.txt"]},
	{cmd: "head thirty.txt", path: "thirty.txt", view: "lines:1-10", content: lines(thirty, 1, 10)},
	{cmd: "head -n 3 thirty.txt", path: "thirty.txt", view: "lines:1-3", content: lines(thirty, 1, 3)},
	{cmd: "head -n3 thirty.txt", path: "thirty.txt", view: "lines:1-3", content: lines(thirty, 1, 3)},
	{cmd: "head -3 thirty.txt", path: "thirty.txt", view: "lines:1-3", content: lines(thirty, 1, 3)},
	{cmd: "head -n 30 thirty.txt", path: "thirty.txt", view: "full", content: thirty},
	{cmd: "head -n 5 hello.txt", path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: "head hello.txt", path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: "tail -n 3 thirty.txt", path: "thirty.txt", view: "lines:28-30", content: lines(thirty, 28, 30)},
	{cmd: "tail -n3 thirty.txt", path: "thirty.txt", view: "lines:28-30", content: lines(thirty, 28, 30)},
	{cmd: "tail -n 100 thirty.txt", path: "thirty.txt", view: "full", content: thirty},
	{cmd: "tail -n +29 thirty.txt", path: "thirty.txt", view: "lines:29-30", content: lines(thirty, 29, 30)},
	{cmd: "tail -n+29 thirty.txt", path: "thirty.txt", view: "lines:29-30", content: lines(thirty, 29, 30)},
	{cmd: "tail -n +1 thirty.txt", path: "thirty.txt", view: "full", content: thirty},
	{cmd: "tail -n 1 nonl.txt", path: "nonl.txt", view: "lines:3-3", content: "b"},
	{cmd: "tail -n 2 nonl.txt", path: "nonl.txt", view: "lines:2-3", content: "\nb", trimmedNothing: false},
	{cmd: "sed -n 3p nonl.txt", path: "nonl.txt", view: "lines:3-3", content: "b"},
	{cmd: "sed -n 2p nonl.txt", path: "nonl.txt", view: "lines:2-2", content: "\n", trimmedNothing: true},
	{cmd: "cat nonl.txt", path: "nonl.txt", view: "full", content: "a\n\nb"},
	{cmd: "cat crlf.txt", path: "crlf.txt", view: "full", content: fixture["crlf.txt"]},
	{cmd: "sed -n 2p crlf.txt", path: "crlf.txt", view: "lines:2-2", content: "two\r\n"},
	{cmd: "tail -n 1 crlf.txt", path: "crlf.txt", view: "lines:3-3", content: "three\r\n"},
	{cmd: "cat empty.txt", path: "empty.txt", view: "full", content: ""},
	{cmd: "head empty.txt", path: "empty.txt", view: "full", content: ""},
	{cmd: "tail -n 2 empty.txt", path: "empty.txt", view: "full", content: ""},
	{cmd: "nl -ba empty.txt", path: "empty.txt", view: "full", content: ""},
	{cmd: "sed -n '1,5p' empty.txt", path: "empty.txt", view: "full", content: ""},
	{cmd: "cat blank.txt", path: "blank.txt", view: "full", content: fixture["blank.txt"]},
	{cmd: "sed -n 3,5p blank.txt", path: "blank.txt", view: "lines:3-5", content: "  \nmiddle\n\n"},
	{cmd: "cat utf8.txt", path: "utf8.txt", view: "full", content: fixture["utf8.txt"]},
	{cmd: "bash -lc 'cat hello.txt'", path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: `/bin/bash -lc "cat hello.txt"`, path: "hello.txt", view: "full", content: "hello world\n"},
	{cmd: "sh -c 'sed -n 2,3p thirty.txt'", path: "thirty.txt", view: "lines:2-3", content: lines(thirty, 2, 3)},
	{cmd: `bash -c "cd sub && cat inner.txt"`, path: "sub/inner.txt", view: "full", content: "inner\n"},
	{cmd: `bash -lc 'cat '\''my file.txt'\'`, path: "my file.txt", view: "full", content: "spaced\n"},
	{cmd: "cd sub && cat inner.txt", path: "sub/inner.txt", view: "full", content: "inner\n"},
	{cmd: "cd sub/ && head -n 1 inner.txt", path: "sub/inner.txt", view: "full", content: "inner\n"},
	{cmd: "cd ./sub && nl -ba ../hello.txt", path: "./sub/../hello.txt", view: "full", content: "hello world\n"},
	{cmd: "cd sub && cat {dir}/hello.txt", path: "{dir}/hello.txt", view: "full", content: "hello world\n"},
	{cmd: "cd {dir}/sub && cat inner.txt", path: "{dir}/sub/inner.txt", view: "full", content: "inner\n"},
	{cmd: "cat {dir}/thirty.txt", path: "{dir}/thirty.txt", view: "full", content: thirty},
	{cmd: "cat 'my file.txt'", path: "my file.txt", view: "full", content: "spaced\n"},
	{cmd: `cat "my file.txt"`, path: "my file.txt", view: "full", content: "spaced\n"},
	{cmd: `cat my\ file.txt`, path: "my file.txt", view: "full", content: "spaced\n"},
	{cmd: `head -n 1 my" "'file'.txt`, path: "my file.txt", view: "full", content: "spaced\n"},
	{cmd: `cat "weird'name.txt"`, path: "weird'name.txt", view: "full", content: "quote\n"},
	{cmd: `cat 'weird'\''name.txt'`, path: "weird'name.txt", view: "full", content: "quote\n"},
	{cmd: `cat weird\'name.txt`, path: "weird'name.txt", view: "full", content: "quote\n"},
	{cmd: "cat '$dollar.txt'", path: "$dollar.txt", view: "full", content: "dollar\n"},
	{cmd: `cat "\$dollar.txt"`, path: "$dollar.txt", view: "full", content: "dollar\n"},
	{cmd: "cat 'tab\tname.txt'", path: "tab\tname.txt", view: "full", content: "tabbed\n"},
	{cmd: "cat link.txt", path: "link.txt", view: "full", content: "hello world\n"},
	{cmd: "tail -n 1 link.txt", path: "link.txt", view: "full", content: "hello world\n"},
}

func expand(s, dir string) string { return strings.ReplaceAll(s, "{dir}", dir) }

// TestReadsMatchRealOutput runs every recognised form with /bin/sh in a
// real directory and checks that Parse recognises it and that Match finds
// the output to be exactly the expected part of the file: as Codex hands
// it over (Verbatim) and as Claude Code's Bash does (its own trim, run in
// node).
func TestReadsMatchRealOutput(t *testing.T) {
	ctx := context.Background()
	type ran struct {
		c   readCase
		dir string
		r   shellread.Read
		out []byte
	}
	var runs []ran
	for _, c := range readCases {
		dir := newFixture(t)
		cmd := strings.ReplaceAll(c.cmd, "{dir}", shq(dir))
		r, err := shellread.Parse(cmd)
		if err != nil {
			t.Errorf("Parse(%q): %v", cmd, err)
			continue
		}
		if want := expand(c.path, dir); r.Path != want {
			t.Errorf("Parse(%q).Path = %q, want %q", cmd, r.Path, want)
		}
		runs = append(runs, ran{c, dir, r, runShell(t, dir, cmd)})
	}
	outs := make([][]byte, len(runs))
	for i, x := range runs {
		outs[i] = x.out
	}
	trimmed := claudeTrim(t, outs)
	for i, x := range runs {
		disk, err := shellread.ReadFile(ctx, x.r.Resolve(x.dir))
		if err != nil {
			t.Errorf("%q: ReadFile: %v", x.c.cmd, err)
			continue
		}
		for _, mode := range []struct {
			name  string
			shown shellread.Shown
			out   []byte
		}{{"verbatim", shellread.Verbatim, x.out}, {"claude-trimmed", shellread.BlankEdgesTrimmed, trimmed[i]}} {
			s, err := shellread.Match(x.r, mode.out, disk, mode.shown)
			if mode.shown == shellread.BlankEdgesTrimmed && x.c.trimmedNothing {
				if !errors.Is(err, shellread.ErrNothingShown) {
					t.Errorf("%q %s: Match(%q) = %v, want ErrNothingShown", x.c.cmd, mode.name, mode.out, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%q %s: Match(%q) of %q: %v", x.c.cmd, mode.name, mode.out, disk, err)
				continue
			}
			if s.View() != x.c.view || string(s.Content) != x.c.content {
				t.Errorf("%q %s: view %s content %q, want %s %q", x.c.cmd, mode.name, s.View(), s.Content, x.c.view, x.c.content)
			}
			wantTrim := mode.shown == shellread.BlankEdgesTrimmed && !bytes.Equal(trimmed[i], x.out)
			if s.Trimmed != wantTrim {
				t.Errorf("%q %s: Trimmed = %v, want %v", x.c.cmd, mode.name, s.Trimmed, wantTrim)
			}
			if s.Full != (x.c.view == "full") {
				t.Errorf("%q %s: Full = %v with view %s", x.c.cmd, mode.name, s.Full, x.c.view)
			}
		}
	}
}

// TestClaudeTrimsTheFinalNewline pins the harness behaviour the
// BlankEdgesTrimmed mode exists for: the output of `cat hello.txt` reaches
// the model without its newline, and that is no match under Verbatim.
func TestClaudeTrimsTheFinalNewline(t *testing.T) {
	dir := newFixture(t)
	out := runShell(t, dir, "cat hello.txt")
	got := claudeTrim(t, [][]byte{out})[0]
	if string(out) != "hello world\n" || string(got) != "hello world" {
		t.Fatalf("stdout %q, Claude Code's %q", out, got)
	}
	r, err := shellread.Parse("cat hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	disk := []byte(fixture["hello.txt"])
	if _, err := shellread.Match(r, got, disk, shellread.Verbatim); !errors.Is(err, shellread.ErrMismatch) {
		t.Errorf("trimmed output under Verbatim: %v, want ErrMismatch", err)
	}
	s, err := shellread.Match(r, got, disk, shellread.BlankEdgesTrimmed)
	if err != nil || !s.Full || !s.Trimmed || string(s.Content) != "hello world\n" {
		t.Errorf("trimmed output under BlankEdgesTrimmed: %+v, %v", s, err)
	}
}

// TestNLWideNumbers checks nl's number column past six digits against the
// real nl: a file of 1,000,001 empty lines.
func TestNLWideNumbers(t *testing.T) {
	dir := t.TempDir()
	body := bytes.Repeat([]byte{'\n'}, 1_000_001)
	if err := os.WriteFile(filepath.Join(dir, "many.txt"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	out := runShell(t, dir, "nl -ba many.txt")
	if !bytes.HasSuffix(out, []byte("1000001\t\n")) {
		t.Fatalf("nl output ends %q", out[max(0, len(out)-20):])
	}
	r, err := shellread.Parse("nl -ba many.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := shellread.Match(r, out, body, shellread.Verbatim)
	if err != nil || !s.Full || s.Last != 1_000_001 {
		t.Errorf("Match: %+v (last %d), %v", s.View(), s.Last, err)
	}
}

// TestCodexSamplePayload: the PostToolUse payload Codex 0.169.0 sent for
// the model's `exec_command {"cmd":"cat hello.txt"}` (shared samples,
// run1-read-patch-deny/hooks/005-PostToolUse.json): tool_name "Bash",
// tool_input.command and tool_response as recorded, hello.txt holding
// "hello world\n". The rollout's function_call_output carries the same
// text after "Output:\n", which the adapter strips before Match.
func TestCodexSamplePayload(t *testing.T) {
	const command, response = "cat hello.txt", "hello world\n"
	const rollout = "Chunk ID: 8530d1\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nhello world\n"
	disk := []byte("hello world\n")
	r := mustParse(t, command)
	s, err := shellread.Match(r, []byte(response), disk, shellread.Verbatim)
	if err != nil || s.View() != "full" || string(s.Content) != "hello world\n" {
		t.Fatalf("Match: %+v, %v", s, err)
	}
	_, body, ok := strings.Cut(rollout, "\nOutput:\n")
	if !ok || body != response {
		t.Fatalf("rollout body %q", body)
	}
	if _, err := shellread.Match(r, []byte(rollout), disk, shellread.Verbatim); !errors.Is(err, shellread.ErrMismatch) {
		t.Errorf("the framed rollout output: %v, want ErrMismatch (the adapter unwraps it)", err)
	}
	// Codex shows the same call as /bin/bash -lc in its rollout.
	if w := mustParse(t, `/bin/bash -lc "cat hello.txt"`); w != r {
		t.Errorf("wrapped: %+v, want %+v", w, r)
	}
}
