package gitobj

// What the fetch quarantine of package gitstore needs of an object store
// beyond reading: whether it holds an object (its own directory, or
// through its alternates), an object's type and size without its body,
// every object of its own directory, and moving them all into another
// store.

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// HasOwn reports whether the DB's own directory holds id, loose or packed
// (its alternates are not asked). The packs listed already are asked
// first (a lookup in memory), then the loose file, then the packs listed
// again if the directory changed: a walk over thousands of objects pays a
// system call only for those in no pack it knows.
func (db *DB) HasOwn(id string) bool {
	if !IsID(id) {
		return false
	}
	if db.InPacks(id) {
		return true
	}
	if _, err := os.Stat(db.LoosePath(id)); err == nil {
		return true
	}
	return db.HasPacked(id)
}

// InPacks reports whether a pack of the DB's own directory, as listed
// when first asked (never listed again), holds id: a lookup in memory, for
// a directory nothing else writes to once it is read (a fetch
// quarantine), or as a first, cheap look.
func (db *DB) InPacks(id string) bool {
	var raw [20]byte
	if _, err := hex.Decode(raw[:], []byte(id)); err != nil {
		return false
	}
	for _, p := range db.native.packs(listCached).packs {
		if _, found, err := p.lookup(raw); err == nil && found {
			return true
		}
	}
	return false
}

// Has reports whether id can be read: from the DB's own directory or from
// one of its alternates.
func (db *DB) Has(id string) bool {
	if db.HasOwn(id) {
		return true
	}
	for _, alt := range db.alternates() {
		if alt.HasOwn(id) {
			return true
		}
	}
	return false
}

// Info returns an object's type and size from its header alone: a loose
// object's first inflated bytes, a packed entry's header (and, for a
// delta, the first bytes of the delta, which state the result's size).
// The body is never read, so a 60 MB object costs what a small one does.
func (db *DB) Info(id string) (string, int64, error) {
	typ, n, err := db.infoOwn(id)
	if err == nil || !errors.Is(err, ErrObjectMissing) || !IsID(id) {
		return typ, n, err
	}
	for _, alt := range db.alternates() {
		t, an, aerr := alt.infoOwn(id)
		if aerr == nil {
			return t, an, nil
		}
		if !errors.Is(aerr, ErrObjectMissing) {
			return "", 0, aerr
		}
	}
	return "", 0, err
}

func (db *DB) infoOwn(id string) (string, int64, error) {
	if !IsID(id) {
		return "", 0, fmt.Errorf("object id %q: %w", id, ErrObjectMissing)
	}
	f, err := OpenFile(db.LoosePath(id), os.O_RDONLY, 0)
	if err == nil {
		defer f.Close()
		typ, n, err := looseHeader(f)
		if err != nil {
			return "", 0, fmt.Errorf("object %s: %w: %v", id, ErrObjectCorrupt, err)
		}
		return typ, n, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", 0, fmt.Errorf("read object %s: %w", id, err)
	}
	return db.native.info(id)
}

// looseHeader reads "<type> <size>\0" from the start of a loose object's
// zlib stream.
func looseHeader(r io.Reader) (string, int64, error) {
	zr, err := getZlibReader(r)
	if err != nil {
		return "", 0, err
	}
	defer zlibReaders.Put(zr)
	var hdr [32]byte
	n := 0
	for n < len(hdr) {
		m, err := zr.Read(hdr[n:])
		n += m
		if i := bytes.IndexByte(hdr[:n], 0); i >= 0 {
			typ, size, ok := strings.Cut(string(hdr[:i]), " ")
			v, perr := strconv.ParseInt(size, 10, 64)
			if !ok || perr != nil || v < 0 || typeCode(typ) == 0 {
				return "", 0, errors.New("bad header")
			}
			return typ, v, nil
		}
		if err != nil {
			return "", 0, fmt.Errorf("no header: %w", err)
		}
	}
	return "", 0, errors.New("no header")
}

// getZlibReader returns a pooled zlib reader reset to r (put it back in
// zlibReaders when done).
func getZlibReader(r io.Reader) (io.ReadCloser, error) {
	if v := zlibReaders.Get(); v != nil {
		zr := v.(io.ReadCloser)
		if err := zr.(zlib.Resetter).Reset(r, nil); err != nil {
			return nil, err
		}
		return zr, nil
	}
	return zlib.NewReader(r)
}

// typeCode is the pack type code of an object type name (0: none).
func typeCode(typ string) byte {
	switch typ {
	case "commit":
		return 1
	case "tree":
		return 2
	case "blob":
		return 3
	case "tag":
		return 4
	}
	return 0
}

// info returns a packed object's type and size; see DB.Info.
func (r *packReader) info(id string) (string, int64, error) {
	var raw [20]byte
	if _, err := hex.Decode(raw[:], []byte(id)); err != nil {
		return "", 0, fmt.Errorf("object id %q: %w", id, ErrObjectMissing)
	}
	for attempt := 0; attempt < 2; attempt++ {
		p, off, ok := r.find(raw, listAlways)
		if !ok {
			return "", 0, fmt.Errorf("object %s: %w (packs skipped: %v)", id, ErrObjectMissing, r.skipped())
		}
		if p == nil {
			return "", 0, fmt.Errorf("object %s: %w", id, ErrObjectMissing)
		}
		typ, size, err := r.infoAt(p, off, 0)
		var ioErr *packIOError
		if errors.As(err, &ioErr) && attempt == 0 {
			r.packs(listAlways)
			continue
		}
		if err != nil {
			return "", 0, fmt.Errorf("object %s: %w: %v", id, ErrObjectCorrupt, err)
		}
		if size > 1<<62 {
			return "", 0, fmt.Errorf("object %s: %w: size %d", id, ErrObjectCorrupt, size)
		}
		return typeName(typ), int64(size), nil
	}
	return "", 0, fmt.Errorf("object %s: %w", id, ErrObjectMissing)
}

// infoAt reads the type and size of the entry at off: a whole entry's
// header says both; a delta's header gives its base (whose type it has)
// and its first inflated bytes the size of the result.
func (r *packReader) infoAt(p *packFile, off uint64, depth int) (byte, uint64, error) {
	if depth > maxDeltaDepth {
		return 0, 0, errors.New("delta chain too deep")
	}
	if err := p.open(); err != nil {
		return 0, 0, err
	}
	end := p.end(off)
	if end <= off || end > uint64(p.size) {
		return 0, 0, fmt.Errorf("bad entry offset %d", off)
	}
	defer runtime.KeepAlive(p)
	// The entry's bytes without reading them all: the mapping, or a
	// section of the file read as the inflater asks.
	var entry io.ReaderAt
	if p.data != nil {
		entry = bytes.NewReader(p.data[off:end])
	} else {
		entry = io.NewSectionReader(p.f, int64(off), int64(end-off))
	}
	var head [32]byte
	hn, err := entry.ReadAt(head[:min(uint64(len(head)), end-off)], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, &packIOError{err}
	}
	buf := head[:hn]
	if len(buf) == 0 {
		return 0, 0, errors.New("bad entry header")
	}
	c := buf[0]
	typ := (c >> 4) & 7
	size := uint64(c & 15)
	i, shift := 1, 4
	for c&0x80 != 0 {
		if i >= len(buf) || shift > 60 {
			return 0, 0, errors.New("bad entry header")
		}
		c = buf[i]
		size |= uint64(c&0x7f) << shift
		shift += 7
		i++
	}
	switch typ {
	case 1, 2, 3, 4:
		return typ, size, nil
	case 6, 7:
	default:
		return 0, 0, fmt.Errorf("bad entry type %d", typ)
	}
	var bt byte
	if typ == 6 {
		if i >= len(buf) {
			return 0, 0, errors.New("bad delta header")
		}
		c = buf[i]
		i++
		rel := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if i >= len(buf) {
				return 0, 0, errors.New("bad delta header")
			}
			c = buf[i]
			i++
			rel = (rel+1)<<7 | uint64(c&0x7f)
		}
		if rel == 0 || rel > off {
			return 0, 0, errors.New("bad delta base offset")
		}
		if bt, _, err = r.infoAt(p, off-rel, depth+1); err != nil {
			return 0, 0, err
		}
	} else {
		if i+20 > len(buf) {
			return 0, 0, errors.New("bad delta header")
		}
		var bid [20]byte
		copy(bid[:], buf[i:i+20])
		i += 20
		bp, boff, ok := r.find(bid, listAlways)
		switch {
		case !ok:
			return 0, 0, fmt.Errorf("delta base %x not found (packs skipped: %v)", bid, r.skipped())
		case bp == nil:
			return 0, 0, fmt.Errorf("delta base %x missing", bid)
		}
		if bt, _, err = r.infoAt(bp, boff, depth+1); err != nil {
			return 0, 0, err
		}
	}
	// The delta starts with two varints: the base's size and the
	// result's.
	zr, err := getZlibReader(io.NewSectionReader(entry, int64(i), int64(end-off)-int64(i)))
	if err != nil {
		return 0, 0, fmt.Errorf("delta: %w", err)
	}
	defer zlibReaders.Put(zr)
	var dh [20]byte
	dn, _ := io.ReadAtLeast(zr, dh[:], 1)
	d := dh[:dn]
	varint := func() (uint64, bool) {
		var v uint64
		for shift := 0; shift < 64 && len(d) > 0; shift += 7 {
			c := d[0]
			d = d[1:]
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	if _, ok := varint(); !ok {
		return 0, 0, errors.New("bad delta size header")
	}
	res, ok := varint()
	if !ok {
		return 0, 0, errors.New("bad delta size header")
	}
	return bt, res, nil
}

// ForEachOwn calls fn with the id of every object in the DB's own
// directory (loose, then packed; an object held twice may be named twice),
// never its alternates'. A pack whose index cannot be read is an error:
// the caller must be able to account for every object.
func (db *DB) ForEachOwn(fn func(id string) error) error {
	fan, err := os.ReadDir(db.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list objects: %w", err)
	}
	for _, d := range fan {
		if !d.IsDir() || len(d.Name()) != 2 || !isHex(d.Name()) {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(db.dir, d.Name()))
		if err != nil {
			return fmt.Errorf("list objects: %w", err)
		}
		for _, e := range ents {
			if id := d.Name() + e.Name(); IsID(id) && e.Type().IsRegular() {
				if err := fn(id); err != nil {
					return err
				}
			}
		}
	}
	for _, p := range db.native.packs(listAlways).packs {
		if err := p.load(); err != nil {
			return err
		}
		names := p.idx[8+1024:]
		for i := 0; i < p.n; i++ {
			if err := fn(hex.EncodeToString(names[i*20 : i*20+20])); err != nil {
				return err
			}
		}
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// MoveOwnTo moves every object of the DB's own directory into dst's: each
// pack (its .rev and .idx, then the .pack, the order WritePack keeps so
// that neither git nor go-git sees half a pack) and each loose object,
// renamed where both are on one file system and copied otherwise, made
// durable first when dst fsyncs. A pack or object dst holds already is
// left where it is. The DB is empty of objects afterwards only as far as
// renames went: delete its directory when done.
func (db *DB) MoveOwnTo(dst *DB) error {
	if dst.readOnly {
		return ErrReadOnly
	}
	srcPack, dstPack := filepath.Join(db.dir, "pack"), filepath.Join(dst.dir, "pack")
	ents, err := os.ReadDir(srcPack)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list packs: %w", err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	moved := false
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(base, "pack-") || !names[base+".pack"] {
			continue
		}
		if !moved {
			if err := os.MkdirAll(dstPack, 0o755); err != nil {
				return fmt.Errorf("create pack dir: %w", err)
			}
			moved = true
		}
		if _, err := os.Stat(filepath.Join(dstPack, base+".pack")); err == nil {
			if _, err := os.Stat(filepath.Join(dstPack, base+".idx")); err == nil {
				continue // the same pack (its name is its checksum)
			}
		}
		for _, ext := range []string{".rev", ".idx", ".pack"} {
			if ext == ".rev" && !names[base+ext] {
				continue
			}
			if err := moveFile(filepath.Join(srcPack, base+ext), filepath.Join(dstPack, base+ext), dst.fsync, false); err != nil {
				return fmt.Errorf("move pack %s: %w", base, err)
			}
		}
	}
	if moved && dst.fsync {
		if err := syncDir(dstPack); err != nil {
			return fmt.Errorf("fsync pack dir: %w", err)
		}
	}
	fan, err := os.ReadDir(db.dir)
	if err != nil {
		return fmt.Errorf("list objects: %w", err)
	}
	var linked []string
	dirs := map[string]bool{}
	for _, d := range fan {
		if !d.IsDir() || len(d.Name()) != 2 || !isHex(d.Name()) {
			continue
		}
		objs, err := os.ReadDir(filepath.Join(db.dir, d.Name()))
		if err != nil {
			return fmt.Errorf("list objects: %w", err)
		}
		for _, o := range objs {
			if !IsID(d.Name()+o.Name()) || !o.Type().IsRegular() {
				continue
			}
			to := filepath.Join(dst.dir, d.Name(), o.Name())
			if _, err := os.Stat(to); err == nil {
				continue
			}
			if !dirs[d.Name()] {
				if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
					return fmt.Errorf("create object dir: %w", err)
				}
				dirs[d.Name()] = true
			}
			// Renamed (checked absent first: an object stored meanwhile
			// has the same content under the same name); made durable
			// below, all at once.
			if err := moveFile(filepath.Join(db.dir, d.Name(), o.Name()), to, false, false); err != nil {
				return fmt.Errorf("move object %s: %w", d.Name()+o.Name(), err)
			}
			linked = append(linked, to)
		}
	}
	if dst.fsync {
		// Concurrent fsyncs commit together (DB.Flush): one disk flush's
		// wait for the lot, not one per object.
		if err := dst.Flush(linked); err != nil {
			return err
		}
		for d := range dirs {
			if err := syncDir(filepath.Join(dst.dir, d)); err != nil {
				return fmt.Errorf("fsync object dir: %w", err)
			}
		}
	}
	dst.Reset()
	return nil
}

// moveFile moves src to dst: fsynced first when fsync is set, then renamed
// (or, with link, hard-linked, an existing dst winning), and copied where
// src and dst are on different file systems.
func moveFile(src, dst string, fsync, link bool) error {
	if fsync {
		f, err := OpenFile(src, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	var err error
	if link {
		err = os.Link(src, dst)
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
	} else {
		err = os.Rename(src, dst)
	}
	if err == nil || !errors.Is(err, syscall.EXDEV) {
		return err
	}
	return copyFile(src, dst, fsync)
}

// copyFile copies src to a temporary file beside dst and renames it into
// place (read-only, as git leaves objects).
func copyFile(src, dst string, fsync bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), "tmp_move_")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name()) // a no-op once renamed
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := finishFile(out, fsync); err != nil {
		return err
	}
	return os.Rename(out.Name(), dst)
}
