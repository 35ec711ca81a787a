package recall

// Planning an update (which batches of which writers are new), reading
// their lines, tiered merges of segments, and the in-memory pass over
// encrypted spans.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

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
			if gitstore.Op(opOf(l)) == gitstore.OpPrune {
				pruned = prunedBlobs(l, pruned)
			}
		}
		for _, l := range lines {
			if gitstore.Op(opOf(l)) != gitstore.OpPrune {
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
			c, err := ix.st.Objects().ReadCommitFiles(ctx, id)
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
			ok, err := ix.st.Objects().IsAncestor(ctx, have.commit, h.Commit, 0)
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
	op := gitstore.Op(opOf(l))
	return op == "" || op == gitstore.OpSpan || op == gitstore.OpPrune || op.IsFileVersion()
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
func (ix *Index) damaged(ctx context.Context) bool {
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
		ix.invalidate(ctx, s.name)
	}
	return found
}

// invalidate removes the manifest if it lists segment name.
func (ix *Index) invalidate(ctx context.Context, name string) {
	unlock, err := lockDir(ctx, ix.dir, time.Second)
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
