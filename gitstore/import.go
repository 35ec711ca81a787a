package gitstore

import (
	"context"

	"github.com/git-lossless/git-lossless/internal/gitobj"
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
	if err := checkWriterName(writer); err != nil {
		return ImportResult{}, err
	}
	if len(recs) == 0 {
		return ImportResult{}, nil
	}
	if err := s.CheckWritable(ctx, writer); err != nil {
		return ImportResult{}, err
	}
	batchSize := opt.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultImportBatch
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()

	pk := gitobj.NewPackSink(opt.Prepack)
	defer pk.Close()
	events, err := s.prepareRecords(ctx, recs, pk)
	if err != nil {
		return ImportResult{}, err
	}
	var res ImportResult
	var h, nh head
	err = s.casRef(ctx, RefPrefix+writer, func(attempt int, cur string) (string, error) {
		if attempt > 0 {
			// Rebuild the batches on the new head. The blobs are in the
			// pack just written; only the batch objects go into the next.
			pk.Reset()
		}
		var batch []Event
		var deduped int
		var err error
		if h, batch, deduped, err = s.newEvents(ctx, writer, cur, events, pk); err != nil {
			return "", err
		}
		if len(batch) == 0 {
			// Nothing new: blobs already packed stay unreferenced, as with
			// Append's loose ones, until git gc.
			res = ImportResult{AppendResult: AppendResult{Deduped: deduped}}
			if pk.Len() > 0 {
				if _, err := s.odb.WritePack(pk); err != nil {
					return "", err
				}
			}
			return "", nil
		}
		res = ImportResult{AppendResult: AppendResult{Deduped: deduped, Events: make([]Event, 0, len(batch))}}
		nh = h
		for len(batch) > 0 {
			n := min(batchSize, len(batch))
			out, commit, next, err := s.buildBatchTo(pk, writer, nh, batch[:n])
			if err != nil {
				return "", err
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
			return "", err
		}
		return nh.Commit, nil
	})
	if err != nil {
		return ImportResult{}, err
	}
	if res.Commit != "" {
		s.sawHead(writer, nh)
		s.markOwn(writer)
		s.indexAppend(writer, h, nh, res.Events)
	}
	return res, nil
}
