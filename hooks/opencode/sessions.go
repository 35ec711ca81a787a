package opencode

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

	"context"
)

// LogDir is where the plugin keeps its session logs:
// $XDG_STATE_HOME/git-lossless/opencode, ~/.local/state/... without it.
// A root session's log is <LogDir>/<session>.jsonl, a child session's
// <LogDir>/<root session>/<child session>.jsonl.
func LogDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if s := getenv("XDG_STATE_HOME"); s != "" && filepath.IsAbs(s) {
		return filepath.Join(s, "git-lossless", "opencode"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("opencode session logs: %w", err)
		}
	}
	return filepath.Join(home, ".local", "state", "git-lossless", "opencode"), nil
}

// Subagents implements hooks.Harness: the child sessions' logs beside
// the root's, <root>/<child>.jsonl, by name.
func (Harness) Subagents(main string) ([]string, error) {
	dir := strings.TrimSuffix(main, ".jsonl")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".jsonl") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// childOf reports whether path is a child session's log: a .jsonl in a
// directory that has a root log beside it.
func childOf(path string) (main string, ok bool) {
	dir := filepath.Dir(path)
	main = dir + ".jsonl"
	if fi, err := os.Stat(main); err == nil && fi.Mode().IsRegular() {
		return main, true
	}
	return "", false
}

// SessionOf implements hooks.Harness: the root session of a log, from its
// name.
func (Harness) SessionOf(path string) string {
	if main, ok := childOf(path); ok {
		path = main
	}
	return strings.TrimSuffix(filepath.Base(path), ".jsonl")
}

// SessionFile implements hooks.Harness: the plugin's logs (.jsonl), and
// `opencode export` documents (.json) named on the command line.
func (Harness) SessionFile(path string) (string, bool) {
	if strings.HasSuffix(path, ".json") {
		return path, exportFile(path)
	}
	if !strings.HasSuffix(path, ".jsonl") {
		return "", false
	}
	if main, ok := childOf(path); ok {
		return main, true
	}
	return path, true
}

// exportFile reports whether path holds an `opencode export` document.
func exportFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return isExport(head[:n])
}

// TranscriptCwd implements hooks.Harness: the cwd of the log's first
// line (an export's info.directory).
func (Harness) TranscriptCwd(path string, size int64) (string, error) {
	if exportFile(path) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		var ex Export
		if err := json.Unmarshal(exportStart(b), &ex); err != nil {
			return "", fmt.Errorf("opencode export %s: %w", path, err)
		}
		return ex.Info.Directory, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for i := 0; i < 16 && sc.Scan(); i++ {
		var l LogLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Cwd != "" {
			return l.Cwd, nil
		}
	}
	return "", sc.Err()
}

// ImportDirs implements hooks.Harness: the plugin's log directory.
func (Harness) ImportDirs(dir string, getenv func(string) string) ([]string, error) {
	d, err := LogDir(getenv)
	if err != nil {
		return nil, err
	}
	return []string{d}, nil
}

// Sessions implements hooks.Harness: the root logs whose cwd is wt (or
// below it), the newest first.
func (h Harness) Sessions(ctx context.Context, wt, session string, getenv func(string) string) (hooks.SessionFound, error) {
	dir, err := LogDir(getenv)
	if err != nil {
		return hooks.SessionFound{}, err
	}
	if session != "" {
		p := filepath.Join(dir, session+".jsonl")
		if _, err := os.Stat(p); err != nil {
			return hooks.SessionFound{}, fmt.Errorf("opencode session %q: no log %s: %w", session, p, err)
		}
		return hooks.SessionFound{Session: session, Transcript: p}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return hooks.SessionFound{}, fmt.Errorf("opencode session logs: %w", err)
	}
	var best hooks.SessionFound
	var bestTime int64
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		cwd, err := h.TranscriptCwd(p, 0)
		if err != nil || (cwd != wt && !strings.HasPrefix(cwd, wt+string(filepath.Separator))) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if t := fi.ModTime().UnixNano(); t > bestTime {
			best, bestTime = hooks.SessionFound{Session: strings.TrimSuffix(e.Name(), ".jsonl"), Transcript: p}, t
		}
	}
	if best.Session == "" {
		return best, fmt.Errorf("no opencode session log for %s in %s", wt, dir)
	}
	return best, nil
}

// ContextUsage implements hooks.Harness from the plugin's usage lines:
// the last model turn's tokens (input, cache read and written, output)
// after the last compaction.
func (Harness) ContextUsage(path string) (hooks.ContextUsage, error) {
	u := hooks.ContextUsage{Session: Harness{}.SessionOf(path)}
	f, err := os.Open(path)
	if err != nil {
		return u, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if !bytes.Contains(b, []byte(`"type":"usage"`)) && !bytes.Contains(b, []byte(`"type":"compacted"`)) {
			continue
		}
		var l LogLine
		if json.Unmarshal(b, &l) != nil {
			continue
		}
		switch {
		case l.Type == "compacted":
			u.Compactions++
			u.Known, u.Used = false, 0
		case l.Type == "usage" && l.Tokens != nil:
			u.Model = l.Model
			u.Used = l.Tokens.Input + l.Tokens.CacheRead + l.Tokens.CacheWrite + l.Tokens.Output
			u.Known = true
		}
	}
	return u, sc.Err()
}
