package codex

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// callTail is how much of a rollout's end callWorkdir reads: the call's
// line was written just before the tool ran, so it is near the end.
const callTail = 1 << 20

// callWorkdir finds, in the last callTail bytes of the rollout, the shell
// call whose call_id is id, and returns the directory it named (workdir;
// "" for the session's cwd) and whether the call was found with the same
// command. The hook payload holds only the command: a `cat a.txt` run
// with another workdir would otherwise be matched against the wrong
// file.
func callWorkdir(rollout, id, command string) (workdir string, found bool) {
	if rollout == "" || id == "" {
		return "", false
	}
	f, err := os.Open(rollout)
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false
	}
	off := max(fi.Size()-callTail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return "", false
	}
	needle, _ := json.Marshal(id)
	needle = append([]byte(`"call_id":`), needle...)
	for len(b) > 0 {
		i := bytes.LastIndex(b, needle)
		if i < 0 {
			return "", false
		}
		start := bytes.LastIndexByte(b[:i], '\n') + 1
		end := bytes.IndexByte(b[i:], '\n')
		if end < 0 {
			end = len(b) - i
		}
		line := b[start : i+end]
		b = b[:start]
		var l struct {
			Payload struct {
				Type      string          `json:"type"`
				Name      string          `json:"name"`
				Arguments string          `json:"arguments"`
				Action    json.RawMessage `json:"action"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		var input []byte
		switch l.Payload.Type {
		case "function_call":
			input = []byte(l.Payload.Arguments)
		case "local_shell_call":
			input = l.Payload.Action
		default:
			continue
		}
		name := l.Payload.Name
		if l.Payload.Type == "local_shell_call" {
			name = ToolLocalShell
		}
		cmd, wd, ok := ShellCommand(name, input)
		if !ok || cmd != command {
			return "", false
		}
		return wd, true
	}
	return "", false
}
