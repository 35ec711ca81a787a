package gitobj

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// packReader reads packed objects itself: version 2 pack indexes, whole
// and delta (ofs and ref) entries. It exists for speed: go-git opens and
// closes a pack file for every object it reads from it and serialises all
// reads behind one mutex, which made `verify` over 100,000 packed blobs
// take tens of seconds. Here an index is loaded once per pack (on first
// need), a lookup is a binary search, a read is one pread and one inflate,
// and any number of goroutines read at once.
//
// It reads every index git writes (versions 1 and 2). A pack whose index
// is malformed or unreadable is skipped, as git skips it; a lookup that
// found nothing while some index could not be read says which
// (errPackUnsupported wraps that error).
type packReader struct {
	dir   string // objects/pack
	mu    sync.Mutex
	list  atomic.Pointer[packList]
	last  atomic.Pointer[packFile] // where the last object was found
	cache baseCache
}

// skipped describes the packs whose index could not be read (nil when
// every index was read): the reason an object is missing may be there.
func (r *packReader) skipped() error {
	var errs []error
	if l := r.list.Load(); l != nil {
		for _, p := range l.packs {
			if err := p.load(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

type packList struct {
	stamp time.Time // the pack directory's mtime when it was listed
	packs []*packFile
}

type packFile struct {
	base string // path without .idx/.pack

	idxOnce sync.Once
	idxOK   atomic.Bool // the index is loaded (idx and n are set)
	idxErr  error
	idx     []byte
	n       int

	fileOnce sync.Once
	fileErr  error
	f        *os.File
	size     int64
	data     []byte // the pack mapped read-only, when mmap works

	revOnce sync.Once
	rev     []uint64 // entry offsets, ascending: where each entry ends
}

func newPackReader(objectsDir string) *packReader {
	return &packReader{dir: filepath.Join(objectsDir, "pack")}
}

// How packs lists the pack directory again.
const (
	listCached  = iota // never, once listed
	listChanged        // when the directory's mtime changed
	listAlways         // always
)

// packs returns the pack list, listing the directory on first use and
// again as mode says. Directory mtimes are coarse (a pack added within the
// same clock tick leaves it unchanged), so a read that misses lists again
// unconditionally; a presence check for a new object, where a stale "no"
// only costs a duplicate loose object, goes by the mtime.
func (r *packReader) packs(mode int) *packList {
	l := r.list.Load()
	if l != nil && mode == listCached {
		return l
	}
	var stamp time.Time
	if st, err := os.Stat(r.dir); err == nil {
		stamp = st.ModTime()
	}
	if l != nil && mode == listChanged && l.stamp.Equal(stamp) {
		return l
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if l2 := r.list.Load(); l2 != nil && l2 != l && l2.stamp.Equal(stamp) {
		return l2
	}
	old := map[string]*packFile{}
	if l != nil {
		for _, p := range l.packs {
			old[p.base] = p
		}
	}
	nl := &packList{stamp: stamp}
	ents, _ := os.ReadDir(r.dir)
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	for _, e := range ents {
		name := e.Name()
		// Listed by index, as git does; a pack still missing its .pack
		// (being written) is skipped.
		if !strings.HasSuffix(name, ".idx") || !names[strings.TrimSuffix(name, ".idx")+".pack"] {
			continue
		}
		base := filepath.Join(r.dir, strings.TrimSuffix(name, ".idx"))
		if p := old[base]; p != nil {
			nl.packs = append(nl.packs, p)
		} else {
			nl.packs = append(nl.packs, &packFile{base: base})
		}
	}
	r.list.Store(nl)
	return nl
}

// invalidate forgets the listing (after we wrote a pack).
func (r *packReader) invalidate() {
	r.mu.Lock()
	if l := r.list.Load(); l != nil {
		r.list.Store(&packList{packs: l.packs}) // zero stamp: lists again
	}
	r.mu.Unlock()
}

// find returns the pack and offset holding id, listing the directory
// again (as relist says) before answering "none". ok is false when some
// pack could not be searched (then the answer is unknown).
func (r *packReader) find(id [20]byte, relist int) (p *packFile, off uint64, ok bool) {
	if lp := r.last.Load(); lp != nil {
		if o, found, err := lp.lookup(id); err == nil && found {
			return lp, o, true
		}
	}
	for _, mode := range []int{listCached, relist} {
		l := r.packs(mode)
		ok = true
		for _, p := range l.packs {
			o, found, err := p.lookup(id)
			if err != nil {
				ok = false
				continue
			}
			if found {
				r.last.Store(p)
				return p, o, true
			}
		}
		if !ok {
			return nil, 0, false
		}
	}
	return nil, 0, true
}

// has reports whether a pack holds id; known is false when it cannot tell.
// Unlike a read, which can use a pack deleted since it was opened (an
// object's content never changes), a "yes" must hold now: write skips an
// object a pack holds, so a "yes" from a pack an outside gc has deleted
// would leave a commit naming a missing object. So the listing is checked
// against the directory first, and the pack file must still be there.
func (r *packReader) has(id string) (found, known bool) {
	var raw [20]byte
	if _, err := hex.Decode(raw[:], []byte(id)); err != nil {
		return false, true
	}
	for _, mode := range []int{listChanged, listAlways} {
		known = true
		for _, p := range r.packs(mode).packs {
			_, ok, err := p.lookup(raw)
			if err != nil {
				known = false
				continue
			}
			if ok {
				if _, err := os.Stat(p.base + ".pack"); err == nil {
					return true, true
				}
				break // deleted: list again
			}
		}
		if mode == listChanged && known {
			return false, true
		}
	}
	return false, known
}

// read returns a packed object's type and body, or ErrObjectMissing when
// no readable pack holds it (naming the packs that could not be read).
func (r *packReader) read(id string) (string, []byte, error) {
	var raw [20]byte
	if _, err := hex.Decode(raw[:], []byte(id)); err != nil {
		return "", nil, fmt.Errorf("object id %q: %w", id, ErrObjectMissing)
	}
	for attempt := 0; attempt < 2; attempt++ {
		p, off, ok := r.find(raw, listAlways)
		if !ok {
			return "", nil, fmt.Errorf("object %s: %w (packs skipped: %v)", id, ErrObjectMissing, r.skipped())
		}
		if p == nil {
			return "", nil, fmt.Errorf("object %s: %w", id, ErrObjectMissing)
		}
		typ, body, err := r.readAt(p, off, 0)
		var ioErr *packIOError
		if errors.As(err, &ioErr) && attempt == 0 {
			// The pack went away under us (an outside repack): list again.
			r.packs(listAlways)
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("object %s: %w: %v", id, ErrObjectCorrupt, err)
		}
		return typeName(typ), body, nil
	}
	return "", nil, fmt.Errorf("object %s: %w", id, ErrObjectMissing)
}

// readLoaded reads id from a pack whose index is loaded already, without
// listing the directory or loading anything; ok is false when that finds
// nothing readable (the caller goes on as usual).
func (r *packReader) readLoaded(id string) (string, []byte, bool) {
	l := r.list.Load()
	if l == nil {
		return "", nil, false
	}
	var raw [20]byte
	if _, err := hex.Decode(raw[:], []byte(id)); err != nil {
		return "", nil, false
	}
	try := func(p *packFile) (string, []byte, bool) {
		if !p.idxOK.Load() {
			return "", nil, false
		}
		off, found, err := p.lookup(raw)
		if err != nil || !found {
			return "", nil, false
		}
		typ, body, err := r.readAt(p, off, 0)
		if err != nil {
			return "", nil, false
		}
		r.last.Store(p)
		return typeName(typ), body, true
	}
	if lp := r.last.Load(); lp != nil {
		if t, b, ok := try(lp); ok {
			return t, b, true
		}
	}
	for _, p := range l.packs {
		if t, b, ok := try(p); ok {
			return t, b, true
		}
	}
	return "", nil, false
}

// packIOError is a failure to read a pack file (as opposed to bad content).
type packIOError struct{ err error }

func (e *packIOError) Error() string { return e.err.Error() }

func typeName(t byte) string {
	switch t {
	case 1:
		return "commit"
	case 2:
		return "tree"
	case 3:
		return "blob"
	case 4:
		return "tag"
	}
	return "unknown"
}

// load reads the pack's index into memory. Version 2 is used as it is;
// version 1 (what git wrote before 1.5.2, and still writes with
// pack.indexVersion=1) is rewritten once into the version 2 layout, so
// that lookups have one shape. A malformed index is an error naming the
// file: git skips such a pack with a warning, and so do lookups here (see
// packReader.find).
func (p *packFile) load() error {
	p.idxOnce.Do(func() {
		b, err := os.ReadFile(p.base + ".idx")
		if err != nil {
			p.idxErr = err
			return
		}
		if len(b) >= 4 && !bytes.Equal(b[:4], []byte{0xff, 't', 'O', 'c'}) {
			b, err = idxV1ToV2(b)
			if err != nil {
				p.idxErr = fmt.Errorf("%s.idx: %w", filepath.Base(p.base), err)
				return
			}
		}
		if len(b) < 8+1024+40 || binary.BigEndian.Uint32(b[4:]) != 2 {
			p.idxErr = fmt.Errorf("%s.idx: %w", filepath.Base(p.base), errIndexMalformed)
			return
		}
		n := int(binary.BigEndian.Uint32(b[8+255*4:]))
		min := 8 + 1024 + n*28 + 40
		if len(b) < min || (len(b)-min)%8 != 0 {
			p.idxErr = fmt.Errorf("%s.idx: %w", filepath.Base(p.base), errIndexMalformed)
			return
		}
		p.idx, p.n = b, n
		p.idxOK.Store(true)
	})
	return p.idxErr
}

// errIndexMalformed is a pack index of a version or size we do not know.
var errIndexMalformed = errors.New("pack index malformed or of an unknown version")

// idxV1ToV2 rewrites a version 1 pack index (a fan-out table, then n
// entries of a 4-byte offset and a 20-byte id, then the pack's and the
// index's checksums) into the version 2 layout (header, fan-out, ids,
// CRCs, offsets, checksums). Version 1 has no CRCs; they are left zero,
// and nothing here reads them.
func idxV1ToV2(v1 []byte) ([]byte, error) {
	if len(v1) < 1024+40 {
		return nil, errIndexMalformed
	}
	n := int(binary.BigEndian.Uint32(v1[255*4:]))
	if len(v1) != 1024+n*24+40 {
		return nil, errIndexMalformed
	}
	v2 := make([]byte, 8+1024+n*28+40)
	copy(v2, []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	copy(v2[8:], v1[:1024])
	names := v2[8+1024:]
	offs := v2[8+1024+n*24:]
	ent := v1[1024:]
	for i := 0; i < n; i++ {
		e := ent[i*24:]
		if e[0]&0x80 != 0 {
			return nil, errIndexMalformed // would read as a large offset
		}
		copy(names[i*20:], e[4:24])
		copy(offs[i*4:], e[:4])
	}
	copy(v2[len(v2)-40:], v1[len(v1)-40:])
	return v2, nil
}

func (p *packFile) lookup(id [20]byte) (uint64, bool, error) {
	if err := p.load(); err != nil {
		return 0, false, err
	}
	fan := p.idx[8:]
	lo := 0
	if id[0] > 0 {
		lo = int(binary.BigEndian.Uint32(fan[(int(id[0])-1)*4:]))
	}
	hi := int(binary.BigEndian.Uint32(fan[int(id[0])*4:]))
	names := p.idx[8+1024:]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(names[m*20:m*20+20], id[:]); {
		case c == 0:
			return p.offset(m), true, nil
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false, nil
}

func (p *packFile) offset(i int) uint64 {
	offs := p.idx[8+1024+p.n*24:]
	o := binary.BigEndian.Uint32(offs[i*4:])
	if o&0x80000000 == 0 {
		return uint64(o)
	}
	large := p.idx[8+1024+p.n*28:]
	k := int(o & 0x7fffffff)
	if (k+1)*8 > len(large)-40 {
		return 0
	}
	return binary.BigEndian.Uint64(large[k*8:])
}

func (p *packFile) open() error {
	p.fileOnce.Do(func() {
		f, err := os.Open(p.base + ".pack")
		if err != nil {
			p.fileErr = &packIOError{err}
			return
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			p.fileErr = &packIOError{err}
			return
		}
		var hdr [12]byte
		if _, err := f.ReadAt(hdr[:], 0); err != nil || string(hdr[:4]) != "PACK" ||
			int(binary.BigEndian.Uint32(hdr[8:])) != p.n || st.Size() < 32 {
			f.Close()
			p.fileErr = fmt.Errorf("%s.pack does not match its index", filepath.Base(p.base))
			return
		}
		p.f, p.size = f, st.Size()
		p.data = MapFile(f, st.Size())
		if p.data != nil {
			// Unmapped when the packFile is garbage: readAt keeps p
			// alive while it reads from the mapping, and returns only
			// copies.
			runtime.AddCleanup(p, UnmapFile, p.data)
		}
	})
	return p.fileErr
}

// end returns where the entry at off ends: the next entry's offset, or the
// trailer's.
func (p *packFile) end(off uint64) uint64 {
	p.revOnce.Do(func() {
		rev := make([]uint64, p.n)
		for i := range rev {
			rev[i] = p.offset(i)
		}
		sort.Slice(rev, func(i, j int) bool { return rev[i] < rev[j] })
		p.rev = rev
	})
	i := sort.Search(len(p.rev), func(i int) bool { return p.rev[i] > off })
	if i < len(p.rev) {
		return p.rev[i]
	}
	return uint64(p.size) - 20
}

// maxDeltaDepth bounds delta chains (git's default is 50; loops are bugs).
const maxDeltaDepth = 10000

// readAt reads the entry at off, resolving deltas.
func (r *packReader) readAt(p *packFile, off uint64, depth int) (byte, []byte, error) {
	if depth > maxDeltaDepth {
		return 0, nil, errors.New("delta chain too deep")
	}
	if err := p.open(); err != nil {
		return 0, nil, err
	}
	if depth > 0 {
		if t, b, ok := r.cache.get(p, off); ok {
			return t, b, nil
		}
	}
	end := p.end(off)
	if end <= off || end > uint64(p.size) {
		return 0, nil, fmt.Errorf("bad entry offset %d", off)
	}
	defer runtime.KeepAlive(p) // the mapping lives as long as p
	var buf []byte
	if p.data != nil {
		buf = p.data[off:end]
	} else {
		buf = make([]byte, end-off)
		if _, err := p.f.ReadAt(buf, int64(off)); err != nil {
			return 0, nil, &packIOError{err}
		}
	}
	c := buf[0]
	typ := (c >> 4) & 7
	size := uint64(c & 15)
	i, shift := 1, 4
	for c&0x80 != 0 {
		if i >= len(buf) || shift > 60 {
			return 0, nil, errors.New("bad entry header")
		}
		c = buf[i]
		size |= uint64(c&0x7f) << shift
		shift += 7
		i++
	}
	var (
		out []byte
		err error
	)
	switch typ {
	case 1, 2, 3, 4:
		out, err = inflateExact(buf[i:], size)
	case 6, 7: // ofs-delta, ref-delta
		var bt byte
		var base []byte
		if typ == 6 {
			if i >= len(buf) {
				return 0, nil, errors.New("bad delta header")
			}
			c = buf[i]
			i++
			rel := uint64(c & 0x7f)
			for c&0x80 != 0 {
				if i >= len(buf) {
					return 0, nil, errors.New("bad delta header")
				}
				c = buf[i]
				i++
				rel = (rel+1)<<7 | uint64(c&0x7f)
			}
			if rel == 0 || rel > off {
				return 0, nil, errors.New("bad delta base offset")
			}
			bt, base, err = r.readAt(p, off-rel, depth+1)
		} else {
			if i+20 > len(buf) {
				return 0, nil, errors.New("bad delta header")
			}
			var bid [20]byte
			copy(bid[:], buf[i:i+20])
			i += 20
			bp, boff, ok := r.find(bid, listAlways)
			switch {
			case !ok:
				return 0, nil, fmt.Errorf("delta base %x not found (packs skipped: %v)", bid, r.skipped())
			case bp == nil:
				return 0, nil, fmt.Errorf("delta base %x missing", bid)
			}
			bt, base, err = r.readAt(bp, boff, depth+1)
		}
		if err != nil {
			return 0, nil, err
		}
		var delta []byte
		if delta, err = inflateExact(buf[i:], size); err == nil {
			out, err = applyDelta(base, delta)
		}
		typ = bt
	default:
		return 0, nil, fmt.Errorf("bad entry type %d", typ)
	}
	if err != nil {
		return 0, nil, err
	}
	if depth > 0 {
		r.cache.put(p, off, typ, out)
	}
	return typ, out, nil
}

var zlibReaders sync.Pool

// inflateExact inflates a zlib stream that must hold exactly size bytes
// (its checksum is verified).
func inflateExact(data []byte, size uint64) ([]byte, error) {
	if size > 1<<40 {
		return nil, errors.New("object too large")
	}
	if out, ok := inflateFast(data, int(size)); ok {
		return out, nil
	}
	return inflateExactSlow(data, size)
}

// inflateExactSlow is inflateExact by compress/zlib, the authority on
// what is wrong with a stream inflateFast refuses.
func inflateExactSlow(data []byte, size uint64) ([]byte, error) {
	src := bytes.NewReader(data)
	var zr io.ReadCloser
	if v := zlibReaders.Get(); v != nil {
		zr = v.(io.ReadCloser)
		if err := zr.(zlib.Resetter).Reset(src, nil); err != nil {
			return nil, err
		}
	} else {
		var err error
		if zr, err = zlib.NewReader(src); err != nil {
			return nil, err
		}
	}
	out := make([]byte, size)
	_, err := io.ReadFull(zr, out)
	if err == nil {
		var one [1]byte
		if n, e := zr.Read(one[:]); n != 0 || e != io.EOF {
			if e == nil || e == io.EOF {
				e = errors.New("object longer than its header says")
			}
			err = e
		}
	}
	zlibReaders.Put(zr)
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return out, nil
}

// baseCache keeps recently resolved delta bases, so that reading objects
// deltified against a common base (what git gc produces) inflates that
// base once rather than once per object.
type baseCache struct {
	mu    sync.Mutex
	m     map[baseKey]baseVal
	bytes int
}

type baseKey struct {
	p   *packFile
	off uint64
}

type baseVal struct {
	typ  byte
	body []byte
}

const baseCacheBytes = 32 << 20

func (c *baseCache) get(p *packFile, off uint64) (byte, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[baseKey{p, off}]
	return v.typ, v.body, ok
}

func (c *baseCache) put(p *packFile, off uint64, typ byte, body []byte) {
	if len(body) > baseCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(body) > baseCacheBytes {
		c.m, c.bytes = map[baseKey]baseVal{}, 0
	}
	c.m[baseKey{p, off}] = baseVal{typ, body}
	c.bytes += len(body)
}
