package gitobj

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// ErrObjectMissing is returned when an object is in neither the loose
// store nor any pack.
var ErrObjectMissing = errors.New("object not found")

// ErrObjectCorrupt is returned when an object file exists but does not
// inflate to a well-formed object.
var ErrObjectCorrupt = errors.New("object corrupt")

// ErrReadOnly is returned by every write to a read-only DB or Refs (a
// view, such as the one of a fetch quarantine, that must change nothing).
var ErrReadOnly = errors.New("read-only view: writes are refused")

// DB writes loose objects itself, so that it can fsync them (go-git
// never does), and reads loose objects itself, so that a fresh process that
// only needs the writer's head commit never loads a pack index. Packed
// objects are read by packReader (packread.go), which loads an index on
// first need and reads packs from any number of goroutines at once.
type DB struct {
	dir   string // <common dir>/objects
	fsync bool

	// native reads packs (versions 1 and 2 of the index, whole and
	// delta entries).
	native *packReader

	// readOnly refuses every write (ErrReadOnly).
	readOnly bool

	// alts are the object directories objects/info/alternates names
	// (alternates.go), read after the DB's own; loaded on first need.
	altOnce sync.Once
	alts    []*DB
}

// NewDB returns the object store of the repository whose common dir is
// commonDir: its own objects directory, then (for reading) the ones its
// objects/info/alternates names.
func NewDB(commonDir string, fsync bool) *DB {
	dir := filepath.Join(commonDir, "objects")
	return &DB{dir: dir, fsync: fsync, native: newPackReader(dir)}
}

// NewReadOnlyDB is NewDB whose writes are all refused with ErrReadOnly.
func NewReadOnlyDB(commonDir string) *DB {
	db := NewDB(commonDir, false)
	db.readOnly = true
	return db
}

// Dir returns the DB's own objects directory.
func (db *DB) Dir() string { return db.dir }

// ObjectID returns the git id of an object of the given type and body.
func ObjectID(typ string, body []byte) string {
	h := sha1.New()
	h.Write([]byte(typ + " " + strconv.Itoa(len(body)) + "\x00"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// BlobID returns the git blob sha1 of data, as `git hash-object` prints it.
func BlobID(data []byte) string { return ObjectID("blob", data) }

func (db *DB) LoosePath(id string) string {
	return filepath.Join(db.dir, id[:2], id[2:])
}

// Sink receives the objects of an append: LooseSink writes each as a
// loose object, PackSink collects them into one packfile. Callers that
// encode through a Sink produce byte-identical objects either way.
type Sink interface {
	// Put stores an object (unless the sink knows it exists) and returns
	// its id. The sink may keep body until it is finished: callers must not
	// modify it afterwards.
	Put(typ string, body []byte) (string, error)
}

// LooseSink writes loose objects into DB, collecting in Pending the paths
// still to fsync (DB.Flush).
type LooseSink struct {
	DB      *DB
	Pending *[]string
}

// Put writes a loose object.
func (l LooseSink) Put(typ string, body []byte) (string, error) {
	return l.DB.Write(typ, body, l.Pending)
}

// write stores an object as a loose file unless one exists already (loose
// or packed: then nothing is written), and returns its id. The file is
// written to a temporary name and linked into place, as git does, so a
// crash never leaves a partial object under a valid name. When fsync is on
// the caller must call flush before making the object reachable.
func (db *DB) Write(typ string, body []byte, pending *[]string) (string, error) {
	if db.readOnly {
		return "", ErrReadOnly
	}
	id := ObjectID(typ, body)
	path := db.LoosePath(id)
	if _, err := os.Stat(path); err == nil {
		return id, nil
	}
	if db.HasPacked(id) {
		return id, nil
	}
	var buf bytes.Buffer
	zw := getZlibWriter(&buf) // a new one allocates ~1 MB: pooled
	zw.Write([]byte(typ + " " + strconv.Itoa(len(body)) + "\x00"))
	zw.Write(body)
	err := zw.Close()
	zlibWriters.Put(zw)
	if err != nil {
		return "", fmt.Errorf("compress object: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := CreateTemp(dir, "tmp_obj_", 0o444)
	if errors.Is(err, fs.ErrNotExist) { // the fan-out directory is new
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create object dir: %w", err)
		}
		tmp, err = CreateTemp(dir, "tmp_obj_", 0o444)
	}
	if err != nil {
		return "", fmt.Errorf("create object: %w", err)
	}
	tmpName := tmp.Name()
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmpName)
		return "", fmt.Errorf("write object %s: %w", id, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpName)
		return "", fmt.Errorf("close object %s: %w", id, err)
	}
	// link, not rename: an existing object (another process won the race)
	// is kept as it is, as git does.
	if err := os.Link(tmpName, path); err != nil && !errors.Is(err, fs.ErrExist) {
		os.Remove(tmpName)
		return "", fmt.Errorf("store object %s: %w", id, err)
	}
	os.Remove(tmpName)
	if pending != nil {
		*pending = append(*pending, path)
	}
	return id, nil
}

var zlibWriters sync.Pool

func getZlibWriter(w io.Writer) *zlib.Writer {
	if zw, ok := zlibWriters.Get().(*zlib.Writer); ok {
		zw.Reset(w)
		return zw
	}
	zw, _ := zlib.NewWriterLevel(w, zlib.BestSpeed)
	return zw
}

// flush makes the named object files durable, in parallel: each fsync on
// this kind of disk costs ~0.5 ms, and the kernel commits concurrent ones
// together. A no-op with fsync off.
func (db *DB) Flush(paths []string) error {
	if !db.fsync || len(paths) == 0 {
		return nil
	}
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := OpenFile(p, os.O_RDONLY, 0)
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = f.Sync()
			f.Close()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fsync objects: %w", err)
	}
	return nil
}

// Read returns an object's type and body: from the DB's own directory,
// else from its alternates, in order.
func (db *DB) Read(id string) (string, []byte, error) {
	typ, body, err := db.readOwn(id)
	if err == nil || !errors.Is(err, ErrObjectMissing) || len(id) != 40 {
		return typ, body, err
	}
	for _, alt := range db.alternates() {
		t, b, aerr := alt.readOwn(id)
		if aerr == nil {
			return t, b, nil
		}
		if !errors.Is(aerr, ErrObjectMissing) {
			return "", nil, aerr
		}
	}
	return "", nil, err
}

// readOwn reads id from the DB's own directory only.
func (db *DB) readOwn(id string) (string, []byte, error) {
	if len(id) != 40 {
		return "", nil, fmt.Errorf("object id %q: %w", id, ErrObjectMissing)
	}
	// Once pack indexes are loaded, a lookup there costs less than a
	// failed open: read from a pack first when it is known to hold id.
	if typ, body, ok := db.native.readLoaded(id); ok {
		return typ, body, nil
	}
	raw, err := ReadFile(db.LoosePath(id))
	if err == nil {
		typ, body, err := inflateLoose(raw)
		if err != nil {
			return "", nil, fmt.Errorf("object %s: %w: %v", id, ErrObjectCorrupt, err)
		}
		return typ, body, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("read object %s: %w", id, err)
	}
	return db.readPacked(id)
}

func inflateLoose(raw []byte) (string, []byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return "", nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return "", nil, err
	}
	nul := bytes.IndexByte(data, 0)
	if nul < 0 {
		return "", nil, errors.New("no header")
	}
	hdr := string(data[:nul])
	sp := bytes.IndexByte(data[:nul], ' ')
	if sp < 0 {
		return "", nil, errors.New("bad header")
	}
	n, err := strconv.Atoi(hdr[sp+1:])
	if err != nil || n != len(data)-nul-1 {
		return "", nil, errors.New("bad length")
	}
	return hdr[:sp], data[nul+1:], nil
}

// HasPacked reports whether a pack holds id. It loads pack indexes, so it
// is only asked after the cheap loose check failed. A pack whose index
// cannot be read counts as absent, as it does for git: the worst outcome
// is a loose copy of an object that pack also holds.
func (db *DB) HasPacked(id string) bool {
	found, _ := db.native.has(id)
	return found
}

func (db *DB) readPacked(id string) (string, []byte, error) {
	return db.native.read(id)
}

// ReadPackedNative reads id from the packs with the native reader alone,
// never asking go-git: the tests that check it reads what git gc writes,
// and the benchmark that compares it with go-git, go through it.
func (db *DB) ReadPackedNative(id string) (string, []byte, error) {
	return db.native.read(id)
}

// Reset forgets the pack listing (after we wrote a pack).
func (db *DB) Reset() {
	db.native.invalidate()
}
