package codex

import (
	"testing"
)

func TestParseExecOutput(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ExecOutput
	}{
		{"Chunk ID: 8530d1\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nhello world\n",
			ExecOutput{Framed: true, Output: "hello world\n", ChunkID: "8530d1", WallTime: "0.0000", Exited: true, OriginalTokens: 3}},
		{"Exit code: 0\nWall time: 0.2 seconds\nOutput:\nSuccess. Updated the following files:\nM hello.txt\n",
			ExecOutput{Framed: true, Output: "Success. Updated the following files:\nM hello.txt\n", WallTime: "0.2", Exited: true, OriginalTokens: -1}},
		{"Command: tail -f log\nChunk ID: 07acea\nWall time: 5.0019 seconds\nProcess running with session ID 55249\nOriginal token count: 2\nOutput:\n500/700\n",
			ExecOutput{Framed: true, Output: "500/700\n", Command: "tail -f log", ChunkID: "07acea", WallTime: "5.0019", Running: true, ProcessID: "55249", OriginalTokens: 2}},
		{"Wall time: 0.1000 seconds\nProcess exited with code 2\nOutput:\n",
			ExecOutput{Framed: true, WallTime: "0.1000", Exited: true, ExitCode: 2, OriginalTokens: -1}},
		{"Wall time: 0.1000 seconds\nProcess exited with code 0\nOutput:",
			ExecOutput{Framed: true, WallTime: "0.1000", Exited: true, OriginalTokens: -1}},
		{"Chunk ID: a\nWall time: 1.0 seconds\nProcess exited with code 0\nOriginal token count: 9000\nOutput:\nTotal output lines: 4000\n\nline 1\n…8000 tokens truncated…\nline 4000\n",
			ExecOutput{Framed: true, Output: "Total output lines: 4000\n\nline 1\n…8000 tokens truncated…\nline 4000\n", ChunkID: "a", WallTime: "1.0", Exited: true, OriginalTokens: 9000, Truncated: true}},
		{"Exit code: 0\nWall time: 1 seconds\nTotal output lines: 40\nOutput:\nabc",
			ExecOutput{Framed: true, Output: "abc", WallTime: "1", Exited: true, OriginalTokens: -1, Truncated: true}},
		// Not framed: returned whole.
		{"hello world\n", ExecOutput{Output: "hello world\n", OriginalTokens: -1}},
		{"Command blocked by PreToolUse hook: no. Command: x", ExecOutput{Output: "Command blocked by PreToolUse hook: no. Command: x", OriginalTokens: -1}},
		{"Exit code: 0\nWall time: 0.2 seconds\n", ExecOutput{Output: "Exit code: 0\nWall time: 0.2 seconds\n", OriginalTokens: -1}},
		{"Exit code: zero\nOutput:\nx", ExecOutput{Output: "Exit code: zero\nOutput:\nx", OriginalTokens: -1}},
		{"Exit code: 0\nExit code: 1\nOutput:\nx", ExecOutput{Output: "Exit code: 0\nExit code: 1\nOutput:\nx", OriginalTokens: -1}},
		{"Exit code: 0\nSomething: else\nOutput:\nx", ExecOutput{Output: "Exit code: 0\nSomething: else\nOutput:\nx", OriginalTokens: -1}},
		{"Output:\nx", ExecOutput{Framed: true, Output: "x", OriginalTokens: -1}},
		{"", ExecOutput{OriginalTokens: -1}},
		{"Wall time: seconds\nOutput:\nx", ExecOutput{Output: "Wall time: seconds\nOutput:\nx", OriginalTokens: -1}},
	} {
		if got := ParseExecOutput(tc.in); got != tc.want {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
}

func TestShellCommand(t *testing.T) {
	for _, tc := range []struct {
		tool, input, cmd, wd string
		ok                   bool
	}{
		{ToolExecCommand, `{"cmd":"cat hello.txt"}`, "cat hello.txt", "", true},
		{ToolExecCommand, `{"cmd":"nl -ba a.go","workdir":"/w/sub","yield_time_ms":1000}`, "nl -ba a.go", "/w/sub", true},
		{ToolExecCommand, `{"command":"cat x"}`, "", "", false},
		{ToolExecCommand, `{"cmd":""}`, "", "", false},
		{ToolShellCommand, `{"command":"head -n 5 a"}`, "head -n 5 a", "", true},
		{ToolShell, `{"command":["bash","-lc","cat a"],"workdir":"/w"}`, "cat a", "/w", true},
		{ToolShell, `{"command":["/bin/zsh","-c","cat a"]}`, "cat a", "", true},
		{ToolShell, `{"command":["cat","a b","it's","-n"]}`, `cat 'a b' 'it'\''s' -n`, "", true},
		{ToolShell, `{"command":["fish","-c","cat a"]}`, "fish -c 'cat a'", "", true},
		{ToolShell, `{"command":[]}`, "", "", false},
		{ToolShell, `{"command":"cat a"}`, "", "", false},
		{ToolLocalShell, `{"type":"exec","command":["cat","a"],"working_directory":"/t"}`, "cat a", "/t", true},
		{"spawn_agent", `{"cmd":"cat a"}`, "", "", false},
	} {
		cmd, wd, ok := ShellCommand(tc.tool, []byte(tc.input))
		if cmd != tc.cmd || wd != tc.wd || ok != tc.ok {
			t.Errorf("%s %s: %q %q %v", tc.tool, tc.input, cmd, wd, ok)
		}
	}
}

func TestShellPatch(t *testing.T) {
	const body = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"
	for _, tc := range []struct {
		script, patch, dir string
		ok                 bool
	}{
		{"apply_patch <<'EOF'\n" + body + "\nEOF\n", body, "", true},
		{"apply_patch <<EOF\n" + body + "\nEOF", body, "", true},
		{"applypatch <<\"PATCH\"\n" + body + "\n\nPATCH\n  \n", body, "", true},
		{"apply_patch<<'EOF'\n" + body + "\nEOF", body, "", true},
		{"cd src/pkg && apply_patch <<'EOF'\n" + body + "\nEOF", body, "src/pkg", true},
		{"cd 'my dir' && apply_patch <<'EOF'\n" + body + "\nEOF", body, "my dir", true},
		{"cd \"my dir\" && apply_patch <<'EOF'\n" + body + "\nEOF", body, "my dir", true},
		// Not the forms Codex recognises.
		{"cd a; apply_patch <<'EOF'\n" + body + "\nEOF", "", "", false},
		{"cd a || apply_patch <<'EOF'\n" + body + "\nEOF", "", "", false},
		{"cd a b && apply_patch <<'EOF'\n" + body + "\nEOF", "", "", false},
		{"echo hi && apply_patch <<'EOF'\n" + body + "\nEOF", "", "", false},
		{"apply_patch <<'EOF'\n" + body + "\nEOF\necho done", "", "", false},
		{"apply_patch <<'EOF' && echo done\n" + body + "\nEOF", "", "", false},
		{"apply_patch <<-'EOF'\n" + body + "\nEOF", "", "", false},
		{"apply_patch <<'EOF'\n" + body + "\n", "", "", false},
		{"apply_patch foo <<'EOF'\n" + body + "\nEOF", "", "", false},
		{"apply_patchx <<'EOF'\n" + body + "\nEOF", "", "", false},
		{"cat hello.txt", "", "", false},
		{"cd \"$HOME\" && apply_patch <<'EOF'\n" + body + "\nEOF", "", "", false},
	} {
		patch, dir, ok := ShellPatch(tc.script)
		if patch != tc.patch || dir != tc.dir || ok != tc.ok {
			t.Errorf("%q: %q %q %v", tc.script, patch, dir, ok)
		}
	}
}
