package gitobj

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrRefChanged is returned by a compare-and-swap whose expected old value
// no longer holds.
var ErrRefChanged = errors.New("ref changed concurrently")

// ErrLocked is returned when a ref's lock could not be taken in time.
var ErrLocked = errors.New("ref is locked")

// Refs reads and updates refs under C git's own ref lock, so that it
// interoperates with concurrent git processes:
//
//  1. create <ref>.lock exclusively (only one holder at a time), already
//     holding "lossless-pid <pid>": the content is written to a temporary
//     file first, which is then hard-linked to the lock name (link fails
//     when the lock exists, as O_CREAT|O_EXCL does);
//  2. read the current value (loose file, else packed-refs) and compare it
//     with the expected old value while holding the lock;
//  3. write the new value into a temporary file beside the lock, fsync it,
//     and rename it over <ref>;
//  4. remove the lock.
//
// Readers that take no lock (C git, us) therefore only ever see the old or
// the new complete file, never an empty or half-written one; writers that
// take the lock (C git, us) are excluded throughout. go-git's
// CheckAndSetReference truncates the ref in place and is not used.
//
// Unlike C git, the value is not written into the lock itself: the lock
// holds "lossless-pid <pid>" from the moment it exists until it is removed,
// so a lock left by a killed git-lossless process, whatever it was doing,
// is recognised at once as stale (its process is gone). A lock of anyone
// else is judged stale only by age (StaleLockAge). Temporary files are
// named <ref>~<pid>-<n>.lock: git ignores names ending in ".lock", and '~'
// cannot occur in a ref name, so such a file is nobody's lock; one left by
// a killed process is judged by the pid in its name.
type Refs struct {
	gitDir   string // common dir: refs and packed-refs live here
	fsync    bool
	staleAge time.Duration
	warn     func(string)

	// A view (View) refuses every update, and reads the refs covers
	// accepts from over instead of the files.
	readOnly bool
	covers   func(name string) bool
	over     map[string]string

	cache *packedCache // shared by the views of one Refs
}

// View returns a read-only copy of r: every update is refused with
// ErrReadOnly, and a ref name covers accepts reads as over gives it (absent
// when over lacks it) instead of as the files say. A fetch quarantine
// shows through one what the archive's refs would be once its fetch is
// accepted. covers nil: the files as they are.
func (r *Refs) View(covers func(name string) bool, over map[string]string) *Refs {
	return &Refs{gitDir: r.gitDir, fsync: r.fsync, staleAge: r.staleAge, warn: r.warn,
		readOnly: true, covers: covers, over: over, cache: r.cache}
}

// NewRefs returns the refs of the repository whose common dir is gitDir.
// fsync makes every ref update durable before it is visible; staleAge
// overrides StaleLockAge when not zero; warn receives one-line notices
// (a stale lock removed, a corrupt ref skipped).
func NewRefs(gitDir string, fsync bool, staleAge time.Duration, warn func(string)) *Refs {
	if warn == nil {
		warn = func(string) {}
	}
	return &Refs{gitDir: gitDir, fsync: fsync, staleAge: staleAge, warn: warn, cache: new(packedCache)}
}

// StaleLockAge is how old a foreign lock must be before we remove it: far
// longer than any git process holds a ref lock (milliseconds).
const StaleLockAge = 30 * time.Second

const pidPrefix = "lossless-pid "

// tempSeq numbers this process's temporary files under refs.
var tempSeq atomic.Int64

// tempRe matches a temporary file's name and captures its pid. Compiled
// on first use: every hook process starts this binary, and most never
// judge a lock.
var tempRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`~([0-9]+)-[0-9]+\.lock$`) })

// writeTemp writes body to a fresh temporary file beside the ref name
// (fsynced when sync is set) and returns its path.
func (r *Refs) writeTemp(name string, body []byte, sync bool) (string, error) {
	p := fmt.Sprintf("%s~%d-%d.lock", r.path(name), os.Getpid(), tempSeq.Add(1))
	f, err := OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(body)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return "", err
	}
	return p, nil
}

func (r *Refs) path(name string) string {
	return filepath.Join(r.gitDir, filepath.FromSlash(name))
}

// read returns a ref's value ("" when it does not exist).
func (r *Refs) Read(name string) (string, error) {
	if r.covers != nil && r.covers(name) {
		return r.over[name], nil
	}
	b, err := ReadFile(r.path(name))
	switch {
	case err == nil:
		v := strings.TrimSpace(string(b))
		if strings.HasPrefix(v, "ref: ") {
			return "", fmt.Errorf("ref %s is symbolic", name)
		}
		if !IsID(v) {
			return "", fmt.Errorf("ref %s is corrupt (%q); remove it or restore it from a backup", name, v)
		}
		return v, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR):
		packed, err := r.packed()
		if err != nil {
			return "", err
		}
		return packed[name], nil
	default:
		return "", fmt.Errorf("read ref %s: %w", name, err)
	}
}

func IsID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Packed parses packed-refs (missing file: none) into a map the caller
// may change.
func (r *Refs) Packed() (map[string]string, error) {
	m, err := r.packed()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// packedCache is the last parse of packed-refs, valid while the file has
// the same inode, size and modification time: every writer (git, and
// rewritePacked) replaces the file by a rename, so a new content is a new
// inode. An archive with tens of thousands of tracking refs would
// otherwise parse megabytes on every ref read that misses a loose file.
type packedCache struct {
	mu    sync.Mutex
	ino   uint64
	size  int64
	mtime time.Time
	refs  map[string]string
}

// packed returns packed-refs parsed, shared: callers must not change it.
func (r *Refs) packed() (map[string]string, error) {
	p := filepath.Join(r.gitDir, "packed-refs")
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	ino := fileIno(st)
	c := r.cache
	c.mu.Lock()
	if c.refs != nil && ino != 0 && c.ino == ino && c.size == st.Size() && c.mtime.Equal(st.ModTime()) {
		m := c.refs
		c.mu.Unlock()
		return m, nil
	}
	c.mu.Unlock()
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		id, name, ok := strings.Cut(line, " ")
		if ok && IsID(id) {
			out[name] = id
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// Cached only when the file read is the one stat'ed (same size; a
	// rename in between leaves a new inode the next stat sees).
	if st2, err := os.Stat(p); err == nil && fileIno(st2) == ino && st2.Size() == int64(len(b)) && st2.ModTime().Equal(st.ModTime()) {
		c.mu.Lock()
		c.ino, c.size, c.mtime, c.refs = ino, st.Size(), st.ModTime(), out
		c.mu.Unlock()
	}
	return out, nil
}

// list returns every ref under prefix (e.g. "refs/lossless/"), loose values
// overriding packed ones, as git resolves them.
func (r *Refs) List(prefix string) (map[string]string, error) {
	packed, err := r.packed()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range packed {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	root := r.path(prefix)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		// Lock and temporary files end in ".lock" (git's own rule); a
		// writer may well be named "x.lockfile" or "a.lock.b".
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(r.gitDir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		v, err := r.Read(name)
		if err != nil {
			r.warn(err.Error())
			return nil
		}
		if v != "" {
			out[name] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	if r.covers != nil {
		for k := range out {
			if r.covers(k) {
				delete(out, k)
			}
		}
		for k, v := range r.over {
			if strings.HasPrefix(k, prefix) && v != "" && r.covers(k) {
				out[k] = v
			}
		}
	}
	return out, nil
}

// lock is a held <ref>.lock.
type Lock struct {
	r    *Refs
	name string
	path string
}

// acquire takes name's lock, waiting (with backoff) while another process
// holds it, removing it when it is stale, until ctx ends.
func (r *Refs) Acquire(ctx context.Context, name string) (*Lock, error) {
	if r.readOnly {
		return nil, fmt.Errorf("lock %s: %w", name, ErrReadOnly)
	}
	p := r.path(name) + ".lock"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("create ref dir: %w", err)
	}
	pidLine := []byte(pidPrefix + strconv.Itoa(os.Getpid()) + "\n")
	tmp, err := r.writeTemp(name, pidLine, false)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	defer os.Remove(tmp)
	delay := 50 * time.Microsecond
	for {
		err := os.Link(tmp, p)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			// No hard links here: create and fill the lock in two steps.
			var f *os.File
			if f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
				_, err = f.Write(pidLine)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					os.Remove(p)
					return nil, fmt.Errorf("write lock %s: %w", p, err)
				}
			}
		}
		if err == nil {
			return &Lock{r: r, name: name, path: p}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if stale, why := r.isStale(p); stale {
			if r.RemoveStale(p) {
				r.warn(fmt.Sprintf("removed stale lock %s (%s)", p, why))
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s held by another process (%v); if no git process is running, remove it", ErrLocked, p, ctx.Err())
		case <-time.After(delay):
		}
		if delay < 5*time.Millisecond {
			delay *= 2
		}
	}
}

// isStale judges a lock file left behind: ours with a dead pid, or anyone's
// older than staleAge.
func (r *Refs) isStale(p string) (bool, string) { return r.staleAs(p, p) }

// staleAs judges the file at p as if it had the name name (a lock moved
// aside is judged as the lock it was).
func (r *Refs) staleAs(p, name string) (bool, string) {
	st, err := os.Stat(p)
	if err != nil {
		return false, ""
	}
	if m := tempRe().FindStringSubmatch(filepath.Base(name)); m != nil {
		// Our temporary file: its pid is in its name.
		if pid, err := strconv.Atoi(m[1]); err == nil && pid > 0 && !processAlive(pid) {
			return true, fmt.Sprintf("temporary file of git-lossless process %d, which is gone", pid)
		}
	} else if b, err := os.ReadFile(p); err == nil && bytes.HasPrefix(b, []byte(pidPrefix)) {
		pid, err := strconv.Atoi(strings.TrimSpace(string(b[len(pidPrefix):])))
		if err == nil && pid > 0 && !processAlive(pid) {
			return true, fmt.Sprintf("its git-lossless process %d is gone", pid)
		}
	}
	age := r.staleAge
	if age == 0 {
		age = StaleLockAge
	}
	if d := time.Since(st.ModTime()); d > age {
		return true, fmt.Sprintf("untouched for %s", d.Round(time.Second))
	}
	return false, ""
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RemoveStale takes a stale lock out of the way by renaming it to a unique
// name first and checking that what was renamed is still stale, so that two
// cleaners racing never delete a lock someone took in between.
func (r *Refs) RemoveStale(p string) bool {
	if r.readOnly {
		return false
	}
	// The aside name ends in ".lock" so that, should we die before removing
	// it, git never takes it for a ref (a name such as x.lock.stale-1 would
	// be a broken ref to git: fsck fails).
	aside := fmt.Sprintf("%s~stale-%d-%d.lock", strings.TrimSuffix(p, ".lock"), os.Getpid(), time.Now().UnixNano())
	if err := os.Rename(p, aside); err != nil {
		return false
	}
	if stale, _ := r.staleAs(aside, p); !stale {
		// Someone took the lock between our check and the rename: give it
		// back if the name is still free (it normally is).
		if err := os.Link(aside, p); err == nil {
			os.Remove(aside)
			return false
		}
	}
	os.Remove(aside)
	return true
}

// commit compares name's current value with old ("" = must not exist),
// then moves it to new: write a temporary file, fsync, rename it over the
// ref while the lock is held. The lock is released either way.
func (l *Lock) Commit(old, new string) error {
	defer l.Release()
	cur, err := l.r.Read(l.name)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("%w: %s is %s, expected %s", ErrRefChanged, l.name, Short(cur), Short(old))
	}
	tmp, err := l.r.writeTemp(l.name, []byte(new+"\n"), l.r.fsync)
	if err != nil {
		return fmt.Errorf("write ref %s: %w", l.name, err)
	}
	if err := os.Rename(tmp, l.r.path(l.name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("update ref %s: %w", l.name, err)
	}
	return nil
}

func (l *Lock) Release() {
	os.Remove(l.path)
}

// Delete compares name's current value with old (which must be an id),
// then deletes the ref, the lock held throughout and released either way.
// As git does, the packed entry goes first (under packed-refs.lock, the
// file rewritten by rename) and the loose file last, so that a reader
// never sees an older packed value through a missing loose file.
func (l *Lock) Delete(ctx context.Context, old string) error {
	defer l.Release()
	if !IsID(old) {
		return fmt.Errorf("delete %s: expected value %q is not an object id", l.name, old)
	}
	cur, err := l.r.Read(l.name)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("%w: %s is %s, expected %s", ErrRefChanged, l.name, Short(cur), Short(old))
	}
	packed, err := l.r.packed()
	if err != nil {
		return err
	}
	if _, ok := packed[l.name]; ok {
		if err := l.r.removePacked(ctx, l.name); err != nil {
			return fmt.Errorf("delete %s: %w", l.name, err)
		}
	}
	if err := os.Remove(l.r.path(l.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", l.name, err)
	}
	// Empty directories left above it go too (git removes them as well),
	// up to the top of refs/.
	stop := filepath.Join(l.r.gitDir, "refs")
	for d := filepath.Dir(l.r.path(l.name)); d != stop && strings.HasPrefix(d, stop+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}

// removePacked rewrites packed-refs without name (and its peeled line),
// under packed-refs.lock.
func (r *Refs) removePacked(ctx context.Context, name string) error {
	lk, err := r.Acquire(ctx, "packed-refs")
	if err != nil {
		return err
	}
	defer lk.Release()
	return r.rewritePacked(map[string]string{name: ""}, nil)
}

func Short(id string) string {
	if id == "" {
		return "(none)"
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// LockInfo describes a lock file found under refs/lossless.
type LockInfo struct {
	Path  string
	Age   time.Duration
	Stale bool
	Why   string
}

// locks lists lock files under prefix, judging each.
func (r *Refs) Locks(prefix string) ([]LockInfo, error) {
	var out []LockInfo
	err := filepath.WalkDir(r.path(prefix), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil
		}
		stale, why := r.isStale(p)
		out = append(out, LockInfo{Path: p, Age: time.Since(st.ModTime()), Stale: stale, Why: why})
		return nil
	})
	return out, err
}
