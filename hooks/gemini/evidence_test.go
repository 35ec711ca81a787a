package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func lines(a, b int) string {
	var s []string
	for i := a; i <= b; i++ {
		s = append(s, "l"+strings.Repeat("x", i%7))
	}
	return strings.Join(s, "\n")
}

// readSeen against the forms the CLI's read_file gives (see the sample
// run-nearmiss for the real ones), and their near misses.
func TestReadSeen(t *testing.T) {
	full := "package x\n\nfunc f() {}\n"
	jit := "\n\n--- Newly Discovered Project Context ---\nGEMINI.md says hi\n--- End Project Context ---"
	hook := "\n\n<hook_context>restored: a &lt; b</hook_context>"
	type want struct{ view, content, why string }
	cases := []struct {
		name    string
		args    readFileArgs
		out     string
		display string // "" for none; JSON otherwise
		want    want
	}{
		{"whole file", readFileArgs{}, full, `""`, want{"full", full, ""}},
		{"whole file, display unknown", readFileArgs{}, full, "", want{"full", full, ""}},
		{"empty file", readFileArgs{}, "", `""`, want{"full", "", ""}},
		{"a range covering the file is the file", readFileArgs{startLine: 1, endLine: 99}, full, `""`, want{"full", full, ""}},
		{"project context appended", readFileArgs{}, full + jit, `""`, want{"full", full, ""}},
		{"hook context and project context", readFileArgs{}, full + jit + hook, "", want{"full", full, ""}},
		{"a hook context holding a '<' is file text", readFileArgs{}, full + "\n\n<hook_context>a < b</hook_context>", "", want{"full", full + "\n\n<hook_context>a < b</hook_context>", ""}},
		{"range", readFileArgs{startLine: 3, endLine: 5}, truncatedHeader(3, 5, 11) + "r3\nr4\nr5", `"Read lines 3-5 of 11 from r.txt"`, want{"lines:3-5", "r3\nr4\nr5", ""}},
		{"range, display unknown", readFileArgs{startLine: 3, endLine: 5}, truncatedHeader(3, 5, 11) + "r3\nr4\nr5", "", want{"lines:3-5", "r3\nr4\nr5", ""}},
		{"range to the end", readFileArgs{startLine: 10}, truncatedHeader(10, 11, 11) + "r10\n", `"Read lines 10-11 of 11 from r.txt"`, want{"lines:10-11", "r10\n", ""}},
		{"end only", readFileArgs{endLine: 2}, truncatedHeader(1, 2, 11) + "r1\nr2", `"Read lines 1-2 of 11 from r.txt"`, want{"lines:1-2", "r1\nr2", ""}},
		{"default limit", readFileArgs{}, truncatedHeader(1, 2000, 2501) + lines(1, 2000), `"Read lines 1-2000 of 2501 from b.txt"`, want{"lines:1-2000", lines(1, 2000), ""}},
		{"start only: 2000 lines from it", readFileArgs{startLine: 101}, truncatedHeader(101, 2100, 3000) + lines(101, 2100), `"Read lines 101-2100 of 3000 from b.txt"`, want{"lines:101-2100", lines(101, 2100), ""}},
		{"range with project context", readFileArgs{startLine: 3, endLine: 5}, truncatedHeader(3, 5, 11) + "r3\nr4\nr5" + jit, `"Read lines 3-5 of 11 from r.txt"`, want{"lines:3-5", "r3\nr4\nr5", ""}},
		{"SVG is read whole", readFileArgs{startLine: 2}, "<svg/>\r\n", `"Read SVG as text: a.svg"`, want{"full", "<svg/>\r\n", ""}},

		{"shortened lines", readFileArgs{}, truncatedHeader(1, 3, 3) + strings.Repeat("x", 2000) + "... [truncated]\nshort\n", `"Read all 3 lines from long.txt (some lines were shortened)"`, want{why: "lines were shortened"}},
		{"shortened lines in a range", readFileArgs{startLine: 1, endLine: 2}, truncatedHeader(1, 2, 3) + strings.Repeat("x", 2000) + "... [truncated]\nshort", `"Read lines 1-2 of 3 from long.txt (some lines were shortened)"`, want{why: "lines were shortened"}},
		{"shortened lines, display unknown", readFileArgs{startLine: 1, endLine: 2}, truncatedHeader(1, 2, 3) + "y... [truncated]\nshort", "", want{why: "lines were shortened"}},
		{"every line shown behind the notice", readFileArgs{}, truncatedHeader(1, 3, 3) + "a\nb\n", "", want{why: "lines were shortened"}},
		{"notice's range not the one asked for", readFileArgs{startLine: 3, endLine: 6}, truncatedHeader(3, 5, 11) + "r3\nr4\nr5", `"Read lines 3-5 of 11 from r.txt"`, want{why: "the range shown is not the range asked for"}},
		{"start only but fewer lines than the CLI shows", readFileArgs{startLine: 101}, truncatedHeader(101, 200, 3000) + lines(101, 200), "", want{why: "the range shown is not the range asked for"}},
		{"lines shown not the notice's count", readFileArgs{startLine: 3, endLine: 5}, truncatedHeader(3, 5, 11) + "r3\nr4", "", want{why: "the notice's range does not match the lines shown"}},
		{"display and notice disagree", readFileArgs{startLine: 3, endLine: 5}, truncatedHeader(3, 5, 11) + "r3\nr4\nr5", `"Read lines 3-5 of 12 from r.txt"`, want{why: "range display and notice disagree"}},
		{"range display without notice", readFileArgs{}, "r3\nr4\nr5", `"Read lines 3-5 of 11 from r.txt"`, want{why: "range display and notice disagree"}},
		{"notice without range display", readFileArgs{startLine: 3, endLine: 5}, truncatedHeader(3, 5, 11) + "r3\nr4\nr5", `""`, want{why: "truncation notice without a display saying so"}},
		{"a range from line 3 without notice", readFileArgs{startLine: 3}, "r3\n", "", want{why: "a range from line 3 without the truncation notice"}},
		{"a notice word changed: file text", readFileArgs{}, strings.Replace(truncatedHeader(3, 5, 11), "subsequent", "later", 1) + "r3\nr4\nr5", "", want{"full", strings.Replace(truncatedHeader(3, 5, 11), "subsequent", "later", 1) + "r3\nr4\nr5", ""}},
		{"offset/limit of older CLIs", readFileArgs{legacy: true}, truncatedHeader(1, 2000, 2501) + lines(1, 2000), "", want{why: "a range given as offset/limit (older CLI)"}},
		{"binary", readFileArgs{}, "Cannot display content of binary file: a.bin", `"Skipped binary file: a.bin"`, want{why: "not the file's text: Skipped binary file: a.bin"}},
		{"binary, display unknown", readFileArgs{}, "Cannot display content of binary file: a.bin", "", want{why: "not the file's text: Cannot display content of binary file: a.bin"}},
		{"image", readFileArgs{}, "Binary content provided (1 item(s)).", "", want{why: "not the file's text: Binary content provided (1 item(s))."}},
		{"masked by the CLI", readFileArgs{}, "<tool_output_masked>\nx\n</tool_output_masked>", "", want{why: "not the file's text: <tool_output_masked>"}},
		{"cut by compression", readFileArgs{}, "Output too large. Showing first 1 and last 2 characters. For full output see: /t\na\n\n... [9 characters omitted] ...\n\nbc", "", want{why: "not the file's text: Output too large. Showing first 1 and last 2 characters. For full output see: /t"}},
		{"display object", readFileArgs{}, full, `{"x":1}`, want{why: "unknown result display"}},
	}
	for _, c := range cases {
		var display []byte
		if c.display != "" {
			display = []byte(c.display)
		}
		s := readSeen("/p/f", c.args, c.out, display)
		got := want{s.View, string(s.Content), s.Why}
		if got != c.want || s.HasContent != (c.want.why == "") || s.Path != "/p/f" || s.Op != "read" {
			t.Errorf("%s:\n got %+v (has %v)\nwant %+v", c.name, got, s.HasContent, c.want)
		}
	}
}

func TestReadManySeen(t *testing.T) {
	part := func(path, text string) string { return "--- " + path + " ---\n\n" + text + "\n\n" }
	end := "\n--- End of content ---"
	join := func(parts ...string) string { return strings.Join(parts, "\n") }
	display := func(files ...string) []byte {
		b, _ := json.Marshal(map[string]any{"files": files, "targetDir": "/p", "summary": "x"})
		return b
	}
	trunc := "[WARNING: This file was truncated. To view the full content, use the 'read_file' tool on this specific file.]\n\n"
	type res struct {
		seen []string
		why  string
	}
	render := func(ss []Seen) []string {
		var out []string
		for _, s := range ss {
			if s.HasContent {
				out = append(out, s.Path+" "+s.View+" "+string(s.Content))
			} else {
				out = append(out, s.Path+" - "+s.Why)
			}
		}
		return out
	}
	cases := []struct {
		name    string
		out     string
		display []byte
		want    res
	}{
		{"two files", join(part("/p/a.txt", "A\n"), part("/p/b.txt", "B"), end), display("a.txt", "b.txt"),
			res{seen: []string{"/p/a.txt full A\n", "/p/b.txt full B"}}},
		{"an image between (no text part)", join(part("/p/a.txt", "A\n"), part("/p/c.txt", "C\n"), end), display("a.txt", "b.png", "c.txt"),
			res{seen: []string{"/p/a.txt full A\n", "/p/c.txt full C\n"}}},
		{"a file holding blank lines and dashes", join(part("/p/a.txt", "x\n\n\n--- not a header ---\n\n"), part("/p/b.txt", "B\n"), end), display("a.txt", "b.txt"),
			res{seen: []string{"/p/a.txt full x\n\n\n--- not a header ---\n\n", "/p/b.txt full B\n"}}},
		{"project context part", join(part("/p/a.txt", "A\n"), "\n\n--- Newly Discovered Project Context ---\nctx\n--- End Project Context ---", end), display("a.txt"),
			res{seen: []string{"/p/a.txt full A\n"}}},
		{"hook context part", join(part("/p/a.txt", "A\n"), end, "\n\n<hook_context>h</hook_context>"), display("a.txt"),
			res{seen: []string{"/p/a.txt full A\n"}}},
		{"audio notice part in front", join("Binary content (audio/mpeg) read successfully. Content will be injected for analysis in the next sequence.", part("/p/a.txt", "A\n"), end), display("a.txt", "s.mp3"),
			res{seen: []string{"/p/a.txt full A\n"}}},
		{"truncated at 2000 lines", join(part("/p/a.txt", trunc+lines(1, 2000)), end), display("a.txt"),
			res{seen: []string{"/p/a.txt lines:1-2000 " + lines(1, 2000)}}},
		{"truncated by a long line", join(part("/p/a.txt", trunc+"x... [truncated]\ny"), end), display("a.txt"),
			res{seen: []string{"/p/a.txt - truncated"}}},
		{"a binary file's notice", join(part("/p/a.bin", "Cannot display content of binary file: a.bin"), end), display("a.bin"),
			res{seen: []string{"/p/a.bin - not the file's text: Cannot display content of binary file: a.bin"}}},

		{"a file holding the next file's header", join(part("/p/a.txt", "x\n\n\n"+part("/p/b.txt", "fake")), part("/p/b.txt", "B\n"), end), display("a.txt", "b.txt"),
			res{why: "the header of /p/b.txt occurs more than once"}},
		{"parts out of order", join(part("/p/b.txt", "B\n"), part("/p/a.txt", "A\n"), end), display("a.txt", "b.txt"),
			res{why: "file parts out of order"}},
		{"text before the first part", join("hello\n\n", part("/p/a.txt", "A\n"), end), display("a.txt"),
			res{why: "text before the first file part"}},
		{"no end marker", join(part("/p/a.txt", "A\n")), display("a.txt"), res{why: "no end-of-content marker"}},
		{"no file list", join(part("/p/a.txt", "A\n"), end), nil, res{why: "no file list in the result display"}},
		{"a relative target directory", join(part("/p/a.txt", "A\n"), end), []byte(`{"files":["a.txt"],"targetDir":"p"}`), res{why: "no file list in the result display"}},
		{"a header not at a part boundary", join("hello", part("/p/a.txt", "A\n"), end), display("a.txt"), res{why: "no file parts"}},
		{"no part at all", join("No files matching the criteria were found or all were skipped."), []byte(`{"files":[],"targetDir":"/p"}`), res{why: "no end-of-content marker"}},
	}
	for _, c := range cases {
		seen, why := readManySeen(c.out, c.display)
		if got := (res{render(seen), why}); !slices.Equal(got.seen, c.want.seen) || got.why != c.want.why {
			t.Errorf("%s:\n got %q %q\nwant %q %q", c.name, got.seen, got.why, c.want.seen, c.want.why)
		}
	}
}

func TestEditSeen(t *testing.T) {
	s := editSeen(ToolWriteFile, "/p/a", []byte(`{"file_path":"a","content":"x\ny\n"}`), nil)
	if !s.HasContent || string(s.Content) != "x\ny\n" || s.Op != "write" || s.View != "full" {
		t.Errorf("write %+v", s)
	}
	s = editSeen(ToolReplace, "/p/a", []byte(`{"file_path":"a","old_string":"x","new_string":"z"}`), []byte(`{"newContent":"z\ny\n","originalContent":"x\ny\n"}`))
	if !s.HasContent || string(s.Content) != "z\ny\n" || s.Op != "edit" {
		t.Errorf("replace %+v", s)
	}
	// A replace whose result does not carry the file: evidence without
	// content (the CLI's fuzzy matching makes replaying old/new unsafe).
	for _, d := range []string{``, `"ok"`, `{"fileDiff":"x"}`, `{"newContent":5}`} {
		s = editSeen(ToolReplace, "/p/a", []byte(`{"file_path":"a","old_string":"x","new_string":"z"}`), []byte(d))
		if s.HasContent || s.View != "" || s.Why == "" || s.Op != "edit" {
			t.Errorf("replace with display %q: %+v", d, s)
		}
	}
}

func TestResolvePathWithoutDisk(t *testing.T) {
	for in, want := range map[string]string{
		"/abs/a.go":  "/abs/a.go",
		"rel/a.go":   "/cwd/rel/a.go",
		"../a.go":    "/a.go",
		"@rel/a.go":  "", // the disk decides: not known later
		"@":          "/cwd/@",
		"":           "",
		"a\x00b":     "/cwd/ab",
		"/abs/../b":  "/b",
		"./x/./y.go": "/cwd/x/y.go",
	} {
		got, ok := resolvePath(in, "/cwd", nil)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
		}
	}
	if _, ok := resolvePath("rel", "", nil); ok {
		t.Error("a relative path without cwd was placed")
	}
	if _, ok := resolvePath("rel", "relcwd", nil); ok {
		t.Error("a relative path against a relative cwd was placed")
	}
}

// A file the CLI's @-resolution would leave alone exists as written.
func TestResolvePathAtFileExists(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "@odd.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, ok := resolvePath("@odd.txt", dir, exists)
	if !ok || got != filepath.Join(dir, "@odd.txt") {
		t.Errorf("%q %v", got, ok)
	}
}

func TestContentText(t *testing.T) {
	for in, want := range map[string]string{
		`"a"`:                                  "a",
		`{"text":"a"}`:                         "a",
		`["a",{"text":"b"},{"inlineData":{}}]`: "a\nb",
	} {
		if got, ok := contentText([]byte(in)); !ok || got != want {
			t.Errorf("%s: %q %v", in, got, ok)
		}
	}
	for _, in := range []string{``, `{"inlineData":{}}`, `[{"inlineData":{}}]`, `5`} {
		if _, ok := contentText([]byte(in)); ok {
			t.Errorf("%s has text", in)
		}
	}
}
