package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrRefChanged is returned by a compare-and-swap whose expected old value
// no longer holds.
var ErrRefChanged = errors.New("ref changed concurrently")

// ErrLocked is returned when a ref's lock could not be taken in time.
var ErrLocked = errors.New("ref is locked")

// refStore reads and updates refs with C git's own lock protocol, so that it
// interoperates with concurrent git processes:
//
//  1. create <ref>.lock with O_CREAT|O_EXCL (only one holder at a time);
//  2. read the current value (loose file, else packed-refs) and compare it
//     with the expected old value while holding the lock;
//  3. write the new value into the lock file, fsync it;
//  4. rename the lock file over <ref>.
//
// Readers that take no lock (C git, us) therefore only ever see the old or
// the new complete file, never an empty or half-written one. go-git's
// CheckAndSetReference truncates the ref in place and is not used.
//
// Before the value is written, the lock file holds "lossless-pid <pid>", so
// a lock left by a crashed git-lossless process is recognised at once as
// stale (its process is gone). A lock of anyone else is judged stale only
// by age (StaleLockAge).
type refStore struct {
	gitDir   string // common dir: refs and packed-refs live here
	fsync    bool
	staleAge time.Duration
	warn     func(string)
}

// StaleLockAge is how old a foreign lock must be before we remove it: far
// longer than any git process holds a ref lock (milliseconds).
const StaleLockAge = 30 * time.Second

const pidPrefix = "lossless-pid "

func (r *refStore) path(name string) string {
	return filepath.Join(r.gitDir, filepath.FromSlash(name))
}

// read returns a ref's value ("" when it does not exist).
func (r *refStore) read(name string) (string, error) {
	b, err := os.ReadFile(r.path(name))
	switch {
	case err == nil:
		v := strings.TrimSpace(string(b))
		if strings.HasPrefix(v, "ref: ") {
			return "", fmt.Errorf("ref %s is symbolic", name)
		}
		if !isHexID(v) {
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

func isHexID(s string) bool {
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

// packed parses packed-refs (missing file: none).
func (r *refStore) packed() (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(r.gitDir, "packed-refs"))
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
		if ok && isHexID(id) {
			out[name] = id
		}
	}
	return out, sc.Err()
}

// list returns every ref under prefix (e.g. "refs/lossless/"), loose values
// overriding packed ones, as git resolves them.
func (r *refStore) list(prefix string) (map[string]string, error) {
	out, err := r.packed()
	if err != nil {
		return nil, err
	}
	for k := range out {
		if !strings.HasPrefix(k, prefix) {
			delete(out, k)
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
		if d.IsDir() || strings.Contains(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(r.gitDir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		v, err := r.read(name)
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
	return out, nil
}

// lock is a held <ref>.lock.
type lock struct {
	r    *refStore
	name string
	f    *os.File
	path string
}

// acquire takes name's lock, waiting (with backoff) while another process
// holds it, removing it when it is stale, until ctx ends.
func (r *refStore) acquire(ctx context.Context, name string) (*lock, error) {
	p := r.path(name) + ".lock"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("create ref dir: %w", err)
	}
	delay := 50 * time.Microsecond
	for {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			if _, err := f.WriteString(pidPrefix + strconv.Itoa(os.Getpid()) + "\n"); err != nil {
				f.Close()
				os.Remove(p)
				return nil, fmt.Errorf("write lock %s: %w", p, err)
			}
			return &lock{r: r, name: name, f: f, path: p}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if stale, why := r.isStale(p); stale {
			if r.removeStale(p) {
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
func (r *refStore) isStale(p string) (bool, string) {
	st, err := os.Stat(p)
	if err != nil {
		return false, ""
	}
	if b, err := os.ReadFile(p); err == nil && bytes.HasPrefix(b, []byte(pidPrefix)) {
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

// removeStale takes a stale lock out of the way by renaming it to a unique
// name first and checking that what was renamed is still stale, so that two
// cleaners racing never delete a lock someone took in between.
func (r *refStore) removeStale(p string) bool {
	aside := fmt.Sprintf("%s.stale-%d-%d", p, os.Getpid(), time.Now().UnixNano())
	if err := os.Rename(p, aside); err != nil {
		return false
	}
	if stale, _ := r.isStale(aside); !stale {
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
// then moves it to new: write into the lock, fsync, rename into place.
// The lock is released either way.
func (l *lock) commit(old, new string) error {
	cur, err := l.r.read(l.name)
	if err != nil {
		l.release()
		return err
	}
	if cur != old {
		l.release()
		return fmt.Errorf("%w: %s is %s, expected %s", ErrRefChanged, l.name, short(cur), short(old))
	}
	if err := l.f.Truncate(0); err != nil {
		l.release()
		return fmt.Errorf("write lock: %w", err)
	}
	if _, err := l.f.WriteAt([]byte(new+"\n"), 0); err != nil {
		l.release()
		return fmt.Errorf("write lock: %w", err)
	}
	if l.r.fsync {
		if err := l.f.Sync(); err != nil {
			l.release()
			return fmt.Errorf("fsync lock: %w", err)
		}
	}
	if err := l.f.Close(); err != nil {
		os.Remove(l.path)
		return fmt.Errorf("close lock: %w", err)
	}
	if err := os.Rename(l.path, l.r.path(l.name)); err != nil {
		os.Remove(l.path)
		return fmt.Errorf("update ref %s: %w", l.name, err)
	}
	return nil
}

func (l *lock) release() {
	l.f.Close()
	os.Remove(l.path)
}

func short(id string) string {
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
func (r *refStore) locks(prefix string) ([]LockInfo, error) {
	var out []LockInfo
	err := filepath.WalkDir(r.path(prefix), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.Contains(d.Name(), ".lock") {
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
