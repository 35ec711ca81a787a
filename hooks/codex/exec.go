package codex

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// ExecOutput is a tool output as the model received it, split into
// Codex's framing and the command's output. Codex 0.169.0 frames a shell
// call's output (exec_command, the unified exec) as header lines joined
// by "\n", then "Output:", then the output as the process wrote it:
//
//	Chunk ID: 8530d1
//	Wall time: 0.0000 seconds
//	Process exited with code 0
//	Original token count: 3
//	Output:
//	hello world
//
// "Command: <cmd>" may come first, "Process running with session ID N"
// replaces the exit line while the process runs (the rest comes through
// write_stdin), and "Chunk ID" and "Original token count" may be absent.
// apply_patch and the older shell tools frame theirs as
//
//	Exit code: 0
//	Wall time: 0.2 seconds
//	Output:
//	Success. Updated the following files:
//	M hello.txt
//
// (sometimes with "Total output lines: N" before "Output:"). Output longer
// than the model's budget is cut in the middle and starts with "Total
// output lines: N" and a blank line (older releases: "Warning: truncated
// output (original token count: N)" first): Truncated says so. Whatever
// Truncated says, only a byte comparison tells whether Output is a file's
// content: hooks/shellread makes it.
type ExecOutput struct {
	Framed    bool   // the text had the framing; false: Output is the whole text
	Output    string // what the command wrote, as the model saw it
	Command   string // "Command: ..."
	ChunkID   string
	WallTime  string // as written, without " seconds"
	Exited    bool   // "Process exited with code N" or "Exit code: N"
	ExitCode  int
	Running   bool   // "Process running with session ID N": more output may follow
	ProcessID string // that N
	// OriginalTokens is "Original token count: N" (-1 when absent).
	OriginalTokens int
	Truncated      bool // Codex cut the output (see above)
}

// ParseExecOutput splits a tool output's text into framing and output.
// Text that is not framed exactly as documented on ExecOutput (a header
// line it does not know, no "Output:" line, a header twice) is returned
// whole as Output with Framed false.
func ParseExecOutput(s string) ExecOutput {
	o := ExecOutput{OriginalTokens: -1}
	rest := s
	seen := map[string]bool{}
	for {
		i := strings.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line = rest[:i]
		}
		if line == "Output:" {
			if i >= 0 {
				o.Output = rest[i+1:]
			}
			o.Framed = true
			break
		}
		key, ok := o.header(line)
		if !ok || seen[key] || i < 0 {
			return ExecOutput{Output: s, OriginalTokens: -1}
		}
		seen[key] = true
		rest = rest[i+1:]
	}
	if strings.HasPrefix(o.Output, "Total output lines: ") || strings.HasPrefix(o.Output, "Warning: truncated output (") {
		o.Truncated = true
	}
	return o
}

// header reads one framing line into o and returns which header it was.
func (o *ExecOutput) header(line string) (string, bool) {
	num := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	switch {
	case strings.HasPrefix(line, "Command: "):
		o.Command = line[len("Command: "):]
		return "command", true
	case strings.HasPrefix(line, "Chunk ID: "):
		o.ChunkID = line[len("Chunk ID: "):]
		return "chunk", o.ChunkID != ""
	case strings.HasPrefix(line, "Wall time: ") && strings.HasSuffix(line, " seconds") && len(line) > len("Wall time:  seconds"):
		o.WallTime = line[len("Wall time: ") : len(line)-len(" seconds")]
		return "wall", true
	case strings.HasPrefix(line, "Process exited with code "):
		n, ok := num(line[len("Process exited with code "):])
		o.Exited, o.ExitCode = ok, n
		return "exit", ok
	case strings.HasPrefix(line, "Exit code: "):
		n, ok := num(line[len("Exit code: "):])
		o.Exited, o.ExitCode = ok, n
		return "exit", ok
	case strings.HasPrefix(line, "Process running with session ID "):
		o.Running, o.ProcessID = true, line[len("Process running with session ID "):]
		return "running", o.ProcessID != ""
	case strings.HasPrefix(line, "Original token count: "):
		n, ok := num(line[len("Original token count: "):])
		o.OriginalTokens = n
		return "tokens", ok
	case strings.HasPrefix(line, "Total output lines: "):
		_, ok := num(line[len("Total output lines: "):])
		o.Truncated = true
		return "total", ok
	}
	return "", false
}

// Shell tools of Codex 0.169.0, by the name the model calls them.
const (
	ToolExecCommand  = "exec_command"  // {"cmd": string, "workdir"?: string}: the unified exec
	ToolShellCommand = "shell_command" // {"command": string, "workdir"?: string}
	ToolShell        = "shell"         // {"command": [argv], "workdir"?: string}
	ToolLocalShell   = "local_shell"   // a local_shell_call item: {"command": [argv], "working_directory"?}
	ToolApplyPatch   = "apply_patch"   // a custom (freeform) tool: the input is the patch
	ToolWriteStdin   = "write_stdin"   // more output of a running exec_command: never a whole read
)

// ShellCommand returns the command line a shell tool call runs and the
// directory it names, from the tool's name and its input (a function
// call's arguments, decoded). An argv of the form [bash|sh|zsh, -c|-lc,
// script] gives the script; another argv is joined with shell quoting.
// ok is false for other tools and for inputs without a command.
func ShellCommand(tool string, input []byte) (cmd, workdir string, ok bool) {
	var c, wd, wd2 []byte
	jsonscan.Members(input, func(k, v []byte) bool {
		switch string(k) {
		case "cmd":
			if tool == ToolExecCommand {
				c = v
			}
		case "command":
			if tool != ToolExecCommand {
				c = v
			}
		case "workdir":
			wd = v
		case "working_directory":
			wd2 = v
		}
		return true
	})
	if wd == nil {
		wd = wd2
	}
	workdir, _ = jsonscan.String(wd)
	switch tool {
	case ToolExecCommand, ToolShellCommand:
		cmd, ok = jsonscan.String(c)
		return cmd, workdir, ok && cmd != ""
	case ToolShell, ToolLocalShell:
		var argv []string
		if err := json.Unmarshal(c, &argv); err != nil || len(argv) == 0 {
			return "", "", false
		}
		return argvCommand(argv), workdir, true
	}
	return "", "", false
}

func argvCommand(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") {
		switch path.Base(argv[0]) {
		case "bash", "sh", "zsh":
			return argv[2]
		}
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '=' || r == ',' || r == ':' || r == '+' || r == '@' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellPatch recognises a shell command that is an apply_patch call,
// which Codex intercepts and applies as a patch instead of running it:
// the whole script is "apply_patch <<DELIM" (or applypatch, DELIM bare,
// 'quoted' or "quoted"), optionally after "cd DIR && ", then the patch
// lines, then a line that is DELIM, and nothing after but white space.
// It returns the heredoc body and DIR. Codex recognises these forms with
// a bash parser; anything else (another command before or after, <<-, a
// quoted DIR with escapes) is not recognised here and ok is false.
func ShellPatch(script string) (patch, dir string, ok bool) {
	s := strings.TrimLeft(script, " \t")
	if rest, found := strings.CutPrefix(s, "cd "); found {
		rest = strings.TrimLeft(rest, " \t")
		var word string
		word, rest, found = shellWord(rest)
		if !found {
			return "", "", false
		}
		rest = strings.TrimLeft(rest, " \t")
		if rest, found = strings.CutPrefix(rest, "&&"); !found {
			return "", "", false
		}
		dir, s = word, strings.TrimLeft(rest, " \t")
	}
	name := ""
	for _, n := range []string{"apply_patch", "applypatch"} {
		if strings.HasPrefix(s, n+" ") || strings.HasPrefix(s, n+"<<") {
			name = n
		}
	}
	if name == "" {
		return "", "", false
	}
	s = strings.TrimLeft(s[len(name):], " \t")
	s, found := strings.CutPrefix(s, "<<")
	if !found || strings.HasPrefix(s, "-") {
		return "", "", false
	}
	s = strings.TrimLeft(s, " \t")
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return "", "", false
	}
	delim := strings.TrimRight(s[:nl], " \t")
	if len(delim) >= 2 && (delim[0] == '\'' || delim[0] == '"') && delim[len(delim)-1] == delim[0] {
		delim = delim[1 : len(delim)-1]
	}
	if delim == "" || strings.ContainsAny(delim, " \t'\"$`\\;&|<>()") {
		return "", "", false
	}
	body := s[nl+1:]
	end := -1
	for off := 0; off <= len(body); {
		i := strings.IndexByte(body[off:], '\n')
		line := body[off:]
		if i >= 0 {
			line = body[off : off+i]
		}
		if line == delim {
			end = off
			if i >= 0 && strings.TrimSpace(body[off+i:]) != "" {
				return "", "", false
			}
			break
		}
		if i < 0 {
			break
		}
		off += i + 1
	}
	if end < 0 {
		return "", "", false
	}
	return strings.TrimRight(body[:end], "\n"), dir, true
}

// shellWord reads a bare word, or a single- or double-quoted one without
// escapes or expansions, from the start of s.
func shellWord(s string) (word, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	if q := s[0]; q == '\'' || q == '"' {
		i := strings.IndexByte(s[1:], q)
		if i < 0 {
			return "", "", false
		}
		w := s[1 : 1+i]
		if q == '"' && strings.ContainsAny(w, "$`\\") {
			return "", "", false
		}
		return w, s[2+i:], true
	}
	i := strings.IndexAny(s, " \t\n;&|<>()'\"$`\\")
	if i < 0 {
		i = len(s)
	}
	if i == 0 {
		return "", "", false
	}
	return s[:i], s[i:], true
}
