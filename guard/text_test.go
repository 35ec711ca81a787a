package guard

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostilePaths are file names a hostile repository or payload can hold.
var hostilePaths = []string{
	"/p/x\x1b[2J.go",         // escape sequence: clears the screen
	"/p/a\nb.go",             // a newline that forges a second line
	"/p/a\rb.go",             // a carriage return that overwrites the line
	"/p/\u202egp.go",         // right-to-left override
	"/p/bad\xff\xfe.go",      // invalid UTF-8
	"/p/tab\tand\abell.go",   // tab, bell
	"/p/del\x7f.go",          // DEL
	"/p/it's \\ \"odd\".go",  // printable, but quotes and a backslash
	"/p/caf\u00e9 \u00a0.go", // non-ASCII, a no-break space
}

func allPrintable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

func TestPrintable(t *testing.T) {
	for _, p := range append(hostilePaths, "/p/plain name.go", "src/x.go") {
		got := Printable(p)
		if !allPrintable(got) {
			t.Errorf("Printable(%q) = %q: not printable", p, got)
		}
		if allPrintable(p) {
			if got != p {
				t.Errorf("Printable(%q) = %q, want it unchanged", p, got)
			}
			continue
		}
		if back, err := strconv.Unquote(got); err != nil || back != p {
			t.Errorf("Printable(%q) = %q does not name the same bytes (%q, %v)", p, got, back, err)
		}
	}
}

// TestShellQuote runs what ShellQuote prints through bash: the word must
// be printable and must give back exactly the bytes quoted.
func TestShellQuote(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, p := range append(hostilePaths, "/p/plain.go", "/p/with space.go", "", "-x", "$(touch pwned)", "a'b") {
		q := ShellQuote(p)
		if !allPrintable(q) {
			t.Errorf("ShellQuote(%q) = %q: not printable", p, q)
		}
		out, err := exec.Command("bash", "-c", "printf %s "+q).Output()
		if err != nil {
			t.Errorf("bash on %q: %v", q, err)
			continue
		}
		if string(out) != p {
			t.Errorf("ShellQuote(%q) = %s gives %q in bash", p, q, out)
		}
	}
	if got := ShellQuote("/p/plain.go"); got != "/p/plain.go" {
		t.Errorf("a plain path quoted: %s", got)
	}
}

// TestDenyReasonIsPrintable: the reason is shown to the model (and to
// the user); a path, an agent id or a hint of the wrong characters must
// not reach it raw.
func TestDenyReasonIsPrintable(t *testing.T) {
	for _, p := range hostilePaths {
		for _, in := range []Input{
			{Path: p, Exists: true, DiskBlob: "x", Agent: "ag\x1b[2J"},
			{Path: p, Exists: true, DiskBlob: "x", RestoreHint: "git lossless restore --files " + p},
			{Path: p, Exists: true, DiskBlob: "b", Evidence: []Evidence{{Op: "read", Blob: "a"}}},
		} {
			d := Decide(in)
			if d.Allow {
				t.Fatalf("%q: allowed", p)
			}
			if !allPrintable(d.Reason) {
				t.Errorf("reason for %q is not printable: %q", p, d.Reason)
			}
			if !strings.Contains(d.Reason, Printable(p)) {
				t.Errorf("reason for %q does not name it as %s: %q", p, Printable(p), d.Reason)
			}
		}
	}
}
