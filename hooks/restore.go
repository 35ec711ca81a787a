package hooks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
)

// ManifestBudget caps the working-set manifest printed at SessionStart:
// Claude Code spills additionalContext over 10,000 characters to a file,
// and the other harnesses take it into the model's context whole.
const ManifestBudget = 8000

// RestoreBudget is the default cap on the characters of content
// `restore` prints, the same as the manifest's: what restore prints goes
// into the model's context through a shell tool's result, where it
// displaces what the compaction was meant to make room for, and Claude
// Code spills hook output over 10,000 characters to a file. A larger working set is
// restored in parts with --files or a larger --budget.
const RestoreBudget = 8000

// contextTouches returns the accesses of one context (agent "" = main)
// of a session, in archive order. writer is the session's writer ("": any
// writer holding the session).
func contextTouches(ctx context.Context, st *gitstore.Store, writer, session, agent string) ([]guard.Touch, error) {
	ag := agent
	if ag == "" {
		ag = gitstore.MainAgent
	}
	q := gitstore.Query{Session: session, Agent: ag}
	if session != "" && writer != "" {
		q.Writers = []string{writer}
	}
	evs, err := st.Events(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []guard.Touch
	for _, e := range evs {
		if !e.Op.IsFileVersion() || e.Path == "" {
			continue
		}
		ev := evidenceOf(e)
		out = append(out, guard.Touch{Path: e.RawPath(), TS: e.TS, Op: e.Op, Blob: ev.Blob, DiskBlob: ev.DiskBlob,
			Partial: ev.Partial, View: e.View, Excluded: e.Excluded})
	}
	return out, nil
}

// absPath maps a recorded path back to the file system.
func absPath(st *gitstore.Store, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	if wt := st.Location().WorkTree; wt != "" {
		return filepath.Join(wt, filepath.FromSlash(p))
	}
	return p
}

func diskState(st *gitstore.Store, f guard.FileState) (guard.Disk, []byte) {
	data, err := os.ReadFile(absPath(st, f.Path))
	if errors.Is(err, fs.ErrNotExist) {
		return f.State(false, ""), nil
	}
	if err != nil {
		return f.State(true, ""), nil
	}
	return f.State(true, gitstore.BlobID(data)), data
}

// ManifestOptions selects what ManifestWith prints.
type ManifestOptions struct {
	// Harness is the session's harness: its writer, and its words.
	Harness        Harness
	Session, Agent string
	// Source is the SessionStart source: "compact" adds the facts block
	// (see facts.go); "resume" gives the conversation back whole, so only
	// the working set is printed.
	Source string
	Budget int // characters at most, facts and working set together
	// MCPTool, when set, names the MCP server's tools as the model sees
	// them (Harness.MCPTools), as the way to get content back: set when
	// the harness starts the server for the session.
	MCPTool func(tool string) string
	// Warn receives a problem that left the facts out (the working set
	// is printed regardless); nil drops it.
	Warn func(string)
}

// manifestMinWorkingSet is the room the facts leave the working set at
// least: its header and a couple of file lines.
const manifestMinWorkingSet = 400

// ManifestWith is the text SessionStart hands a context after a
// compaction or resume, within opt.Budget characters: after a compaction
// first the facts of the session (its first and latest requests, the
// files changed, the errors still open: facts.go), then its working set:
// files ranked (edited first, then by touches, then recency), each with
// its state on disk now, as many as the budget left by the facts holds;
// then how to get content back (the MCP tools when opt.MCPTool, reading
// the file again, and the restore command). The facts take at most half the budget, so the
// working set always has room. Empty when nothing is archived.
func ManifestWith(ctx context.Context, st *gitstore.Store, opt ManifestOptions) (string, error) {
	session, budget := opt.Session, opt.Budget
	writer := Writer(opt.Harness, session)
	touches, err := contextTouches(ctx, st, writer, session, opt.Agent)
	if err != nil {
		return "", err
	}
	ws := guard.WorkingSet(touches)
	why := "was compacted"
	if opt.Source == "resume" {
		why = "was resumed"
	}
	// The session id and the paths are client text: printed printable
	// (see guard.Printable), the session quoted for the shell where it
	// is a word of a command.
	head := fmt.Sprintf("git-lossless: this session (%s) %s.\n", guard.Printable(session), why)
	sq := guard.ShellQuote(session)
	var tail strings.Builder
	readWith := ""
	if w := opt.Harness.Dialect().ReadWith; w != "" {
		readWith = " with " + w
	}
	if t := opt.MCPTool; t != nil {
		fmt.Fprintf(&tail, "\nTo get content back: %s (the working set's current content) or %s (one file), or read it again%s, or `git lossless restore --session %s --files PATH...`; each counts as seen for the edit guard, which denies edits of files not seen in this context since the compaction: never edit from memory. To find what you saw before: %s, then %s (or `git lossless log --session %s`).\n",
			t("restore_context"), t("read_file"), readWith, sq, t("search"), t("read_span"), sq)
	} else {
		fmt.Fprintf(&tail, "\nTo get content back, read the file again%s, or run `git lossless restore --session %s --files PATH...` (prints current content; counts as seen for the edit guard). Do not edit a file from memory: the guard denies edits of files not seen in this context since the compaction. `git lossless log --session %s` lists everything archived.\n", readWith, sq, sq)
	}
	// The line that says how many files did not fit is left room for:
	// its length depends on the count and on the session id.
	more := func(n int) string {
		return fmt.Sprintf("- ... and %d more files (`git lossless log --session %s`)\n", n, sq)
	}
	reserve := len(more(len(ws)))
	facts := ""
	if opt.Source == "compact" {
		// Half the budget at most, and never so much that the working
		// set's first lines lose their room.
		room := min(budget/2, budget-len(head)-tail.Len()-reserve-manifestMinWorkingSet)
		if room > 0 {
			f, err := ReadSessionFacts(ctx, st, FactsOptions{Writer: writer, Session: session, Agent: opt.Agent, Dialect: opt.Harness.Dialect()})
			switch {
			case err == nil:
				facts = f.Text(session, room)
			case opt.Warn != nil:
				opt.Warn("facts left out: " + err.Error())
			}
		}
	}
	if len(ws) == 0 && facts == "" {
		return "", nil
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(facts)
	if len(ws) > 0 {
		b.WriteString("Its working set, as archived in git, most important first, with each file's state on disk now:\n")
	}
	shown := 0
	for _, f := range ws {
		state, _ := diskState(st, f)
		role := "read"
		if f.Edited {
			role = "edited by you"
		}
		line := fmt.Sprintf("- %s: %s, %d touches, last %s; %s", guard.Printable(f.Path), role, f.Touches, f.Last.UTC().Format("15:04:05"), state)
		if f.Latest.Partial && f.Latest.View != "" {
			line += " (" + f.Latest.View + ")"
		}
		line += "\n"
		if b.Len()+len(line)+tail.Len()+reserve > budget {
			break
		}
		b.WriteString(line)
		shown++
	}
	if shown < len(ws) {
		b.WriteString(more(len(ws) - shown))
	}
	b.WriteString(tail.String())
	return b.String(), nil
}

// RestoreOptions selects what Restore prints.
type RestoreOptions struct {
	// Harness is the session's harness: the restore events go to its
	// writer of the session, and carry its name.
	Harness Harness
	Session string
	Agent   string
	Files   []string // absolute or repository-relative; empty: the working set
	Budget  int      // characters of content at most
	Now     time.Time
	// Source and Tool are recorded on the restore events: "cli" (the
	// default) for `git lossless restore`, "mcp" and the tool's name when
	// the MCP server restores.
	Source, Tool string
}

// Restore prints the current content of a context's working set (or of
// the named files), annotated, and records what it printed as restore
// events of that context: the model now has seen exactly that content.
func Restore(ctx context.Context, st *gitstore.Store, opt RestoreOptions) (string, error) {
	if opt.Budget <= 0 {
		opt.Budget = RestoreBudget
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	if opt.Harness == nil {
		return "", errors.New("restore: no harness")
	}
	writer := Writer(opt.Harness, opt.Session)
	var files []guard.FileState
	if len(opt.Files) > 0 {
		for _, f := range opt.Files {
			rel := f
			if filepath.IsAbs(f) {
				rel = st.RelPath(f)
			}
			files = append(files, guard.FileState{Path: rel})
		}
		if opt.Session != "" {
			if touches, err := contextTouches(ctx, st, writer, opt.Session, opt.Agent); err == nil {
				known := map[string]guard.FileState{}
				for _, f := range guard.WorkingSet(touches) {
					known[f.Path] = f
				}
				for i, f := range files {
					if k, ok := known[f.Path]; ok {
						files[i] = k
					}
				}
			}
		}
	} else {
		if opt.Session == "" {
			return "", errors.New("restore needs --session (or --files)")
		}
		touches, err := contextTouches(ctx, st, writer, opt.Session, opt.Agent)
		if err != nil {
			return "", err
		}
		files = guard.WorkingSet(touches)
		if len(files) == 0 {
			return fmt.Sprintf("git-lossless: nothing archived for session %s.\n", guard.Printable(opt.Session)), nil
		}
	}
	var b strings.Builder
	var recs []gitstore.Record
	nonce := strconv.FormatInt(opt.Now.UnixNano(), 36)
	left := opt.Budget
	for i, f := range files {
		abs := absPath(st, f.Path)
		// Paths in the headers are printable (the content is printed as
		// it is: that is what was asked for).
		name := guard.Printable(f.Path)
		if _, _, denied := st.Deny().Check(abs); denied {
			fmt.Fprintf(&b, "=== %s: excluded by the deny list; content not shown\n\n", name)
			continue
		}
		// A git directory's files (config with remote credentials) are
		// no version of the project: never shown, never recorded.
		if why, internal := st.GitInternal(ctx, abs); internal {
			fmt.Fprintf(&b, "=== %s: refused, %s; content not shown\n\n", name, guard.Printable(why))
			continue
		}
		state, data := diskState(st, f)
		if data == nil {
			fmt.Fprintf(&b, "=== %s: %s; nothing to show\n\n", name, state)
			continue
		}
		note := string(state)
		if f.Touches == 0 {
			note = "not in the archive for this context"
		}
		text := string(data)
		view := "full"
		if len(text) > left {
			cut := strings.LastIndexByte(text[:max(left, 0)], '\n') + 1
			text = text[:cut]
			view = fmt.Sprintf("lines:1-%d", strings.Count(text, "\n"))
		}
		if text == "" && len(data) > 0 {
			fmt.Fprintf(&b, "=== %s: %s; over the budget, not shown (restore it alone with --files)\n\n", name, note)
			continue
		}
		fmt.Fprintf(&b, "=== %s (%s; current content, %s) ===\n%s", name, note, view, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("=== end of " + name + " ===\n\n")
		left -= len(text)
		rec := gitstore.Record{Event: gitstore.Event{TS: opt.Now, Session: opt.Session, Agent: opt.Agent, Sidechain: opt.Agent != "",
			Source: restoreSource(opt.Source), Tool: opt.Tool, Op: gitstore.OpRestore, View: view, Key: "restore:" + nonce + ":" + strconv.Itoa(i),
			Harness: opt.Harness.Name()}, File: abs,
			Content: []byte(text), HasContent: true}
		rec.SetPath(f.Path)
		// Printed content is evidence for the file, whatever the
		// spelling the model edits it by (see realpath.go).
		setRealPath(&rec, st.RelPath(realFile(abs)))
		if view == "full" {
			setExtra(&rec, "disk_blob", jsonStr(gitstore.BlobID(data)))
		}
		recs = append(recs, rec)
	}
	if len(recs) > 0 && opt.Session != "" {
		if _, err := st.Append(ctx, writer, recs); err != nil {
			return "", fmt.Errorf("record restore: %w", err)
		}
	}
	return b.String(), nil
}

func restoreSource(s string) string {
	if s == "" {
		return "cli"
	}
	return s
}
