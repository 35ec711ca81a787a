package guard

import (
	"sort"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Touch is one archived access of a file by a context, as the working set
// sees it.
type Touch struct {
	Path     string
	TS       time.Time
	Op       gitstore.Op // read, write, edit, attach, restore
	Blob     string
	DiskBlob string
	Partial  bool
	View     string
	Excluded bool
}

// FileState is one file of a working set.
type FileState struct {
	Path     string
	Edited   bool // the context wrote or edited it
	Touches  int
	Last     time.Time
	Latest   Touch // the latest access
	Excluded bool
}

// Disk classifies a working-set file against the disk now.
type Disk string

const (
	DiskUnchanged Disk = "unchanged since you saw it"
	DiskChanged   Disk = "changed since you saw it"
	DiskDeleted   Disk = "deleted"
	DiskExcluded  Disk = "excluded (deny list: content never archived)"
	DiskPartial   Disk = "seen partially"
	DiskUnknown   Disk = "seen without content"
)

// State says how the file on disk relates to what the context last saw.
// exists and diskBlob describe the file now.
func (f FileState) State(exists bool, diskBlob string) Disk {
	switch {
	case !exists:
		return DiskDeleted
	case f.Excluded:
		return DiskExcluded
	case f.Latest.Partial:
		return DiskPartial
	case f.Latest.Blob == "" && f.Latest.DiskBlob == "":
		return DiskUnknown
	case diskBlob == f.Latest.Blob || diskBlob == f.Latest.DiskBlob:
		return DiskUnchanged
	}
	return DiskChanged
}

// WorkingSet ranks the files a context touched: files it edited or wrote
// first, then by number of touches, then most recent first; ties by path
// so the order is stable.
func WorkingSet(touches []Touch) []FileState {
	by := map[string]*FileState{}
	for _, t := range touches {
		if t.Path == "" {
			continue
		}
		f := by[t.Path]
		if f == nil {
			f = &FileState{Path: t.Path}
			by[t.Path] = f
		}
		f.Touches++
		if t.Op == gitstore.OpEdit || t.Op == gitstore.OpWrite {
			f.Edited = true
		}
		if t.Excluded {
			f.Excluded = true
		}
		if f.Touches == 1 || !t.TS.Before(f.Last) {
			f.Last = t.TS
			f.Latest = t
		}
	}
	out := make([]FileState, 0, len(by))
	for _, f := range by {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Edited != b.Edited {
			return a.Edited
		}
		if a.Touches != b.Touches {
			return a.Touches > b.Touches
		}
		if !a.Last.Equal(b.Last) {
			return a.Last.After(b.Last)
		}
		return a.Path < b.Path
	})
	return out
}
