package codex

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// HunkKind is what a hunk of a patch does to its file.
type HunkKind uint8

const (
	// AddFile writes a file with the hunk's Contents, whether or not one
	// is there (Codex overwrites an existing file without a word).
	AddFile HunkKind = iota + 1
	// DeleteFile removes a file, which must exist.
	DeleteFile
	// UpdateFile rewrites a file, which must exist, by its chunks; with
	// MoveTo the result is written there and the file removed.
	UpdateFile
)

func (k HunkKind) String() string {
	switch k {
	case AddFile:
		return "add"
	case DeleteFile:
		return "delete"
	case UpdateFile:
		return "update"
	}
	return "?"
}

// Patch is an apply_patch input, parsed.
type Patch struct {
	Hunks []Hunk
}

// Hunk is one "*** Add File:", "*** Delete File:" or "*** Update File:"
// section of a patch.
type Hunk struct {
	Kind HunkKind
	// Path is the file as the patch names it: relative paths are resolved
	// against the session's working directory (see Patch.Changes).
	Path string
	// MoveTo is the "*** Move to:" destination of an UpdateFile, as
	// written; "" when the update does not move the file.
	MoveTo string
	// Contents is an AddFile's file content: each "+" line and a '\n'.
	Contents string
	// Chunks are an UpdateFile's changes, in file order.
	Chunks []Chunk
	// Line is the hunk header's line number in the patch (1-based).
	Line int
}

// Chunk is one change of an UpdateFile: Old lines (context and removed)
// to find in the file, replaced by New lines (context and added).
type Chunk struct {
	// Context is the "@@ <context>" header: a line to find before Old, at
	// or after the end of the previous chunk.
	Context    string
	HasContext bool
	Old, New   []string
	// EOF is "*** End of File": Old must be the file's last lines.
	EOF bool
	// ctx pairs the index in Old and in New of each context line (' ' or
	// empty), whose file line Codex keeps as it is.
	ctx [][2]int
}

// PatchError is a patch that does not parse, or a hunk that does not
// apply, with the reason Codex would give.
type PatchError struct {
	Line int    // the patch line at fault (1-based); 0 when not about one line
	Path string // the file a hunk failed on, when applying
	Msg  string
}

func (e *PatchError) Error() string {
	switch {
	case e.Path != "":
		return "apply_patch " + e.Path + ": " + e.Msg
	case e.Line > 0:
		return fmt.Sprintf("apply_patch line %d: %s", e.Line, e.Msg)
	}
	return "apply_patch: " + e.Msg
}

const (
	beginPatch   = "*** Begin Patch"
	endPatch     = "*** End Patch"
	addMarker    = "*** Add File: "
	deleteMarker = "*** Delete File: "
	updateMarker = "*** Update File: "
	moveMarker   = "*** Move to: "
	eofMarker    = "*** End of File"
)

// MaxPatch bounds the patch text ParsePatch reads (a model can write any
// size; the guard and recorder must stay bounded).
const MaxPatch = 64 << 20

// ParsePatch parses apply_patch input exactly as Codex 0.169.0 does
// (checked against its apply_patch binary, see doc.go): the text is
// trimmed, split into lines at "\n" with one trailing "\r" dropped per
// line, and must run from "*** Begin Patch" to "*** End Patch" (both
// compared trimmed), or be that wrapped in a heredoc (<<EOF, <<'EOF' or
// <<"EOF" ... EOF). A patch with no hunks parses; applying it fails.
func ParsePatch(text string) (*Patch, error) {
	if len(text) > MaxPatch {
		return nil, &PatchError{Msg: fmt.Sprintf("patch larger than %d bytes", MaxPatch)}
	}
	if !utf8.ValidString(text) {
		return nil, &PatchError{Msg: "patch is not valid UTF-8"}
	}
	lines := splitPatchLines(strings.TrimFunc(text, unicode.IsSpace))
	body, err := patchBody(lines)
	if err != nil {
		if len(lines) >= 4 && isHeredocStart(lines[0]) && strings.HasSuffix(lines[len(lines)-1], "EOF") {
			body, err = patchBody(lines[1 : len(lines)-1])
		}
		if err != nil {
			return nil, err
		}
	}
	p := &Patch{}
	line := 2
	for len(body) > 0 {
		h, n, err := parseHunk(body, line)
		if err != nil {
			return nil, err
		}
		p.Hunks = append(p.Hunks, h)
		body = body[n:]
		line += n
	}
	return p, nil
}

// splitPatchLines splits as Rust's str::lines does: at "\n", dropping one
// "\r" before it, with no empty last line after a final "\n".
func splitPatchLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines[:len(lines)-1] {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	if strings.HasSuffix(s, "\n") {
		last := len(lines) - 1
		lines[last] = strings.TrimSuffix(lines[last], "\r")
	}
	return lines
}

func isHeredocStart(l string) bool {
	return l == "<<EOF" || l == "<<'EOF'" || l == `<<"EOF"`
}

// patchBody checks the begin and end markers and returns the lines
// between them.
func patchBody(lines []string) ([]string, error) {
	if len(lines) == 0 || strings.TrimFunc(lines[0], unicode.IsSpace) != beginPatch {
		return nil, &PatchError{Line: 1, Msg: "the first line of the patch must be '" + beginPatch + "'"}
	}
	if len(lines) < 2 || strings.TrimFunc(lines[len(lines)-1], unicode.IsSpace) != endPatch {
		return nil, &PatchError{Line: len(lines), Msg: "the last line of the patch must be '" + endPatch + "'"}
	}
	return lines[1 : len(lines)-1], nil
}

// parseHunk parses the hunk at the start of lines (lines[0] is patch line
// number line) and returns it with the number of lines it took.
func parseHunk(lines []string, line int) (Hunk, int, error) {
	first := strings.TrimFunc(lines[0], unicode.IsSpace)
	if path, ok := strings.CutPrefix(first, addMarker); ok {
		h := Hunk{Kind: AddFile, Path: path, Line: line}
		var b strings.Builder
		n := 1
		for _, l := range lines[1:] {
			rest, ok := strings.CutPrefix(l, "+")
			if !ok {
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
			n++
		}
		h.Contents = b.String()
		return h, n, nil
	}
	if path, ok := strings.CutPrefix(first, deleteMarker); ok {
		return Hunk{Kind: DeleteFile, Path: path, Line: line}, 1, nil
	}
	path, ok := strings.CutPrefix(first, updateMarker)
	if !ok {
		return Hunk{}, 0, &PatchError{Line: line, Msg: fmt.Sprintf("'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", first)}
	}
	h := Hunk{Kind: UpdateFile, Path: path, Line: line}
	rest := lines[1:]
	n := 1
	if len(rest) > 0 {
		// Codex trims the end of the move line, not its start: an
		// indented "*** Move to:" is a context line.
		if to, ok := strings.CutPrefix(strings.TrimRightFunc(rest[0], unicode.IsSpace), moveMarker); ok {
			h.MoveTo = to
			rest = rest[1:]
			n++
		}
	}
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "*") {
		c, cn, err := parseChunk(rest, line+n, len(h.Chunks) == 0)
		if err != nil {
			return Hunk{}, 0, err
		}
		h.Chunks = append(h.Chunks, c)
		rest = rest[cn:]
		n += cn
	}
	if len(h.Chunks) == 0 {
		return Hunk{}, 0, &PatchError{Line: line, Msg: fmt.Sprintf("update file hunk for path '%s' is empty", path)}
	}
	return h, n, nil
}

// parseChunk parses the chunk at the start of lines (lines[0] is patch
// line number line); the first chunk of a file may omit its "@@".
func parseChunk(lines []string, line int, first bool) (Chunk, int, error) {
	var c Chunk
	start := 0
	head := strings.TrimRightFunc(lines[0], unicode.IsSpace)
	switch {
	case head == "@@":
		start = 1
	case strings.HasPrefix(head, "@@ "):
		c.Context, c.HasContext = head[len("@@ "):], true
		start = 1
	case !first:
		return c, 0, &PatchError{Line: line, Msg: fmt.Sprintf("expected update hunk to start with a @@ context marker, got: '%s'", lines[0])}
	}
	if start >= len(lines) {
		return c, 0, &PatchError{Line: line + 1, Msg: "update hunk does not contain any lines"}
	}
	n := 0
	for _, l := range lines[start:] {
		if l == eofMarker {
			if n == 0 {
				return c, 0, &PatchError{Line: line + 1, Msg: "update hunk does not contain any lines"}
			}
			c.EOF = true
			n++
			break
		}
		if l == "" {
			c.ctx = append(c.ctx, [2]int{len(c.Old), len(c.New)})
			c.Old = append(c.Old, "")
			c.New = append(c.New, "")
			n++
			continue
		}
		switch l[0] {
		case ' ':
			c.ctx = append(c.ctx, [2]int{len(c.Old), len(c.New)})
			c.Old = append(c.Old, l[1:])
			c.New = append(c.New, l[1:])
		case '+':
			c.New = append(c.New, l[1:])
		case '-':
			c.Old = append(c.Old, l[1:])
		default:
			if n == 0 {
				return c, 0, &PatchError{Line: line + 1, Msg: fmt.Sprintf("unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", l)}
			}
			return c, n + start, nil
		}
		n++
	}
	return c, n + start, nil
}

// Op is what a patch does to one file, for the guard and the recorder.
type Op uint8

const (
	OpAdd    Op = iota + 1 // Path is written (created, or overwritten when it exists)
	OpUpdate               // Path, which must exist, is rewritten
	OpDelete               // Path, which must exist, is removed
	OpMove                 // Path, which must exist, is rewritten to To and removed
)

func (o Op) String() string {
	switch o {
	case OpAdd:
		return "add"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	case OpMove:
		return "move"
	}
	return "?"
}

// Change is one hunk's effect, with absolute paths.
type Change struct {
	Op   Op
	Path string // the file added, updated, deleted, or moved away
	To   string // OpMove: the destination (overwritten when it exists)
}

// ResolvePath makes a patch path absolute against cwd, as Codex does
// (an absolute path stays as it is), and cleans it. It returns "" for an
// empty path or a relative one without an absolute cwd.
func ResolvePath(cwd, p string) string {
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if !filepath.IsAbs(cwd) {
		return ""
	}
	return filepath.Join(cwd, p)
}

// Changes lists what each hunk does, in patch order, with paths resolved
// against cwd (a path that cannot be resolved is left as written).
func (p *Patch) Changes(cwd string) []Change {
	out := make([]Change, 0, len(p.Hunks))
	abs := func(s string) string {
		if r := ResolvePath(cwd, s); r != "" {
			return r
		}
		return s
	}
	for _, h := range p.Hunks {
		c := Change{Path: abs(h.Path)}
		switch {
		case h.Kind == AddFile:
			c.Op = OpAdd
		case h.Kind == DeleteFile:
			c.Op = OpDelete
		case h.MoveTo != "":
			c.Op, c.To = OpMove, abs(h.MoveTo)
		default:
			c.Op = OpUpdate
		}
		out = append(out, c)
	}
	return out
}

// NeedsSeen lists, once each and in patch order, the files whose current
// content a patch replaces or removes, which the guard requires the
// context to have seen: every file an update, delete or move reads, and
// an add's file or a move's destination when exists says it is there
// (Codex overwrites both without a word). A file an earlier hunk of the
// same patch wrote is not listed: the patch itself made its content.
func (p *Patch) NeedsSeen(cwd string, exists func(abs string) bool) []string {
	var out []string
	listed := map[string]bool{}
	made := map[string]bool{}
	need := func(f string) {
		if !made[f] && !listed[f] {
			listed[f] = true
			out = append(out, f)
		}
	}
	for _, c := range p.Changes(cwd) {
		switch c.Op {
		case OpAdd:
			if exists(c.Path) {
				need(c.Path)
			}
			made[c.Path] = true
		case OpUpdate:
			need(c.Path)
			made[c.Path] = true
		case OpDelete:
			need(c.Path)
			delete(made, c.Path)
		case OpMove:
			need(c.Path)
			if exists(c.To) {
				need(c.To)
			}
			delete(made, c.Path)
			made[c.To] = true
		}
	}
	return out
}

// Final lists, each once and in the order first touched, the files a
// patch leaves written and those it leaves removed, with paths resolved
// against cwd: after Codex applied a patch, a recorder reads the written
// ones from disk and records the removed ones as gone. A move onto its
// own path removes the file, as in Codex (it writes, then removes).
func (p *Patch) Final(cwd string) (written, removed []string) {
	gone := map[string]bool{}
	var order []string
	touch := func(f string, g bool) {
		if _, ok := gone[f]; !ok {
			order = append(order, f)
		}
		gone[f] = g
	}
	for _, c := range p.Changes(cwd) {
		switch c.Op {
		case OpAdd, OpUpdate:
			touch(c.Path, false)
		case OpDelete:
			touch(c.Path, true)
		case OpMove:
			touch(c.To, false)
			touch(c.Path, true)
		}
	}
	for _, f := range order {
		if gone[f] {
			removed = append(removed, f)
		} else {
			written = append(written, f)
		}
	}
	return written, removed
}
