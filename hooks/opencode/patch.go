package opencode

import (
	"os"
	"path/filepath"
	"strings"
)

// patchOp is what an apply_patch hunk does to one file.
type patchOp struct {
	kind     string // add, delete, update
	path, to string // absolute; to: an update's "*** Move to:"
}

// patchOps reads the file headers of an apply_patch patch (Codex's
// format, which opencode's apply_patch takes: "*** Add File: P", "***
// Delete File: P", "*** Update File: P" optionally followed by "*** Move
// to: Q"), with paths made absolute against cwd. Only the headers matter
// to the guard and the recorder, so the hunks are not parsed: a patch
// opencode refuses changes nothing, and one whose headers we do not find
// is not checked (fail open). hooks/codex parses the whole format for
// Codex; adapters do not import one another (internal/layoutcheck).
func patchOps(text, cwd string) []patchOp {
	abs := func(p string) string {
		p = strings.TrimSpace(p)
		if p == "" {
			return ""
		}
		if !filepath.IsAbs(p) {
			if cwd == "" {
				return ""
			}
			p = filepath.Join(cwd, p)
		}
		return filepath.Clean(p)
	}
	var out []patchOp
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		var op patchOp
		switch {
		case strings.HasPrefix(line, "*** Add File: "):
			op = patchOp{kind: "add", path: abs(strings.TrimPrefix(line, "*** Add File: "))}
		case strings.HasPrefix(line, "*** Delete File: "):
			op = patchOp{kind: "delete", path: abs(strings.TrimPrefix(line, "*** Delete File: "))}
		case strings.HasPrefix(line, "*** Update File: "):
			op = patchOp{kind: "update", path: abs(strings.TrimPrefix(line, "*** Update File: "))}
		case strings.HasPrefix(line, "*** Move to: ") && len(out) > 0 && out[len(out)-1].kind == "update" && out[len(out)-1].to == "":
			out[len(out)-1].to = abs(strings.TrimPrefix(line, "*** Move to: "))
			continue
		default:
			continue
		}
		if op.path != "" {
			out = append(out, op)
		}
	}
	return out
}

// patchNeedsSeen lists, once each, the files whose current content a
// patch replaces or removes: every update's and delete's file, and an
// add's file or a move's destination that exists (the patch overwrites
// it). A file an earlier hunk wrote is the patch's own content.
func patchNeedsSeen(ops []patchOp) []string {
	var out []string
	listed, made := map[string]bool{}, map[string]bool{}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	need := func(f string) {
		if f != "" && !made[f] && !listed[f] {
			listed[f] = true
			out = append(out, f)
		}
	}
	for _, o := range ops {
		switch o.kind {
		case "add":
			if exists(o.path) {
				need(o.path)
			}
			made[o.path] = true
		case "update":
			need(o.path)
			if o.to != "" {
				if exists(o.to) {
					need(o.to)
				}
				delete(made, o.path)
				made[o.to] = true
			} else {
				made[o.path] = true
			}
		case "delete":
			need(o.path)
			delete(made, o.path)
		}
	}
	return out
}

// patchWritten lists, once each, the files a patch leaves written.
func patchWritten(ops []patchOp) []string {
	gone := map[string]bool{}
	var order []string
	touch := func(f string, g bool) {
		if f == "" {
			return
		}
		if _, ok := gone[f]; !ok {
			order = append(order, f)
		}
		gone[f] = g
	}
	for _, o := range ops {
		switch {
		case o.kind == "delete":
			touch(o.path, true)
		case o.kind == "update" && o.to != "":
			touch(o.to, false)
			touch(o.path, true)
		default:
			touch(o.path, false)
		}
	}
	var out []string
	for _, f := range order {
		if !gone[f] {
			out = append(out, f)
		}
	}
	return out
}
