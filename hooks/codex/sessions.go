package codex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Home returns Codex's home directory: $CODEX_HOME, else ~/.codex.
func Home(getenv func(string) string) (string, error) {
	if h := getenv("CODEX_HOME"); h != "" {
		return h, nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("codex home: %w", err)
		}
	}
	return filepath.Join(home, ".codex"), nil
}

// RolloutFile is one rollout found on disk.
type RolloutFile struct {
	Path string
	Size int64
	// Meta is the file's session_meta; when it could not be read
	// (MetaErr), only ID is set, from the file name.
	Meta    SessionMeta
	MetaErr error
}

// Session is a root session and the rollouts that record it: the main
// thread's, and each subagent's (their own contexts).
type Session struct {
	ID        string       // the root session id
	Main      *RolloutFile // nil when only subagent rollouts were found
	Subagents []RolloutFile
}

// Files returns the session's rollouts, main first.
func (s *Session) Files() []RolloutFile {
	var out []RolloutFile
	if s.Main != nil {
		out = append(out, *s.Main)
	}
	return append(out, s.Subagents...)
}

// FindSessions finds the rollouts under home/sessions/YYYY/MM/DD/
// (rollout-*.jsonl), reads each one's session_meta, and groups them by
// root session: a rollout whose meta names a parent thread (or a
// subagent source) is a subagent of its session_id; the others are
// mains. Sessions come oldest first (by their main's start), subagents
// by start. A rollout whose meta cannot be read is a main of the thread
// its file name gives, with MetaErr set; a missing sessions directory is
// no session and no error.
func FindSessions(ctx context.Context, home string) ([]Session, error) {
	root := filepath.Join(home, "sessions")
	var files []RolloutFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && !dateDir(root, path) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), "rollout-") || !strings.HasSuffix(d.Name(), ".jsonl") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, readRolloutFile(path, info.Size()))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("codex sessions in %s: %w", root, err)
	}
	bySession := map[string]*Session{}
	var order []string
	for i := range files {
		f := files[i]
		id := f.Meta.SessionID
		if id == "" {
			id = f.Meta.ID
		}
		s := bySession[id]
		if s == nil {
			s = &Session{ID: id}
			bySession[id] = s
			order = append(order, id)
		}
		if f.Meta.Subagent() || (f.Meta.ID != "" && f.Meta.ID != id) {
			s.Subagents = append(s.Subagents, f)
		} else if s.Main == nil || f.Size > s.Main.Size {
			// Two mains of one thread: a copy; keep the longer.
			s.Main = &f
		}
	}
	out := make([]Session, 0, len(order))
	for _, id := range order {
		s := bySession[id]
		slices.SortFunc(s.Subagents, cmpRollout)
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Session) int {
		fa, fb := a.Files(), b.Files()
		return cmpRollout(fa[0], fb[0])
	})
	return out, nil
}

func cmpRollout(a, b RolloutFile) int {
	if c := a.Meta.Timestamp.Compare(b.Meta.Timestamp); c != 0 {
		return c
	}
	return cmp.Compare(a.Path, b.Path)
}

// dateDir accepts the YYYY, YYYY/MM and YYYY/MM/DD levels under root.
func dateDir(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) > 3 {
		return false
	}
	for i, p := range parts {
		want := 2
		if i == 0 {
			want = 4
		}
		if len(p) != want || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

func readRolloutFile(path string, size int64) RolloutFile {
	rf := RolloutFile{Path: path, Size: size}
	f, err := os.Open(path)
	if err == nil {
		var m *SessionMeta
		m, err = ReadSessionMeta(f)
		f.Close()
		if err == nil {
			rf.Meta = *m
			return rf
		}
	}
	rf.MetaErr = fmt.Errorf("%s: %w", path, err)
	rf.Meta.ID = ThreadIDFromPath(path)
	if rf.Meta.ID == "" {
		rf.Meta.ID = path
	}
	rf.Meta.SessionID = rf.Meta.ID
	return rf
}
