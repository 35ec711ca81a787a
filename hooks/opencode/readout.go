package opencode

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/git-lossless/git-lossless/hooks"

	"github.com/git-lossless/git-lossless/gitstore"
)

// endOfFile is the footer of a read that reached the file's end.
var endOfFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\(End of file - total (\d+) lines\)$`) })

// ShownLines parses opencode's read output, "<path>P</path>\n<type>file
// </type>\n<content>\n1: line\n2: line\n\n(footer)\n</content>": the
// numbered lines it showed (without their numbers), the first line's
// number, and whether the footer says the file ends after them (then
// total is its line count). ok is false for anything else (a directory,
// an image, an error, a number out of sequence).
func ShownLines(out string) (lines []string, first int, eof bool, ok bool) {
	const open, close = "<content>\n", "\n</content>"
	if !strings.Contains(out, "<type>file</type>") {
		return nil, 0, false, false
	}
	i := strings.Index(out, open)
	j := strings.LastIndex(out, close)
	if i < 0 || j < i+len(open) {
		return nil, 0, false, false
	}
	body := strings.Split(out[i+len(open):j], "\n")
	n := 0
	for ; n < len(body); n++ {
		num, text, found := strings.Cut(body[n], ": ")
		if !found {
			// "12:" alone is an empty line 12.
			num, text, found = strings.TrimSuffix(body[n], ":"), "", strings.HasSuffix(body[n], ":")
		}
		v, err := strconv.Atoi(num)
		if !found || err != nil || v < 1 || (n > 0 && v != first+n) {
			break
		}
		if n == 0 {
			first = v
		}
		lines = append(lines, text)
	}
	if n == 0 {
		return nil, 0, false, false
	}
	// What follows the lines: a blank line and one footer line.
	rest := body[n:]
	if len(rest) != 2 || rest[0] != "" {
		return nil, 0, false, false
	}
	if m := endOfFile().FindStringSubmatch(rest[1]); m != nil {
		total, _ := strconv.Atoi(m[1])
		if total != first+n-1 {
			return nil, 0, false, false
		}
		eof = true
	}
	return lines, first, eof, true
}

// ReadEvidence is what a read's output puts into the context, when it is
// exact: the file's text as the model received it. opencode numbers the
// lines, may cut long ones and does not say whether the file ends with a
// newline, so the shown lines are checked against the file on disk: when
// they are its lines (all of them, first to last, for view full; lines
// A-B for a partial view), the content is the file's bytes (full) or
// those lines joined by newlines (partial). Otherwise there is no
// evidence (ok false): a cut line, a file changed between the read and
// the hook, an unknown output shape never vouch for a version the model
// did not see.
func ReadEvidence(abs, out string) (hooks.FileOp, bool) {
	lines, first, eof, ok := ShownLines(out)
	if !ok {
		return hooks.FileOp{}, false
	}
	disk, err := os.ReadFile(abs)
	if err != nil {
		return hooks.FileOp{}, false
	}
	text := bytes.ReplaceAll(disk, []byte("\r\n"), []byte("\n"))
	body := bytes.TrimSuffix(text, []byte("\n"))
	diskLines := strings.Split(string(body), "\n")
	last := first + len(lines) - 1
	if last > len(diskLines) || (eof && last != len(diskLines)) {
		// The disk has other lines than the output says the file had:
		// it changed since.
		return hooks.FileOp{}, false
	}
	for k, l := range lines {
		if diskLines[first-1+k] != l {
			return hooks.FileOp{}, false
		}
	}
	f := hooks.FileOp{Op: gitstore.OpRead, Path: abs, HasContent: true}
	if first == 1 && eof && last == len(diskLines) {
		f.Content = disk
		return f, true
	}
	f.Content = []byte(strings.Join(lines, "\n"))
	f.Partial, f.FirstLine, f.NumLines = true, int64(first), int64(len(lines))
	return f, true
}
