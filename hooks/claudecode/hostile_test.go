package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// Tests from a hostile-user review: payload members of the wrong JSON
// type, control characters in paths and client text, and symlinks.

// TestHookWrongTypeFieldIsNamed: a payload member the hooks read as a
// string that holds another JSON type is neither decided on nor recorded
// (the hook fails open, exit 0, no decision on stdout), and the one
// stderr line names the member and the type it got. Before, a file_path
// of the wrong type was allowed silently.
func TestHookWrongTypeFieldIsNamed(t *testing.T) {
	type tc struct {
		name   string
		event  string
		fields map[string]any
		want   string // what the stderr line must say
	}
	var cases []tc
	edit := func(in map[string]any) map[string]any {
		return map[string]any{"tool_name": "Edit", "tool_use_id": "toolu_e", "tool_input": in}
	}
	for _, v := range []struct {
		val  any
		kind string
	}{{42, "a number"}, {[]any{"a"}, "an array"}, {map[string]any{"x": 1}, "an object"}, {nil, "null"}, {true, "a boolean"}} {
		cases = append(cases,
			tc{"pre Edit file_path " + v.kind, "PreToolUse", edit(map[string]any{"file_path": v.val, "old_string": "a", "new_string": "b"}),
				"hook pre-tool-use Edit: tool_input.file_path is " + v.kind + ", not a string; edit not checked"},
			tc{"post Read file_path " + v.kind, "PostToolUse", map[string]any{"tool_name": "Read", "tool_use_id": "toolu_r", "tool_input": map[string]any{"file_path": v.val},
				"tool_response": map[string]any{"type": "text", "file": map[string]any{"content": "x", "numLines": 1, "startLine": 1, "totalLines": 1}}},
				"hook post-tool-use Read: tool_input.file_path is " + v.kind + ", not a string; result not recorded"},
		)
	}
	cases = append(cases,
		tc{"pre NotebookEdit notebook_path", "PreToolUse", map[string]any{"tool_name": "NotebookEdit", "tool_use_id": "t", "tool_input": map[string]any{"notebook_path": 7}},
			"tool_input.notebook_path is a number, not a string; edit not checked"},
		tc{"pre Edit without file_path", "PreToolUse", edit(map[string]any{"old_string": "a"}), "tool_input.file_path is missing; edit not checked"},
		tc{"pre Edit tool_input not an object", "PreToolUse", map[string]any{"tool_name": "Edit", "tool_use_id": "t", "tool_input": "x.go"},
			"tool_input is a string, not an object; edit not checked"},
		tc{"post Write content", "PostToolUse", map[string]any{"tool_name": "Write", "tool_use_id": "t", "tool_input": map[string]any{"file_path": "PATH", "content": []any{"x"}}},
			"tool_input.content is an array, not a string; result not recorded"},
		tc{"post Read tool_response.file.content", "PostToolUse", map[string]any{"tool_name": "Read", "tool_use_id": "t", "tool_input": map[string]any{"file_path": "PATH"},
			"tool_response": map[string]any{"type": "text", "file": map[string]any{"content": 42}}},
			"tool_response.file.content is a number, not a string; result not recorded"},
		tc{"post Read tool_response.type", "PostToolUse", map[string]any{"tool_name": "Read", "tool_use_id": "t", "tool_input": map[string]any{"file_path": "PATH"},
			"tool_response": map[string]any{"type": []any{"file_unchanged"}}},
			"tool_response.type is an array, not a string; result not recorded"},
		tc{"post Read tool_response.file.numLines", "PostToolUse", map[string]any{"tool_name": "Read", "tool_use_id": "t", "tool_input": map[string]any{"file_path": "PATH"},
			"tool_response": map[string]any{"type": "text", "file": map[string]any{"content": "x", "numLines": "1"}}},
			"tool_response.file.numLines is a string, not a number; result not recorded"},
	)
	// Top-level members: the session, the context, the repository and
	// the tool are all read as strings.
	for _, f := range []string{"session_id", "cwd", "transcript_path", "agent_id", "agent_transcript_path", "tool_name", "tool_use_id", "hook_event_name", "agent_type"} {
		fields := edit(map[string]any{"file_path": "PATH"})
		fields[f] = 42
		cases = append(cases, tc{"top-level " + f, "PreToolUse", fields, "hook pre-tool-use: " + f + " is a number, not a string; edit not checked"})
	}
	cases = append(cases,
		tc{"session_id null", "PreToolUse", map[string]any{"session_id": nil, "tool_name": "Edit", "tool_input": map[string]any{"file_path": "PATH"}},
			"session_id is null, not a string; edit not checked"},
		tc{"source", "SessionStart", map[string]any{"source": []any{"compact"}}, "hook session-start: source is an array, not a string; nothing done"},
		tc{"trigger", "PreCompact", map[string]any{"trigger": map[string]any{}}, "hook pre-compact: trigger is an object, not a string; nothing done"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newHookRig(t)
			p := r.write("seen-by-nobody.go", "package x\n")
			// PATH stands for an existing file nobody has seen: were the
			// payload decided on, the edit would be denied.
			b, _ := json.Marshal(c.fields)
			b = bytes.ReplaceAll(b, []byte(`"PATH"`), []byte(jsonQ(p)))
			var fields map[string]any
			_ = json.Unmarshal(b, &fields)
			out, errs, code := r.hook(c.event, fields)
			if code != 0 || out != "" {
				t.Fatalf("code %d stdout %q: a broken payload must decide nothing", code, out)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") || !strings.HasPrefix(errs, "git-lossless: hook") {
				t.Fatalf("stderr %q, want exactly one line", errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Fatalf("stderr %q does not say %q", errs, c.want)
			}
			if evs := r.events(""); len(evs) != 0 {
				t.Fatalf("a broken payload recorded %d events: %v", len(evs), evKeys(evs))
			}
		})
	}
}

// TestHookNullOptionalMembersAreAbsent: Claude Code writes null for
// members it has no value for (custom_instructions, originalFile): an
// optional member that is null counts as absent, and is no complaint.
func TestHookNullOptionalMembersAreAbsent(t *testing.T) {
	r := newHookRig(t)
	p := r.write("a.go", "package a\n")
	f := map[string]any{"tool_name": "Read", "tool_use_id": "toolu_r", "agent_id": nil, "agent_type": nil, "agent_transcript_path": nil,
		"source": nil, "trigger": nil, "custom_instructions": nil,
		"tool_input":    map[string]any{"file_path": p, "notebook_path": nil, "offset": nil},
		"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": p, "content": "package a\n", "numLines": 2, "startLine": 1, "totalLines": 2}}}
	if out, errs, code := r.hook("PostToolUse", f); code != 0 || out != "" || errs != "" {
		t.Fatalf("post-tool-use: code %d stdout %q stderr %q", code, out, errs)
	}
	if evs := r.events("read"); len(evs) != 1 || evs[0].Agent != "" {
		t.Fatalf("read recorded as %+v", evs)
	}
	if reason := r.guard("", "toolu_e", p); reason != "" {
		t.Fatalf("edit after the read denied: %s", reason)
	}
}

// printableLine fails unless s is valid UTF-8 of printable runes only.
func printableLine(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%s is not valid UTF-8: %q", what, s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			t.Fatalf("%s holds the raw non-printable %U: %q", what, r, s)
		}
	}
}

// hostileName is a file name a hostile repository can hold: an escape
// sequence (clear the screen), a carriage return, a bell, a tab and a
// right-to-left override.
const hostileName = "x\x1b[2J\r\a\t\u202egp.go"

// TestHookOutputIsPrintable: whatever a path or a payload's text holds
// (NUL, escape sequences, newlines, a bidi override), what the hooks
// print — the stderr line, the guard's reason, the working set at
// SessionStart — is one line per message of printable characters, with
// the rest escaped.
func TestHookOutputIsPrintable(t *testing.T) {
	r := newHookRig(t)
	stderrCases := []struct {
		name   string
		event  string
		fields map[string]any
		want   string // an escape the line must show
	}{
		{"NUL in an edited path", "PostToolUse", map[string]any{"tool_name": "Edit", "tool_use_id": "t1", "tool_input": map[string]any{"file_path": filepath.Join(r.dir, "a\x00b.go")}}, `\x00`},
		{"control characters in an edited path", "PostToolUse", map[string]any{"tool_name": "Edit", "tool_use_id": "t2", "tool_input": map[string]any{"file_path": filepath.Join(r.dir, "gone\x1b[31m\r\n.go")}}, `\x1b`},
		{"NUL in a guarded path", "PreToolUse", map[string]any{"tool_name": "Edit", "tool_use_id": "t3", "tool_input": map[string]any{"file_path": filepath.Join(r.dir, "a\x00b.go")}}, `\x00`},
		{"control characters in cwd", "PreToolUse", map[string]any{"cwd": filepath.Join(r.dir, "no\asuch\u202e"), "tool_name": "Edit", "tool_use_id": "t4", "tool_input": map[string]any{"file_path": "/x"}}, `\a`},
		{"control characters in an agent id", "PostToolUse", map[string]any{"agent_id": "a/\x1b]0;pwned\a", "tool_name": "Edit", "tool_use_id": "t5", "tool_input": map[string]any{"file_path": "/x"}}, `\x1b`},
		{"control characters in a relative cwd", "PreToolUse", map[string]any{"cwd": "rel\x1b", "tool_name": "Edit", "tool_input": map[string]any{"file_path": "/x"}}, `\x1b`},
	}
	for _, c := range stderrCases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := r.hook(c.event, c.fields)
			if code != 0 || out != "" {
				t.Fatalf("code %d stdout %q", code, out)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") {
				t.Fatalf("stderr %q, want one line", errs)
			}
			printableLine(t, "stderr", strings.TrimSuffix(errs, "\n"))
			if !strings.Contains(errs, c.want) {
				t.Fatalf("stderr %q does not show %s escaped", errs, c.want)
			}
		})
	}
	// An unknown event name is client text too.
	var out, errb bytes.Buffer
	hooks.Run(context.Background(), New(), "Pre\x1b[2JToolUse", hooks.Env{Stdin: strings.NewReader("{}"), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	printableLine(t, "stderr of an unknown event", strings.TrimSuffix(errb.String(), "\n"))

	// The guard's reason, shown to the model: the path and the session
	// (in the restore command it names) are client text.
	t.Run("deny reason", func(t *testing.T) {
		r := newHookRig(t)
		r.session = "sess\x1b[2J\u202e"
		p := r.write(hostileName, "package x\n")
		reason := r.guard("", "toolu_e", p)
		if reason == "" {
			t.Fatal("blind edit allowed")
		}
		printableLine(t, "deny reason", reason)
		if !strings.Contains(reason, `\x1b[2J`) || !strings.Contains(reason, `\u202e`) {
			t.Fatalf("reason %q does not show the escapes", reason)
		}
	})
	// The working set printed at SessionStart names archived paths and
	// the session.
	t.Run("working set", func(t *testing.T) {
		r := newHookRig(t)
		r.session = "sess\x1b[2J"
		p := r.write(hostileName, "package x\n")
		r.read("", "toolu_r", p, "package x\n")
		// A path that is not valid UTF-8, as the archive can hold one (a
		// JSON payload cannot carry one: it decodes to U+FFFD).
		rec := gitstore.Record{Event: gitstore.Event{TS: r.now(), Session: r.session, Source: "hook", Op: "read", Tool: "Read", View: "full", Key: "toolu_r2"},
			Content: []byte("package y\n"), HasContent: true}
		rec.SetPath("bad\xff\x1b.go")
		if _, err := r.store().Append(context.Background(), gitstore.WriterName("cc-", r.session), []gitstore.Record{rec}); err != nil {
			t.Fatal(err)
		}
		out, errs, code := r.hook("SessionStart", map[string]any{"source": "compact"})
		if code != 0 || errs != "" {
			t.Fatalf("session-start: code %d stderr %q", code, errs)
		}
		var d struct {
			H struct {
				Context string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil || d.H.Context == "" {
			t.Fatalf("session-start output %q: %v", out, err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(d.H.Context, "\n"), "\n") {
			printableLine(t, "working-set line", line)
		}
		if !strings.Contains(d.H.Context, `x\x1b[2J\r\a\t\u202egp.go`) || !strings.Contains(d.H.Context, `bad\xff\x1b.go`) {
			t.Fatalf("working set does not show the paths escaped: %s", d.H.Context)
		}
	})
}

// guardQuiet asks the guard about an Edit of path and fails on anything
// on stderr: a symlink is not a failure.
func (r *hookRig) guardQuiet(id, path string) string {
	r.t.Helper()
	f := map[string]any{"tool_name": "Edit", "tool_use_id": id, "tool_input": map[string]any{"file_path": path, "old_string": "a", "new_string": "b"}}
	out, errs, code := r.hook("PreToolUse", f)
	if code != 0 || errs != "" {
		r.t.Fatalf("pre-tool-use of %s: code %d stderr %q", path, code, errs)
	}
	if out == "" {
		return ""
	}
	var d struct {
		H struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.H.Decision != "deny" {
		r.t.Fatalf("unexpected guard output %q", out)
	}
	return d.H.Reason
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
}

// TestGuardAcrossSymlinks: what the model saw is keyed by the file, not
// by the spelling of its path. A read through a symlink vouches for an
// edit of its target and the other way round, through a symlinked
// directory too; drift is still caught across spellings. The recorded
// path stays the one the model used, with the resolved file beside it
// (extra "real_path").
func TestGuardAcrossSymlinks(t *testing.T) {
	t.Run("read the link, edit the target", func(t *testing.T) {
		r := newHookRig(t)
		target := r.write("target.go", "package t\n")
		link := filepath.Join(r.dir, "link.go")
		symlink(t, "target.go", link)
		r.read("", "toolu_r", link, "package t\n")
		if reason := r.guardQuiet("toolu_e1", target); reason != "" {
			t.Fatalf("edit of the target after reading its link denied: %s", reason)
		}
		if reason := r.guardQuiet("toolu_e2", link); reason != "" {
			t.Fatalf("edit of the link after reading it denied: %s", reason)
		}
		evs := r.events("read")
		if len(evs) != 1 || evs[0].Path != "link.go" || swExtra(evs[0], "real_path") != "target.go" {
			t.Fatalf("read recorded as %+v, want path link.go (as the model named it) and real_path target.go", evs)
		}
		r.write("target.go", "package t // changed behind the agent\n")
		if reason := r.guardQuiet("toolu_e3", target); !strings.Contains(reason, "changed on disk") {
			t.Fatalf("drift of the target after reading its link: %q", reason)
		}
		if reason := r.guardQuiet("toolu_e4", link); !strings.Contains(reason, "changed on disk") {
			t.Fatalf("drift behind the link: %q", reason)
		}
	})
	t.Run("read the target, edit the link", func(t *testing.T) {
		r := newHookRig(t)
		target := r.write("src/target.go", "package t\n")
		link := filepath.Join(r.dir, "link.go")
		symlink(t, filepath.Join(r.dir, "src", "target.go"), link) // absolute
		r.read("", "toolu_r", target, "package t\n")
		if reason := r.guardQuiet("toolu_e", link); reason != "" {
			t.Fatalf("edit through a link of a file read by its own name denied: %s", reason)
		}
		if evs := r.events("read"); len(evs) != 1 || evs[0].Path != "src/target.go" || evs[0].Extra["real_path"] != nil {
			t.Fatalf("read of a plain file recorded as %+v: no real_path when it is the path", evs)
		}
	})
	t.Run("symlinked directory", func(t *testing.T) {
		r := newHookRig(t)
		f := r.write("real/f.go", "package f\n")
		g := r.write("real/g.go", "package g\n")
		symlink(t, "real", filepath.Join(r.dir, "alias"))
		r.read("", "toolu_rf", filepath.Join(r.dir, "alias", "f.go"), "package f\n")
		r.read("", "toolu_rg", g, "package g\n")
		if reason := r.guardQuiet("toolu_ef", f); reason != "" {
			t.Fatalf("edit of real/f.go after reading alias/f.go denied: %s", reason)
		}
		if reason := r.guardQuiet("toolu_eg", filepath.Join(r.dir, "alias", "g.go")); reason != "" {
			t.Fatalf("edit of alias/g.go after reading real/g.go denied: %s", reason)
		}
		// A new file in the symlinked directory: its directory is resolved.
		n := filepath.Join(r.dir, "alias", "new.go")
		if reason := r.guardQuiet("toolu_en", n); reason != "" {
			t.Fatalf("create denied: %s", reason)
		}
		if err := os.WriteFile(n, []byte("package n\n"), 0o644); err != nil { // the Write tool ran
			t.Fatal(err)
		}
		r.post("", "Write", "toolu_wn", map[string]any{"file_path": n, "content": "package n\n"}, map[string]any{"type": "create", "filePath": n})
		if reason := r.guardQuiet("toolu_en2", filepath.Join(r.dir, "real", "new.go")); reason != "" {
			t.Fatalf("edit of a file the model wrote through the alias denied: %s", reason)
		}
	})
	t.Run("transcript evidence", func(t *testing.T) {
		// Evidence only the transcript holds (unswept, then swept): a
		// re-attached file named through a link vouches for its target.
		for _, swept := range []bool{false, true} {
			r := newHookRig(t)
			target := r.write("target.go", "package t\n")
			link := filepath.Join(r.dir, "link.go")
			symlink(t, "target.go", link)
			t0 := r.now()
			appendTranscript(t, r.tpath, r.ccReadUse("", "u1", t0, "toolu_r", link), r.ccReadResult("", "u2", t0, "toolu_r", link, "package t\n"))
			if swept {
				if _, err := hooks.SweepTranscript(context.Background(), r.store(), New(), r.tpath, hooks.SweepOptions{}); err != nil {
					t.Fatal(err)
				}
				if evs := r.events("read"); len(evs) != 1 || evs[0].Path != "link.go" || swExtra(evs[0], "real_path") != "target.go" {
					t.Fatalf("swept read recorded as %+v", evs)
				}
			}
			if reason := r.guardQuiet("toolu_e", target); reason != "" {
				t.Fatalf("swept=%v: edit of the target after a transcript read of its link denied: %s", swept, reason)
			}
		}
	})
	t.Run("restore through a link", func(t *testing.T) {
		r := newHookRig(t)
		target := r.write("target.go", "package t\n")
		link := filepath.Join(r.dir, "link.go")
		symlink(t, "target.go", link)
		if _, err := hooks.Restore(context.Background(), r.store(), hooks.RestoreOptions{Harness: New(), Session: r.session, Files: []string{link}, Now: r.now()}); err != nil {
			t.Fatal(err)
		}
		if reason := r.guardQuiet("toolu_e", target); reason != "" {
			t.Fatalf("edit of the target after restoring its link denied: %s", reason)
		}
	})
	t.Run("link out of the repository", func(t *testing.T) {
		r := newHookRig(t)
		outside, _ := filepath.EvalSymlinks(t.TempDir())
		o := filepath.Join(outside, "o.go")
		if err := os.WriteFile(o, []byte("package o\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(r.dir, "o.go")
		symlink(t, o, link)
		r.read("", "toolu_r", link, "package o\n")
		if evs := r.events("read"); len(evs) != 1 || evs[0].Path != "o.go" || swExtra(evs[0], "real_path") != o {
			t.Fatalf("read recorded as %+v, want real_path %s (absolute: out of the repository)", evs, o)
		}
		for _, p := range []string{o, link} {
			if reason := r.guardQuiet("toolu_e_"+filepath.Base(filepath.Dir(p)), p); reason != "" {
				t.Fatalf("edit of %s denied: %s", p, reason)
			}
		}
		if err := os.WriteFile(o, []byte("package o // changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if reason := r.guardQuiet("toolu_e2", link); !strings.Contains(reason, "changed on disk") {
			t.Fatalf("drift out of the repository: %q", reason)
		}
	})
	t.Run("dangling link", func(t *testing.T) {
		r := newHookRig(t)
		link := filepath.Join(r.dir, "d.go")
		symlink(t, "missing.go", link)
		// Nothing to overwrite: creating through the link is allowed.
		if reason := r.guardQuiet("toolu_e1", link); reason != "" {
			t.Fatalf("write through a dangling link denied: %s", reason)
		}
		if err := os.WriteFile(link, []byte("package d\n"), 0o644); err != nil { // the Write tool follows the link
			t.Fatal(err)
		}
		r.post("", "Write", "toolu_w", map[string]any{"file_path": link, "content": "package d\n"}, map[string]any{"type": "create", "filePath": link})
		if reason := r.guardQuiet("toolu_e2", filepath.Join(r.dir, "missing.go")); reason != "" {
			t.Fatalf("edit of the file written through the link denied: %s", reason)
		}
	})
	t.Run("target not valid UTF-8", func(t *testing.T) {
		// Two links to one file whose name is not valid UTF-8 (no JSON
		// payload can name it itself): real_path64 keys it.
		r := newHookRig(t)
		r.write("t\xff.go", "package t\n")
		one, two := filepath.Join(r.dir, "one.go"), filepath.Join(r.dir, "two.go")
		symlink(t, "t\xff.go", one)
		symlink(t, "t\xff.go", two)
		r.read("", "toolu_r", one, "package t\n")
		if evs := r.events("read"); len(evs) != 1 || swExtra(evs[0], "real_path64") == "" || evs[0].Extra["real_path"] != nil {
			t.Fatalf("read recorded as %+v, want real_path64", evs)
		}
		if reason := r.guardQuiet("toolu_e", two); reason != "" {
			t.Fatalf("edit through a second link denied: %s", reason)
		}
	})
	t.Run("link loop", func(t *testing.T) {
		r := newHookRig(t)
		a, b := filepath.Join(r.dir, "a.go"), filepath.Join(r.dir, "b.go")
		symlink(t, "b.go", a)
		symlink(t, "a.go", b)
		f := map[string]any{"tool_name": "Edit", "tool_use_id": "t", "tool_input": map[string]any{"file_path": a}}
		out, errs, code := r.hook("PreToolUse", f)
		if code != 0 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "symbolic links") || strings.Contains(errs, "internal error") {
			t.Fatalf("edit of a link loop: code %d stdout %q stderr %q, want one line naming the loop", code, out, errs)
		}
	})
}
