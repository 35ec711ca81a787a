package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Change is what an install or uninstall does to one of our hooks.
type Change struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Command string `json:"command,omitempty"`
	// Action is "added", "replaced" (an entry of ours with another path,
	// matcher or timeout), "unchanged" or "removed".
	Action string `json:"action"`
}

// Plan is a computed change to one settings file: what it holds,
// what it would hold, and the steps that get there. Nothing is written
// until Apply.
type Plan struct {
	// Path is the file that is read and written, with symlinks resolved
	// (a dotfiles symlink stays a symlink; its target is updated).
	Path string
	// Exists is false when there is no file yet.
	Exists  bool
	Before  []byte
	After   []byte
	Changes []Change
	// RemoveFile is set when applying deletes the file (after its backup)
	// instead of writing After: an MCP config that held nothing but our
	// server, which install created (see PlanMCPUninstall).
	RemoveFile bool
}

// Changed reports whether applying the plan would write anything.
func (p *Plan) Changed() bool {
	if p.RemoveFile {
		return p.Exists
	}
	if !p.Exists {
		return p.After != nil && !bytes.Equal(p.After, p.Before)
	}
	return !bytes.Equal(p.Before, p.After)
}

// PlanInstall reads path and computes the settings with our hooks
// (specs, run by bin).
func PlanInstall(path, bin string, specs []HookSpec) (*Plan, error) {
	return planFile(path, bin, func(path string, doc []byte, bin string) ([]byte, []Change, error) {
		return MergeHooks(path, doc, bin, specs)
	})
}

// PlanUninstall reads path and computes the settings without our hooks.
func PlanUninstall(path, bin string) (*Plan, error) {
	return planFile(path, bin, RemoveHooks)
}

func planFile(path, bin string, f func(string, []byte, string) ([]byte, []Change, error)) (*Plan, error) {
	real, err := resolvePath(path)
	if err != nil {
		return nil, err
	}
	p := &Plan{Path: real}
	b, err := os.ReadFile(real)
	switch {
	case err == nil:
		p.Exists, p.Before = true, b
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("read %s: %w", real, err)
	}
	if p.After, p.Changes, err = f(real, p.Before, bin); err != nil {
		return nil, err
	}
	if !p.Exists && bytes.Equal(p.After, p.Before) {
		p.After = nil // nothing to create
	}
	return p, nil
}

// resolvePath follows a symlinked settings.json to its target, so
// that the atomic rename replaces the file and not the link.
func resolvePath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(abs)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%s is a symlink to a missing file; fix or remove the link", abs)
			}
			return "", fmt.Errorf("resolve %s: %w", abs, err)
		}
		return t, nil
	}
	return abs, nil
}

// Apply writes the plan: first a backup of the current file next to it
// (settings.json.bak-YYYYMMDD-HHMMSS, 0600), then the new settings through
// a temporary file renamed into place (0600; missing directories created
// 0700), so the harness never reads half a file. It refuses when the file
// changed since the plan read it, rather than overwrite someone's edit.
// A RemoveFile plan deletes the file after the backup. It returns the
// backup's path ("" when there was no file to back up).
func (p *Plan) Apply(now time.Time) (backup string, err error) {
	if !p.Changed() {
		return "", nil
	}
	cur, err := os.ReadFile(p.Path)
	switch {
	case err == nil && (!p.Exists || !bytes.Equal(cur, p.Before)):
		return "", fmt.Errorf("%s changed since it was read; run the command again", p.Path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read %s: %w", p.Path, err)
	case err != nil && p.Exists:
		return "", fmt.Errorf("%s was removed since it was read; run the command again", p.Path)
	}
	dir := filepath.Dir(p.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if p.Exists {
		if backup, err = writeBackup(p.Path, p.Before, now); err != nil {
			return "", err
		}
	}
	if p.RemoveFile {
		if err := os.Remove(p.Path); err != nil {
			return backup, fmt.Errorf("remove %s: %w", p.Path, err)
		}
		return backup, nil
	}
	if err := writeAtomic(p.Path, p.After, 0o600); err != nil {
		return backup, err
	}
	return backup, nil
}

// writeBackup writes data to path.bak-<local time>, never overwriting an
// earlier backup (a second one in the same second gets -2, -3, ...).
func writeBackup(path string, data []byte, now time.Time) (string, error) {
	base := path + ".bak-" + now.Format("20060102-150405")
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("back up %s: too many backups named %s*", path, base)
}

// writeAtomic replaces path with data: temp file in the same
// directory, fsync, chmod, rename, then fsync of the directory.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Diff renders the plan as a unified diff of the settings text, with
// three lines of context ("" when nothing changes).
func (p *Plan) Diff() string {
	if !p.Changed() {
		return ""
	}
	from, to, after := p.Path+" (current)", p.Path+" (new)", string(p.After)
	if !p.Exists {
		from = "/dev/null"
	}
	if p.RemoveFile {
		to, after = "/dev/null", ""
	}
	return unifiedLineDiff(from, to, string(p.Before), after, 3)
}

// unifiedLineDiff renders the change from a to b as a unified diff with
// context lines around each hunk, "" when they are equal. The diff is
// go-udiff's (a port of the line diff inside gopls): a maintained
// implementation whose output patch(1) and git apply accept, "\ No newline
// at end of file" markers and CRLF lines included, rather than one of our
// own to keep correct.
func unifiedLineDiff(fromName, toName, a, b string, context int) string {
	d, err := udiff.ToUnified(fromName, toName, a, udiff.Lines(a, b), context)
	if err != nil {
		// ToUnified fails only on edits that do not fit a, and these
		// were computed from a itself.
		panic(fmt.Sprintf("settings: diff of %s: %v", fromName, err))
	}
	return d
}
