package blame

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// The cache of added lines keeps, per archived write, the lines it added
// (their index, text, hashes and uniqueness): the one costly part of a
// blame, which would otherwise read and diff two versions of the file for
// every write in its history. It is derived state (rebuilt from the archive
// when it is missing, damaged or of another rule version), lives in
// <common dir>/lossless/blame/added (0600), and holds only line texts the
// archive already holds. An entry is keyed by the write's writer and seq
// and checked against the versions before and after it, so a version
// before that changed (an older event synced in later) recomputes it.
//
// The file is a header line, then records: uvarint length, body, CRC-32
// (IEEE) of the body, little-endian. A record torn by a crash, or damaged,
// ends the reading: what follows is recomputed and appended again.
const cacheMagic = "git-lossless blame added lines v1 (distinctive>=4, run<=8)\n"

type cacheKey struct {
	writer string
	seq    int64
}

type cacheEntry struct {
	pre, post string
	lines     []addedLine
}

type addedCache struct {
	path    string
	have    map[cacheKey]cacheEntry
	pending bytes.Buffer
}

// openCache reads the cache in dir ("" or unreadable: an empty cache that
// is never written).
func openCache(dir string) *addedCache {
	c := &addedCache{have: map[cacheKey]cacheEntry{}}
	if dir == "" {
		return c
	}
	c.path = filepath.Join(dir, "added")
	f, err := os.Open(c.path)
	if err != nil {
		return c
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	head := make([]byte, len(cacheMagic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != cacheMagic {
		// Another rule version, or junk: start it again.
		c.pending.WriteString(cacheMagic)
		os.Remove(c.path)
		return c
	}
	for {
		n, err := binary.ReadUvarint(br)
		if err != nil || n > 1<<30 {
			return c
		}
		body := make([]byte, n+4)
		if _, err := io.ReadFull(br, body); err != nil {
			return c
		}
		if crc32.ChecksumIEEE(body[:n]) != binary.LittleEndian.Uint32(body[n:]) {
			return c
		}
		k, e, err := decodeEntry(body[:n])
		if err != nil {
			return c
		}
		c.have[k] = e
	}
}

func (c *addedCache) get(w *write) ([]addedLine, bool) {
	e, ok := c.have[cacheKey{w.ev.Writer, w.ev.Seq}]
	if !ok || e.pre != w.pre || e.post != w.ev.Blob {
		return nil, false
	}
	return e.lines, true
}

func (c *addedCache) put(w *write) {
	if c.path == "" {
		return
	}
	k := cacheKey{w.ev.Writer, w.ev.Seq}
	e := cacheEntry{pre: w.pre, post: w.ev.Blob, lines: w.lines}
	c.have[k] = e
	if c.pending.Len() == 0 {
		if fi, err := os.Stat(c.path); err != nil || fi.Size() == 0 {
			c.pending.WriteString(cacheMagic)
		}
	}
	body := encodeEntry(k, e)
	var n [binary.MaxVarintLen64]byte
	c.pending.Write(n[:binary.PutUvarint(n[:], uint64(len(body)))])
	c.pending.Write(body)
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc32.ChecksumIEEE(body))
	c.pending.Write(sum[:])
}

// flush appends the new entries in one write. A failure (a full disk, a
// read-only repository) leaves the cache as it was: the next blame
// computes the same lines again.
func (c *addedCache) flush() {
	if c.path == "" || c.pending.Len() == 0 {
		return
	}
	defer c.pending.Reset()
	f, err := gitobj.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	if _, err := f.Write(c.pending.Bytes()); err != nil {
		f.Close()
		return
	}
	f.Close()
}

func encodeEntry(k cacheKey, e cacheEntry) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(k.writer)))
	b = append(b, k.writer...)
	b = binary.AppendVarint(b, k.seq)
	b = appendID(b, e.pre)
	b = appendID(b, e.post)
	b = binary.AppendUvarint(b, uint64(len(e.lines)))
	for _, l := range e.lines {
		b = binary.AppendUvarint(b, uint64(l.m))
		b = binary.LittleEndian.AppendUint64(b, l.h)
		b = binary.LittleEndian.AppendUint64(b, l.up)
		b = binary.LittleEndian.AppendUint64(b, l.down)
		u := byte(0)
		if l.uniq {
			u = 1
		}
		b = append(b, u)
		b = binary.AppendUvarint(b, uint64(len(l.text)))
		b = append(b, l.text...)
	}
	return b
}

func appendID(b []byte, id string) []byte {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 20 {
		return append(b, 0)
	}
	b = append(b, 20)
	return append(b, raw...)
}

var errCacheRecord = errors.New("bad cache record")

func decodeEntry(b []byte) (cacheKey, cacheEntry, error) {
	var k cacheKey
	var e cacheEntry
	r := bytes.NewReader(b)
	str := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return nil, errCacheRecord
		}
		out := make([]byte, n)
		io.ReadFull(r, out)
		return out, nil
	}
	id := func() (string, error) {
		n, err := r.ReadByte()
		if err != nil || (n != 0 && n != 20) || int(n) > r.Len() {
			return "", errCacheRecord
		}
		raw := make([]byte, n)
		io.ReadFull(r, raw)
		return hex.EncodeToString(raw), nil
	}
	w, err := str()
	if err != nil {
		return k, e, err
	}
	k.writer = string(w)
	if k.seq, err = binary.ReadVarint(r); err != nil {
		return k, e, errCacheRecord
	}
	if e.pre, err = id(); err != nil {
		return k, e, err
	}
	if e.post, err = id(); err != nil {
		return k, e, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(r.Len()) {
		return k, e, errCacheRecord
	}
	e.lines = make([]addedLine, 0, n)
	for i := uint64(0); i < n; i++ {
		m, err := binary.ReadUvarint(r)
		if err != nil || r.Len() < 25 {
			return k, e, errCacheRecord
		}
		var fix [25]byte
		io.ReadFull(r, fix[:])
		l := addedLine{m: int(m), h: binary.LittleEndian.Uint64(fix[0:]), up: binary.LittleEndian.Uint64(fix[8:]),
			down: binary.LittleEndian.Uint64(fix[16:]), uniq: fix[24] == 1}
		if l.text, err = str(); err != nil {
			return k, e, err
		}
		e.lines = append(e.lines, l)
	}
	if r.Len() != 0 {
		return k, e, errCacheRecord
	}
	return k, e, nil
}
