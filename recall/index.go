package recall

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Options configures Open.
type Options struct {
	// Identities open encrypted spans ("enc":"age"). Their plaintext is
	// decrypted in memory and indexed in memory only, never written.
	// Without an identity that opens them they are searchable by their
	// metadata (tool, path) and reported Locked.
	Identities []age.Identity
	// NoUpdate reads the index as it is on disk, without bringing it up to
	// date or writing anything (Stats.Stale says when the archive has
	// moved past it). A missing or damaged index then reads as empty.
	NoUpdate bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Warn receives what went wrong without failing the call: an index
	// that could not be written, a writer that could not be read.
	Warn func(string)
	// Workers bounds the goroutines that index content (default
	// GOMAXPROCS).
	Workers int
	// HarnessOf maps a writer to its agent harness's name, for events
	// that do not name theirs (gitstore.HarnessOf: hits, digests and the
	// Harness filters use it). The commands pass harnesses.WriterHarness;
	// this package must not import the adapters. nil: only the events'
	// own field counts.
	HarnessOf func(writer string) string
}

// Stats says what an Open found and did.
type Stats struct {
	Segments    int      // segments searched, the in-memory ones included
	Docs        int      // live documents
	WritersRead []string // writers whose events this Open read (only those whose head moved)
	EventsRead  int      // event lines this Open parsed
	DocsAdded   int      // documents this Open indexed
	BytesRead   int64    // span content bytes this Open read and indexed
	Rebuilt     bool     // the on-disk index was built from scratch
	Reason      string   // why it was rebuilt
	Merges      int      // segment merges this Open did
	InMemory    bool     // the index could not be written: this Index holds its update in memory only
	Stale       bool     // NoUpdate, and the archive has moved past the index
	Locked      int      // encrypted spans no identity opened: searchable by metadata only
	Decrypted   int      // encrypted spans indexed in memory from their plaintext
	Unreadable  int      // spans left out because their content could not be read (pruned)
	Took        time.Duration
}

// Index is an opened recall index: a snapshot of the segments on disk
// (and in memory), searched without locks. It does not follow the
// archive after Open; open it again to see new events (that is cheap
// when little has changed). An Index is safe for concurrent use by
// several goroutines. Close releases its mappings; an Index that is
// dropped without Close releases them when it is garbage collected.
type Index struct {
	st     *gitstore.Store
	opt    Options
	dir    string // "" when the index lives in memory only
	man    manifest
	segs   []*segment
	n      int     // live documents (BM25's N)
	avgLen float64 // their mean length in terms
	stats  Stats
}

// lockWait is how long an update waits for another process's update to
// finish before it searches with an in-memory update instead.
const lockWait = 30 * time.Second

// walkLimit is how many new batches of one writer an incremental update
// reads commit by commit; past it the writer's lines are read in bulk.
const walkLimit = 64

// Open opens the index of st's archive under st.StateDir("recall"),
// bringing it up to date first (see the package documentation). A
// missing, damaged or foreign index is rebuilt, an index that cannot be
// written is updated in memory with a warning: the only errors are the
// archive's own (its refs cannot be listed) and ctx's.
func Open(ctx context.Context, st *gitstore.Store, opt Options) (*Index, error) {
	return open(ctx, st, opt, false)
}

// Reindex deletes st's recall index and builds it again from the archive.
func Reindex(ctx context.Context, st *gitstore.Store) error {
	ix, err := open(ctx, st, Options{}, true)
	if err != nil {
		return err
	}
	if ix.stats.InMemory {
		ix.Close()
		return errors.New("recall: reindex: the index could not be written (see the warnings)")
	}
	return ix.Close()
}

func open(ctx context.Context, st *gitstore.Store, opt Options, rebuild bool) (*Index, error) {
	if st == nil {
		return nil, errors.New("recall: no store")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	t0 := opt.Now()
	ix := &Index{st: st, opt: opt}
	heads, err := st.Writers(ctx)
	if err != nil {
		return nil, fmt.Errorf("recall: list writers: %w", err)
	}
	dir, err := st.StateDir(ctx, "recall")
	if err != nil {
		ix.warnf("index directory: %v; searching with an index in memory", err)
		err = ix.updateInMemory(ctx, heads, nil)
	} else {
		ix.dir = dir
		err = ix.load(ctx, heads, rebuild)
	}
	if err == nil && len(opt.Identities) > 0 {
		err = ix.decryptPass(ctx)
	}
	if err != nil {
		ix.Close()
		return nil, err
	}
	ix.finishOpen()
	ix.stats.Took = opt.Now().Sub(t0)
	// An Index dropped without Close (a server that opens one per
	// request) releases its mappings when it is collected. Every method
	// keeps ix alive while it reads them.
	runtime.AddCleanup(ix, func(segs []*segment) {
		for _, s := range segs {
			s.close()
		}
	}, slices.Clone(ix.segs))
	return ix, nil
}

// Stats returns what Open found and did.
func (ix *Index) Stats() Stats {
	s := ix.stats
	s.WritersRead = append([]string(nil), s.WritersRead...)
	return s
}

// Close releases the index's mapped segments. The Index must not be used
// afterwards.
func (ix *Index) Close() error {
	for _, s := range ix.segs {
		s.close()
	}
	ix.segs = nil
	return nil
}

func (ix *Index) warnf(format string, a ...any) {
	if ix.opt.Warn != nil {
		ix.opt.Warn("recall: " + fmt.Sprintf(format, a...))
	}
}

// snapshot is a manifest and its opened segments.
type snapshot struct {
	man  manifest
	segs []*segment
}

func (s *snapshot) close() {
	if s == nil {
		return
	}
	for _, g := range s.segs {
		g.close()
	}
}

// openSnapshot reads the manifest and opens its segments. A segment that
// vanished between the two reads was replaced by a merge: it reads the
// manifest again. The segments of prev (which it takes over: the caller
// must not close it) that the manifest still lists are kept as they are,
// not opened and checked again; the others are closed.
func openSnapshot(dir string, prev *snapshot) (*snapshot, error) {
	var lastErr error
	defer func() {
		if prev != nil && lastErr != nil {
			prev.close()
		}
	}()
	for range 8 {
		m, err := readManifest(dir)
		if err != nil {
			lastErr = err
			return nil, err
		}
		if prev != nil && bytes.Equal(m.raw, prev.man.raw) {
			return prev, nil
		}
		segs, err := openSegmentFiles(dir, m.segs, prev)
		if err == nil {
			if prev != nil {
				closeDropped(prev.segs, segs)
			}
			return &snapshot{man: m, segs: segs}, nil
		}
		lastErr = err
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: segments keep vanishing: %v", errCorrupt, lastErr)
}

// openSegmentFiles opens the segments ents names, taking those prev
// holds from it.
func openSegmentFiles(dir string, ents []segEntry, prev *snapshot) ([]*segment, error) {
	have := map[segEntry]*segment{}
	if prev != nil {
		for i, s := range prev.segs {
			if i < len(prev.man.segs) {
				have[prev.man.segs[i]] = s
			}
		}
	}
	var segs []*segment
	for _, e := range ents {
		if s := have[e]; s != nil {
			segs = append(segs, s)
			continue
		}
		s, err := openSegmentFile(dir, e)
		if err != nil {
			for _, s := range segs {
				if prev == nil || !slices.Contains(prev.segs, s) {
					s.close()
				}
			}
			return nil, err
		}
		segs = append(segs, s)
	}
	return segs, nil
}

func openSegmentFile(dir string, e segEntry) (*segment, error) {
	f, err := os.Open(filepath.Join(dir, e.name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != e.size {
		return nil, fmt.Errorf("%w %s: size %d, manifest says %d", errCorrupt, e.name, fi.Size(), e.size)
	}
	data, release, err := mapFile(f, e.size)
	if err != nil {
		return nil, fmt.Errorf("recall: map %s: %w", e.name, err)
	}
	s, err := openSegment(e.name, data, true)
	if err == nil && segCRC(data) != e.crc {
		err = fmt.Errorf("%w %s: not the segment the manifest names", errCorrupt, e.name)
	}
	if err != nil {
		if release != nil {
			release()
		}
		return nil, err
	}
	s.release = release
	return s, nil
}

// segCRC returns the CRC a segment's footer holds.
func segCRC(data []byte) uint32 {
	at := len(data) - len(segEndMagic) - 4
	if at < 0 {
		return 0
	}
	return binary.LittleEndian.Uint32(data[at:])
}

// moved reports whether the archive's heads differ from what m covers.
func moved(m *manifest, heads []gitstore.WriterInfo) bool {
	n := 0
	for _, h := range heads {
		if h.Err != "" {
			if _, ok := m.writers[h.Name]; ok {
				n++ // kept as it was (see plan)
			}
			continue
		}
		n++
		if m.writers[h.Name].commit != h.Commit {
			return true
		}
	}
	return n != len(m.writers)
}

// load opens the index on disk, updating it when the archive moved (or
// rebuilding it when asked).
func (ix *Index) load(ctx context.Context, heads []gitstore.WriterInfo, rebuild bool) error {
	var snap *snapshot
	if !rebuild {
		var err error
		snap, err = openSnapshot(ix.dir, nil)
		if err == nil && !moved(&snap.man, heads) {
			ix.adopt(snap)
			return nil
		}
		if ix.opt.NoUpdate {
			ix.stats.Stale = true
			if err == nil {
				ix.adopt(snap)
			} else {
				ix.man = manifest{writers: map[string]writerState{}}
				if !errors.Is(err, errNoManifest) {
					ix.warnf("the index is unreadable (%v) and NoUpdate is set: searching nothing", err)
				}
			}
			return nil
		}
	}
	return ix.update(ctx, heads, rebuild, snap)
}

func (ix *Index) adopt(s *snapshot) {
	ix.man, ix.segs = s.man, s.segs
}

// update brings the on-disk index up to date under its lock. prev is
// the snapshot read before the lock (nil when there was none); update
// takes it over.
func (ix *Index) update(ctx context.Context, heads []gitstore.WriterInfo, rebuild bool, prev *snapshot) error {
	unlock, err := lockDir(ctx, ix.dir, lockWait)
	if err != nil {
		if ctx.Err() != nil {
			prev.close()
			return ctx.Err()
		}
		ix.warnf("%v; searching with an update held in memory", err)
		return ix.updateInMemory(ctx, heads, prev)
	}
	defer unlock()
	// Read the manifest again under the lock: another process may have
	// updated the index meanwhile, and then perhaps past the heads read
	// before the lock was taken, so they are read again too.
	var snap *snapshot
	var snapErr error
	if rebuild {
		prev.close()
	} else {
		snap, snapErr = openSnapshot(ix.dir, prev)
	}
	if snap == nil || snap != prev {
		if heads, err = ix.st.Writers(ctx); err != nil {
			snap.close()
			return fmt.Errorf("recall: list writers: %w", err)
		}
	}
	if snap != nil && !moved(&snap.man, heads) {
		ix.adopt(snap)
		return nil
	}
	base := manifest{writers: map[string]writerState{}}
	var segs []*segment
	if snap == nil {
		ix.stats.Rebuilt = true
		switch {
		case rebuild:
			ix.stats.Reason = "reindex"
		case errors.Is(snapErr, errNoManifest):
			ix.stats.Reason = "no index"
		default:
			ix.stats.Reason = snapErr.Error()
			ix.warnf("rebuilding the index: %v", snapErr)
		}
		base.gen = ix.clearDir()
	} else {
		base, segs = snap.man, snap.segs
	}
	man, inputs, err := ix.plan(ctx, base, heads)
	if err != nil {
		snap.close()
		return err
	}
	data, bst, err := ix.build(ctx, inputs)
	if err != nil {
		snap.close()
		return err
	}
	ix.noteBuild(bst)
	persist := true
	if len(data.docs) > 0 {
		s, err := ix.writeSegment(segName(man.gen, 0), data)
		if err != nil {
			if s == nil {
				snap.close()
				return err
			}
			ix.warnf("%v; searching with an update held in memory", err)
			persist = false
		}
		segs = append(segs, s)
	}
	if persist {
		before := segs
		segs = ix.mergeTiered(append([]*segment(nil), segs...), &man)
		closeDropped(before, segs)
		for _, s := range segs {
			if s.bad.Load() {
				// A merge met a damaged page: rather than list the
				// segment again, leave no manifest, and the next Open
				// rebuilds.
				ix.warnf("segment %s is damaged: the index will be rebuilt", s.name)
				os.Remove(filepath.Join(ix.dir, manifestName))
				persist = false
				break
			}
		}
	}
	if persist {
		man.segs = man.segs[:0]
		for _, s := range segs {
			man.segs = append(man.segs, segEntry{name: s.name, size: s.size, crc: segCRC(s.data)})
		}
		if err := writeFileAtomic(ix.dir, manifestName, man.encode()); err != nil {
			ix.warnf("write manifest: %v; searching with an update held in memory", err)
			persist = false
		} else {
			ix.removeUnlisted(&man)
		}
	}
	ix.stats.InMemory = !persist
	ix.man, ix.segs = man, segs
	return nil
}

// updateInMemory is the update when the index cannot be written (or its
// lock cannot be had): what is on disk, plus a segment in memory for the
// rest. Nothing is written.
func (ix *Index) updateInMemory(ctx context.Context, heads []gitstore.WriterInfo, snap *snapshot) error {
	ix.stats.InMemory = true
	base := manifest{writers: map[string]writerState{}}
	var segs []*segment
	if snap != nil {
		base, segs = snap.man, snap.segs
	}
	man, inputs, err := ix.plan(ctx, base, heads)
	if err != nil {
		snap.close()
		return err
	}
	data, bst, err := ix.build(ctx, inputs)
	if err != nil {
		snap.close()
		return err
	}
	ix.noteBuild(bst)
	if len(data.docs) > 0 {
		enc, err := encodeSegment(data)
		if err != nil {
			snap.close()
			return err
		}
		s, err := openSegment("", enc, false)
		if err != nil {
			snap.close()
			return err
		}
		segs = append(segs, s)
	}
	ix.man, ix.segs = man, segs
	return nil
}

func (ix *Index) noteBuild(b buildStats) {
	ix.stats.EventsRead += b.events
	ix.stats.DocsAdded += b.docs
	ix.stats.BytesRead += b.bytes
	ix.stats.Unreadable += b.unreadable
	if b.badLines > 0 {
		ix.warnf("%d event lines could not be parsed", b.badLines)
	}
}

// writeSegment encodes data as segment file name and maps it. When the
// file cannot be written it returns the error with the segment in memory
// (nil only when data cannot be encoded).
func (ix *Index) writeSegment(name string, data *segData) (*segment, error) {
	parts, err := encodeSegmentParts(data)
	if err != nil {
		return nil, err
	}
	var size int64
	for _, p := range parts {
		size += int64(len(p))
	}
	werr := writeFileAtomic(ix.dir, name, parts...)
	if werr == nil {
		f, err := os.Open(filepath.Join(ix.dir, name))
		if err == nil {
			var mapped []byte
			var release func()
			if mapped, release, err = mapFile(f, size); err == nil {
				var s *segment
				// The bytes are the ones just written: trusted.
				if s, err = openSegment(name, mapped, false); err == nil {
					s.release = release
					f.Close()
					return s, nil
				}
				if release != nil {
					release()
				}
			}
			f.Close()
		}
		werr = err
	}
	s, err := openSegment(name, bytes.Join(parts, nil), false)
	if err != nil {
		return nil, err
	}
	return s, fmt.Errorf("write %s: %w", name, werr)
}

func segName(gen uint32, merge int) string {
	if merge == 0 {
		return fmt.Sprintf("%s%08d%s", segPrefix, gen, segSuffix)
	}
	return fmt.Sprintf("%s%08d-%02d%s", segPrefix, gen, merge, segSuffix)
}

// segGen returns the gen a segment file name carries.
func segGen(name string) uint32 {
	mid := strings.TrimSuffix(strings.TrimPrefix(name, segPrefix), segSuffix)
	mid, _, _ = strings.Cut(mid, "-")
	g, _ := strconv.ParseUint(mid, 10, 32)
	return uint32(g)
}

// clearDir removes everything of the index but its lock file (held by
// the caller), and returns the highest gen a removed segment carried, so
// that new names never repeat old ones a reader may still look for.
func (ix *Index) clearDir() uint32 {
	ents, _ := os.ReadDir(ix.dir)
	gen := uint32(0)
	for _, e := range ents {
		if e.Name() == lockName {
			continue
		}
		if validSegName(e.Name()) {
			gen = max(gen, segGen(e.Name()))
		}
		os.RemoveAll(filepath.Join(ix.dir, e.Name()))
	}
	return gen
}

// removeUnlisted removes the segment files (and temporary files) the
// manifest does not list: merged-away segments and leftovers of crashes.
// A reader that still maps one keeps its mapping; a reader about to open
// one finds it gone and reads the manifest again.
func (ix *Index) removeUnlisted(m *manifest) {
	keep := map[string]bool{manifestName: true, lockName: true}
	for _, s := range m.segs {
		keep[s.name] = true
	}
	ents, _ := os.ReadDir(ix.dir)
	for _, e := range ents {
		if !keep[e.Name()] && (validSegName(e.Name()) || strings.Contains(e.Name(), ".tmp-")) {
			os.Remove(filepath.Join(ix.dir, e.Name()))
		}
	}
}
