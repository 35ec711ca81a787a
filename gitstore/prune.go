package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// PrunedBlob names one blob a prune record removed.
type PrunedBlob struct {
	Blob   string `json:"blob"`
	SHA256 string `json:"sha256"`
}

// PruneResult says what a prune did (or, dry, would do).
type PruneResult struct {
	Writer   string
	Blobs    []PrunedBlob
	Events   int    // events whose content is now gone
	Rewrote  int    // batch commits rewritten
	Commit   string // new head
	Recorded *Event // the prune record
}

// Prune removes from writer's history the content of every event match
// selects, keeping the events themselves and the seal intact:
//
//   - every batch tree of the writer that references a selected blob is
//     rewritten without it (events.jsonl untouched, so every entry's seal
//     is unchanged and the witness still agrees);
//   - a prune record is appended: an event with op "prune" and a "pruned"
//     array naming each removed blob and its sha256 — verify reports the
//     entries that referenced them as `pruned`, expected, not broken.
//
// The objects themselves disappear at the next `git gc --prune=now`
// unless another writer still references them. The writer's ref lock is
// held for the whole rewrite, so no concurrent append is lost.
func (s *Store) Prune(ctx context.Context, writer string, match func(*Event) bool, reason string, dry bool) (PruneResult, error) {
	res := PruneResult{Writer: writer}
	if err := ValidWriter(writer); err != nil {
		return res, err
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	ref := RefPrefix + writer
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	lk, err := s.refs.Acquire(ctx, ref)
	if err != nil {
		return res, err
	}
	locked := true
	defer func() {
		if locked {
			lk.Release()
		}
	}()
	cur, err := s.refs.Read(ref)
	if err != nil {
		return res, err
	}
	if cur == "" {
		return res, fmt.Errorf("no writer %q", writer)
	}
	batches, _, err := s.walk(ctx, cur, "", 0)
	if err != nil {
		return res, err
	}
	prune := map[string]string{} // blob -> sha256
	for _, b := range batches {
		if b.Err != nil {
			return res, fmt.Errorf("writer %s is damaged at %s (%v); run verify first", writer, gitobj.Short(b.Commit), b.Err)
		}
		for _, l := range b.Lines {
			e, err := ParseEvent(l)
			if err != nil {
				return res, fmt.Errorf("writer %s: %w", writer, err)
			}
			if e.Blob != "" && !e.Excluded && match(&e) {
				prune[e.Blob] = e.SHA256
			}
		}
	}
	if len(prune) == 0 {
		return res, nil
	}
	for _, b := range batches {
		for _, l := range b.Lines {
			e, _ := ParseEvent(l)
			if _, ok := prune[e.Blob]; ok && e.Blob != "" {
				res.Events++
			}
		}
	}
	for id, sum := range prune {
		res.Blobs = append(res.Blobs, PrunedBlob{Blob: id, SHA256: sum})
	}
	sort.Slice(res.Blobs, func(i, j int) bool { return res.Blobs[i].Blob < res.Blobs[j].Blob })
	if dry {
		return res, nil
	}

	// Rewrite from the first batch that references a pruned blob.
	var pending []string
	parent := ""
	rewriting := false
	for _, b := range batches {
		touches := false
		for id := range b.Blobs {
			if _, ok := prune[id]; ok {
				touches = true
				break
			}
		}
		if !touches && !rewriting {
			parent = b.Commit
			continue
		}
		rewriting = true
		c, err := s.readCommit(b.Commit)
		if err != nil {
			return res, err
		}
		_, treeBody, err := s.odb.Read(c.Tree)
		if err != nil {
			return res, err
		}
		root, err := gitobj.ParseTree(treeBody)
		if err != nil {
			return res, err
		}
		var newRoot []gitobj.TreeEntry
		for _, ent := range root {
			if ent.Name != "blobs" {
				newRoot = append(newRoot, ent)
				continue
			}
			var keep []gitobj.TreeEntry
			for id := range b.Blobs {
				if _, ok := prune[id]; !ok {
					keep = append(keep, gitobj.TreeEntry{Mode: "100644", Name: id, ID: id})
				}
			}
			if len(keep) == 0 {
				continue
			}
			sub, err := s.odb.Write("tree", gitobj.EncodeTree(keep), &pending)
			if err != nil {
				return res, err
			}
			newRoot = append(newRoot, gitobj.TreeEntry{Mode: "40000", Name: "blobs", ID: sub})
		}
		treeID, err := s.odb.Write("tree", gitobj.EncodeTree(newRoot), &pending)
		if err != nil {
			return res, err
		}
		_, body, err := s.odb.Read(b.Commit)
		if err != nil {
			return res, err
		}
		_, msg, _ := cutMessage(body)
		id, err := s.odb.Write("commit", encodeCommit(treeID, parent, c.Time, msg), &pending)
		if err != nil {
			return res, err
		}
		parent = id
		res.Rewrote++
	}

	// Append the prune record on the rewritten head.
	last := batches[len(batches)-1]
	h := head{Commit: parent, Seq: last.Seq, Seal: last.Seal}
	raw, err := json.Marshal(res.Blobs)
	if err != nil {
		return res, err
	}
	rec := Event{TS: s.now(), Op: OpPrune, Source: "cli", Repo: s.repoLabel(),
		Extra: map[string]json.RawMessage{"pruned": raw}}
	if reason != "" {
		r, _ := json.Marshal(reason)
		rec.Extra["reason"] = r
	}
	out, commit, nh, err := s.buildBatch(writer, h, []Event{rec}, &pending)
	if err != nil {
		return res, err
	}
	if err := s.odb.Flush(pending); err != nil {
		return res, err
	}
	locked = false
	if err := lk.Commit(cur, commit); err != nil {
		return res, err
	}
	s.sawHead(writer, nh)
	// The history changed: rebuild this writer's index from the new head.
	var all [][]byte
	for _, b := range batches {
		all = append(all, b.Lines...)
	}
	all = append(all, out[0].Raw)
	s.indexWrite(writer, nh, all, nil)
	res.Commit = commit
	out[0].Writer, out[0].Commit = writer, commit
	res.Recorded = &out[0]
	return res, nil
}

// cutMessage splits a commit body into header and message.
func cutMessage(body []byte) (string, string, bool) {
	for i := 0; i+1 < len(body); i++ {
		if body[i] == '\n' && body[i+1] == '\n' {
			return string(body[:i]), string(body[i+2:]), true
		}
	}
	return string(body), "", false
}

// PrunedBlobs returns the blobs a prune record (op "prune") names as
// removed; nil for any other event or a record that does not parse.
func PrunedBlobs(e *Event) []string {
	if e.Op != OpPrune {
		return nil
	}
	var list []struct {
		Blob string `json:"blob"`
	}
	if err := json.Unmarshal(e.Extra["pruned"], &list); err != nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, p := range list {
		out = append(out, p.Blob)
	}
	return out
}
