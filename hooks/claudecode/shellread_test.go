package claudecode

import (
	"context"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
)

// bash runs post-tool-use for a Bash call with Claude Code's
// tool_response shape.
func (r *hookRig) bash(id, command string, response map[string]any) {
	r.t.Helper()
	f := map[string]any{"tool_name": "Bash", "tool_use_id": id, "tool_input": map[string]any{"command": command}, "tool_response": response}
	if _, errs, code := r.hook("PostToolUse", f); code != 0 || errs != "" {
		r.t.Fatalf("post-tool-use Bash: code %d stderr %q", code, errs)
	}
}

// TestBashCatIsARead: Claude Code's Bash `cat` whose stdout (blank edges
// trimmed, as Claude Code hands it over) equals the file is a read, view
// full, keyed by the call id, via shell, and the guard then allows an
// edit of the file; a near miss (stdout of another version, `cat a b`,
// grep, an interrupted command) records nothing and the guard denies;
// a deny-listed file's access is recorded without content.
func TestBashCatIsARead(t *testing.T) {
	r := newHookRig(t)
	p := r.write("hello.txt", "hello world\n\n")
	r.write("b.txt", "b\n")
	r.write("stale.txt", "new\n")
	r.write("int.txt", "int\n")
	r.write(".env", "API_KEY=sk-planted-0123456789abcdef\n")
	if reason := r.guard("", "toolu_g0", p); reason == "" {
		t.Fatal("edit of an unseen file allowed")
	}
	r.bash("toolu_1", "cat hello.txt", map[string]any{"stdout": "hello world", "stderr": "", "interrupted": false})
	r.bash("toolu_2", "cat hello.txt b.txt", map[string]any{"stdout": "hello world\nb", "stderr": "", "interrupted": false})
	r.bash("toolu_3", "cat stale.txt", map[string]any{"stdout": "old", "stderr": "", "interrupted": false})
	r.bash("toolu_4", "grep -n b b.txt", map[string]any{"stdout": "1:b", "stderr": "", "interrupted": false})
	r.bash("toolu_5", "cat int.txt", map[string]any{"stdout": "int", "stderr": "", "interrupted": true})
	r.bash("toolu_6", "cat .env", map[string]any{"stdout": "API_KEY=sk-planted-0123456789abcdef", "stderr": "", "interrupted": false})
	evs, err := r.store().Events(context.Background(), gitstore.Query{Session: r.session, Op: "read"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("want 2 reads (hello.txt, .env), got %d: %+v", len(evs), evs)
	}
	e := evs[0]
	if e.Path != "hello.txt" || e.Key != "toolu_1" || e.Tool != "Bash" || e.View != "full" || e.Blob != gitstore.BlobID([]byte("hello world\n\n")) ||
		string(e.Extra["via"]) != `"shell"` || string(e.Extra["trimmed"]) != "true" || string(e.Extra["disk_blob"]) != `"`+e.Blob+`"` {
		t.Fatalf("shell read %+v extra %s", e, e.Extra)
	}
	if x := evs[1]; x.Path != ".env" || !x.Excluded || x.Blob != "" || x.Key != "toolu_6" {
		t.Fatalf(".env access %+v", x)
	}
	if reason := r.guard("", "toolu_g1", p); reason != "" {
		t.Fatalf("edit after a Bash cat denied: %s", reason)
	}
	for _, f := range []string{"b.txt", "stale.txt", "int.txt"} {
		if reason := r.guard("", "toolu_g_"+f, r.dir+"/"+f); reason == "" || !strings.Contains(reason, f) {
			t.Errorf("edit of %s after a near-miss shell call: reason %q", f, reason)
		}
	}
}
