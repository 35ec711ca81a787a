package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// Synthetic describes a synthetic session: the floor and the ceiling are
// such sessions, written as Claude Code 2.1.328 writes a transcript
// (assistant tool_use lines, user tool_result lines with their
// toolUseResult) and then swept and replayed like any other.
type Synthetic struct {
	Root      string // the project directory (absolute)
	SessionID string
	// Files are the project's files: path relative to Root, content.
	Files []SyntheticFile
	// Rounds is the edit loop's number of edit and re-read rounds.
	Rounds int
}

// SyntheticFile is one file of a synthetic session.
type SyntheticFile struct {
	Path    string
	Content string
}

// synth writes the lines of a synthetic transcript.
type synth struct {
	w    *bufio.Writer
	s    Synthetic
	n    int
	ts   time.Time
	prev string
	err  error
}

func newSynth(w io.Writer, s Synthetic) *synth {
	return &synth{w: bufio.NewWriter(w), s: s, ts: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

func (g *synth) uuid() string {
	g.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", g.n)
}

// line writes one transcript line: the envelope Claude Code writes around
// every message.
func (g *synth) line(typ string, message any, toolUseResult any) {
	if g.err != nil {
		return
	}
	g.ts = g.ts.Add(1500 * time.Millisecond)
	id := g.uuid()
	o := map[string]any{
		"parentUuid": nilIfEmpty(g.prev), "isSidechain": false, "userType": "external", "cwd": g.s.Root,
		"sessionId": g.s.SessionID, "version": "2.1.328", "gitBranch": "main", "type": typ,
		"message": message, "uuid": id, "timestamp": g.ts.Format("2006-01-02T15:04:05.000Z"),
	}
	if toolUseResult != nil {
		o["toolUseResult"] = toolUseResult
	}
	g.prev = id
	b, err := json.Marshal(o)
	if err != nil {
		g.err = err
		return
	}
	b = append(b, '\n')
	_, g.err = g.w.Write(b)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// call writes a tool call and its result.
func (g *synth) call(name string, input map[string]any, resultText string, toolUseResult any) {
	id := "toolu_synth_" + strconv.Itoa(g.n)
	g.line("assistant", map[string]any{"role": "assistant", "model": "synthetic", "content": []any{
		map[string]any{"type": "tool_use", "id": id, "name": name, "input": input},
	}}, nil)
	g.line("user", map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": resultText},
	}}, toolUseResult)
}

// numbered renders content as Claude Code 2.1.328 shows a Read: each line
// with its number and a tab.
func numbered(content string) string {
	lines := strings.Split(content, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteByte('\t')
		b.WriteString(l)
	}
	return b.String()
}

func (g *synth) read(f SyntheticFile) {
	abs := filepath.Join(g.s.Root, f.Path)
	n := strings.Count(f.Content, "\n") + 1
	g.call("Read", map[string]any{"file_path": abs}, numbered(f.Content), map[string]any{
		"type": "text", "file": map[string]any{"filePath": abs, "content": f.Content, "numLines": n, "startLine": 1, "totalLines": n},
	})
}

func (g *synth) edit(path, orig, old, nw string) {
	abs := filepath.Join(g.s.Root, path)
	g.call("Edit", map[string]any{"file_path": abs, "old_string": old, "new_string": nw},
		"The file "+abs+" has been updated successfully.", map[string]any{
			"filePath": abs, "oldString": old, "newString": nw, "originalFile": orig, "replaceAll": false, "userModified": false,
		})
}

func (g *synth) prompt(text string) {
	g.line("user", map[string]any{"role": "user", "content": text}, nil)
}

func (g *synth) finish() error {
	if g.err != nil {
		return g.err
	}
	return g.w.Flush()
}

// WriteReadOnce writes the floor: every file of s read once, in full.
// Nothing is re-read, so nothing can be saved.
func WriteReadOnce(w io.Writer, s Synthetic) error {
	g := newSynth(w, s)
	g.prompt("Read every file once.")
	for _, f := range s.Files {
		g.read(f)
	}
	return g.finish()
}

// loopMarker is the line the edit loop rewrites each round.
const loopMarker = "// git-lossless replay: round "

// WriteEditLoop writes the ceiling: the first file of s read, then
// s.Rounds times edited (one line changes) and read again in full, as an
// agent that re-reads after each of its edits does.
func WriteEditLoop(w io.Writer, s Synthetic) error {
	if len(s.Files) == 0 {
		return fmt.Errorf("edit loop: no file")
	}
	g := newSynth(w, s)
	f := s.Files[0]
	content := f.Content
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	content += loopMarker + "0\n"
	g.prompt("Edit the file until the loop is done.")
	g.read(SyntheticFile{Path: f.Path, Content: content})
	for i := range s.Rounds {
		old := loopMarker + strconv.Itoa(i) + "\n"
		nw := loopMarker + strconv.Itoa(i+1) + "\n"
		after := strings.Replace(content, old, nw, 1)
		g.edit(f.Path, content, old, nw)
		content = after
		g.read(SyntheticFile{Path: f.Path, Content: content})
	}
	return g.finish()
}

// ReplaySynthetic writes the synthetic session s with write (WriteReadOnce,
// WriteEditLoop) as <dir>/<s.SessionID>.jsonl, archives it into st and
// replays it: the same path as a real session's.
func ReplaySynthetic(ctx context.Context, st *gitstore.Store, dir string, s Synthetic, write func(io.Writer, Synthetic) error, opt Options) (*Report, error) {
	p := filepath.Join(dir, s.SessionID+".jsonl")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("synthetic session: %w", err)
	}
	werr := write(f, s)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("synthetic session: %w", werr)
	}
	sessions, err := FindSessions([]string{p})
	if err != nil {
		return nil, err
	}
	if _, err := Archive(ctx, st, sessions, hooks.SweepOptions{}); err != nil {
		return nil, err
	}
	return Replay(ctx, st, sessions, opt)
}
