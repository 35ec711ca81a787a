package gitstore

import (
	"github.com/git-lossless/git-lossless/internal/gitobj"

	"context"
	"errors"
	"fmt"
)

// DefaultImportBatch is the batch size Import uses when given none.
const DefaultImportBatch = 100

// ImportResult says what an import stored.
type ImportResult struct {
	AppendResult     // Commit is the new head; each event names its batch commit
	Batches      int // batch commits written
	Objects      int // objects in the pack
	Pack         string
}

// Import stores recs on writer's log in batches of batchSize events (0:
// DefaultImportBatch), the way that many Appends would, but writes every
// object (blobs, events blobs, trees, commits) into ONE packfile and moves
// the ref once. It is the bulk path (sweeps of old transcripts, benchmarks):
// a loose object per blob costs a file, a rename and with fsync an fsync
// each; a pack costs two files.
//
// Records are prepared exactly as Append prepares them (same deny list,
// same defaults, same dedupe keys against the writer's stored events), the
// pack and its index are fsynced (when fsync is on) before the ref moves,
// and the ref moves by compare-and-swap under its lock; when another process
// moved it meanwhile, the batches are rebuilt once on the new head, under
// the lock, into a further (small) pack. The witness and index are updated as Append updates them.
// Content slices of recs must not be modified until Import returns.
func (s *Store) Import(ctx context.Context, writer string, recs []Record, batchSize int) (ImportResult, error) {
	return s.ImportWith(ctx, writer, recs, ImportOptions{BatchSize: batchSize})
}

// ImportOptions tune ImportWith.
type ImportOptions struct {
	// BatchSize is the number of events per batch commit (0:
	// DefaultImportBatch).
	BatchSize int
	// Prepack, when set, holds contents of recs already being compressed
	// (see Prepack); Import compresses the others on its workers.
	Prepack *Prepack
}

// ImportWith is Import with options. With a Prepack, contents the Prepack
// did not hold, and the batches' objects, are compressed on the Prepack's
// workers.
func (s *Store) ImportWith(ctx context.Context, writer string, recs []Record, opt ImportOptions) (ImportResult, error) {
	if err := ValidWriter(writer); err != nil {
		return ImportResult{}, err
	}
	if len(recs) == 0 {
		return ImportResult{}, nil
	}
	batchSize := opt.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultImportBatch
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()

	pk := gitobj.NewPackSink(opt.Prepack)
	defer pk.Close()
	events, err := s.prepareRecords(recs, pk)
	if err != nil {
		return ImportResult{}, err
	}
	ref := RefPrefix + writer
	var lk *gitobj.Lock // held across the whole attempt after a lost race
	defer func() {
		if lk != nil {
			lk.Release()
		}
	}()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return ImportResult{}, fmt.Errorf("import to %s: %w", writer, err)
		}
		if attempt > 0 {
			// Another process moved the ref while the first attempt was
			// being built. Building the batches again is cheap next to the
			// blobs (already packed), so hold the lock from reading the
			// head to moving it: this attempt cannot lose the race again
			// however busy the writer is. Appenders wait meanwhile.
			if lk, err = s.lockRef(ctx, ref); err != nil {
				return ImportResult{}, err
			}
		}
		cur, err := s.refs.Read(ref)
		if err != nil {
			return ImportResult{}, err
		}
		h, err := s.headAt(cur)
		if err != nil {
			return ImportResult{}, fmt.Errorf("writer %s: %w", writer, err)
		}
		batch := events
		deduped := 0
		if hasKeys(events) {
			stored, err := s.storedKeys(ctx, writer, h, events)
			if err != nil {
				return ImportResult{}, err
			}
			batch, deduped = dedupe(events, stored)
		}
		if batch, err = s.withVault(batch, pk); err != nil {
			return ImportResult{}, err
		}
		if len(batch) == 0 {
			// Nothing new: blobs already packed stay unreferenced, as with
			// Append's loose ones, until git gc.
			if pk.Len() > 0 {
				if _, err := s.odb.WritePack(pk); err != nil {
					return ImportResult{}, err
				}
			}
			return ImportResult{AppendResult: AppendResult{Deduped: deduped}}, nil
		}
		res := ImportResult{AppendResult: AppendResult{Deduped: deduped, Events: make([]Event, 0, len(batch))}}
		nh := h
		for len(batch) > 0 {
			n := min(batchSize, len(batch))
			out, commit, next, err := s.buildBatchTo(pk, writer, nh, batch[:n])
			if err != nil {
				return ImportResult{}, err
			}
			for i := range out {
				out[i].Writer, out[i].Commit = writer, commit
			}
			res.Events = append(res.Events, out...)
			res.Batches++
			nh = next
			batch = batch[n:]
		}
		res.Commit = nh.Commit
		res.Objects = pk.Len()
		if res.Pack, err = s.odb.WritePack(pk); err != nil {
			return ImportResult{}, err
		}
		if lk == nil {
			if lk, err = s.lockRef(ctx, ref); err != nil {
				return ImportResult{}, err
			}
		}
		err = lk.Commit(cur, nh.Commit) // releases the lock either way
		lk = nil
		if errors.Is(err, ErrRefChanged) && attempt == 0 {
			// Rebuild the batches on the new head. The blobs are in the
			// pack just written; only the batch objects go into the next.
			pk.Reset()
			continue
		}
		if err != nil {
			return ImportResult{}, err
		}
		s.sawHead(writer, nh)
		s.indexAppend(writer, h, nh, res.Events)
		return res, nil
	}
}

// lockRef takes ref's lock, waiting at most the store's lock timeout.
func (s *Store) lockRef(ctx context.Context, ref string) (*gitobj.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	return s.refs.Acquire(ctx, ref)
}
