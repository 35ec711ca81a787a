package hooks

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/shellread"
)

// shellRecord is the record of a shell call's result when the call is a
// read of one file (hooks/shellread says which commands are, and proves
// the output): op read, view full or lines:A-B, key the call id, extra
// "via":"shell" (and "trimmed" when the harness dropped blank edge
// lines), "disk_blob" and "real_path" as for a read tool's result. A
// deny-listed file is recorded as accessed, without content, whatever the
// output: it is never read (the sweep keeps the call's spans out of the
// archive through the same path, see the adapters' transcript readers).
// Anything else is no record: the call stays a span.
func (h *handler) shellRecord(ctx context.Context) (rec gitstore.Record, ok bool) {
	sh := h.c.Shell
	if sh == nil {
		return rec, false
	}
	r, err := shellread.Parse(sh.Command)
	if err != nil {
		return rec, false
	}
	dir := sh.Dir
	if dir == "" {
		dir = h.c.Cwd
	}
	name := r.Resolve(dir)
	if !filepath.IsAbs(name) {
		return rec, false
	}
	abs := filepath.Clean(name)
	rec = gitstore.Record{Event: h.baseEvent(gitstore.OpRead), File: abs}
	rec.SetPath(h.st.RelPath(abs))
	setRealPath(&rec, h.st.RelPath(realFile(abs)))
	setExtra(&rec, "via", jsonStr("shell"))
	_, _, denied := h.st.Deny().Check(abs)
	if !denied && name != abs {
		_, _, denied = h.st.Deny().Check(name)
	}
	if denied {
		rec.Excluded = true // never read, never archived
		return rec, true
	}
	if !sh.HasOutput {
		return rec, false
	}
	disk, err := shellread.ReadFile(ctx, name)
	if err != nil {
		return rec, false
	}
	seen, err := shellread.Match(r, []byte(sh.Output), disk, sh.Shown)
	if err != nil {
		return rec, false
	}
	rec.Content, rec.HasContent = append([]byte(nil), seen.Content...), true
	rec.View = seen.View()
	setExtra(&rec, "disk_blob", jsonStr(gitstore.BlobID(disk)))
	if seen.Trimmed {
		setExtra(&rec, "trimmed", json.RawMessage("true"))
	}
	return rec, true
}
