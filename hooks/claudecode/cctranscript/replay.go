package cctranscript

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/hooks/transcript"
	"github.com/git-lossless/git-lossless/internal/jsonscan"

	"github.com/git-lossless/git-lossless/gitstore"
)

type readFile struct {
	filePath                        string
	content                         []byte
	hasContent                      bool
	startLine, numLines, totalLines int64
	hasStart, hasNum, hasTotal      bool
}

func readFileOf(file []byte) readFile {
	var rf readFile
	jsonscan.Members(file, func(k, v []byte) bool {
		switch string(k) {
		case "filePath":
			rf.filePath, _ = jsonscan.String(v)
		case "content":
			rf.content, rf.hasContent = jsonscan.Unquote(v)
		case "startLine":
			rf.startLine, rf.hasStart = jsonscan.Int(v)
		case "numLines":
			rf.numLines, rf.hasNum = jsonscan.Int(v)
		case "totalLines":
			rf.totalLines, rf.hasTotal = jsonscan.Int(v)
		}
		return true
	})
	return rf
}

// view says which part of the file the result showed: "full" when it
// starts at line 1 and shows every line, "lines:A-B" otherwise. ok is
// false when it showed nothing (an offset past the end).
func (rf *readFile) view(offset, limit *int64) (string, bool) {
	start := int64(1)
	if rf.hasStart {
		start = max(rf.startLine, 1)
	} else if offset != nil {
		start = max(*offset, 1)
	}
	num := rf.numLines
	if !rf.hasNum {
		num = int64(bytes.Count(rf.content, []byte("\n"))) + 1
	}
	if !rf.hasTotal {
		// Older results: no totals. A read without offset or limit that
		// shows fewer lines than the default limit is the whole file.
		if start == 1 && limit == nil && num < readDefaultLimit {
			return "full", true
		}
		return "lines:" + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(start+max(num, 1)-1, 10), true
	}
	if rf.totalLines == 0 && num == 0 {
		return "full", true // an empty file
	}
	if num <= 0 {
		return "", false
	}
	if start == 1 && num >= rf.totalLines {
		return "full", true
	}
	return "lines:" + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(start+num-1, 10), true
}

// toolUseResult holds the members of a toolUseResult object we read.
type toolUseResult struct {
	isObject               bool
	typ                    string
	file                   []byte
	filePath               string
	content                []byte
	hasContent             bool
	originalFile           string
	hasOriginal            bool
	oldString, newString   string
	hasOld, hasNew         bool
	replaceAll             bool
	edits, structuredPatch []byte
}

func toolUseResultOf(raw []byte) toolUseResult {
	var t toolUseResult
	if len(raw) == 0 || raw[0] != '{' {
		return t
	}
	t.isObject = true
	jsonscan.Members(raw, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			t.typ, _ = jsonscan.String(v)
		case "file":
			if len(v) > 0 && v[0] == '{' {
				t.file = v
			}
		case "filePath":
			t.filePath, _ = jsonscan.String(v)
		case "content":
			t.content, t.hasContent = jsonscan.Unquote(v)
		case "originalFile":
			t.originalFile, t.hasOriginal = jsonscan.String(v)
		case "oldString":
			t.oldString, t.hasOld = jsonscan.String(v)
		case "newString":
			t.newString, t.hasNew = jsonscan.String(v)
		case "replaceAll":
			t.replaceAll = string(v) == "true"
		case "edits":
			t.edits = v
		case "structuredPatch":
			t.structuredPatch = v
		}
		return true
	})
	return t
}

// toolInput holds the members of a file tool's input we read.
type toolInput struct {
	filePath, oldString, newString string
	content                        []byte
	hasContent, hasOld, hasNew     bool
	replaceAll                     bool
	offset, limit                  *int64
	edits                          []byte
}

func toolInputOf(raw []byte) toolInput {
	var in toolInput
	jsonscan.Members(raw, func(k, v []byte) bool {
		switch string(k) {
		case "file_path":
			in.filePath, _ = jsonscan.String(v)
		case "content":
			in.content, in.hasContent = jsonscan.Unquote(v)
		case "old_string":
			in.oldString, in.hasOld = jsonscan.String(v)
		case "new_string":
			in.newString, in.hasNew = jsonscan.String(v)
		case "replace_all":
			in.replaceAll = string(v) == "true"
		case "offset":
			if n, ok := jsonscan.Int(v); ok {
				in.offset = &n
			}
		case "limit":
			if n, ok := jsonscan.Int(v); ok {
				in.limit = &n
			}
		case "edits":
			in.edits = v
		}
		return true
	})
	return in
}

// deriveFileSeen turns a tool result into file evidence: the text a Read
// showed (from toolUseResult.file.content, else recovered from the
// numbered result text), the content a Write wrote, the content an Edit
// produced (originalFile with the edit applied, when the transcript holds
// it; no content otherwise). Failed calls, non-text reads (images, PDFs,
// notebooks) and file_unchanged results (no content: the earlier read
// still stands) yield nothing.
func deriveFileSeen(r *transcript.ToolResult, pt *transcript.PendingToolUse) *transcript.FileSeen {
	if r.IsError || r.ToolUseID == "" {
		return nil
	}
	tur := toolUseResultOf(r.ToolUseResult)
	name := ""
	var in toolInput
	path := ""
	if pt != nil {
		name, path = pt.Name, pt.Path
		in = toolInputOf(pt.Input)
	} else if tur.isObject {
		// The call was not seen (lost state): infer the tool from the
		// result's shape.
		switch {
		case tur.file != nil:
			name = "Read"
		case tur.hasOriginal && tur.hasOld:
			name = "Edit"
		case tur.hasOriginal && tur.edits != nil:
			name = "MultiEdit"
		case (tur.typ == "create" || tur.typ == "update") && tur.hasContent:
			name = "Write"
		}
	}
	fs := &transcript.FileSeen{LineMeta: r.LineMeta, Tool: name, Key: r.ToolUseID, View: "full"}
	if tur.filePath != "" {
		fs.Path = absPath(tur.filePath, r.Cwd)
	}
	if path != "" {
		fs.Path = path
	}
	switch name {
	case "Read":
		fs.Op = gitstore.OpRead
		switch tur.typ {
		case "file_unchanged", "image", "notebook", "pdf", "parts":
			return nil
		}
		if tur.file != nil {
			rf := readFileOf(tur.file)
			if !rf.hasContent {
				return nil
			}
			view, ok := rf.view(in.offset, in.limit)
			if !ok {
				return nil
			}
			if fs.Path == "" {
				fs.Path = absPath(rf.filePath, r.Cwd)
			}
			fs.Content, fs.HasContent, fs.View = rf.content, true, view
			break
		}
		if tur.isObject && tur.typ != "" && tur.typ != "text" {
			return nil // a result type we do not know
		}
		text, first, last, ok := StripLineNumbers(r.Text())
		if !ok {
			return nil
		}
		fs.Content, fs.HasContent = []byte(text), true
		if first == 1 && in.limit == nil && (in.offset == nil || *in.offset <= 1) && last-first+1 < readDefaultLimit {
			fs.View = "full"
		} else {
			fs.View = "lines:" + strconv.Itoa(first) + "-" + strconv.Itoa(last)
		}
	case "Write":
		fs.Op = gitstore.OpWrite
		switch {
		case tur.hasContent:
			fs.Content, fs.HasContent = tur.content, true
		case in.hasContent:
			fs.Content, fs.HasContent = in.content, true
		}
	case "Edit":
		fs.Op = gitstore.OpEdit
		old, nw, all := in.oldString, in.newString, in.replaceAll
		hasOld, hasNew := in.hasOld, in.hasNew
		if tur.hasOld && tur.hasNew {
			old, nw, all, hasOld, hasNew = tur.oldString, tur.newString, tur.replaceAll, true, true
		}
		switch {
		case hasOld && hasNew && old == "":
			// An Edit with an empty old_string creates the file.
			fs.Content, fs.HasContent = []byte(nw), true
		case tur.hasOriginal && hasOld && hasNew:
			if out, ok := applyEdit(tur.originalFile, old, nw, all); ok && patchAgrees(out, tur.structuredPatch) {
				fs.Content, fs.HasContent = []byte(out), true
			}
		}
	case "MultiEdit":
		fs.Op = gitstore.OpEdit
		edits := tur.edits
		if edits == nil {
			edits = in.edits
		}
		if tur.hasOriginal && edits != nil {
			out, ok := tur.originalFile, true
			n := 0
			jsonscan.Elems(edits, func(v []byte) bool {
				e := toolInputOf(v)
				if !e.hasOld || !e.hasNew {
					ok = false
					return false
				}
				if e.oldString == "" {
					if n > 0 || out != "" {
						ok = false
						return false
					}
					out = e.newString
				} else if out, ok = applyEdit(out, e.oldString, e.newString, e.replaceAll); !ok {
					return false
				}
				n++
				return true
			})
			if ok && n > 0 && patchAgrees(out, tur.structuredPatch) {
				fs.Content, fs.HasContent = []byte(out), true
			}
		}
	case "NotebookEdit":
		fs.Op = gitstore.OpEdit // cell edits: no file content in the transcript
	default:
		return nil
	}
	if fs.Path == "" {
		return nil
	}
	return fs
}

// applyEdit applies one Edit the way Claude Code does: the first
// occurrence of old (every one with replaceAll) becomes new; deleting a
// string that is followed by a newline deletes that newline too.
func applyEdit(orig, old, nw string, all bool) (string, bool) {
	if old == "" {
		return "", false
	}
	if nw == "" && !strings.HasSuffix(old, "\n") && strings.Contains(orig, old+"\n") {
		old += "\n"
	}
	if !strings.Contains(orig, old) {
		return "", false
	}
	if all {
		return strings.ReplaceAll(orig, old, nw), true
	}
	return strings.Replace(orig, old, nw, 1), true
}

// patchAgrees checks content against the result's structuredPatch: every
// hunk's new side (context and added lines) must be the content's lines
// at newStart. No patch, nothing to disagree with.
func patchAgrees(content string, patch []byte) bool {
	if len(patch) == 0 || patch[0] != '[' {
		return true
	}
	lines := strings.Split(content, "\n")
	ok := true
	jsonscan.Elems(patch, func(h []byte) bool {
		var newStart int64
		var hl []byte
		jsonscan.Members(h, func(k, v []byte) bool {
			switch string(k) {
			case "newStart":
				newStart, _ = jsonscan.Int(v)
			case "lines":
				hl = v
			}
			return true
		})
		at := int(newStart) - 1
		if at < 0 {
			at = 0 // an empty side starts at 0
		}
		jsonscan.Elems(hl, func(v []byte) bool {
			s, _ := jsonscan.String(v)
			if s == "" {
				return true
			}
			switch s[0] {
			case ' ', '+':
				if at >= len(lines) || lines[at] != s[1:] {
					ok = false
					return false
				}
				at++
			}
			return true
		})
		return ok
	})
	return ok
}

// StripLineNumbers recovers the raw text of a Read result from the numbered
// text the model was shown: "1\tline" (Claude Code 2.x) or "     1→line"
// (older: six-wide number and an arrow). Numbering must be consecutive; it
// stops at the first line that is not numbered so (e.g. a system reminder
// appended after a blank line). It returns the text (lines joined by
// newlines: a file ending in a newline shows a last, empty line), the
// first and last line numbers, and ok=false when the text does not start
// with a numbered line.
func StripLineNumbers(s string) (text string, first, last int, ok bool) {
	var b strings.Builder
	style := 0
	n := 0
	for len(s) > 0 || n == 0 {
		line := s
		rest := ""
		nl := strings.IndexByte(s, '\n')
		if nl >= 0 {
			line, rest = s[:nl], s[nl+1:]
		}
		num, body, st, good := numberedLine(line)
		if !good || (style != 0 && st != style) || (n > 0 && num != last+1) {
			break
		}
		if n == 0 {
			first, style = num, st
			b.Grow(len(s))
		} else {
			b.WriteByte('\n')
		}
		b.WriteString(body)
		last = num
		n++
		if nl < 0 {
			break
		}
		s = rest
	}
	if n == 0 {
		return "", 0, 0, false
	}
	return b.String(), first, last, true
}

// numberedLine splits "12\tbody" (style 1) or "    12→body" (style 2).
func numberedLine(line string) (num int, body string, style int, ok bool) {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	spaces := i
	j := i
	for j < len(line) && line[j] >= '0' && line[j] <= '9' && j-i < 10 {
		num = num*10 + int(line[j]-'0')
		j++
	}
	if j == i || j-i >= 10 {
		return 0, "", 0, false
	}
	switch {
	case spaces == 0 && j < len(line) && line[j] == '\t':
		return num, line[j+1:], 1, true
	case strings.HasPrefix(line[j:], "→"):
		return num, line[j+len("→"):], 2, true
	}
	return 0, "", 0, false
}
