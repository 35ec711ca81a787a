package shellread_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks/shellread"
)

// TestParseFields pins the Read of each form, field by field.
func TestParseFields(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want shellread.Read
	}{
		{"cat f", shellread.Read{Path: "f", Cmd: "cat", From: 1}},
		{"cat -- -f", shellread.Read{Path: "-f", Cmd: "cat", From: 1}},
		{"sed -n 5p f", shellread.Read{Path: "f", Cmd: "sed", From: 5, To: 5}},
		{"sed -n 5,9p f", shellread.Read{Path: "f", Cmd: "sed", From: 5, To: 9}},
		{"sed -n '5,$p' f", shellread.Read{Path: "f", Cmd: "sed", From: 5}},
		{"sed -n 007,010p f", shellread.Read{Path: "f", Cmd: "sed", From: 7, To: 10}},
		{"nl -ba f", shellread.Read{Path: "f", Cmd: "nl", From: 1, Numbered: true}},
		{"head f", shellread.Read{Path: "f", Cmd: "head", From: 1, To: 10}},
		{"head -n 999999999 f", shellread.Read{Path: "f", Cmd: "head", From: 1, To: 999999999}},
		{"head -7 f", shellread.Read{Path: "f", Cmd: "head", From: 1, To: 7}},
		{"tail -n 4 f", shellread.Read{Path: "f", Cmd: "tail", Last: 4}},
		{"tail -n +4 f", shellread.Read{Path: "f", Cmd: "tail", From: 4}},
		{"cd /a/b && cat c/d", shellread.Read{Path: "/a/b/c/d", Cmd: "cat", From: 1}},
		{"cd a && cat /x", shellread.Read{Path: "/x", Cmd: "cat", From: 1}},
		{"cd a/ && cat x", shellread.Read{Path: "a/x", Cmd: "cat", From: 1}},
		{"cd . && cat x", shellread.Read{Path: "./x", Cmd: "cat", From: 1}},
		{"cat a=b", shellread.Read{Path: "a=b", Cmd: "cat", From: 1}},
		{"cat 'a b'\"c d\"e\\ f", shellread.Read{Path: "a bc de f", Cmd: "cat", From: 1}},
		{`cat "a\b\"c\\d"`, shellread.Read{Path: `a\b"c\d`, Cmd: "cat", From: 1}},
		{"cat 'a\\b'", shellread.Read{Path: `a\b`, Cmd: "cat", From: 1}},
		{"cat 'été.txt'", shellread.Read{Path: "été.txt", Cmd: "cat", From: 1}},
		{"bash -lc \"cd src && sed -n '1,20p' main.go\"", shellread.Read{Path: "src/main.go", Cmd: "sed", From: 1, To: 20}},
	} {
		got, err := shellread.Parse(c.cmd)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.cmd, got, err, c.want)
		}
	}
	for _, cmd := range []string{"head -n 1000000000 f", "sed -n 1,1000000000p f", "cat \xff"} {
		if r, err := shellread.Parse(cmd); !errors.Is(err, shellread.ErrNotRead) {
			t.Errorf("Parse(%q) = %+v, %v; want a refusal", cmd, r, err)
		}
	}
}

func TestReadString(t *testing.T) {
	for cmd, want := range map[string]string{
		"cat f":         `cat "f": whole file`,
		"tail -n 3 f":   `tail "f": last 3 lines`,
		"sed -n 2,5p f": `sed "f": lines 2-5`,
		"tail -n +7 f":  `tail "f": lines 7-end`,
		"nl -ba 'a b'":  `nl "a b": whole file`,
		"cat f; rm f":   "no read",
	} {
		r, _ := shellread.Parse(cmd)
		if got := r.String(); got != want {
			t.Errorf("Parse(%q).String() = %q, want %q", cmd, got, want)
		}
	}
}

func TestResolve(t *testing.T) {
	for _, c := range []struct{ path, cwd, want string }{
		{"f", "/w", "/w/f"},
		{"f", "/w/", "/w/f"},
		{"a/../f", "/w", "/w/a/../f"},
		{"/abs/f", "/w", "/abs/f"},
		{"f", "", "f"},
	} {
		if got := (shellread.Read{Path: c.path}).Resolve(c.cwd); got != c.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", c.path, c.cwd, got, c.want)
		}
	}
}

// canonical writes r back as a command in one fixed spelling.
func canonical(r shellread.Read) string {
	q := shq(r.Path)
	switch {
	case r.Cmd == "cat":
		return "cat -- " + q
	case r.Cmd == "nl":
		return "nl -ba " + q
	case r.Cmd == "head":
		return fmt.Sprintf("head -n %d %s", r.To, q)
	case r.Cmd == "tail" && r.Last > 0:
		return fmt.Sprintf("tail -n %d %s", r.Last, q)
	case r.Cmd == "tail":
		return fmt.Sprintf("tail -n +%d %s", r.From, q)
	case r.Cmd == "sed" && r.To == 0:
		return fmt.Sprintf("sed -n '%d,$p' %s", r.From, q)
	}
	return fmt.Sprintf("sed -n %d,%dp %s", r.From, r.To, q)
}

// FuzzParse: Parse never panics; a refusal wraps ErrNotRead and never
// returns a path; an accepted command names a file and a selection that
// make sense, reads the same when written back canonically, and reads the
// same wrapped in `bash -lc`.
func FuzzParse(f *testing.F) {
	for _, c := range readCases {
		f.Add(c.cmd)
	}
	for _, c := range refusedCases {
		f.Add(c.cmd)
	}
	f.Add(`bash -lc 'cd "a b" && tail -n +3 x\ y'`)
	f.Fuzz(func(t *testing.T, cmd string) {
		r, err := shellread.Parse(cmd)
		if err != nil {
			if !errors.Is(err, shellread.ErrNotRead) {
				t.Fatalf("Parse(%q): error %v does not wrap ErrNotRead", cmd, err)
			}
			if r != (shellread.Read{}) {
				t.Fatalf("Parse(%q) refused (%v) but returned %+v", cmd, err, r)
			}
			return
		}
		switch {
		case r.Path == "" || r.Path == "-" || strings.ContainsFunc(r.Path, func(c rune) bool { return (c < 0x20 && c != '\t') || c == 0x7f }):
			t.Fatalf("Parse(%q): path %q", cmd, r.Path)
		case !strings.Contains("cat sed nl head tail", r.Cmd):
			t.Fatalf("Parse(%q): cmd %q", cmd, r.Cmd)
		case (r.Last > 0) == (r.From > 0), r.To != 0 && r.To < r.From, r.Numbered != (r.Cmd == "nl"):
			t.Fatalf("Parse(%q): selection %+v", cmd, r)
		}
		again, err := shellread.Parse(canonical(r))
		if err != nil || again != r {
			t.Fatalf("Parse(%q) = %+v, but its canonical form %q parses to %+v, %v", cmd, r, canonical(r), again, err)
		}
		if strings.HasPrefix(cmd, "bash") || strings.HasPrefix(cmd, "sh") || strings.HasPrefix(cmd, "/") {
			return
		}
		wrapped, err := shellread.Parse("bash -lc " + shq(cmd))
		if err != nil || wrapped != r {
			t.Fatalf("Parse(%q) = %+v, wrapped in bash -lc: %+v, %v", cmd, r, wrapped, err)
		}
	})
}
