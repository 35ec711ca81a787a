package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// The index is a derived cache of each writer's event lines, so a reader
// does not walk thousands of commits: <common>/lossless/index/<writer>.jsonl
// holds the lines in seq order and <writer>.head says which commit, seq,
// seal and byte length they cover. It is never the source of truth: a
// reader trusts it only when its commit is the writer's head or an
// ancestor of it (then it walks just the new batches), and rebuilds it from
// the commits otherwise. Delete the directory at any time.

type indexHead struct {
	head
	Length int64
}

func (s *Store) indexPaths(writer string) (jsonl, headFile, lockFile string) {
	d := s.stateDir("index")
	return filepath.Join(d, writer+".jsonl"), filepath.Join(d, writer+".head"), filepath.Join(d, writer+".lock")
}

func (s *Store) readIndexHead(writer string) (indexHead, bool) {
	_, hf, _ := s.indexPaths(writer)
	b, err := gitobj.ReadFile(hf)
	if err != nil {
		return indexHead{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 4 || !gitobj.IsID(f[0]) {
		return indexHead{}, false
	}
	seq, err1 := strconv.ParseInt(f[1], 10, 64)
	n, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil {
		return indexHead{}, false
	}
	return indexHead{head: head{Commit: f[0], Seq: seq, Seal: f[2]}, Length: n}, true
}

// readIndex returns the indexed lines if the index covers exactly ih.
func (s *Store) readIndex(writer string, ih indexHead) ([][]byte, bool) {
	jf, _, _ := s.indexPaths(writer)
	b, err := os.ReadFile(jf)
	if err != nil || int64(len(b)) < ih.Length {
		return nil, false
	}
	lines := splitLines(b[:ih.Length])
	if int64(len(lines)) != ih.Seq {
		return nil, false
	}
	return lines, true
}

// writerLines returns every stored line of writer up to head h, from the
// index where it is current, catching up (and refreshing the index) where
// it is not.
func (s *Store) writerLines(ctx context.Context, writer string, h head) ([][]byte, error) {
	if h.Commit == "" {
		return nil, nil
	}
	ih, ok := s.readIndexHead(writer)
	var base [][]byte
	stop, stopSeq := "", int64(0)
	if ok {
		if lines, good := s.readIndex(writer, ih); good {
			if ih.Commit == h.Commit {
				return lines, nil
			}
			if ih.Seq < h.Seq {
				base, stop, stopSeq = lines, ih.Commit, ih.Seq
			}
		}
	}
	batches, found, err := s.walk(ctx, h.Commit, stop, stopSeq)
	if err != nil {
		return nil, err
	}
	if stop != "" && !found {
		// The index is not on this history (rewritten or forked): rebuild.
		base, stop = nil, ""
		if batches, _, err = s.walk(ctx, h.Commit, "", 0); err != nil {
			return nil, err
		}
	}
	var fresh [][]byte
	for _, b := range batches {
		if b.Err != nil {
			return nil, fmt.Errorf("writer %s: batch %s: %w", writer, gitobj.Short(b.Commit), b.Err)
		}
		fresh = append(fresh, b.Lines...)
	}
	all := append(base, fresh...)
	if int64(len(all)) == h.Seq {
		if stop == "" {
			s.indexWrite(writer, h, all, nil)
		} else {
			s.indexWrite(writer, h, fresh, &ih)
		}
	}
	return all, nil
}

// indexAppend records a batch just appended on top of parent.
func (s *Store) indexAppend(writer string, parent, nh head, evs []Event) {
	lines := make([][]byte, len(evs))
	for i, e := range evs {
		lines[i] = e.Raw
	}
	if parent.Commit == "" {
		s.indexWrite(writer, nh, lines, nil)
		return
	}
	ih, ok := s.readIndexHead(writer)
	if !ok || ih.Commit != parent.Commit {
		return // behind or elsewhere: the next reader catches it up
	}
	s.indexWrite(writer, nh, lines, &ih)
}

// indexWrite replaces the index with lines (on == nil) or appends lines to
// the index at *on. It takes the index's own lock without waiting: the
// index is a cache, and a busy lock means someone else is refreshing it.
// Lines go first, the head file (written by rename) last, so a crash
// leaves at worst unreferenced bytes past the recorded length.
//
// The lock is an advisory lock on <writer>.lock, a file that is created
// once and never removed (gitobj.TryLockFile): an append then pays one open and
// no create or unlink, and a lock held by a process that died is released
// by the kernel, so no stale index lock can outlive its holder.
func (s *Store) indexWrite(writer string, h head, lines [][]byte, on *indexHead) {
	if s.readOnly {
		return // a quarantine's view: its heads may never reach the archive
	}
	jf, hf, lf := s.indexPaths(writer)
	unlock, ok := gitobj.TryLockFile(lf)
	if !ok {
		if err := os.MkdirAll(filepath.Dir(jf), 0o700); err != nil {
			return
		}
		if unlock, ok = gitobj.TryLockFile(lf); !ok {
			return
		}
	}
	defer unlock()

	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	var length int64
	if on == nil {
		tmp := jf + ".tmp"
		if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
			return
		}
		if err := os.Rename(tmp, jf); err != nil {
			return
		}
		length = int64(buf.Len())
	} else {
		cur, ok := s.readIndexHead(writer)
		if !ok || cur.Commit != on.Commit {
			return
		}
		f, err := gitobj.OpenFile(jf, os.O_WRONLY, 0o600)
		if err != nil {
			return
		}
		if err := f.Truncate(cur.Length); err != nil {
			f.Close()
			return
		}
		if _, err := f.WriteAt(buf.Bytes(), cur.Length); err != nil {
			f.Close()
			return
		}
		f.Close()
		length = cur.Length + int64(buf.Len())
	}
	tmp := hf + ".tmp"
	body := fmt.Sprintf("%s %d %s %d\n", h.Commit, h.Seq, h.Seal, length)
	if err := gitobj.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return
	}
	os.Rename(tmp, hf)
}

// Reindex rebuilds every writer's index from the commits.
func (s *Store) Reindex(ctx context.Context) error {
	if s.readOnly {
		return fmt.Errorf("reindex: %w", ErrReadOnly)
	}
	if err := os.RemoveAll(s.stateDir("index")); err != nil {
		return fmt.Errorf("remove index: %w", err)
	}
	ws, err := s.Writers(ctx)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w.Err != "" {
			continue
		}
		if _, err := s.writerLines(ctx, w.Name, head{Commit: w.Commit, Seq: w.Seq, Seal: w.Seal}); err != nil {
			return err
		}
	}
	return nil
}
