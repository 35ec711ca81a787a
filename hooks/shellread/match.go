package shellread

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Shown says how a harness turned what the command printed into the text
// the model received (after the adapter has removed the harness's own
// framing, such as Codex's "Chunk ID: …\nOutput:\n" header).
type Shown uint8

const (
	// Verbatim: the model received the bytes the command printed (Codex
	// exec_command, whose PostToolUse tool_response is the output).
	Verbatim Shown = iota
	// BlankEdgesTrimmed: the harness dropped the whitespace-only lines at
	// both ends of the output (Claude Code's Bash tool: it splits stdout
	// at "\n", drops leading and trailing lines that are empty after
	// JavaScript's String.prototype.trim, and joins the rest with "\n";
	// so "hello\n" arrives as "hello").
	BlankEdgesTrimmed
)

// Seen is what a matching output proves the model saw.
type Seen struct {
	// First and Last are the file's lines shown, 1-based and inclusive,
	// as sed counts them (a final line without a newline is a line); 0
	// and 0 for an empty file.
	First, Last int
	// Full is true when those lines are the whole file.
	Full bool
	// Content is the file's bytes of those lines, exactly as the file
	// holds them (their newlines included, nl's numbering not): a
	// sub-slice of disk, to archive as the content seen.
	Content []byte
	// Trimmed is true when the harness's trim (BlankEdgesTrimmed)
	// removed whitespace-only lines the model therefore did not receive.
	Trimmed bool
}

// View is the event's view: "full", or "lines:A-B".
func (s Seen) View() string {
	if s.Full {
		return "full"
	}
	return "lines:" + strconv.Itoa(s.First) + "-" + strconv.Itoa(s.Last)
}

// The reasons Match gives for no evidence.
var (
	// ErrMismatch: the output is not what the command prints of the
	// file on disk (another version, truncated, another file, an error
	// message...).
	ErrMismatch = errors.New("shellread: output does not match the file on disk")
	// ErrBinary: the file holds a NUL byte or is not valid UTF-8; the
	// harnesses decode output as UTF-8, so its bytes never reach the
	// model intact.
	ErrBinary = errors.New("shellread: file is binary (NUL byte or invalid UTF-8)")
	// ErrNothingShown: the command selects no line of the file (a range
	// past its end), or the harness's trim left nothing of a non-empty
	// selection.
	ErrNothingShown = errors.New("shellread: no line of the file shown")
	// ErrNLSection: nl treats a line of only \:\:\:, \:\: or \: as a
	// section delimiter (printed empty, numbering changed), so its output
	// is not the file.
	ErrNLSection = errors.New("shellread: nl section delimiter line in the file")
	// ErrNoRead: r is not a Read from Parse.
	ErrNoRead = errors.New("shellread: not a parsed read")
)

// Match decides whether output, what the model received of r's command
// (shown says how the harness altered it), is what that command prints of
// disk, the file's bytes read after the command ran. It returns what the
// model saw, or an error naming why this is no evidence; see the package
// doc for the exact rules.
func Match(r Read, output, disk []byte, shown Shown) (Seen, error) {
	if r.Path == "" || (r.From < 1 && r.Last < 1) {
		return Seen{}, ErrNoRead
	}
	if bytes.IndexByte(disk, 0) >= 0 || !utf8.Valid(disk) {
		return Seen{}, ErrBinary
	}
	var s Seen
	var ok bool
	if r.Last > 0 {
		s, ok = lastLines(disk, r.Last)
	} else {
		s, ok = lineRange(disk, r.From, r.To)
	}
	if !ok {
		return Seen{}, ErrNothingShown
	}
	if r.Numbered {
		if !s.Full {
			return Seen{}, ErrNoRead // nl -ba always prints the whole file
		}
		// Every line nl prints is numbered, so never blank: the trim can
		// only take the final newline.
		s.Trimmed = shown == BlankEdgesTrimmed && len(s.Content) > 0
		ok, err := numberedEqual(s.Content, output, s.Trimmed)
		if err != nil {
			return Seen{}, err
		}
		if !ok {
			return Seen{}, ErrMismatch
		}
		return s, nil
	}
	want := s.Content
	if shown == BlankEdgesTrimmed {
		t := trimBlankEdges(want)
		if len(t) == 0 && len(want) > 0 {
			return Seen{}, ErrNothingShown
		}
		s.Trimmed = len(t) != len(want)
		want = t
	}
	if !bytes.Equal(output, want) {
		return Seen{}, ErrMismatch
	}
	return s, nil
}

// lineEnd returns the index after the line starting at off: after its
// newline, or the end of b.
func lineEnd(b []byte, off int) int {
	if i := bytes.IndexByte(b[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(b)
}

// lineRange selects lines from..to (to 0: to the end) of b; false when
// none is selected. An empty file is shown whole by a range from line 1.
func lineRange(b []byte, from, to int) (Seen, bool) {
	if len(b) == 0 {
		return Seen{Full: true, Content: b}, from == 1
	}
	start := 0
	for line := 1; line < from; line++ {
		if start >= len(b) {
			return Seen{}, false
		}
		start = lineEnd(b, start)
	}
	if start >= len(b) {
		return Seen{}, false
	}
	end, last := start, from-1
	for end < len(b) && (to == 0 || last < to) {
		end = lineEnd(b, end)
		last++
	}
	return Seen{First: from, Last: last, Full: start == 0 && end == len(b), Content: b[start:end]}, true
}

// lastLines selects the last n lines of b, as tail -n counts them (a
// final line without a newline is a line).
func lastLines(b []byte, n int) (Seen, bool) {
	if len(b) == 0 {
		return Seen{Full: true, Content: b}, true
	}
	search := len(b)
	if b[search-1] == '\n' {
		search--
	}
	start := 0
	for k := 0; k < n; k++ {
		i := bytes.LastIndexByte(b[:search], '\n')
		if i < 0 {
			start = 0
			break
		}
		start, search = i+1, i
	}
	total := bytes.Count(b, []byte{'\n'})
	if b[len(b)-1] != '\n' {
		total++
	}
	first := bytes.Count(b[:start], []byte{'\n'}) + 1
	return Seen{First: first, Last: total, Full: start == 0, Content: b[start:]}, true
}

// numberedEqual reports whether out is b as GNU and BSD `nl -ba` print it
// with their default format (-w6 -s'\t' -nrn): every line as its number
// right-aligned in six columns (wider when it needs more), a tab, the
// line, and a newline (one is added after a last line that has none) —
// without that final newline when noFinalNewline. It compares in place,
// allocating nothing.
func numberedEqual(b, out []byte, noFinalNewline bool) (bool, error) {
	var buf [20]byte
	for off, n := 0, 1; off < len(b); n++ {
		end := lineEnd(b, off)
		line := b[off:end]
		if line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if isSectionDelimiter(line) {
			return false, ErrNLSection
		}
		num := strconv.AppendInt(buf[:0], int64(n), 10)
		for pad := 6 - len(num); pad > 0; pad-- {
			if len(out) == 0 || out[0] != ' ' {
				return false, nil
			}
			out = out[1:]
		}
		if !bytes.HasPrefix(out, num) {
			return false, nil
		}
		out = out[len(num):]
		if len(out) == 0 || out[0] != '\t' {
			return false, nil
		}
		out = out[1:]
		if !bytes.HasPrefix(out, line) {
			return false, nil
		}
		out = out[len(line):]
		off = end
		if off == len(b) && noFinalNewline {
			break
		}
		if len(out) == 0 || out[0] != '\n' {
			return false, nil
		}
		out = out[1:]
	}
	return len(out) == 0, nil
}

// isSectionDelimiter reports a line nl reads as a logical page section
// delimiter with its default -d '\:'.
func isSectionDelimiter(line []byte) bool {
	switch string(line) {
	case `\:\:\:`, `\:\:`, `\:`:
		return true
	}
	return false
}

// trimBlankEdges does to b what Claude Code's Bash tool does to stdout:
// split at "\n", drop the leading and the trailing lines that are blank
// (only JavaScript whitespace), join the rest with "\n". The result is a
// sub-slice of b.
func trimBlankEdges(b []byte) []byte {
	start := 0
	for start < len(b) {
		end := lineEnd(b, start)
		if !isBlank(b[start:end]) {
			break
		}
		start = end
	}
	if start >= len(b) {
		return b[:0]
	}
	// The last line that is not blank ends before the newline after it.
	stop := len(b)
	for {
		i := bytes.LastIndexByte(b[start:stop], '\n')
		if i < 0 {
			break
		}
		if !isBlank(b[start+i+1 : stop]) {
			break
		}
		stop = start + i
	}
	return b[start:stop]
}

// isBlank reports whether line is empty after JavaScript's trim: only
// WhiteSpace and LineTerminator code points (ECMA-262).
func isBlank(line []byte) bool {
	for i := 0; i < len(line); {
		c := line[i]
		if c < utf8.RuneSelf {
			switch c {
			case ' ', '\t', '\n', '\v', '\f', '\r':
				i++
				continue
			}
			return false
		}
		r, size := utf8.DecodeRune(line[i:])
		switch {
		case r == 0xA0, r == 0x1680, r >= 0x2000 && r <= 0x200A, r == 0x2028, r == 0x2029,
			r == 0x202F, r == 0x205F, r == 0x3000, r == 0xFEFF:
			i += size
			continue
		}
		return false
	}
	return true
}

// String is a Read as a short description for logs.
func (r Read) String() string {
	switch {
	case r.Path == "":
		return "no read"
	case r.Last > 0:
		return fmt.Sprintf("%s %q: last %d lines", r.Cmd, r.Path, r.Last)
	case r.To > 0:
		return fmt.Sprintf("%s %q: lines %d-%d", r.Cmd, r.Path, r.From, r.To)
	case r.From > 1:
		return fmt.Sprintf("%s %q: lines %d-end", r.Cmd, r.Path, r.From)
	}
	return fmt.Sprintf("%s %q: whole file", r.Cmd, r.Path)
}
