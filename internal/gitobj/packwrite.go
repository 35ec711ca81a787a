package gitobj

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// PackSink collects objects for one packfile: ids are computed at once (the
// caller needs them), compression runs on worker goroutines, and writePack
// lays the entries out in the order they were put. With a Prepack, a blob
// whose content the Prepack already holds (the same slice) takes the
// Prepack's entry, compressed or being compressed, instead of a new one.
type PackSink struct {
	ents  []*packEntry
	known map[[20]byte]bool // in this pack, or in a pack written before
	pool  *packWorkers
	own   bool     // pool is the sink's, to stop when done
	pre   *Prepack // or nil
}

type packEntry struct {
	id    [20]byte
	typ   byte // pack type code: 1 commit, 2 tree, 3 blob, 4 tag
	body  []byte
	data  []byte // the entry as stored: header and zlib stream
	err   error
	crc   uint32        // of data
	off   uint64        // in the pack
	ready chan struct{} // closed once data, err and crc are set
	// A Prepack's entries are hashed by the worker too, before it
	// compresses them: sum is the blob's id once summed is set, and put
	// takes it instead of hashing the content again on its caller's
	// goroutine (5 ms of the benchmark sweep's critical path).
	hashFirst bool
	summed    atomic.Bool
	sum       [20]byte
}

func newEntry(typ byte, body []byte) *packEntry {
	return &packEntry{typ: typ, body: body, ready: make(chan struct{})}
}

// NewPackSink returns a sink compressing on pre's workers, or on its own
// when pre is nil.
func NewPackSink(pre *Prepack) *PackSink {
	p := &PackSink{known: map[[20]byte]bool{}, pre: pre}
	if pre != nil {
		p.pool = pre.pool
	} else {
		p.pool, p.own = startPackWorkers(runtime.GOMAXPROCS(0)), true
	}
	return p
}

// Put computes the id of an object and queues it for the pack unless the
// sink holds it already. body must not be modified until the pack is
// written.
func (p *PackSink) Put(typ string, body []byte) (string, error) {
	var code byte
	switch typ {
	case "commit":
		code = 1
	case "tree":
		code = 2
	case "blob":
		code = 3
	case "tag":
		code = 4
	default:
		return "", fmt.Errorf("pack: unsupported object type %q", typ)
	}
	var e *packEntry
	if code == 3 && p.pre != nil {
		e = p.pre.claim(body)
	}
	var id [20]byte
	if e != nil && e.summed.Load() {
		// The Prepack's worker hashed it already.
		id = e.sum
	} else {
		var hdr [32]byte
		d := sha1.New()
		d.Write(appendObjectHeader(hdr[:0], typ, len(body)))
		d.Write(body)
		d.Sum(id[:0])
	}
	if !p.known[id] {
		p.known[id] = true
		if e == nil {
			e = newEntry(code, body)
			p.pool.push(e)
		}
		e.id = id
		p.ents = append(p.ents, e)
	}
	return hex.EncodeToString(id[:]), nil
}

// Len is the number of objects in the pack being built.
func (p *PackSink) Len() int { return len(p.ents) }

// finish waits until every entry put is compressed.
func (p *PackSink) finish() {
	for _, e := range p.ents {
		<-e.ready
	}
}

// Close stops the sink's own workers (after an error, or when done).
func (p *PackSink) Close() {
	if p.own {
		p.pool.stop()
	}
}

// Reset empties the sink for a further pack, remembering what was packed.
func (p *PackSink) Reset() {
	p.finish()
	p.ents = nil
}

// packWorkers compress pack entries, in the order pushed, on n
// goroutines. The queue is unbounded: a caller pushing (a sweep parsing
// its transcript, Import hashing blobs) never waits for compression.
type packWorkers struct {
	mu      sync.Mutex
	cond    sync.Cond
	queue   []*packEntry
	stopped bool
	wg      sync.WaitGroup
}

func startPackWorkers(n int) *packWorkers {
	w := &packWorkers{}
	w.cond.L = &w.mu
	for range max(1, n) {
		w.wg.Add(1)
		go w.run()
	}
	return w
}

func (w *packWorkers) run() {
	defer w.wg.Done()
	enc := newEntryEncoder()
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped {
			w.mu.Unlock()
			return
		}
		e := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()
		w.encode(enc, e)
	}
}

func (w *packWorkers) push(e *packEntry) {
	w.mu.Lock()
	if w.stopped {
		// A closed Prepack given to Import: compress here rather than
		// leave the entry to nobody.
		w.mu.Unlock()
		w.encode(newEntryEncoder(), e)
		return
	}
	w.queue = append(w.queue, e)
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *packWorkers) encode(enc *entryEncoder, e *packEntry) {
	if e.hashFirst {
		var hdr [32]byte
		d := sha1.New()
		d.Write(appendObjectHeader(hdr[:0], "blob", len(e.body)))
		d.Write(e.body)
		d.Sum(e.sum[:0])
		e.summed.Store(true)
	}
	e.data, e.err = enc.encode(e.typ, e.body)
	if e.err == nil {
		e.crc = crc32.ChecksumIEEE(e.data)
	}
	e.body = nil
	close(e.ready)
}

// stop ends the workers once their current entries are done. Entries
// still queued are dropped: nobody may wait for them.
func (w *packWorkers) stop() {
	w.mu.Lock()
	w.stopped = true
	w.queue = nil
	w.mu.Unlock()
	w.cond.Broadcast()
	w.wg.Wait()
}

// Prepack compresses blob contents ahead of the Import that will store
// them, while the caller is still gathering its records: a sweep adds each
// record's content as it parses the transcript, and the parsing and the
// compression then share the machine's cores instead of taking turns.
// Import with ImportOptions.Prepack takes the Prepack's compressed entry
// for a content it stores (found by its slice: the same start and length),
// so the pack holds exactly what Import would have written without it;
// a content Import does not store (a denied path's) is compressed in
// memory and dropped, never written.
//
// Why: on two cores, a sweep's Import is otherwise CPU-bound. In the 14 MB
// benchmark sweep (hooks' BenchmarkSweep14MB) parsing takes about 30 ms
// on one core while the other idles; then Import's own goroutine prepares
// and chains the records (about 40 ms) while the workers compress (40 ms
// of CPU) beside it on the same two cores. Compressing during the parse
// instead took the sweep from 95 to 86 ms (medians of 8 interleaved runs).
// The Prepack's workers hash the blobs as well, which takes that off
// Import's goroutine too.
//
// Contents given to Add must not be modified until Close. A Prepack is
// safe for concurrent use.
type Prepack struct {
	pool   *packWorkers
	mu     sync.Mutex
	ents   map[prepackKey]*packEntry
	closed bool
}

type prepackKey struct {
	p *byte
	n int
}

// NewPrepack starts a Prepack's workers: one fewer than GOMAXPROCS, at
// least one, so that the caller keeps a core.
func NewPrepack() *Prepack {
	return &Prepack{
		pool: startPackWorkers(runtime.GOMAXPROCS(0) - 1),
		ents: map[prepackKey]*packEntry{},
	}
}

// Add queues content to be compressed as a blob.
func (p *Prepack) Add(content []byte) {
	if len(content) == 0 {
		return
	}
	k := prepackKey{&content[0], len(content)}
	p.mu.Lock()
	if p.closed || p.ents[k] != nil {
		p.mu.Unlock()
		return
	}
	e := newEntry(3, content)
	e.hashFirst = true
	p.ents[k] = e
	p.mu.Unlock()
	p.pool.push(e)
}

// claim returns and forgets the entry of body, or nil.
func (p *Prepack) claim(body []byte) *packEntry {
	if len(body) == 0 {
		return nil
	}
	k := prepackKey{&body[0], len(body)}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.ents[k]
	delete(p.ents, k)
	return e
}

// Close stops the workers and drops what no Import took. It must not be
// called while an Import using p runs.
func (p *Prepack) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ents = nil
	p.mu.Unlock()
	p.pool.stop()
}

// appendObjectHeader appends "<typ> <n>\x00".
func appendObjectHeader(b []byte, typ string, n int) []byte {
	b = append(b, typ...)
	b = append(b, ' ')
	b = appendInt(b, n)
	return append(b, 0)
}

func appendInt(b []byte, n int) []byte {
	var tmp [20]byte
	i := len(tmp)
	if n == 0 {
		return append(b, '0')
	}
	for n > 0 {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, tmp[i:]...)
}

// entryEncoder encodes pack entries on one compression worker, with
// fastDeflater (see its doc for why not compress/flate, and the figures);
// bodies of fdMaxInput bytes or more, which its int32 positions cannot
// address, go to compress/flate at BestSpeed. Both are fast levels, as for
// loose objects: packs are written by hooks (a sweep at PreCompact holds
// the compaction up), where latency counts. git's default level writes
// smaller packs at several times the CPU; `git gc --aggressive` or `git
// repack -adF` recompresses at git's level when size matters more.
//
// Entries are cut from arena chunks of entryArena bytes rather than
// allocated one by one: a sweep writes thousands of them, all alive until
// the pack is written.
type entryEncoder struct {
	fast  *fastDeflater
	zw    *zlib.Writer // made on first use
	arena []byte
}

const entryArena = 1 << 20

func newEntryEncoder() *entryEncoder {
	return &entryEncoder{fast: new(fastDeflater)}
}

// encode returns one undeltified pack entry: the type and size header
// (size in little-endian 7-bit groups, the first holding 4 bits) followed
// by the zlib-compressed body.
func (c *entryEncoder) encode(typ byte, body []byte) ([]byte, error) {
	const maxHeader = 10 // 4 + 7*9 bits cover any uint64 size
	need := maxHeader + zlibBound(len(body))
	if len(body) >= fdMaxInput {
		need = maxHeader + len(body)/2 + 64 // a guess; append grows it
	}
	if cap(c.arena) < need {
		c.arena = make([]byte, 0, max(need, entryArena))
	}
	b := c.arena[:0]
	size := uint64(len(body))
	h := typ<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		b = append(b, h|0x80)
		h = byte(size & 0x7f)
		size >>= 7
	}
	b = append(b, h)
	if len(body) < fdMaxInput {
		b = c.fast.appendZlib(b, body)
	} else {
		w := appendWriter{b}
		if c.zw == nil {
			c.zw, _ = zlib.NewWriterLevel(&w, zlib.BestSpeed)
		}
		c.zw.Reset(&w)
		if _, err := c.zw.Write(body); err != nil {
			return nil, err
		}
		if err := c.zw.Close(); err != nil {
			return nil, err
		}
		b = w.b
	}
	if cap(b) == cap(c.arena) {
		// Still in the arena (append did not move it): the rest of it is
		// for the next entries.
		c.arena = c.arena[len(b):len(b)]
	}
	return b[:len(b):len(b)], nil
}

// appendWriter is an io.Writer appending to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// writeBufSize is the write buffer for a file of about n bytes: at most
// 1 MiB, and no bigger than the file. A sweep of a small session writes a
// small pack, and a fresh 1 MiB buffer is a megabyte of memory zeroed,
// faulted in and handed back to the system each time (an import writes
// one pack per session).
func writeBufSize(n int) int { return max(4096, min(1<<20, n)) }

// WritePack writes the sink's objects as objects/pack/pack-<sum>.pack and
// its version 2 .idx, both fsynced when fsync is on, and returns the pack's
// file name. The .idx is renamed into place before the .pack: git and
// go-git find packs by different names (git lists .idx files and skips one
// whose pack is missing, go-git lists .pack files and fails on one without
// an index), so neither ever sees half a pack.
func (db *DB) WritePack(p *PackSink) (string, error) {
	if db.readOnly {
		return "", ErrReadOnly
	}
	p.finish()
	for _, e := range p.ents {
		if e.err != nil {
			return "", fmt.Errorf("pack: compress object %x: %w", e.id, e.err)
		}
	}
	dir := filepath.Join(db.dir, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create pack dir: %w", err)
	}
	fsync := db.fsync

	// The pack: header, entries, sha1 trailer over everything before it.
	tmpPack, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return "", fmt.Errorf("create pack: %w", err)
	}
	defer os.Remove(tmpPack.Name()) // no-op once renamed
	sum := sha1.New()
	size := 12
	for _, e := range p.ents {
		size += len(e.data)
	}
	bw := bufio.NewWriterSize(io.MultiWriter(tmpPack, sum), writeBufSize(size))
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(p.ents)))
	bw.Write(hdr[:])
	off := uint64(len(hdr))
	for _, e := range p.ents {
		e.off = off
		bw.Write(e.data)
		off += uint64(len(e.data))
		e.data = nil
	}
	if err := bw.Flush(); err != nil {
		tmpPack.Close()
		return "", fmt.Errorf("write pack: %w", err)
	}
	var packSum [20]byte
	sum.Sum(packSum[:0])
	if _, err := tmpPack.Write(packSum[:]); err != nil {
		tmpPack.Close()
		return "", fmt.Errorf("write pack: %w", err)
	}
	if err := finishFile(tmpPack, fsync); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}

	// The index (version 2), by go-git's idxfile: it sorts the ids and
	// writes fanout, ids, crc32s, offsets (with the 64-bit table for
	// offsets past 2 GiB), the pack's sum and its own.
	ix := new(idxfile.Writer)
	ix.OnHeader(uint32(len(p.ents)))
	for _, e := range p.ents {
		ix.Add(plumbing.Hash(e.id), e.off, e.crc)
	}
	if err := ix.OnFooter(plumbing.Hash(packSum)); err != nil {
		return "", fmt.Errorf("pack index: %w", err)
	}
	idx, err := ix.Index()
	if err != nil {
		return "", fmt.Errorf("pack index: %w", err)
	}
	tmpIdx, err := os.CreateTemp(dir, "tmp_idx_")
	if err != nil {
		return "", fmt.Errorf("create pack index: %w", err)
	}
	defer os.Remove(tmpIdx.Name())
	iw := bufio.NewWriterSize(tmpIdx, writeBufSize(1072+28*len(p.ents)+40))
	if _, err := idxfile.NewEncoder(iw).Encode(idx); err != nil {
		tmpIdx.Close()
		return "", fmt.Errorf("write pack index: %w", err)
	}
	if err := iw.Flush(); err != nil {
		tmpIdx.Close()
		return "", fmt.Errorf("write pack index: %w", err)
	}
	if err := finishFile(tmpIdx, fsync); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}

	base := filepath.Join(dir, "pack-"+hex.EncodeToString(packSum[:]))
	if err := os.Rename(tmpIdx.Name(), base+".idx"); err != nil {
		return "", fmt.Errorf("store pack index: %w", err)
	}
	if err := os.Rename(tmpPack.Name(), base+".pack"); err != nil {
		os.Remove(base + ".idx")
		return "", fmt.Errorf("store pack: %w", err)
	}
	if fsync {
		if err := syncDir(dir); err != nil {
			return "", fmt.Errorf("fsync pack dir: %w", err)
		}
	}
	db.Reset()
	return filepath.Base(base) + ".pack", nil
}

// finishFile makes a written file read-only (as git leaves packs), fsyncs
// it when asked, and closes it.
func finishFile(f *os.File, fsync bool) error {
	if err := f.Chmod(0o444); err != nil {
		f.Close()
		return err
	}
	if fsync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
