package shellread_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/shellread"
)

// refusedCases are shell commands that print, list or change files but
// are no evidence of one file seen whole or in an exact range: Parse must
// refuse each, with a zero Read. why is a word of the refusal's reason.
var refusedCases = []struct{ cmd, why string }{
	{"cat hello.txt b.txt", "more than one file"},
	{"cat -- hello.txt b.txt", "more than one file"},
	{"cat *.txt", "glob"},
	{"cat hello.tx?", "glob"},
	{"cat [h]ello.txt", "glob"},
	{"cat {hello,b}.txt", "brace"},
	{"cat hello.txt | head", "pipe"},
	{"cat hello.txt || true", "pipe or ||"},
	{"grep x hello.txt", "not cat"},
	{"rg x hello.txt", "not cat"},
	{"sed -i s/hello/bye/ hello.txt", "sed other than"},
	{"sed -n -i 1p hello.txt", "sed other than"},
	{"sed -n '1,3p;5p' thirty.txt", "sed script"},
	{"sed -n '1,3p' thirty.txt hello.txt", "sed other than"},
	{"sed -n '/x/p' thirty.txt", "sed script"},
	{"sed -n '3,1p' thirty.txt", "sed script"},
	{"sed -n '0,3p' thirty.txt", "sed script"},
	{"sed -n '1,3 p' thirty.txt", "sed script"},
	{"sed -n 1,3w\\ out thirty.txt", "sed script"},
	{"sed '1,3p' thirty.txt", "sed other than"},
	{"sed -n 1,3p", "sed other than"},
	{"cat hello.txt > g.txt", "redirection"},
	{"cat hello.txt 2>/dev/null", "redirection"},
	{"cat < hello.txt", "redirection"},
	{"cat $F", "expansion"},
	{`cat "$F"`, "expansion"},
	{`cat "$(echo hello.txt)"`, "expansion"},
	{"cat `echo hello.txt`", "expansion"},
	{"cat $'hello.txt'", "expansion"},
	{"cat hello.txt; rm hello.txt", "command list"},
	{"cat hello.txt\nrm hello.txt", "newline"},
	{"cat hello.txt &", "background"},
	{"cat hello.txt & cat b.txt", "background"},
	{"head -c 10 hello.txt", "head other than"},
	{"head -c10 hello.txt", "head line count"},
	{"head -n -2 thirty.txt", "head line count"},
	{"head -n 0 thirty.txt", "head line count"},
	{"head -n 1K thirty.txt", "head line count"},
	{"head -n 2 hello.txt b.txt", "head other than"},
	{"tail hello.txt", "tail other than"},
	{"tail -3 thirty.txt", "tail other than"},
	{"tail -n 0 thirty.txt", "tail line count"},
	{"tail -n +0 thirty.txt", "tail -n +N"},
	{"tail -c 5 hello.txt", "tail other than"},
	{"tail -n 3 -q hello.txt", "tail other than"},
	{"nl hello.txt", "nl other than"},
	{"nl -ba -w3 hello.txt", "nl other than"},
	{"nl -b a hello.txt", "nl other than"},
	{"nl -bt hello.txt", "nl other than"},
	{"nl -ba -nln hello.txt", "nl other than"},
	{"awk '{print}' hello.txt", "not cat"},
	{"less hello.txt", "not cat"},
	{"more hello.txt", "not cat"},
	{"/bin/cat hello.txt", "not cat"},
	{"command cat hello.txt", "not cat"},
	{"F=1 cat hello.txt", "not cat"},
	{"=cat hello.txt", "= at the start"},
	{"cat ~/hello.txt", "tilde"},
	{"cat hello.txt # comment", "comment"},
	{"! cat hello.txt", "negation"},
	{"(cat hello.txt)", "subshell"},
	{"cat -n hello.txt", "cat with an option"},
	{"cat -A hello.txt", "cat with an option"},
	{"cat -", "standard input"},
	{"cat -- -", "standard input"},
	{"cat ''", "empty file name"},
	{"cat", "cat of standard input"},
	{"cat 'hello.txt", "unterminated single"},
	{`cat "hello.txt`, "unterminated double"},
	{`cat hello.txt\`, "backslash at the end"},
	{"cat hello\\\n.txt", "backslash before a newline"},
	{"cat 'hello\r.txt'", "control"},
	{"cat \"hello\x01.txt\"", "control"},
	{"cat hello\\\x7f.txt", "backslash before"},
	{"cd sub && cd .. && cat hello.txt", "more than one &&"},
	{"cd .. && cat hello.txt", ".. component"},
	{"cd sub/.. && cat hello.txt", ".. component"},
	{"cd - && cat hello.txt", "cd with an option"},
	{"cd && cat hello.txt", "&& only after"},
	{"cd sub && ", "no command"},
	{"cd sub; cat inner.txt", "command list"},
	{"true && cat hello.txt", "&& only after"},
	{"cd sub && bash -c 'cat inner.txt'", "shell wrapper"},
	{"bash -c 'cat hello.txt; rm hello.txt'", "command list"},
	{"bash -c 'cat hello.txt' x", "shell wrapper"},
	{`bash -c "bash -c 'cat hello.txt'"`, "shell wrapper"},
	{"bash -ec 'cat hello.txt'", "shell wrapper"},
	{"bash hello.txt", "shell wrapper"},
	{"zsh -c 'cat hello.txt'", "not cat"},
	{"", "no command"},
	{"   ", "no command"},
}

// TestNearMissesRefused runs each near-miss in a real directory, so the
// table holds only commands a shell runs, and checks that Parse refuses
// it.
func TestNearMissesRefused(t *testing.T) {
	for _, c := range refusedCases {
		dir := newFixture(t)
		if err := os.WriteFile(filepath.Join(dir, "hello.tx?"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_ = runShell(t, dir, c.cmd)
		r, err := shellread.Parse(c.cmd)
		var nr *shellread.NotReadError
		if !errors.Is(err, shellread.ErrNotRead) || !errors.As(err, &nr) {
			t.Errorf("Parse(%q) = %+v, %v; want a refusal", c.cmd, r, err)
			continue
		}
		if r != (shellread.Read{}) {
			t.Errorf("Parse(%q) refused but returned %+v", c.cmd, r)
		}
		if !strings.Contains(nr.Reason, c.why) {
			t.Errorf("Parse(%q) refused for %q, want %q", c.cmd, nr.Reason, c.why)
		}
	}
}

// mustParse parses a command the test expects recognised.
func mustParse(t *testing.T, cmd string) shellread.Read {
	t.Helper()
	r, err := shellread.Parse(cmd)
	if err != nil {
		t.Fatalf("Parse(%q): %v", cmd, err)
	}
	return r
}

// TestChangedAfterCommand: the file is rewritten between the command and
// the hook, so the output is of a version no longer on disk: no evidence.
// A range whose lines did not change still matches: it vouches for those
// lines only.
func TestChangedAfterCommand(t *testing.T) {
	ctx := context.Background()
	dir := newFixture(t)
	for _, c := range []struct {
		cmd, file, now string
		want           error
	}{
		{"cat hello.txt", "hello.txt", "hello there\n", shellread.ErrMismatch},
		{"cat hello.txt", "hello.txt", "hello world\n\n", shellread.ErrMismatch},
		{"cat hello.txt", "hello.txt", "hello world", shellread.ErrMismatch},
		{"nl -ba thirty.txt", "thirty.txt", thirty + "line 31\n", shellread.ErrMismatch},
		{"head -n 3 thirty.txt", "thirty.txt", "new first line\n" + thirty, shellread.ErrMismatch},
		{"tail -n 2 thirty.txt", "thirty.txt", thirty + "appended\n", shellread.ErrMismatch},
		{"sed -n 2,4p thirty.txt", "thirty.txt", strings.Replace(thirty, lines(thirty, 3, 3), "changed\n", 1), shellread.ErrMismatch},
		{"sed -n 2,4p thirty.txt", "thirty.txt", strings.Replace(thirty, lines(thirty, 20, 20), "changed\n", 1), nil},
	} {
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(fixture[c.file]), 0o600); err != nil {
			t.Fatal(err)
		}
		out := runShell(t, dir, c.cmd)
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.now), 0o600); err != nil {
			t.Fatal(err)
		}
		r := mustParse(t, c.cmd)
		disk, err := shellread.ReadFile(ctx, r.Resolve(dir))
		if err != nil {
			t.Fatal(err)
		}
		s, err := shellread.Match(r, out, disk, shellread.Verbatim)
		if !errors.Is(err, c.want) {
			t.Errorf("%q then the file changed to %q: %v, %v; want %v", c.cmd, c.now, s.View(), err, c.want)
		}
		if c.want == nil && (s.View() != "lines:2-4" || string(s.Content) != lines(thirty, 2, 4)) {
			t.Errorf("%q: %s %q", c.cmd, s.View(), s.Content)
		}
	}
}

// TestNotEvidence covers outputs of recognised commands that still prove
// nothing: truncated by the harness, another file's, a binary file, nl's
// section delimiters, a range past the end, a trim that left nothing.
func TestNotEvidence(t *testing.T) {
	ctx := context.Background()
	dir := newFixture(t)
	disk := func(r shellread.Read) []byte {
		b, err := shellread.ReadFile(ctx, r.Resolve(dir))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := runShell(t, dir, "cat thirty.txt")
	two := runShell(t, dir, "cat hello.txt b.txt")
	if string(two) != "hello world\nbee\n" {
		t.Fatalf("cat a b printed %q", two)
	}
	for _, c := range []struct {
		name, cmd string
		out       []byte
		shown     shellread.Shown
		want      error
	}{
		{"cut short", "cat thirty.txt", full[:len(full)/2], shellread.Verbatim, shellread.ErrMismatch},
		{"codex head-tail truncation", "cat thirty.txt",
			append(append(append([]byte{}, full[:40]...), "…25 tokens truncated…"...), full[len(full)-40:]...), shellread.Verbatim, shellread.ErrMismatch},
		{"claude truncation marker", "cat thirty.txt", append(append([]byte{}, full[:100]...), "\n\n... [120 lines truncated] ..."...), shellread.BlankEdgesTrimmed, shellread.ErrMismatch},
		{"cat a b attributed to a", "cat hello.txt", two, shellread.Verbatim, shellread.ErrMismatch},
		{"cat a b attributed to b", "cat b.txt", two, shellread.Verbatim, shellread.ErrMismatch},
		{"another file's output", "cat b.txt", runShell(t, dir, "cat hello.txt"), shellread.Verbatim, shellread.ErrMismatch},
		{"an error message", "cat hello.txt", []byte("cat: hello.txt: Permission denied\n"), shellread.Verbatim, shellread.ErrMismatch},
		{"nothing", "cat hello.txt", nil, shellread.Verbatim, shellread.ErrMismatch},
		{"trailing newline added", "cat nonl.txt", []byte("a\n\nb\n"), shellread.Verbatim, shellread.ErrMismatch},
		{"CRLF shown as LF", "cat crlf.txt", []byte("one\ntwo\nthree\n"), shellread.Verbatim, shellread.ErrMismatch},
		{"NUL byte", "cat nul.bin", runShell(t, dir, "cat nul.bin"), shellread.Verbatim, shellread.ErrBinary},
		{"invalid UTF-8", "cat latin1.txt", runShell(t, dir, "cat latin1.txt"), shellread.Verbatim, shellread.ErrBinary},
		{"nl section delimiter", "nl -ba section.txt", runShell(t, dir, "nl -ba section.txt"), shellread.Verbatim, shellread.ErrNLSection},
		{"sed past the end", "sed -n '40,50p' thirty.txt", runShell(t, dir, "sed -n '40,50p' thirty.txt"), shellread.Verbatim, shellread.ErrNothingShown},
		{"sed past an empty file", "sed -n 2p empty.txt", runShell(t, dir, "sed -n 2p empty.txt"), shellread.Verbatim, shellread.ErrNothingShown},
		{"tail from past the end", "tail -n +31 thirty.txt", runShell(t, dir, "tail -n +31 thirty.txt"), shellread.Verbatim, shellread.ErrNothingShown},
		{"only blank lines, trimmed", "cat allblank.txt", nil, shellread.BlankEdgesTrimmed, shellread.ErrNothingShown},
		{"trimmed output under Verbatim", "cat blank.txt", []byte("  \nmiddle"), shellread.Verbatim, shellread.ErrMismatch},
	} {
		r := mustParse(t, c.cmd)
		s, err := shellread.Match(r, c.out, disk(r), c.shown)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Match = %s, %v; want %v", c.name, s.View(), err, c.want)
		}
		if err != nil && (s.Content != nil || s.Full) {
			t.Errorf("%s: no evidence but a Seen %+v", c.name, s)
		}
	}
	// The delimiter is why: nl really prints that file as something else.
	if out := runShell(t, dir, "nl -ba section.txt"); strings.Contains(string(out), "     2\t") {
		t.Errorf("nl numbered the delimiter line: %q", out)
	}
	if _, err := shellread.Match(shellread.Read{}, nil, nil, shellread.Verbatim); !errors.Is(err, shellread.ErrNoRead) {
		t.Errorf("Match of a zero Read: %v", err)
	}
}

// TestReadFileRefuses: a directory (cat prints nothing on stdout), a file
// past MaxFileSize, a missing file.
func TestReadFileRefuses(t *testing.T) {
	ctx := context.Background()
	dir := newFixture(t)
	r := mustParse(t, "cat dir")
	if out := runShell(t, dir, "cat dir"); len(out) != 0 {
		t.Errorf("cat of a directory printed %q", out)
	}
	if _, err := shellread.ReadFile(ctx, r.Resolve(dir)); !errors.Is(err, shellread.ErrNotRegular) {
		t.Errorf("ReadFile(dir): %v, want ErrNotRegular", err)
	}
	big := filepath.Join(dir, "big.log")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(shellread.MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := shellread.ReadFile(ctx, big); !errors.Is(err, shellread.ErrTooLarge) {
		t.Errorf("ReadFile(big): %v, want ErrTooLarge", err)
	}
	if _, err := shellread.ReadFile(ctx, filepath.Join(dir, "missing.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing): %v, want not exist", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := shellread.ReadFile(cctx, filepath.Join(dir, "hello.txt")); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadFile with a cancelled context: %v", err)
	}
}
