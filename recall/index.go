package recall

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
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
	dir, err := st.StateDir("recall")
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

// plan works out what an update reads: for each writer whose head moved,
// its new event lines (or all of them when its history was rewritten),
// and the manifest after the update.
func (ix *Index) plan(ctx context.Context, base manifest, heads []gitstore.WriterInfo) (manifest, []docInput, error) {
	man := base.clone()
	man.gen++
	if man.writers == nil {
		man.writers = map[string]writerState{}
	}
	seen := map[string]bool{}
	var inputs []docInput
	for _, h := range heads {
		if h.Err != "" {
			ix.warnf("writer %s: %s", h.Name, h.Err)
			if st, ok := base.writers[h.Name]; ok {
				seen[h.Name] = true
				man.writers[h.Name] = st
			}
			continue
		}
		seen[h.Name] = true
		have, ok := base.writers[h.Name]
		if ok && have.commit == h.Commit {
			continue
		}
		lines, whole, err := ix.newLines(ctx, h, have)
		if err != nil {
			if ctx.Err() != nil {
				return man, nil, ctx.Err()
			}
			ix.warnf("writer %s: %v", h.Name, err)
			continue
		}
		ep := have.epoch
		if whole || !ok {
			ep = man.gen
		}
		man.writers[h.Name] = writerState{commit: h.Commit, seq: h.Seq, epoch: ep}
		ix.stats.WritersRead = append(ix.stats.WritersRead, h.Name)
		// Content a prune record removed is not indexed, even while its
		// object lingers until git gc. A prune rewrites history, so the
		// writer is read whole and its records come with the lines.
		var pruned map[string]bool
		for _, l := range lines {
			if opOf(l) == "prune" {
				pruned = prunedBlobs(l, pruned)
			}
		}
		for _, l := range lines {
			if opOf(l) != "prune" {
				inputs = append(inputs, docInput{line: l, writer: h.Name, epoch: ep, pruned: pruned})
			}
		}
	}
	for w := range man.writers {
		if !seen[w] {
			delete(man.writers, w) // the writer's ref is gone: its documents die with it
		}
	}
	return man, inputs, nil
}

// newLines returns the lines of writer h that the index lacks: those
// after have, when have's commit is in h's history, else all of them
// (whole). Only lines that can be documents (spans, file versions) are
// returned.
func (ix *Index) newLines(ctx context.Context, h gitstore.WriterInfo, have writerState) (lines [][]byte, whole bool, err error) {
	if have.commit != "" && have.seq < h.Seq {
		var batches [][]byte
		id := h.Commit
		found, gaveUp := false, true
		for range walkLimit {
			if id == have.commit {
				found, gaveUp = true, false
				break
			}
			c, err := ix.st.ReadCommitFiles(id)
			if err != nil {
				gaveUp = false
				break
			}
			ev := c.Files["events.jsonl"]
			if len(ev) == 0 || seqOf(ev) <= have.seq || len(c.Parents) != 1 {
				gaveUp = false
				break // not a descendant of what was indexed
			}
			batches = append(batches, ev)
			id = c.Parents[0]
		}
		if found {
			for i := len(batches) - 1; i >= 0; i-- {
				for l := range bytes.Lines(batches[i]) {
					l = bytes.TrimSuffix(l, []byte("\n"))
					if len(l) > 0 && wantLine(l) {
						lines = append(lines, l)
					}
				}
			}
			return lines, false, nil
		}
		if gaveUp {
			ok, err := ix.st.IsAncestor(ctx, have.commit, h.Commit, 0)
			if err != nil {
				return nil, false, err
			}
			if ok {
				lines, err := ix.selectLines(ctx, h.Name, have.seq)
				return lines, false, err
			}
		}
	}
	lines, err = ix.selectLines(ctx, h.Name, 0)
	return lines, true, err
}

// selectLines returns copies of writer's document lines with seq > after.
func (ix *Index) selectLines(ctx context.Context, writer string, after int64) ([][]byte, error) {
	var lines [][]byte
	_, err := ix.st.Select(ctx, gitstore.Selection{Writers: []string{writer}, Keep: func(_ string, l []byte) bool {
		if wantLine(l) && (after == 0 || seqOf(l) > after) {
			lines = append(lines, bytes.Clone(l))
		}
		return false // parsed later, in parallel
	}})
	return lines, err
}

// wantLine reports whether an event line can be a document (op span or a
// file version) or is a prune record. A line whose op cannot be found
// cheaply (not canonical) is kept, and decided after parsing.
func wantLine(l []byte) bool {
	op := opOf(l)
	return op == "" || op == "span" || op == "prune" || gitstore.IsFileVersion(op)
}

// opOf returns a canonical line's op ("" when it cannot be found
// cheaply).
func opOf(l []byte) string {
	i := bytes.Index(l, []byte(`"op":"`))
	if i < 0 {
		return ""
	}
	op := l[i+6:]
	j := bytes.IndexByte(op, '"')
	if j < 0 {
		return ""
	}
	return string(op[:j])
}

// prunedBlobs adds the blobs a prune record names to set.
func prunedBlobs(line []byte, set map[string]bool) map[string]bool {
	ev, err := gitstore.ParseEvent(line)
	if err != nil {
		return set
	}
	var pruned []struct {
		Blob string `json:"blob"`
	}
	if json.Unmarshal(ev.Extra["pruned"], &pruned) != nil {
		return set
	}
	for _, p := range pruned {
		if set == nil {
			set = map[string]bool{}
		}
		set[p.Blob] = true
	}
	return set
}

// seqOf returns the seq of the first event line in b (0 when it cannot
// be found cheaply).
func seqOf(b []byte) int64 {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	i := bytes.Index(b, []byte(`"seq":`))
	if i < 0 {
		return 0
	}
	n := int64(0)
	for _, c := range b[i+6:] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// mergeTiered merges the newest segments while the newest holds at least
// half of what the one before it holds (live documents' bytes, roughly),
// so that sizes fall geometrically and there are O(log n) segments; and
// rewrites any segment that is mostly dead documents. Merged segments are
// written as new files; a merge that fails leaves the segments as they
// were.
func (ix *Index) mergeTiered(segs []*segment, man *manifest) []*segment {
	liveSize := func(s *segment) int64 {
		if s.nDocs == 0 {
			return 0
		}
		return s.size * int64(s.liveDocs) / int64(s.nDocs)
	}
	for _, s := range segs {
		setLive(s, man)
	}
	k := 0
	mergeRun := func(run []*segment) (*segment, bool) {
		k++
		var parts []*segData
		for _, s := range run {
			d, err := s.decode(s.isLive)
			if err != nil {
				ix.warnf("merge: %v", err)
				return nil, false
			}
			parts = append(parts, d)
		}
		data := mergeData(parts)
		if len(data.docs) == 0 {
			return nil, true
		}
		s, err := ix.writeSegment(segName(man.gen, k), data)
		if err != nil {
			if s != nil {
				s.close()
			}
			ix.warnf("merge: %v", err)
			return nil, false
		}
		setLive(s, man)
		ix.stats.Merges++
		return s, true
	}
	// Mostly dead segments (a writer re-indexed whole, or gone) are
	// rewritten alone.
	for i, s := range segs {
		if s.nDocs > 0 && s.liveDocs*2 < s.nDocs {
			if m, ok := mergeRun([]*segment{s}); ok {
				segs[i] = m // nil when nothing in it lives
			}
		}
	}
	segs = compactNil(segs)
	for len(segs) >= 2 {
		a, b := segs[len(segs)-2], segs[len(segs)-1]
		if 2*liveSize(b) < liveSize(a) {
			break
		}
		m, ok := mergeRun([]*segment{a, b})
		if !ok {
			break
		}
		segs = segs[:len(segs)-2]
		if m != nil {
			segs = append(segs, m)
		}
	}
	return segs
}

// closeDropped releases the segments of before that after no longer
// holds (merged away).
func closeDropped(before, after []*segment) {
	keep := map[*segment]bool{}
	for _, s := range after {
		keep[s] = true
	}
	for _, s := range before {
		if !keep[s] {
			s.close()
		}
	}
}

func compactNil(segs []*segment) []*segment {
	out := segs[:0]
	for _, s := range segs {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// setLive works out, from the segment's writer table and the manifest,
// which writers' documents are live (those of the writer's current
// epoch), and counts them, their length and the encrypted ones. It reads
// no document.
func setLive(s *segment, m *manifest) {
	s.epochOf = map[uint32]uint32{}
	s.liveDocs, s.liveLen, s.liveEnc = 0, 0, 0
	for _, r := range s.writerRows() {
		name, ok := s.strAt(r.writer)
		if !ok {
			continue
		}
		if st, ok := m.writers[string(name)]; ok && st.epoch == r.epoch {
			s.epochOf[r.writer] = r.epoch
			s.liveDocs += int(r.docs)
			s.liveLen += r.length
			s.liveEnc += int(r.enc)
		}
	}
}

// finishOpen computes the collection statistics BM25 needs.
func (ix *Index) finishOpen() {
	ix.n = 0
	var total uint64
	ix.stats.Locked = 0
	for _, s := range ix.segs {
		if s.epochOf == nil {
			setLive(s, &ix.man)
		}
		ix.n += s.liveDocs
		total += s.liveLen
		if !s.mem {
			ix.stats.Locked += s.liveEnc
		}
		for d, h := range s.hidden {
			if h {
				ix.n--
				total -= uint64(s.docLen(d))
				ix.stats.Locked--
			}
		}
	}
	if ix.n > 0 {
		ix.avgLen = float64(total) / float64(ix.n)
	}
	ix.stats.Segments = len(ix.segs)
	ix.stats.Docs = ix.n
}

// decryptPass indexes, in memory, the plaintext of every live encrypted
// span the identities open, and hides the metadata-only documents on disk
// that stand for them.
func (ix *Index) decryptPass(ctx context.Context) error {
	type at struct{ seg, doc int }
	where := map[string]at{}
	var inputs []docInput
	for si, s := range ix.segs {
		setLive(s, &ix.man)
		if s.liveEnc == 0 {
			continue
		}
		for d := range s.nDocs {
			if !s.isLive(d) {
				continue
			}
			r := s.rec(d)
			if r.Flags&flagEncrypted == 0 || r.Flags&flagDecrypted != 0 {
				continue
			}
			m := s.meta(d)
			where[docKey(m.Writer, m.Seq)] = at{si, d}
			inputs = append(inputs, docInput{meta: &m, writer: m.Writer, epoch: m.Epoch, decrypt: true})
		}
	}
	if len(inputs) == 0 {
		return nil
	}
	data, bst, err := ix.build(ctx, inputs)
	if err != nil {
		return err
	}
	ix.stats.Unreadable += bst.unreadable
	if len(data.docs) == 0 {
		return nil
	}
	enc, err := encodeSegment(data)
	if err != nil {
		return err
	}
	mem, err := openSegment("", enc, false)
	if err != nil {
		return err
	}
	mem.mem = true
	setLive(mem, &ix.man)
	for _, m := range data.docs {
		if w, ok := where[docKey(m.Writer, m.Seq)]; ok {
			s := ix.segs[w.seg]
			if s.hidden == nil {
				s.hidden = make([]bool, s.nDocs)
			}
			s.hidden[w.doc] = true
		}
	}
	ix.segs = append(ix.segs, mem)
	ix.stats.Decrypted = len(data.docs)
	return nil
}

// damaged reports whether a segment of the index failed a page check.
// The first time it finds one it warns and removes the manifest that
// lists it, so that the next Open rebuilds the index (under the lock, and
// only if the manifest still lists the segment: an update may have
// replaced it meanwhile).
func (ix *Index) damaged() bool {
	found := false
	for _, s := range ix.segs {
		if !s.bad.Load() {
			continue
		}
		found = true
		if s.name == "" || ix.dir == "" || !s.reported.CompareAndSwap(false, true) {
			continue
		}
		ix.warnf("segment %s is damaged (a page failed its checksum): its hits are left out, and the index will be rebuilt", s.name)
		ix.invalidate(s.name)
	}
	return found
}

// invalidate removes the manifest if it lists segment name.
func (ix *Index) invalidate(name string) {
	unlock, err := lockDir(context.Background(), ix.dir, time.Second)
	if err != nil {
		return // the next reader that meets the damage tries again
	}
	defer unlock()
	m, err := readManifest(ix.dir)
	if err != nil {
		return
	}
	for _, e := range m.segs {
		if e.name == name {
			os.Remove(filepath.Join(ix.dir, manifestName))
			return
		}
	}
}

func docKey(writer string, seq int64) string {
	return writer + "#" + strconv.FormatInt(seq, 10)
}

func blobHex(m *docMeta) string {
	if m.Flags&flagBlob == 0 {
		return ""
	}
	return hex.EncodeToString(m.Blob[:])
}
