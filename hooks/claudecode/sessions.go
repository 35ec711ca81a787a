package claudecode

// Where Claude Code keeps its sessions, and how to read what the runtime
// needs of them without the parser: the projects directory
// (<config dir>/projects/<dir>/), a session's main transcript
// <dir>/<session>.jsonl and its subagents' <dir>/<session>/subagents/
// agent-<id>.jsonl, the cwd a transcript's lines carry, and the usage of
// its model turns.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/internal/jsonscan"

	"context"
)

// Subagents implements hooks.Harness: the agent-*.jsonl transcripts in
// <main without .jsonl>/subagents/, by name.
func (Harness) Subagents(main string) ([]string, error) {
	dir := filepath.Join(strings.TrimSuffix(main, ".jsonl"), "subagents")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("sweep %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "agent-") && strings.HasSuffix(n, ".jsonl") && !e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out, nil
}

// SessionOf implements hooks.Harness: <session>.jsonl, or
// <session>/subagents/agent-<id>.jsonl.
func (Harness) SessionOf(abs string) string {
	dir, base := filepath.Split(abs)
	if strings.HasPrefix(base, "agent-") && filepath.Base(filepath.Clean(dir)) == "subagents" {
		return filepath.Base(filepath.Dir(filepath.Clean(dir)))
	}
	return strings.TrimSuffix(base, ".jsonl")
}

// SessionFile implements hooks.Harness: every *.jsonl file is a
// transcript; a subagent's (<session>/subagents/agent-<id>.jsonl) belongs
// to the session whose main transcript is <session>.jsonl beside that
// directory.
func (Harness) SessionFile(path string) (string, bool) {
	if !strings.HasSuffix(path, ".jsonl") {
		return "", false
	}
	if dir, base := filepath.Split(path); strings.HasPrefix(base, "agent-") && filepath.Base(filepath.Clean(dir)) == "subagents" {
		return filepath.Dir(filepath.Clean(dir)) + ".jsonl", true
	}
	return path, true
}

// TranscriptCwd implements hooks.Harness: the "cwd" member of the first
// complete line of the transcript at path (of about size bytes) that
// carries an absolute one ("" when none does), reading no further than
// that line.
func (Harness) TranscriptCwd(path string, size int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, int(max(4<<10, min(64<<10, size+1))))
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", nil // no line with a cwd (a trailing partial line does not count)
			}
			return "", err
		}
		if long != nil {
			line = append(long, line...)
			long = long[:0]
		}
		// Most lines are objects whose cwd sits near the end; lines
		// without the word cannot have the member.
		if !bytes.Contains(line, []byte(`"cwd"`)) {
			continue
		}
		if v := jsonscan.Field(line, "cwd"); v != nil {
			if cwd, ok := jsonscan.String(v); ok && filepath.IsAbs(cwd) {
				return filepath.Clean(cwd), nil
			}
		}
	}
}

// ImportDirs implements hooks.Harness: Claude Code's projects directory
// (ProjectsDir).
func (Harness) ImportDirs(dir string, getenv func(string) string) ([]string, error) {
	d, err := ProjectsDir(dir, getenv)
	if err != nil {
		return nil, err
	}
	return []string{d}, nil
}

// ProjectsDir returns the directory where Claude Code keeps its
// transcripts, one subdirectory per project: $CLAUDE_CONFIG_DIR/projects,
// or ~/.claude/projects when that is unset (the same rule as the user
// settings: see SettingsPath). dir resolves a relative
// CLAUDE_CONFIG_DIR.
func ProjectsDir(dir string, getenv func(string) string) (string, error) {
	p, err := SettingsPath(settings.ScopeUser, dir, getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "projects"), nil
}

// ProjectDir is where Claude Code keeps the transcripts of sessions run
// in the work tree wt: <config dir>/projects/<wt, every byte that is not
// a letter or digit replaced by '-'> (as Claude Code 2.1 names it). The
// config dir is $CLAUDE_CONFIG_DIR, else $HOME/.claude; "" when neither
// is known.
func ProjectDir(wt string, getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := getenv("CLAUDE_CONFIG_DIR")
	if cfg == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home == "" {
			return ""
		}
		cfg = filepath.Join(home, ".claude")
	}
	if wt == "" {
		return ""
	}
	b := []byte(wt)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return filepath.Join(cfg, "projects", string(b))
}

// Sessions implements hooks.Harness: the main transcript of session (the
// most recently written one when session is "") in the project directory
// of the work tree wt.
func (Harness) Sessions(ctx context.Context, wt, session string, getenv func(string) string) (hooks.SessionFound, error) {
	dir := ProjectDir(wt, getenv)
	if dir == "" {
		return hooks.SessionFound{}, errors.New("no Claude Code config dir or no work tree: cannot find transcripts")
	}
	if session != "" {
		if strings.ContainsAny(session, `/\`) || session == "." || session == ".." {
			return hooks.SessionFound{}, fmt.Errorf("session %q is not a session id", session)
		}
		p := filepath.Join(dir, session+".jsonl")
		if _, err := os.Stat(p); err != nil {
			return hooks.SessionFound{}, fmt.Errorf("no transcript of session %s in %s", session, dir)
		}
		return hooks.SessionFound{Session: session, Transcript: p}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return hooks.SessionFound{}, fmt.Errorf("no Claude Code transcripts for this repository (%s)", dir)
	}
	var best string
	var bestTime int64
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if t := fi.ModTime().UnixNano(); best == "" || t > bestTime {
			best, bestTime = filepath.Join(dir, e.Name()), t
		}
	}
	if best == "" {
		return hooks.SessionFound{}, fmt.Errorf("no Claude Code transcripts for this repository (%s)", dir)
	}
	return hooks.SessionFound{Session: strings.TrimSuffix(filepath.Base(best), ".jsonl"), Transcript: best}, nil
}

// ContextUsage implements hooks.Harness: the last main-context assistant
// message's usage after the last compact_boundary line (input, cache
// creation and cache read tokens, plus what it wrote, are what the next
// request carries).
func (Harness) ContextUsage(transcript string) (hooks.ContextUsage, error) {
	f, err := os.Open(transcript)
	if err != nil {
		return hooks.ContextUsage{}, err
	}
	defer f.Close()
	u, err := ReadUsage(f)
	u.Session = strings.TrimSuffix(filepath.Base(transcript), ".jsonl")
	return u, err
}

// ReadUsage scans a transcript for ContextUsage.
func ReadUsage(r io.Reader) (hooks.ContextUsage, error) {
	var u hooks.ContextUsage
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.Contains(line, []byte(`"compact_boundary"`)):
			var v struct {
				Type    string `json:"type"`
				Subtype string `json:"subtype"`
			}
			if json.Unmarshal(line, &v) == nil && v.Subtype == "compact_boundary" {
				u.Compactions++
				u.Known, u.Used = false, 0
			}
		case bytes.Contains(line, []byte(`"usage"`)) && bytes.Contains(line, []byte(`"assistant"`)):
			var v struct {
				Type        string `json:"type"`
				IsSidechain bool   `json:"isSidechain"`
				Message     struct {
					Model string `json:"model"`
					Usage struct {
						Input       int64 `json:"input_tokens"`
						CacheCreate int64 `json:"cache_creation_input_tokens"`
						CacheRead   int64 `json:"cache_read_input_tokens"`
						Output      int64 `json:"output_tokens"`
					} `json:"usage"`
				} `json:"message"`
			}
			if json.Unmarshal(line, &v) != nil || v.Type != "assistant" || v.IsSidechain {
				continue
			}
			us := v.Message.Usage
			u.Used = us.Input + us.CacheCreate + us.CacheRead + us.Output
			u.Model, u.Known = v.Message.Model, true
		}
	}
	return u, sc.Err()
}
