package recall

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// FileVersion is one version of a file a context saw (read) or wrote.
type FileVersion struct {
	Writer  string    `json:"writer"`
	Seq     int64     `json:"seq"`
	TS      time.Time `json:"ts"`
	Session string    `json:"session,omitempty"`
	Agent   string    `json:"agent,omitempty"`
	// Harness is the agent harness of the context (gitstore.HarnessOf);
	// "" for none.
	Harness string      `json:"harness,omitempty"`
	Op      gitstore.Op `json:"op"`
	Tool    string      `json:"tool,omitempty"`
	View    string      `json:"view,omitempty"`
	Blob    string      `json:"blob,omitempty"`
	Bytes   int64       `json:"bytes"`
	// State compares the version with the file on disk now: "current"
	// (the same bytes), "changed", "gone" (no such file), "excluded" (the
	// path is on the deny list: no content was archived), or "unknown"
	// (the file cannot be read, or the archive has no work tree).
	State string `json:"state"`
	// Current is State == "current".
	Current bool `json:"current"`
}

// Version states.
const (
	StateCurrent  = "current"
	StateChanged  = "changed"
	StateGone     = "gone"
	StateExcluded = "excluded"
	StateUnknown  = "unknown"
)

// String is the version as one line.
func (v FileVersion) String() string {
	who := v.Session
	if who == "" {
		who = "(no session)"
	}
	if v.Agent != "" {
		who += " agent " + v.Agent
	}
	if v.Harness != "" {
		who += " (" + v.Harness + ")"
	}
	view := ""
	if v.View != "" && v.View != "full" {
		view = " " + v.View
	}
	blob := "-"
	if v.Blob != "" {
		blob = v.Blob[:min(12, len(v.Blob))]
	}
	return fmt.Sprintf("%s  %s#%d  %s  %s%s  %s  %s", v.TS.UTC().Format("2006-01-02 15:04:05"), v.Writer, v.Seq, who, v.Op, view, blob, v.State)
}

// FileHistory returns the versions of a file that the contexts saw, oldest
// first, each compared with the file on disk now. path is relative to the
// work tree's top (as events record it) or absolute; session, when set,
// keeps one session's versions.
func (ix *Index) FileHistory(ctx context.Context, p string, session string) ([]FileVersion, error) {
	defer runtime.KeepAlive(ix)
	defer ix.damaged(ctx)
	if p == "" {
		return nil, errors.New("recall: file history: empty path")
	}
	rel := ix.recordedPath(p)
	var out []FileVersion
	for _, s := range ix.segs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pi, ok := s.findString(rel)
		if !ok {
			continue
		}
		ki, ok := s.findString(KindFile)
		if !ok {
			continue
		}
		for d := range s.nDocs {
			if !s.isLive(d) {
				continue
			}
			r := s.rec(d)
			if r.Path != pi || r.Kind != ki {
				continue
			}
			m := s.meta(d)
			if session != "" && m.Session != session {
				continue
			}
			out = append(out, FileVersion{Writer: m.Writer, Seq: m.Seq, TS: time.Unix(0, m.TS).UTC(), Session: m.Session,
				Agent: m.Agent, Harness: gitstore.HarnessOf(m.Harness, m.Writer, ix.opt.HarnessOf), Op: m.Op, Tool: m.Tool, View: m.View, Blob: blobHex(&m), Bytes: m.Bytes})
		}
	}
	slices.SortFunc(out, func(a, b FileVersion) int {
		if c := a.TS.Compare(b.TS); c != 0 {
			return c
		}
		if c := strings.Compare(a.Writer, b.Writer); c != 0 {
			return c
		}
		return int(a.Seq - b.Seq)
	})
	disk, state := ix.diskBlob(rel)
	for i := range out {
		v := &out[i]
		switch {
		case v.Blob == "":
			v.State = StateExcluded
		case state != "":
			v.State = state
		case v.Blob == disk:
			v.State = StateCurrent
		default:
			v.State = StateChanged
		}
		v.Current = v.State == StateCurrent
	}
	return out, nil
}

// recordedPath returns p as events record it: relative to the work
// tree's top, slash-separated, when it is inside it.
func (ix *Index) recordedPath(p string) string {
	if filepath.IsAbs(p) {
		return ix.st.RelPath(p)
	}
	return strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "./")
}

// diskBlob returns the git blob id of the file at rel now, or the state
// every version has when there is none to compare with.
func (ix *Index) diskBlob(rel string) (blob, state string) {
	abs := rel
	if !filepath.IsAbs(rel) {
		wt := ix.st.Location().WorkTree
		if wt == "" {
			return "", StateUnknown
		}
		abs = filepath.Join(wt, filepath.FromSlash(rel))
	}
	data, err := os.ReadFile(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", StateGone
	case err != nil:
		return "", StateUnknown
	}
	return gitstore.BlobID(data), ""
}
