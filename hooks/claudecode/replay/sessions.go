package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
)

// Session is one Claude Code session on disk: its main transcript
// (<projects>/<slug>/<session>.jsonl) and its subagents' transcripts
// (<session>/subagents/agent-*.jsonl), which Claude Code keeps beside it.
type Session struct {
	ID          string   // the main transcript's name without .jsonl
	Main        string   // absolute path of the main transcript
	Transcripts []string // Main, then the subagents' in name order
}

// newSession lists the transcripts of the session whose main transcript
// is main (absolute).
func newSession(main string) (Session, error) {
	s := Session{ID: strings.TrimSuffix(filepath.Base(main), ".jsonl"), Main: main, Transcripts: []string{main}}
	subs, err := filepath.Glob(filepath.Join(strings.TrimSuffix(main, ".jsonl"), "subagents", "agent-*.jsonl"))
	if err != nil {
		return s, err
	}
	sort.Strings(subs)
	for _, p := range subs {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			s.Transcripts = append(s.Transcripts, p)
		}
	}
	return s, nil
}

// mainOf returns the main transcript of the session a transcript belongs
// to: the transcript itself, or for <session>/subagents/agent-<id>.jsonl
// the <session>.jsonl beside the session directory.
func mainOf(abs string) string {
	dir := filepath.Dir(abs)
	if strings.HasPrefix(filepath.Base(abs), "agent-") && filepath.Base(dir) == "subagents" {
		sessDir := filepath.Dir(dir)
		return sessDir + ".jsonl"
	}
	return abs
}

// FindSessions turns arguments into sessions: a transcript file names its
// session (a subagent's transcript names its parent's), a directory is
// searched for main transcripts at any depth (a Claude Code projects
// directory, one project's directory, a copy of either), subagent
// directories excepted. Each session is listed once, in path order. A
// subagent transcript whose main transcript is missing is an error: the
// session cannot be swept as Claude Code wrote it.
func FindSessions(args []string) ([]Session, error) {
	mains := map[string]bool{}
	for _, a := range args {
		abs, err := filepath.Abs(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if !strings.HasSuffix(abs, ".jsonl") {
				return nil, fmt.Errorf("%s: not a transcript (.jsonl) nor a directory", a)
			}
			m := mainOf(abs)
			if _, err := os.Stat(m); err != nil {
				return nil, fmt.Errorf("%s: its session's main transcript: %w", a, err)
			}
			mains[m] = true
			continue
		}
		err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "subagents" && p != abs {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".jsonl") && d.Type().IsRegular() {
				mains[p] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
	}
	return sessionsOf(mains)
}

func sessionsOf(mains map[string]bool) ([]Session, error) {
	paths := make([]string, 0, len(mains))
	for m := range mains {
		paths = append(paths, m)
	}
	sort.Strings(paths)
	out := make([]Session, 0, len(paths))
	for _, m := range paths {
		s, err := newSession(m)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ArchivedSessions lists the sessions this repository's sweeps have read:
// the transcripts its sweep cursors name (hooks.CursorFile), where they
// still exist. Sessions archived by hooks alone, whose transcripts no
// sweep has read, are not found this way; name their transcripts.
func ArchivedSessions(ctx context.Context, st *gitstore.Store) ([]Session, error) {
	dir, err := st.StateDir(ctx, hooks.CursorDir(claudecode.New()))
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	mains := map[string]bool{}
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var c struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(b, &c) != nil || !filepath.IsAbs(c.Path) {
			continue
		}
		m := mainOf(c.Path)
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
			mains[m] = true
		}
	}
	return sessionsOf(mains)
}

// Archive sweeps each session into st (hooks.SweepSession: from each
// transcript's cursor, deduplicated by key, so archiving what is archived
// already adds nothing) and returns what the sweeps did. opt is passed on.
func Archive(ctx context.Context, st *gitstore.Store, sessions []Session, opt hooks.SweepOptions) (hooks.SweepStats, error) {
	var total hooks.SweepStats
	for _, s := range sessions {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		stats, err := hooks.SweepSession(ctx, st, claudecode.New(), s.Main, opt)
		total.Transcripts += stats.Transcripts
		total.Lines += stats.Lines
		total.Bytes += stats.Bytes
		total.Records += stats.Records
		total.Appended += stats.Appended
		total.Deduped += stats.Deduped
		if err != nil {
			return total, fmt.Errorf("archive session %s: %w", s.ID, err)
		}
	}
	return total, nil
}
