package codex

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ApplyUpdate returns a file's content after an UpdateFile's chunks, as
// Codex 0.169.0 writes it, or the *PatchError Codex fails with. Codex
// reads the file as UTF-8 text (invalid UTF-8 fails), finds each chunk's
// Old lines at or after the previous chunk (exactly, then ignoring
// trailing white space, then ignoring white space at both ends, then also
// reading typographic dashes, quotes and spaces as ASCII: the first pass
// that finds them wins), and keeps each line's own ending: the lines a
// chunk keeps as context stay byte for byte as in the file, removed lines
// go, added lines get the file's first line ending (LF in a file without
// one), and a last line without an ending gets one. A line ends at "\n",
// "\r\n" or a lone "\r".
func ApplyUpdate(old []byte, chunks []Chunk) ([]byte, error) {
	return applyUpdate(old, chunks, false)
}

func applyUpdate(old []byte, chunks []Chunk, exact bool) ([]byte, error) {
	if !utf8.Valid(old) {
		return nil, &PatchError{Msg: "file is not valid UTF-8: Codex cannot update it"}
	}
	sf := parseSource(string(old))
	reps, err := replacements(sf.texts(), chunks, exact)
	if err != nil {
		return nil, err
	}
	sf.apply(reps)
	return []byte(sf.contents()), nil
}

// srcLine is a file line and its ending: "\n", "\r\n", a lone "\r"
// (Codex reads all three as line ends), or "" for a last line without one.
type srcLine struct{ text, end string }

type sourceFile struct {
	lines []srcLine
	pref  string // the ending of inserted lines
}

func parseSource(s string) *sourceFile {
	sf := &sourceFile{}
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			sf.lines = append(sf.lines, srcLine{text: s})
			break
		}
		l := srcLine{text: s[:i], end: s[i : i+1]}
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			l.end = "\r\n"
		}
		if sf.pref == "" {
			sf.pref = l.end
		}
		sf.lines = append(sf.lines, l)
		s = s[i+len(l.end):]
	}
	if sf.pref == "" {
		sf.pref = "\n"
	}
	return sf
}

func (sf *sourceFile) texts() []string {
	out := make([]string, len(sf.lines))
	for i, l := range sf.lines {
		out[i] = l.text
	}
	return out
}

// replacement replaces n lines at start by lines.
type replacement struct {
	start, n int
	lines    []string
}

func (sf *sourceFile) apply(reps []replacement) {
	out := make([]srcLine, 0, len(sf.lines))
	at := 0
	for _, r := range reps {
		out = append(out, sf.lines[at:r.start]...)
		for _, t := range r.lines {
			out = append(out, srcLine{text: t, end: sf.pref})
		}
		at = r.start + r.n
	}
	out = append(out, sf.lines[at:]...)
	for i := range out {
		if out[i].end == "" {
			out[i].end = sf.pref
		}
	}
	sf.lines = out
}

func (sf *sourceFile) contents() string {
	var b strings.Builder
	for _, l := range sf.lines {
		b.WriteString(l.text)
		b.WriteString(l.end)
	}
	return b.String()
}

// replacements computes, in file order, what the chunks replace.
func replacements(lines []string, chunks []Chunk, exact bool) ([]replacement, error) {
	var reps []replacement
	at := 0
	for _, c := range chunks {
		if c.HasContext {
			i, ok := seekSequence(lines, []string{c.Context}, at, false, exact)
			if !ok {
				return nil, &PatchError{Msg: fmt.Sprintf("failed to find context '%s'", c.Context)}
			}
			at = i + 1
		}
		if len(c.Old) == 0 {
			// A pure addition goes at the end of the file, whatever its
			// context header says.
			reps = append(reps, replacement{start: len(lines), lines: c.New})
			continue
		}
		pattern, repl := c.Old, c.New
		start, ok := seekSequence(lines, pattern, at, c.EOF, exact)
		if !ok && pattern[len(pattern)-1] == "" {
			// A final empty old line stands for the file's last newline.
			pattern = pattern[:len(pattern)-1]
			if len(repl) > 0 && repl[len(repl)-1] == "" {
				repl = repl[:len(repl)-1]
			}
			start, ok = seekSequence(lines, pattern, at, c.EOF, exact)
		}
		if !ok {
			return nil, &PatchError{Msg: "failed to find expected lines:\n" + strings.Join(c.Old, "\n")}
		}
		// Context lines keep the file's line: only the runs between them
		// are replaced.
		os, ns := 0, 0
		for _, cx := range c.ctx {
			if cx[0] >= len(pattern) || cx[1] >= len(repl) {
				break
			}
			if os != cx[0] || ns != cx[1] {
				reps = append(reps, replacement{start: start + os, n: cx[0] - os, lines: repl[ns:cx[1]]})
			}
			os, ns = cx[0]+1, cx[1]+1
		}
		if os != len(pattern) || ns != len(repl) {
			reps = append(reps, replacement{start: start + os, n: len(pattern) - os, lines: repl[ns:]})
		}
		at = start + len(pattern)
	}
	slices.SortStableFunc(reps, func(a, b replacement) int { return a.start - b.start })
	for i := 1; i < len(reps); i++ {
		if reps[i].start < reps[i-1].start+reps[i-1].n {
			// Codex's own arithmetic would misbehave here; we do not guess.
			return nil, &PatchError{Msg: "chunks overlap"}
		}
	}
	return reps, nil
}

// seekSequence finds pattern in lines at or after start, in the passes
// Codex makes (see ApplyUpdate); with exact, in the first pass only.
// With eof the pattern must end the file: only the last position is
// tried, and only when it is at or after start.
func seekSequence(lines, pattern []string, start int, eof, exact bool) (int, bool) {
	if len(pattern) == 0 {
		return start, true
	}
	if len(pattern) > len(lines) {
		return 0, false
	}
	last := len(lines) - len(pattern)
	if eof {
		start = max(start, last)
	}
	if start > last {
		return 0, false
	}
	passes := []func(string) string{
		nil,
		func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
		func(s string) string { return strings.TrimFunc(s, unicode.IsSpace) },
		normalise,
	}
	if exact {
		passes = passes[:1]
	}
	for _, norm := range passes {
		ls, ps := lines, pattern
		if norm != nil {
			// Normalise each line once, not once per comparison.
			ls = make([]string, len(lines))
			for i := start; i < len(lines); i++ {
				ls[i] = norm(lines[i])
			}
			ps = make([]string, len(pattern))
			for i, p := range pattern {
				ps[i] = norm(p)
			}
		}
		for i := start; i <= last; i++ {
			if slices.Equal(ls[i:i+len(ps)], ps) {
				return i, true
			}
		}
	}
	return 0, false
}

// normalise is Codex's last, most lenient pass: trimmed, with typographic
// dashes, quotes and spaces read as their ASCII forms.
func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			return '-'
		case '\u2018', '\u2019', '\u201A', '\u201B':
			return '\''
		case '\u201C', '\u201D', '\u201E', '\u201F':
			return '"'
		case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
			return ' '
		}
		return r
	}, strings.TrimFunc(s, unicode.IsSpace))
}

// FileResult is a file's state after a patch.
type FileResult struct {
	Path    string // absolute
	Deleted bool   // removed (deleted, or moved away)
	Content []byte // the content written, when not Deleted
	Op      Op     // the last hunk that touched it (OpMove: its destination was written)
}

// ErrNoHunks is Codex's "No files were modified.": a patch without hunks.
var ErrNoHunks = errors.New("apply_patch: no files were modified")

// Apply applies the whole patch, hunk after hunk as Codex does, to the
// files read returns (an error wrapping fs.ErrNotExist for a missing
// file), and returns the final state of every file it touched, in the
// order first touched. Relative paths are resolved against cwd. It fails
// where Codex fails, with the first hunk that does not apply; Codex leaves
// the hunks before that one applied on disk, Apply returns nothing of
// them. A recorder that replays a patch on archived content must store
// what Apply returns only when the call succeeded in Codex too.
func (p *Patch) Apply(cwd string, read func(abs string) ([]byte, error)) ([]FileResult, error) {
	return p.apply(cwd, read, false)
}

// ApplyExact is Apply, but fails (with a *PatchError) where Codex would
// have needed a lenient pass (white space, typographic characters) to
// find a chunk or its context line: a replay on an archived version is
// then not trusted to be what Codex wrote. When it succeeds, its result
// is Apply's.
func (p *Patch) ApplyExact(cwd string, read func(abs string) ([]byte, error)) ([]FileResult, error) {
	return p.apply(cwd, read, true)
}

func (p *Patch) apply(cwd string, read func(abs string) ([]byte, error), exact bool) ([]FileResult, error) {
	if len(p.Hunks) == 0 {
		return nil, ErrNoHunks
	}
	state := map[string]*FileResult{}
	var order []string
	get := func(path string) ([]byte, bool, error) {
		if r, ok := state[path]; ok {
			return r.Content, !r.Deleted, nil
		}
		b, err := read(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("apply_patch read %s: %w", path, err)
		}
		return b, true, nil
	}
	set := func(path string, r FileResult) {
		r.Path = path
		if _, ok := state[path]; !ok {
			order = append(order, path)
		}
		state[path] = &r
	}
	for i, h := range p.Hunks {
		path := ResolvePath(cwd, h.Path)
		if path == "" {
			return nil, &PatchError{Line: h.Line, Msg: fmt.Sprintf("cannot resolve %q against %q", h.Path, cwd)}
		}
		switch h.Kind {
		case AddFile:
			set(path, FileResult{Content: []byte(h.Contents), Op: OpAdd})
		case DeleteFile:
			_, ok, err := get(path)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, &PatchError{Path: path, Msg: "failed to delete file: it does not exist"}
			}
			set(path, FileResult{Deleted: true, Op: OpDelete})
		case UpdateFile:
			old, ok, err := get(path)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, &PatchError{Path: path, Msg: "failed to read file to update: it does not exist"}
			}
			nw, err := applyUpdate(old, h.Chunks, exact)
			if err != nil {
				var pe *PatchError
				if errors.As(err, &pe) {
					pe.Path, pe.Line = path, h.Line
				}
				return nil, err
			}
			if h.MoveTo == "" {
				set(path, FileResult{Content: nw, Op: OpUpdate})
				break
			}
			to := ResolvePath(cwd, h.MoveTo)
			if to == "" {
				return nil, &PatchError{Line: p.Hunks[i].Line, Msg: fmt.Sprintf("cannot resolve %q against %q", h.MoveTo, cwd)}
			}
			// Codex writes the destination, then removes the source: a
			// move onto itself removes the file.
			set(to, FileResult{Content: nw, Op: OpMove})
			set(path, FileResult{Deleted: true, Op: OpMove})
		}
	}
	out := make([]FileResult, 0, len(order))
	for _, path := range order {
		out = append(out, *state[path])
	}
	return out, nil
}
