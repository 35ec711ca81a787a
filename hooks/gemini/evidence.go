package gemini

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/internal/jsonscan"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Seen is a file version a tool result put into the context: the text a
// read showed, the content a write_file wrote, the file a replace left.
type Seen struct {
	Path string      // absolute
	Tool string      // read_file, read_many_files, write_file, replace
	Op   gitstore.Op // read, write, edit
	// View is "full" or "lines:A-B" (1-based, the file split at '\n')
	// when HasContent.
	View       string
	Content    []byte
	HasContent bool
	// Why says why a result that names the file has no content: a read
	// whose text is not the file's (binary, shortened lines, a split that
	// is not exact), a replace whose result does not carry the new
	// content. "" when HasContent.
	Why string
}

// The limits of read_file (processSingleFileContent): lines shown when no
// range is asked for, and the length past which a line is cut.
const (
	readDefaultLines = 2000
	shortenedSuffix  = "... [truncated]"
)

// Text the CLI adds to a read result, and the forms it gives to reads
// that are not the file's text.
const (
	truncatedHead = "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines "
	jitPrefix     = "\n\n--- Newly Discovered Project Context ---\n"
	jitSuffix     = "\n--- End Project Context ---"
	hookOpen      = "\n\n<hook_context>"
	hookClose     = "</hook_context>"
	manyTerm      = "\n--- End of content ---"
	manyTruncated = "[WARNING: This file was truncated. To view the full content, use the 'read_file' tool on this specific file.]\n\n"
)

// notFileText are prefixes of read outputs that are not a file's text:
// binary and oversized files, media handed over as inline data, outputs
// the CLI shortened or masked in the history afterwards.
var notFileText = []string{
	"Cannot display content of binary file: ",
	"Cannot display content of SVG file larger than 1MB: ",
	"Binary content provided (",
	"Binary content (",
	"Output too large. Showing first ",
	"<tool_output_masked>",
	"Could not read file",
	"File size exceeds the ",
}

func truncatedHeader(a, b, n int64) string {
	return truncatedHead + strconv.FormatInt(a, 10) + "-" + strconv.FormatInt(b, 10) + " of " + strconv.FormatInt(n, 10) +
		" total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: " +
		strconv.FormatInt(b+1, 10) + ".\n\n--- FILE CONTENT (truncated) ---\n"
}

// parseTruncated splits a read_file output that starts with the CLI's
// truncation notice into the range it states and the lines shown. ok is
// false when the output does not start with the notice, word for word.
func parseTruncated(out string) (a, b, n int64, body string, ok bool) {
	if !strings.HasPrefix(out, truncatedHead) {
		return 0, 0, 0, "", false
	}
	rest := out[len(truncatedHead):]
	num := func() (int64, bool) {
		i := 0
		for i < len(rest) && i < 19 && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, false
		}
		v, err := strconv.ParseInt(rest[:i], 10, 64)
		rest = rest[i:]
		return v, err == nil
	}
	var ok1, ok2, ok3 bool
	a, ok1 = num()
	if ok1 && strings.HasPrefix(rest, "-") {
		rest = rest[1:]
		b, ok2 = num()
	}
	if ok2 && strings.HasPrefix(rest, " of ") {
		rest = rest[4:]
		n, ok3 = num()
	}
	if !ok3 || b == 1<<63-1 {
		return 0, 0, 0, "", false
	}
	h := truncatedHeader(a, b, n)
	if !strings.HasPrefix(out, h) {
		return 0, 0, 0, "", false
	}
	return a, b, n, out[len(h):], true
}

// stripAdded removes what the CLI appends to a read tool's text after the
// tool ran: a hook's additional context (AfterTool; in the chat file,
// never in the AfterTool payload) and the project context discovered for
// the file's directory (JIT context: in both). The hook context's text
// cannot hold '<' or '>' (the CLI escapes them), which makes its suffix
// unambiguous; a file that itself ends like one of them is shortened
// wrongly, and its content then differs from the disk's.
func stripAdded(s string) string {
	if strings.HasSuffix(s, hookClose) {
		if i := strings.LastIndex(s, hookOpen); i >= 0 && !strings.ContainsAny(s[i+len(hookOpen):len(s)-len(hookClose)], "<>") {
			s = s[:i]
		}
	}
	if strings.HasSuffix(s, jitSuffix) {
		if i := strings.LastIndex(s, jitPrefix); i >= 0 {
			s = s[:i]
		}
	}
	return s
}

func hasPrefixAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// readFileArgs are read_file's arguments: file_path, and start_line and
// end_line (1-based, inclusive) when a range is asked for. Older CLIs
// took offset and limit instead (legacy).
type readFileArgs struct {
	filePath           string
	startLine, endLine int64
	legacy             bool
}

func parseReadFileArgs(raw []byte) (readFileArgs, error) {
	var a readFileArgs
	var m members
	f, ok := fields(raw, "file_path", "start_line", "end_line", "offset", "limit")
	if !ok {
		return a, &FieldError{Field: "tool_input", Got: jsonKind(raw), Want: "an object"}
	}
	a.filePath = m.str("tool_input.file_path", f["file_path"], true)
	a.startLine, _ = m.int("tool_input.start_line", f["start_line"])
	a.endLine, _ = m.int("tool_input.end_line", f["end_line"])
	a.legacy = !isNull(f["offset"]) || !isNull(f["limit"])
	return a, m.err
}

// readSeen derives what a successful read_file showed: out is the text the
// model received, display the result's returnDisplay (nil when unknown:
// a result the chat file holds only in the model's format).
//
// The CLI's read_file shows the text of a file without line numbers,
// lines split at \r?\n and joined with \n. It shows the whole file as it
// is (returnDisplay ""), or a range or a file with lines cut at 2000
// characters behind a notice ("Showing lines A-B of N total lines";
// returnDisplay "Read lines A-B of N from P", with " (some lines were
// shortened)" when lines were cut). A whole file is "full"; a range is
// "lines:A-B" only when the notice, the arguments, the display and the
// number of lines shown all agree and no line was cut; anything else
// names the file without content. Binary files, images and PDFs have no
// text.
func readSeen(path string, args readFileArgs, out string, display []byte) Seen {
	s := Seen{Path: path, Tool: ToolReadFile, Op: gitstore.OpRead}
	out = stripAdded(out)
	a, b, n, body, truncated := parseTruncated(out)
	if display != nil {
		ds, isString := jsonscan.String(display)
		switch {
		case !isString:
			s.Why = "unknown result display"
			return s
		case ds == "":
			if truncated {
				s.Why = "truncation notice without a display saying so"
				return s
			}
		case strings.HasPrefix(ds, "Read SVG as text: "):
			if truncated {
				s.Why = "truncation notice in an SVG read"
				return s
			}
			args.startLine, args.endLine = 0, 0 // the CLI ignores the range for SVG
		case strings.HasSuffix(ds, "(some lines were shortened)"):
			s.Why = "lines were shortened"
			return s
		case strings.HasPrefix(ds, "Read lines "):
			if !truncated || !strings.HasPrefix(ds, "Read lines "+strconv.FormatInt(a, 10)+"-"+strconv.FormatInt(b, 10)+" of "+strconv.FormatInt(n, 10)+" from ") {
				s.Why = "range display and notice disagree"
				return s
			}
		default:
			s.Why = "not the file's text: " + firstLine(ds)
			return s
		}
	} else if !truncated && hasPrefixAny(out, notFileText) {
		s.Why = "not the file's text: " + firstLine(out)
		return s
	}
	if !truncated {
		if args.startLine > 1 {
			// A range that starts past line 1 always comes with the notice.
			s.Why = "a range from line " + strconv.FormatInt(args.startLine, 10) + " without the truncation notice"
			return s
		}
		s.Content, s.HasContent, s.View = []byte(out), true, "full"
		return s
	}
	// The range the CLI shows for these arguments (processSingleFileContent).
	sliceStart := max(args.startLine-1, 0)
	sliceEnd := min(sliceStart+readDefaultLines, n)
	if args.endLine > 0 {
		sliceEnd = min(args.endLine, n)
	}
	switch {
	case args.legacy:
		s.Why = "a range given as offset/limit (older CLI)"
		return s
	case args.startLine < 0 || args.endLine < 0:
		s.Why = "a negative line number"
		return s
	case a < 1 || b < a || b > n:
		s.Why = "an empty or impossible range"
		return s
	case a == 1 && b == n:
		s.Why = "lines were shortened" // truncated, yet every line shown
		return s
	case a != min(sliceStart, n)+1 || b != sliceEnd:
		s.Why = "the range shown is not the range asked for"
		return s
	}
	lines := strings.Split(body, "\n")
	if int64(len(lines)) != b-a+1 {
		s.Why = "the notice's range does not match the lines shown"
		return s
	}
	for _, l := range lines {
		if strings.HasSuffix(l, shortenedSuffix) {
			s.Why = "lines were shortened"
			return s
		}
	}
	s.Content, s.HasContent = []byte(body), true
	s.View = "lines:" + strconv.FormatInt(a, 10) + "-" + strconv.FormatInt(b, 10)
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// manyDisplay is what readManySeen reads of a read_many_files display:
// the files it processed (relative to targetDir, in the order their
// parts were emitted) and that directory.
type manyDisplay struct {
	files     []string
	targetDir string
}

func parseManyDisplay(display []byte) (manyDisplay, bool) {
	var d manyDisplay
	if len(display) == 0 || display[0] != '{' {
		return d, false
	}
	f, ok := fields(display, "files", "targetDir")
	if !ok {
		return d, false
	}
	d.targetDir, ok = jsonscan.String(f["targetDir"])
	if !ok || !filepath.IsAbs(d.targetDir) {
		return d, false
	}
	good := true
	if jsonscan.Elems(f["files"], func(v []byte) bool {
		s, ok := jsonscan.String(v)
		if !ok || s == "" {
			good = false
			return false
		}
		d.files = append(d.files, s)
		return true
	}) != jsonscan.OK {
		return d, false
	}
	return d, good
}

// readManySeen splits a read_many_files output into the files it showed.
// The CLI emits, per processed text file in display order, the part
// "--- <absolute path> ---\n\n<text>\n\n" (the text behind a warning when
// it was truncated to 2000 lines), joins the parts with "\n", and ends
// with "\n--- End of content ---" (after a project context part, when
// one was discovered). Images and PDFs processed have no text part.
//
// The split is exact or refused: every header of a processed file must
// occur once, at a part boundary, in display order, and nothing may be
// left over. A file's text that itself holds another processed file's
// header at a part boundary makes the split ambiguous, and nothing of the
// result is evidence. Without the display (the file list) nothing is.
func readManySeen(out string, display []byte) ([]Seen, string) {
	d, ok := parseManyDisplay(display)
	if !ok {
		return nil, "no file list in the result display"
	}
	s := out
	if strings.HasSuffix(s, hookClose) {
		if i := strings.LastIndex(s, hookOpen); i >= 0 && !strings.ContainsAny(s[i+len(hookOpen):len(s)-len(hookClose)], "<>") {
			s = strings.TrimSuffix(s[:i], "\n") // the context is one more part
		}
	}
	if !strings.HasSuffix(s, "\n"+manyTerm) {
		return nil, "no end-of-content marker"
	}
	s = s[:len(s)-len(manyTerm)-1]
	if strings.HasSuffix(s, jitSuffix) {
		i := strings.LastIndex(s, jitPrefix)
		if i < 1 || s[i-1] != '\n' {
			return nil, "project context part not at a part boundary"
		}
		s = s[:i-1]
	}
	if strings.HasPrefix(s, "Binary content (") {
		// Audio and video: a notice part in front of the files' parts.
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return nil, "no file parts"
		}
		s = s[i+1:]
	}
	type at struct {
		file string
		pos  int
	}
	var found []at
	for _, rel := range d.files {
		abs := filepath.Join(d.targetDir, filepath.FromSlash(rel))
		h := "--- " + abs + " ---\n\n"
		n := 0
		for off := 0; ; {
			i := strings.Index(s[off:], h)
			if i < 0 {
				break
			}
			p := off + i
			if p == 0 || (p >= 3 && s[p-3:p] == "\n\n\n") {
				found = append(found, at{abs, p})
				n++
			}
			off = p + 1
		}
		if n > 1 {
			return nil, "the header of " + abs + " occurs more than once"
		}
	}
	if len(found) == 0 {
		return nil, "no file parts"
	}
	for i := 1; i < len(found); i++ {
		if found[i].pos <= found[i-1].pos {
			return nil, "file parts out of order"
		}
	}
	if found[0].pos != 0 {
		return nil, "text before the first file part"
	}
	var seen []Seen
	for i, f := range found {
		end := len(s)
		if i+1 < len(found) {
			end = found[i+1].pos - 1 // the "\n" joining the parts
		}
		part := s[f.pos:end]
		body, ok := strings.CutPrefix(part, "--- "+f.file+" ---\n\n")
		if !ok || !strings.HasSuffix(body, "\n\n") {
			return nil, "a file part without its framing"
		}
		body = body[:len(body)-2]
		sn := Seen{Path: f.file, Tool: ToolReadManyFiles, Op: gitstore.OpRead}
		switch {
		case strings.HasPrefix(body, manyTruncated):
			body = body[len(manyTruncated):]
			lines := strings.Split(body, "\n")
			shortened := false
			for _, l := range lines {
				if strings.HasSuffix(l, shortenedSuffix) {
					shortened = true
					break
				}
			}
			if len(lines) == readDefaultLines && !shortened {
				sn.Content, sn.HasContent, sn.View = []byte(body), true, "lines:1-"+strconv.Itoa(readDefaultLines)
			} else {
				sn.Why = "truncated"
			}
		case hasPrefixAny(body, notFileText):
			sn.Why = "not the file's text: " + firstLine(body)
		default:
			sn.Content, sn.HasContent, sn.View = []byte(body), true, "full"
		}
		seen = append(seen, sn)
	}
	return seen, ""
}

// editSeen is what a successful write_file or replace put into the
// context. write_file: the content the model wrote (the CLI may have
// corrected it, and converts to CRLF for a CRLF file: the disk then
// differs, and the guard sees drift). replace: the whole new file, from
// the result's returnDisplay.newContent when it carries it; the model
// saw only a snippet of it, but it had the file before (the guard saw to
// that) and made the edit. Without that member a replace is evidence
// without content.
func editSeen(tool, path string, args, display []byte) Seen {
	s := Seen{Path: path, Tool: tool, Op: gitstore.OpEdit, View: "full"}
	switch tool {
	case ToolWriteFile:
		s.Op = gitstore.OpWrite
		f, _ := fields(args, "content")
		if c, ok := jsonscan.Unquote(f["content"]); ok {
			s.Content, s.HasContent = c, true
		} else {
			s.Why = "no content argument"
		}
	case ToolReplace:
		if len(display) > 0 && display[0] == '{' {
			f, _ := fields(display, "newContent")
			if c, ok := jsonscan.Unquote(f["newContent"]); ok {
				s.Content, s.HasContent = c, true
			}
		}
		if !s.HasContent {
			s.Why = "the result does not carry the new content"
		}
	}
	if !s.HasContent {
		s.View = ""
	}
	return s
}

// argPath is the file_path argument of a call.
func argPath(args []byte) (string, bool) {
	f, _ := fields(args, "file_path")
	return jsonscan.String(f["file_path"])
}

// resolvePath makes a tool's file_path absolute the way the CLI's file
// tools do (resolveDefensiveToolPath, then path.resolve against the
// target directory, which is the cwd hooks are given): NUL bytes are
// dropped, and a path starting with "@" that does not exist as written is
// read without the "@" (the model copied an @-mention). exists tells what
// is on disk; without it (a chat read later, when the disk says nothing
// of then) a path starting with "@" is ambiguous and not resolved. ok is
// false when the path cannot be made absolute.
func resolvePath(p, cwd string, exists func(string) bool) (string, bool) {
	p = strings.ReplaceAll(p, "\x00", "")
	if p == "" {
		return "", false
	}
	abs := func(q string) (string, bool) {
		if filepath.IsAbs(q) {
			return filepath.Clean(q), true
		}
		if cwd == "" || !filepath.IsAbs(cwd) {
			return "", false
		}
		return filepath.Join(cwd, q), true
	}
	if !strings.HasPrefix(p, "@") || len(p) == 1 {
		return abs(p)
	}
	if exists == nil {
		return "", false
	}
	if lit, ok := abs(p); ok && exists(lit) {
		return lit, true
	}
	stripped := strings.TrimLeft(p[1:], `/\`)
	if strings.HasPrefix(p, "@/") || strings.HasPrefix(p, `@\`) {
		if stripped == "" {
			return abs(p)
		}
		return abs(stripped)
	}
	first := stripped
	if i := strings.IndexAny(first, `/\`); i >= 0 {
		first = first[:i]
	}
	if first != "" {
		if lit, ok := abs("@" + first); ok && exists(lit) {
			return abs(p)
		}
		return abs(stripped)
	}
	return abs(p)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// digest is a short stable digest of strings (16 bytes of sha256, hex).
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// contentText is the text a model receives for an llmContent (AfterTool)
// or a function response's content: a string as it is; parts (strings or
// {"text"} objects) joined by "\n", as the CLI joins them into the
// function response. ok is false when it holds no text part.
func contentText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		return jsonscan.String(raw)
	case '{':
		t, ok := jsonscan.String(jsonscan.Field(raw, "text"))
		return t, ok
	case '[':
		var parts []string
		jsonscan.Elems(raw, func(v []byte) bool {
			if len(v) > 0 && v[0] == '"' {
				if s, ok := jsonscan.String(v); ok {
					parts = append(parts, s)
				}
			} else if t, ok := jsonscan.String(jsonscan.Field(v, "text")); ok {
				parts = append(parts, t)
			}
			return true
		})
		return strings.Join(parts, "\n"), len(parts) > 0
	}
	return "", false
}
