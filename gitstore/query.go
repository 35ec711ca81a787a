package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// Query selects events. Zero fields match everything.
type Query struct {
	Writers []string // writer names
	Session string
	// Agent selects one context: a subagent id, or MainAgent for the main
	// context (events with no agent).
	Agent  string
	Path   string // exact path, or a doublestar glob when it has glob syntax
	Op     Op
	Source string
	Key    string
	Since  time.Time // inclusive
	Until  time.Time // exclusive
	Limit  int       // keep the last Limit events (0: all)
	// Harness keeps the events of one agent harness ("claude-code"), as
	// HarnessOf tells it with HarnessOf (the writer-to-harness mapping,
	// harnesses.WriterHarness: events without the field are told by
	// their writer's prefix).
	Harness   string
	HarnessOf func(writer string) string
}

// MainAgent selects a main context's events in Query.Agent.
const MainAgent = "main"

// Events returns the matching events of every writer, merged in time order
// (ties: writer name, then seq).
func (s *Store) Events(ctx context.Context, q Query) ([]Event, error) {
	refs, err := s.refs.List(RefPrefix)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, w := range q.Writers {
		want[w] = true
	}
	isGlob := q.Path != "" && strings.ContainsAny(q.Path, "*?[{")
	var needles [][]byte
	if q.Session != "" {
		needles = append(needles, append([]byte(`"session":`), jsonString(q.Session)...))
	}
	if q.Agent != "" && q.Agent != MainAgent {
		needles = append(needles, append([]byte(`"agent":`), jsonString(q.Agent)...))
	}
	if q.Path != "" && !isGlob {
		needles = append(needles, append([]byte(`"path":`), jsonString(q.Path)...))
	}
	if q.Op != "" {
		needles = append(needles, append([]byte(`"op":`), jsonString(string(q.Op))...))
	}
	if q.Key != "" {
		needles = append(needles, append([]byte(`"key":`), jsonString(q.Key)...))
	}

	var out []Event
	for ref, id := range refs {
		writer := strings.TrimPrefix(ref, RefPrefix)
		if len(want) > 0 && !want[writer] {
			continue
		}
		each := func(l []byte) {
			e, err := ParseEvent(l)
			if err != nil {
				s.warn(fmt.Sprintf("writer %s: %v", writer, err))
				return
			}
			if !q.match(&e, isGlob) || q.Harness != "" && HarnessOf(e.Harness, writer, q.HarnessOf) != q.Harness {
				return
			}
			e.Writer = writer
			out = append(out, e)
		}
		// Fast path: the index is current; search its bytes for the
		// filter's needles and parse only the lines that hold them.
		if data, release, ok := s.currentIndex(writer, id); ok {
			scanLines(data, needles, each)
			release()
			continue
		}
		lines, err := s.linesAtRef(ctx, writer, id)
		if err != nil {
			s.warn(fmt.Sprintf("skipping writer %s: %v", writer, err))
			continue
		}
	line:
		for _, l := range lines {
			for _, n := range needles {
				if !bytes.Contains(l, n) {
					continue line
				}
			}
			each(l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if !a.TS.Equal(b.TS) {
			return a.TS.Before(b.TS)
		}
		if a.Writer != b.Writer {
			return a.Writer < b.Writer
		}
		return a.Seq < b.Seq
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}

func (q *Query) match(e *Event, isGlob bool) bool {
	if q.Session != "" && e.Session != q.Session {
		return false
	}
	if q.Agent == MainAgent && e.Agent != "" {
		return false
	}
	if q.Agent != "" && q.Agent != MainAgent && e.Agent != q.Agent {
		return false
	}
	if q.Path != "" {
		if isGlob {
			if ok, _ := doublestar.Match(q.Path, e.Path); !ok {
				return false
			}
		} else if e.Path != q.Path {
			return false
		}
	}
	if q.Op != "" && e.Op != q.Op {
		return false
	}
	if q.Source != "" && e.Source != q.Source {
		return false
	}
	if q.Key != "" && e.Key != q.Key {
		return false
	}
	if !q.Since.IsZero() && e.TS.Before(q.Since) {
		return false
	}
	if !q.Until.IsZero() && !e.TS.Before(q.Until) {
		return false
	}
	return true
}

// linesAtRef returns a writer's lines at ref value id, trusting the index
// without reading any object when it is current.
func (s *Store) linesAtRef(ctx context.Context, writer, id string) ([][]byte, error) {
	if ih, ok := s.readIndexHead(writer); ok && ih.Commit == id {
		if lines, ok := s.readIndex(writer, ih); ok {
			return lines, nil
		}
	}
	h, err := s.headAt(id)
	if err != nil {
		return nil, err
	}
	return s.writerLines(ctx, writer, h)
}

// currentIndex returns writer's index bytes when the index covers exactly
// the ref value id, and a release func the caller must call when done with
// them (and with every slice of them). The file is mapped, not read: a
// guard decision reads one writer's index of megabytes to find a handful of
// lines, and a read would copy all of it into freshly faulted memory.
// Mapping is safe against concurrent writers: indexWrite only ever appends
// past the recorded length of a file, and replaces it whole by rename (a
// new inode), so the mapped prefix never changes or shrinks.
func (s *Store) currentIndex(writer, id string) ([]byte, func(), bool) {
	ih, ok := s.readIndexHead(writer)
	if !ok || ih.Commit != id || ih.Length <= 0 {
		return nil, nil, false
	}
	jf, _, _ := s.indexPaths(writer)
	f, err := gitobj.OpenFile(jf, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < ih.Length {
		return nil, nil, false
	}
	release := func() {}
	var data []byte
	if m := gitobj.MapFile(f, ih.Length); m != nil {
		data, release = m, func() { gitobj.UnmapFile(m) }
	} else {
		data = make([]byte, ih.Length)
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, nil, false
		}
	}
	// ih.Seq newline-terminated lines. (readIndex, which splits the lines,
	// also finds empty ones; searching a mapped index for "\n\n" costs a
	// guard decision half a millisecond, and the index's write order —
	// lines, then the head naming their length — never leaves an empty
	// line inside the recorded length: it would take a hand edit.)
	if data[len(data)-1] != '\n' || data[0] == '\n' || int64(bytes.Count(data, []byte{'\n'})) != ih.Seq {
		release()
		return nil, nil, false
	}
	return data, release, true
}

// scanLines calls fn with every line of data (newline-terminated lines)
// that contains all needles. It searches the whole buffer for the first
// needle rather than each line, so a selective filter skips most lines
// without looking at them one by one.
func scanLines(data []byte, needles [][]byte, fn func([]byte)) {
	if len(needles) == 0 {
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				i = len(data)
			}
			if i > 0 {
				fn(data[:i])
			}
			data = data[min(i+1, len(data)):]
		}
		return
	}
	first, rest := needles[0], needles[1:]
	scanLinesAt(data, first, func(start int) {
		line := lineAt(data, start)
		for _, n := range rest {
			if !bytes.Contains(line, n) {
				return
			}
		}
		fn(line)
	})
}

// lineAt returns the line of data that starts at offset start, without its
// newline.
func lineAt(data []byte, start int) []byte {
	line := data[start:]
	if end := bytes.IndexByte(line, '\n'); end >= 0 {
		line = line[:end]
	}
	return line
}

// finder searches for a needle by its rarest byte. Every needle here
// starts with `"` (a JSON key), the commonest byte of an event line, which
// makes bytes.Index test almost every position; looking for the byte of
// the needle that is rarest in a sample of the text with bytes.IndexByte
// (vectorised) and comparing only there is several times faster.
type finder struct {
	needle []byte
	at     int  // offset of the rare byte in needle
	c      byte // the rare byte
	fails  int  // candidates that were not matches, to give up on a bad pick
}

func newFinder(needle, sample []byte) *finder {
	var count [256]int
	for _, c := range sample {
		count[c]++
	}
	f := &finder{needle: needle}
	for i, c := range needle {
		if i == 0 || count[c] < count[f.c] {
			f.at, f.c = i, c
		}
	}
	return f
}

// index returns the first offset of the needle in data, or -1.
func (f *finder) index(data []byte) int {
	n := len(f.needle)
	if n == 0 {
		return 0
	}
	off := 0
	for off+n <= len(data) {
		if f.fails > 64 && f.fails > off/32 {
			// The rare byte is not rare here: plain search for the rest.
			if k := bytes.Index(data[off:], f.needle); k >= 0 {
				return off + k
			}
			return -1
		}
		j := bytes.IndexByte(data[off+f.at:len(data)-n+f.at+1], f.c)
		if j < 0 {
			return -1
		}
		p := off + j
		if bytes.Equal(data[p:p+n], f.needle) {
			return p
		}
		f.fails++
		off = p + 1
	}
	return -1
}
