package recall

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
)

// The manifest names the segments of the index and, for each writer, the
// head the index covers. It is a small text file, replaced whole by
// rename, so a reader sees the old one or the new one, never a mix:
//
//	lossless recall manifest 3 tokenizer 2
//	gen 42
//	seg seg-00000041.rcl 81234 5f0c33aa
//	seg seg-00000042.rcl 1840 09be41f2
//	writer cc-1234 <commit> <seq> <epoch>
//
// gen counts updates; a new segment is named after the gen that wrote it.
// A writer's epoch is the gen at which it was last indexed whole: its
// documents in the segments carry the epoch they were indexed under, and
// only those of the current epoch are live. Re-indexing a writer whose
// history was rewritten (prune, redact) is then a new epoch, without
// touching the segments that hold its old documents: merges drop them.

const (
	manifestName   = "manifest"
	manifestHeader = "lossless recall manifest 3 tokenizer " + tokenizerVersion
	// tokenizerVersion changes when the terms a text yields change: an
	// index written by another version is rebuilt.
	tokenizerVersion = "2"
	lockName         = "lock"
	segPrefix        = "seg-"
	segSuffix        = ".rcl"
)

// segEntry names one segment file with its size and CRC (the footer's),
// so a replaced or truncated file is noticed before it is read.
type segEntry struct {
	name string
	size int64
	crc  uint32
}

// writerState is what the index covers of one writer.
type writerState struct {
	commit string
	seq    int64
	epoch  uint32
}

type manifest struct {
	gen     uint32
	segs    []segEntry
	writers map[string]writerState
	raw     []byte // the file's bytes, when read from one
}

func (m *manifest) clone() manifest {
	c := manifest{gen: m.gen, segs: append([]segEntry(nil), m.segs...), writers: make(map[string]writerState, len(m.writers))}
	// raw stays nil: a clone is a manifest being made
	for k, v := range m.writers {
		c.writers[k] = v
	}
	return c
}

func (m *manifest) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\ngen %d\n", manifestHeader, m.gen)
	for _, s := range m.segs {
		fmt.Fprintf(&b, "seg %s %d %08x\n", s.name, s.size, s.crc)
	}
	names := make([]string, 0, len(m.writers))
	for w := range m.writers {
		names = append(names, w)
	}
	sort.Strings(names)
	for _, w := range names {
		st := m.writers[w]
		fmt.Fprintf(&b, "writer %s %s %d %d\n", w, st.commit, st.seq, st.epoch)
	}
	return b.Bytes()
}

// errNoManifest: the index does not exist (yet).
var errNoManifest = errors.New("recall: no index")

func parseManifest(data []byte) (manifest, error) {
	m := manifest{writers: map[string]writerState{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	bad := func(line int, why string) error {
		return fmt.Errorf("%w: manifest line %d: %s", errCorrupt, line, why)
	}
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			if line != manifestHeader {
				return m, bad(n, "unknown format or tokenizer version")
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			return m, bad(n, "empty")
		}
		switch {
		case f[0] == "gen" && len(f) == 2:
			g, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				return m, bad(n, "gen")
			}
			m.gen = uint32(g)
		case f[0] == "seg" && len(f) == 4:
			size, err1 := strconv.ParseInt(f[2], 10, 64)
			crc, err2 := strconv.ParseUint(f[3], 16, 32)
			if err1 != nil || err2 != nil || !validSegName(f[1]) {
				return m, bad(n, "segment")
			}
			m.segs = append(m.segs, segEntry{name: f[1], size: size, crc: uint32(crc)})
		case f[0] == "writer" && len(f) == 5:
			seq, err1 := strconv.ParseInt(f[3], 10, 64)
			ep, err2 := strconv.ParseUint(f[4], 10, 32)
			if err1 != nil || err2 != nil || gitstore.ValidWriter(f[1]) != nil || len(f[2]) != 40 {
				return m, bad(n, "writer")
			}
			m.writers[f[1]] = writerState{commit: f[2], seq: seq, epoch: uint32(ep)}
		default:
			return m, bad(n, "unknown line")
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("%w: manifest: %v", errCorrupt, err)
	}
	if n == 0 {
		return m, fmt.Errorf("%w: empty manifest", errCorrupt)
	}
	return m, nil
}

func validSegName(s string) bool {
	if !strings.HasPrefix(s, segPrefix) || !strings.HasSuffix(s, segSuffix) {
		return false
	}
	mid := s[len(segPrefix) : len(s)-len(segSuffix)]
	if mid == "" || len(mid) > 32 {
		return false
	}
	for _, c := range mid {
		if (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

func readManifest(dir string) (manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		return manifest{writers: map[string]writerState{}}, errNoManifest
	}
	if err != nil {
		return manifest{}, fmt.Errorf("recall: read manifest: %w", err)
	}
	m, err := parseManifest(data)
	m.raw = data
	return m, err
}

// writeFileAtomic writes the concatenation of parts to dir/name (mode
// 0600, as os.CreateTemp makes it) through a temporary file and a
// rename, so that no reader ever sees part of it. No fsync: the index is
// a cache, and a file torn by a crash fails its checksums and is rebuilt.
func writeFileAtomic(dir, name string, parts ...[]byte) error {
	f, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
