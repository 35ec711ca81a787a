package gitstore

// Batch commits: how a batch of events is chained, encoded as a tree and a
// commit, and read back.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj"
	"github.com/git-lossless/git-lossless/seal"
)

// buildBatch chains evs after h and writes the events blob, trees and
// commit as loose objects (not yet durable: their paths are added to
// pending).
func (s *Store) buildBatch(writer string, h head, evs []Event, pending *[]string) ([]Event, string, head, error) {
	return s.buildBatchTo(gitobj.LooseSink{DB: s.odb, Pending: pending}, writer, h, evs)
}

// buildBatchTo chains evs after h and stores the batch's events blob, trees
// and commit through sink. It returns the chained events (Raw set), the
// commit id and the new head.
func (s *Store) buildBatchTo(sink gitobj.Sink, writer string, h head, evs []Event) ([]Event, string, head, error) {
	prev := h.Seal
	if h.Seq == 0 {
		prev = seal.Genesis(writer)
	}
	seq := h.Seq
	out := make([]Event, len(evs))
	var body bytes.Buffer
	blobSet := map[string]bool{}
	for i, e := range evs {
		seq++
		e.Seq, e.Prev = seq, prev
		line, err := e.Canonical()
		if err != nil {
			return nil, "", head{}, fmt.Errorf("encode event: %w", err)
		}
		e.Raw = line
		e.vault = nil // the values stay in the vault, not in what callers get back
		prev = seal.Hash(line)
		body.Write(line)
		body.WriteByte('\n')
		out[i] = e
		if e.Blob != "" {
			blobSet[e.Blob] = true
		}
	}
	eventsID, err := sink.Put("blob", body.Bytes())
	if err != nil {
		return nil, "", head{}, err
	}
	root := []gitobj.TreeEntry{{Mode: "100644", Name: "events.jsonl", ID: eventsID}}
	if len(blobSet) > 0 {
		ents := make([]gitobj.TreeEntry, 0, len(blobSet))
		for id := range blobSet {
			ents = append(ents, gitobj.TreeEntry{Mode: "100644", Name: id, ID: id})
		}
		sub, err := sink.Put("tree", gitobj.EncodeTree(ents))
		if err != nil {
			return nil, "", head{}, err
		}
		root = append(root, gitobj.TreeEntry{Mode: "40000", Name: "blobs", ID: sub})
	}
	treeID, err := sink.Put("tree", gitobj.EncodeTree(root))
	if err != nil {
		return nil, "", head{}, err
	}
	nh := head{Seq: seq, Seal: prev}
	msg := batchMessage(writer, h.Seq+1, seq, prev)
	commitID, err := sink.Put("commit", encodeCommit(treeID, h.Commit, s.now(), msg))
	if err != nil {
		return nil, "", head{}, err
	}
	nh.Commit = commitID
	return out, commitID, nh, nil
}

func batchMessage(writer string, first, last int64, sealHex string) string {
	n := last - first + 1
	noun := "events"
	if n == 1 {
		noun = "event"
	}
	return fmt.Sprintf("lossless: %d %s on %s (%d-%d)\n\nLossless-Format: %d\nLossless-Writer: %s\nLossless-Seq: %d\nLossless-Seal: %s\n",
		n, noun, writer, first, last, FormatVersion, writer, last, sealHex)
}

// Identity used for batch commits: the archive is written by the tool, not
// by the user, and an unchanging identity keeps user names out of it.
const commitIdent = "git-lossless <git-lossless@localhost>"

func encodeCommit(tree, parent string, t time.Time, msg string) []byte {
	return gitobj.EncodeCommit(tree, parent, commitIdent, t.Unix(), msg)
}

// commitInfo is the part of a batch commit the store reads: the commit's
// tree, parents and time, and the trailers of its message.
type commitInfo struct {
	Tree    string
	Parents []string
	Seq     int64
	Seal    string
	Writer  string
	Time    time.Time
}

// parseCommit parses a commit (gitobj.ParseCommit) and the Lossless-*
// trailers of its message.
func parseCommit(body []byte) (commitInfo, error) {
	gc, err := gitobj.ParseCommit(body)
	c := commitInfo{Tree: gc.Tree, Parents: gc.Parents}
	if gc.HasTime {
		c.Time = time.Unix(gc.Time, 0)
	}
	if err != nil {
		return c, err
	}
	for _, line := range strings.Split(string(gc.Message), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch k {
		case "Lossless-Seq":
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				c.Seq = n
			}
		case "Lossless-Seal":
			c.Seal = v
		case "Lossless-Writer":
			c.Writer = v
		}
	}
	return c, nil
}

func (s *Store) readCommit(id string) (commitInfo, error) {
	typ, body, err := s.odb.Read(id)
	if err != nil {
		return commitInfo{}, err
	}
	if typ != "commit" {
		return commitInfo{}, fmt.Errorf("%s is a %s, not a commit", id, typ)
	}
	return parseCommit(body)
}

// headAt returns the chain state at commit id ("" = empty writer).
func (s *Store) headAt(id string) (head, error) {
	if id == "" {
		return head{}, nil
	}
	c, err := s.readCommit(id)
	if err != nil {
		return head{}, err
	}
	if c.Seq == 0 || c.Seal == "" {
		return head{}, fmt.Errorf("head %s is not a sealed batch commit; run `git lossless verify` to see where the chain breaks", gitobj.Short(id))
	}
	return head{Commit: id, Seq: c.Seq, Seal: c.Seal}, nil
}

// readBatch reads one batch commit.
func (s *Store) readBatch(id string) (seal.Batch, commitInfo, error) {
	return s.readBatchObjects(id, nil)
}

// batchObjects is every object of one batch commit besides its content
// blobs: what a push sends with them and the push gate scans too
// (outgoing.go). A batch as this store writes it has a commit, a root
// tree, a blobs/ tree and events.jsonl; anything else a tree holds (a
// hand-made or damaged batch) is listed in other.
type batchObjects struct {
	commitBytes int
	commit      []byte // the commit as read: the check scans it without reading it again
	trees       []treeObject
	events      string // events.jsonl's blob ("" when the batch has none)
	eventsBytes int
	eventsBody  []byte // as read (the batch's Lines are slices of it)
	other       []treeBlob
}

// treeObject is a tree a push sends, with its size and its entries'
// names, one a line (what the check scans in a tree).
type treeObject struct {
	id    string
	bytes int
	names []byte
}

// entryNames is a tree's entry names, one a line.
func entryNames(ents []gitobj.TreeEntry) []byte {
	n := 0
	for _, e := range ents {
		n += len(e.Name) + 1
	}
	b := make([]byte, 0, n)
	for _, e := range ents {
		b = append(append(b, e.Name...), '\n')
	}
	return b
}

// treeBlob is a blob a tree lists, at its path in that tree.
type treeBlob struct {
	path, id string
}

// readBatchObjects reads one batch commit and, when objs is not nil,
// records its objects there.
func (s *Store) readBatchObjects(id string, objs *batchObjects) (seal.Batch, commitInfo, error) {
	b := seal.Batch{Commit: id}
	typ, body, err := s.odb.Read(id)
	var c commitInfo
	switch {
	case err == nil && typ != "commit":
		err = fmt.Errorf("%s is a %s, not a commit", id, typ)
	case err == nil:
		c, err = parseCommit(body)
	}
	if err != nil {
		if errors.Is(err, ErrObjectMissing) || errors.Is(err, ErrObjectCorrupt) {
			b.Err = err
			return b, c, nil
		}
		return b, c, err
	}
	if objs != nil {
		objs.commitBytes, objs.commit = len(body), body
	}
	b.Seq, b.Seal = c.Seq, c.Seal
	typ, body, err = s.odb.Read(c.Tree)
	if err != nil || typ != "tree" {
		b.Err = fmt.Errorf("tree %s unreadable: %v", gitobj.Short(c.Tree), err)
		return b, c, nil
	}
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		b.Err = err
		return b, c, nil
	}
	if objs != nil {
		objs.trees = append(objs.trees, treeObject{c.Tree, len(body), entryNames(ents)})
	}
	b.Blobs = map[string]bool{}
	var eventsID string
	for _, e := range ents {
		switch {
		case e.Name == "events.jsonl":
			eventsID = e.ID
		case e.Name == "blobs":
			_, sub, err := s.odb.Read(e.ID)
			if err != nil {
				b.Err = fmt.Errorf("blobs tree unreadable: %v", err)
				return b, c, nil
			}
			subEnts, err := gitobj.ParseTree(sub)
			if err != nil {
				b.Err = err
				return b, c, nil
			}
			if objs != nil {
				objs.trees = append(objs.trees, treeObject{e.ID, len(sub), entryNames(subEnts)})
			}
			for _, se := range subEnts {
				b.Blobs[se.ID] = true
			}
		case objs != nil:
			if err := s.treeObjects(e, "", objs); err != nil {
				b.Err = err
				return b, c, nil
			}
		}
	}
	if eventsID == "" {
		b.Err = errors.New("batch tree has no events.jsonl")
		return b, c, nil
	}
	_, evBody, err := s.odb.Read(eventsID)
	if err != nil {
		b.Err = fmt.Errorf("events.jsonl unreadable: %v", err)
		return b, c, nil
	}
	if objs != nil {
		objs.events, objs.eventsBytes, objs.eventsBody = eventsID, len(evBody), evBody
	}
	b.Lines = splitLines(evBody)
	return b, c, nil
}

// treeObjects records the tree entry e (at dir) and, for a tree,
// everything under it. A gitlink (a submodule's commit) is not sent by a
// push, so not listed.
func (s *Store) treeObjects(e gitobj.TreeEntry, dir string, objs *batchObjects) error {
	p := path.Join(dir, e.Name)
	switch {
	case e.Mode == "160000":
		return nil
	case !e.IsTree():
		objs.other = append(objs.other, treeBlob{p, e.ID})
		return nil
	}
	if len(objs.trees) > maxBatchTrees {
		return fmt.Errorf("batch tree holds more than %d trees", maxBatchTrees)
	}
	typ, body, err := s.odb.Read(e.ID)
	if err == nil && typ != "tree" {
		err = fmt.Errorf("%s is a %s, not a tree", gitobj.Short(e.ID), typ)
	}
	if err != nil {
		return fmt.Errorf("tree %s unreadable: %w", p, err)
	}
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		return fmt.Errorf("tree %s: %w", p, err)
	}
	objs.trees = append(objs.trees, treeObject{e.ID, len(body), entryNames(ents)})
	for _, se := range ents {
		if err := s.treeObjects(se, p, objs); err != nil {
			return err
		}
	}
	return nil
}

// maxBatchTrees bounds the trees one hand-made batch may hold before the
// plan calls it damaged (a batch this store writes has two).
const maxBatchTrees = 10000

func splitLines(body []byte) [][]byte {
	var out [][]byte
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			out = append(out, body)
			break
		}
		if i > 0 {
			out = append(out, body[:i])
		}
		body = body[i+1:]
	}
	return out
}

// walk returns the batches from head back to (not including) stop, oldest
// first, following first parents. It stops early, returning ok=false, when
// it passes stopSeq without meeting stop (stop is not an ancestor).
func (s *Store) walk(ctx context.Context, headID, stop string, stopSeq int64) (batches []seal.Batch, ok bool, err error) {
	batches, _, ok, err = s.walkObjects(ctx, headID, stop, stopSeq, false)
	return batches, ok, err
}

// walkObjects is walk that, with objects set, also returns each batch's
// objects (batchObjects), in the same order.
func (s *Store) walkObjects(ctx context.Context, headID, stop string, stopSeq int64, objects bool) (batches []seal.Batch, objs []batchObjects, ok bool, err error) {
	id := headID
	for id != "" && id != stop {
		if err := ctx.Err(); err != nil {
			return nil, nil, false, err
		}
		var o *batchObjects
		if objects {
			objs = append(objs, batchObjects{})
			o = &objs[len(objs)-1]
		}
		b, c, err := s.readBatchObjects(id, o)
		if err != nil {
			return nil, nil, false, err
		}
		// A batch whose tree cannot be read goes on to its parent when
		// the commit itself was read (an unreadable commit has no
		// parents): verify then counts the entries before the damage
		// and names the first entry of the damaged batch.
		batches = append(batches, b)
		if stop != "" && c.Seq <= stopSeq {
			reverse(batches)
			reverse(objs)
			return batches, objs, false, nil
		}
		if len(c.Parents) == 0 {
			id = ""
		} else {
			id = c.Parents[0]
		}
	}
	reverse(batches)
	reverse(objs)
	return batches, objs, stop == "" || id == stop, nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
