package shellread_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/hooks/shellread"
)

// refTrim is Claude Code's trim written the way its JavaScript is: split,
// drop blank lines at both ends, join.
func refTrim(s string) string {
	ls := strings.Split(s, "\n")
	blank := func(l string) bool {
		return strings.TrimFunc(l, func(r rune) bool {
			return strings.ContainsRune(" \t\n\v\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff", r) || (r >= 0x2000 && r <= 0x200a)
		}) == ""
	}
	a, b := 0, len(ls)-1
	for a < len(ls) && blank(ls[a]) {
		a++
	}
	for b >= 0 && blank(ls[b]) {
		b--
	}
	if a > b {
		return ""
	}
	return strings.Join(ls[a:b+1], "\n")
}

// refShow is what the read's command prints of disk, computed the naive
// way, with the lines shown (first, last; 0, 0 when none or empty).
func refShow(r shellread.Read, disk string) (out, content string, first, last int) {
	ls := strings.SplitAfter(disk, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	n := len(ls)
	a, b := r.From, r.To
	if r.Last > 0 {
		a, b = max(1, n-r.Last+1), n
	}
	if b == 0 || b > n {
		b = n
	}
	if n == 0 || a > n {
		return "", "", 0, 0
	}
	content = strings.Join(ls[a-1:b], "")
	if !r.Numbered {
		return content, content, a, b
	}
	var o strings.Builder
	for i, l := range ls {
		fmt.Fprintf(&o, "%6d\t%s\n", i+1, strings.TrimSuffix(l, "\n"))
	}
	return o.String(), content, a, b
}

// FuzzMatch checks Match against refShow and refTrim: the exact rendering
// matches with the expected lines and content, and the rendering with one
// byte more or less does not.
func FuzzMatch(f *testing.F) {
	for _, d := range fixture {
		f.Add(d, uint8(2), uint8(4), uint8(0), uint8(0), false)
		f.Add(d, uint8(1), uint8(0), uint8(0), uint8(1), true)
		f.Add(d, uint8(0), uint8(0), uint8(3), uint8(2), true)
	}
	f.Fuzz(func(t *testing.T, disk string, from, to, last, cmd uint8, trimmed bool) {
		r := shellread.Read{Path: "f", From: int(from), To: int(to)}
		switch cmd % 3 {
		case 1:
			r = shellread.Read{Path: "f", Cmd: "nl", From: 1, Numbered: true}
		case 2:
			r = shellread.Read{Path: "f", Cmd: "tail", Last: int(last)}
		}
		if (r.Last == 0 && r.From == 0) || (r.To != 0 && r.To < r.From) {
			return
		}
		shown := shellread.Verbatim
		out, content, first, lastLine := refShow(r, disk)
		if trimmed {
			shown, out = shellread.BlankEdgesTrimmed, refTrim(out)
		}
		s, err := shellread.Match(r, []byte(out), []byte(disk), shown)
		switch {
		case strings.IndexByte(disk, 0) >= 0 || !utf8.ValidString(disk):
			if !errors.Is(err, shellread.ErrBinary) {
				t.Fatalf("binary %q: %v", disk, err)
			}
			return
		case r.Numbered && strings.Contains("\n"+disk+"\n", "\n\\:"):
			if err != nil && !errors.Is(err, shellread.ErrNLSection) {
				t.Fatalf("nl of %q: %v", disk, err)
			}
			if err != nil {
				return
			}
		case (disk != "" && first == 0) || (disk == "" && r.Last == 0 && r.From != 1):
			if !errors.Is(err, shellread.ErrNothingShown) {
				t.Fatalf("%+v of %q shows nothing, Match: %+v, %v", r, disk, s, err)
			}
			return
		case trimmed && out == "" && content != "":
			if !errors.Is(err, shellread.ErrNothingShown) {
				t.Fatalf("%+v of %q trimmed to nothing, Match: %+v, %v", r, disk, s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%+v of %q, output %q: %v", r, disk, out, err)
		}
		if string(s.Content) != content || s.First != first || s.Last != lastLine || s.Full != (content == disk) {
			t.Fatalf("%+v of %q: %+v, want content %q lines %d-%d", r, disk, s, content, first, lastLine)
		}
		if _, err := shellread.Match(r, []byte(out+"x"), []byte(disk), shown); !errors.Is(err, shellread.ErrMismatch) {
			t.Fatalf("one byte more: %v", err)
		}
		if out != "" {
			if _, err := shellread.Match(r, []byte(out[:len(out)-1]), []byte(disk), shown); !errors.Is(err, shellread.ErrMismatch) {
				t.Fatalf("%+v of %q: one byte less %q: %v", r, disk, out[:len(out)-1], err)
			}
		}
	})
}
