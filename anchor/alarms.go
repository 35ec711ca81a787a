package anchor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Open alarms. A remote check (CheckRemote, and the checkpoint part of
// Sync) and a sync's ref states raise alarms about a remote; each check
// of that remote replaces what the last one left in
//
//	<common>/lossless/anchor/alarms/<remote id>.<source>.json
//
// (source "anchors" or "sync"), and removes the file when it finds
// nothing. So an alarm stays open exactly as long as the remote still
// shows what raised it, and every check of the archive — verify, doctor,
// seal_status, receipt verify, anchor push — reports it meanwhile, offline
// too: an alarm printed once by a sync and then forgotten would let the
// next verify say OK. Deleting the file forgets the alarm (for a remote
// that is gone for good); the evidence files stay.
const (
	alarmsAnchors = "anchors"
	alarmsSync    = "sync"
)

// alarmFile is one remote's open alarms from one source.
type alarmFile struct {
	Remote   string    `json:"remote"`
	URL      string    `json:"url"`
	Checked  time.Time `json:"checked"`
	Findings []Finding `json:"findings"`
}

func alarmsPath(st *gitstore.Store, rid, source string) string {
	return stateDir(st, "alarms", rid+"."+source+".json")
}

// saveAlarms replaces the open alarms of remote rid from source with fs
// (none: the file is removed).
func saveAlarms(st *gitstore.Store, rid, source, remote, url string, fs []Finding, now time.Time) error {
	p := alarmsPath(st, rid, source)
	if len(fs) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(alarmFile{Remote: remote, URL: url, Checked: now.UTC(), Findings: fs}, "", "  ")
	if err != nil {
		return err
	}
	return writeState(p, append(b, '\n'))
}

// OpenAlarms returns the alarms the last check of every remote left open,
// in a stable order. A file that cannot be read is an alarm itself.
func OpenAlarms(st *gitstore.Store) ([]Finding, error) {
	dir := stateDir(st, "alarms")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Finding
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		b, err := os.ReadFile(p)
		var af alarmFile
		if err == nil {
			err = json.Unmarshal(b, &af)
		}
		if err != nil {
			out = append(out, Finding{Kind: KindAlarmsDamaged, Detail: fmt.Sprintf("the open alarms in %s cannot be read (%v): run the remote's check again (git lossless sync, or verify --anchor)", p, err)})
			continue
		}
		for _, f := range af.Findings {
			if f.Remote == "" {
				f.Remote = af.Remote
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// KindAlarmsDamaged: a file of open alarms could not be read.
const KindAlarmsDamaged = "alarms-damaged"
