package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/git-lossless/git-lossless/gitstore"
)

// tokenizer is the process's o200k_base codec from
// github.com/tiktoken-go/tokenizer, whose vocabulary is compiled into the
// binary (no download, no network). It is a lazily built, then immutable,
// table rather than a field of Counter because building it costs
// 15-45 ms and every Build makes a new counter: a long-lived process (the
// benchmarks, a server) pays once. Commands that count nothing never build
// it. codec.NewO200kBase rather than tokenizer.Get: Get links every
// vocabulary into the binary (four, ~16 MB of tables every git-lossless
// process, hooks included, would load), this only the one receipts count
// with.
var tokenizer = sync.OnceValue(func() *codec.Codec {
	c := codec.NewO200kBase()
	c.SetErrorMode(codec.ErrorModeReplace)
	return c
})

// Preload builds the codec in the background, so that a fresh
// process that will count overlaps the build with reading the archive
// (which keeps one core busy) instead of paying for it afterwards.
func Preload() { go tokenizer() }

// CountText returns the number of o200k_base tokens in s, counted in one
// piece. Invalid UTF-8 is counted as Python's tiktoken counts it after
// errors="replace". It is the reference the cached, line-wise counting of
// Counter is tested against.
func CountText(s string) (int64, error) {
	n, err := tokenizer().Count(s)
	if err != nil {
		return 0, fmt.Errorf("count o200k tokens: %w", err)
	}
	return int64(n), nil
}

// nextChunk returns the length of the first chunk of s: s up to and
// including the first newline after which o200k_base's pre-tokenizer
// necessarily starts a new piece whatever follows, so that the tokens of
// s are the sum of the tokens of its chunks. That holds after a "\n" that
// is followed by spaces and tabs (possibly none) and then a printable
// ASCII character, except a "/" right after the newline: no alternative of
// the split pattern
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// then continues a piece across the newline (only " ?[^\s...]+[\r\n/]*"
// and the white-space alternatives contain one; the first stops before a
// character other than \r, \n and /, and "\s*[\r\n]+", tried before the
// other two, ends a white-space run at its last newline), the pattern has
// no look-behind, and invalid UTF-8 is replaced byte-locally. Code and
// prose split into lines this way; a line that recurs (in another version
// of a file, in another file) is counted once. TestChunkedCountsEqual and
// FuzzChunkedCount hold this against counting in one piece.
func nextChunk(s string) int {
	from := 0
	for {
		i := strings.IndexByte(s[from:], '\n')
		if i < 0 {
			return len(s)
		}
		p := from + i + 1
		q := p
		for q < len(s) && (s[q] == ' ' || s[q] == '\t') {
			q++
		}
		if q < len(s) && s[q] >= 0x21 && s[q] <= 0x7e && (q > p || s[q] != '/') {
			return p
		}
		from = p
	}
}

// lineMemo remembers the count of every chunk counted in one CountAll
// call, shared by its workers.
type lineMemo struct {
	mu sync.Mutex
	m  map[string]int64
	// hits and misses are chunk lookups, for the benchmark's report.
	hits, misses atomic.Int64
}

// count counts s chunk by chunk (see nextChunk), each distinct chunk once,
// a new chunk with pc.
func (lm *lineMemo) count(s string, pc *pieceCounter) (int64, error) {
	var total int64
	for len(s) > 0 {
		n := nextChunk(s)
		chunk := s[:n]
		s = s[n:]
		lm.mu.Lock()
		c, ok := lm.m[chunk]
		lm.mu.Unlock()
		if ok {
			lm.hits.Add(1)
			total += c
			continue
		}
		lm.misses.Add(1)
		k, err := pc.count(chunk)
		if err != nil {
			return 0, err
		}
		lm.mu.Lock()
		lm.m[chunk] = k
		lm.mu.Unlock()
		total += k
	}
	return total, nil
}

// ModelText is the text an event put into a model's context, as far as
// the archive holds it:
//
//   - a file version (read, write, edit, attach, restore) shown in full:
//     the archived bytes;
//   - one shown as lines:A-B: lines A to B of the archived bytes when the
//     archive holds the whole file, else the archived bytes (Claude Code's
//     hooks archive just the lines shown);
//   - a span (op "span", compact JSON written by the transcript sweep):
//     its text — the "text" of a user, assistant or summary span, the
//     tool name and raw "input" of a tool call, the "content" of a tool
//     result (a string, or the text blocks of an array).
func ModelText(e *gitstore.Event, content []byte) string {
	if e.Op == gitstore.OpSpan {
		return spanText(content)
	}
	if rest, ok := strings.CutPrefix(e.View, "lines:"); ok {
		a, b, _ := strings.Cut(rest, "-")
		from, err1 := strconv.Atoi(a)
		to, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && from >= 1 && to >= from {
			lines := bytes.SplitAfter(content, []byte("\n"))
			if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
				lines = lines[:len(lines)-1]
			}
			if to <= len(lines) {
				return string(bytes.Join(lines[from-1:to], nil))
			}
		}
	}
	return string(content)
}

func spanText(content []byte) string {
	var s struct {
		Kind    string          `json:"kind"`
		Text    json.RawMessage `json:"text"`
		Tool    string          `json:"tool"`
		Input   json.RawMessage `json:"input"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(content, &s); err != nil {
		return string(content)
	}
	str := func(raw json.RawMessage) (string, bool) {
		var v string
		if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &v) == nil {
			return v, true
		}
		return "", false
	}
	switch {
	case len(s.Text) > 0:
		if v, ok := str(s.Text); ok {
			return v
		}
		return string(s.Text)
	case len(s.Input) > 0:
		return s.Tool + " " + string(s.Input)
	case len(s.Content) > 0:
		if v, ok := str(s.Content); ok {
			return v
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(s.Content, &blocks) == nil {
			var parts []string
			for _, b := range blocks {
				if b.Text != "" {
					parts = append(parts, b.Text)
				}
			}
			return strings.Join(parts, "\n")
		}
		return string(s.Content)
	}
	return string(content)
}

// Counter counts the tokens of events' content, reading the content
// from the archive. What is counted is content-addressed — a blob shown a
// way (kind "full", "lines:A-B" or "span", see ModelText) — so one version
// read by several contexts, or in several events, is counted once, and a
// count made for one receipt serves every later one. Counts are kept in a
// derived cache under the repository's git dir,
// lossless/receipts/tokens-o200k-v2/counts.txt, one line
// "<blob> <kind> <count>" per count, appended with one write per build; a
// blob's bytes never change under its id, so a cached count stays right,
// and deleting the cache only costs recounting.
type Counter struct {
	Store *gitstore.Store
	// Dir is the cache directory ("" = no cache).
	Dir string
	// Workers bounds the goroutines counting at once (0: GOMAXPROCS).
	Workers int

	mu     sync.Mutex
	counts map[string]int64 // "<blob> <kind>" -> tokens, read or counted
	stats  Stats
}

// Stats says what the counter did, for benchmarks and reports.
type Stats struct {
	Events  int   // events asked about (with content, not excluded)
	Unique  int   // distinct blob and kind among them
	Cached  int   // of those, found in the cache
	Counted int   // counted now
	Failed  int   // content unreadable
	Chunks  int64 // lines tokenized
	Reused  int64 // lines whose count was reused within the build
}

// counterDir is the cache directory under the receipts state dir; the
// previous layout (per-writer files keyed by sequence number, which a new
// commit's events never hit) lived in tokens-o200k.
const (
	counterDir    = "tokens-o200k-v2"
	oldCounterDir = "tokens-o200k"
	counterFile   = "counts.txt"
)

// NewCounter returns a counter with its cache in the store's state
// directory (no cache when that cannot be created).
func NewCounter(ctx context.Context, st *gitstore.Store) *Counter {
	tc := &Counter{Store: st}
	if d, err := st.StateDir(ctx, "receipts"); err == nil {
		tc.Dir = filepath.Join(d, counterDir)
	}
	return tc
}

// Stats returns what the counter has done so far.
func (tc *Counter) Stats() Stats {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.stats
}

func kindOf(e *gitstore.Event) string {
	switch {
	case e.Op == gitstore.OpSpan:
		return "span"
	case strings.HasPrefix(e.View, "lines:"):
		return e.View
	}
	return "full"
}

// countKey is what a count is cached under: the blob and how it was shown.
func countKey(e *gitstore.Event) string { return e.Blob + " " + kindOf(e) }

// lookup returns the known counts of keys: those in memory, and the
// others from the cache file, which is read when some key is not in
// memory (another process may have added it since). Only the lines of
// wanted keys are kept, so a cache that has grown with the archive costs
// a scan, not a map of everything.
func (tc *Counter) lookup(keys map[string]bool) map[string]int64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.counts == nil {
		tc.counts = map[string]int64{}
	}
	missing := false
	for k := range keys {
		if _, ok := tc.counts[k]; !ok {
			missing = true
			break
		}
	}
	if missing && tc.Dir != "" {
		if b, err := os.ReadFile(filepath.Join(tc.Dir, counterFile)); err == nil {
			for len(b) > 0 {
				nl := bytes.IndexByte(b, '\n')
				if nl < 0 {
					break // a torn last line
				}
				line := b[:nl]
				b = b[nl+1:]
				sp := bytes.LastIndexByte(line, ' ')
				if sp < 0 || !keys[string(line[:sp])] {
					continue
				}
				n, err := strconv.ParseInt(string(line[sp+1:]), 10, 64)
				if err != nil || n < 0 {
					continue
				}
				tc.counts[string(line[:sp])] = n
			}
		}
	}
	out := make(map[string]int64, len(keys))
	for k := range keys {
		if n, ok := tc.counts[k]; ok {
			out[k] = n
		}
	}
	return out
}

// CountAll counts every event's tokens and returns them in order; a count
// that failed (content pruned or unreadable) is -1, and an event without
// content or excluded counts 0. Each distinct blob and kind is counted once:
// from the cache when it holds it, else from the archived content, line by
// line with a memo shared by the build (see nextChunk), on up to Workers
// goroutines.
func (tc *Counter) CountAll(ctx context.Context, evs []*gitstore.Event) []int64 {
	out := make([]int64, len(evs))
	where := map[string][]int{}
	var order []string // distinct keys, first sight first
	for i, e := range evs {
		if e.Blob == "" || e.Excluded {
			continue
		}
		k := countKey(e)
		if where[k] == nil {
			order = append(order, k)
		}
		where[k] = append(where[k], i)
	}
	st := Stats{Events: len(evs), Unique: len(order)}
	if len(order) == 0 {
		tc.addStats(st)
		return out
	}
	want := make(map[string]bool, len(order))
	for _, k := range order {
		want[k] = true
	}
	counts := tc.lookup(want)
	st.Cached = len(counts)
	var todo []string
	for _, k := range order {
		if _, ok := counts[k]; !ok {
			todo = append(todo, k)
		}
	}
	fresh := make([]int64, len(todo))
	if len(todo) > 0 {
		memo := &lineMemo{m: map[string]int64{}}
		workers := tc.Workers
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		// A goroutine is worth starting for a few versions, not for one.
		workers = max(1, min(workers, len(todo)/4))
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pc := newPieceCounter()
				for {
					j := int(next.Add(1)) - 1
					if j >= len(todo) {
						return
					}
					fresh[j] = tc.countOne(ctx, evs[where[todo[j]][0]], memo, pc)
				}
			}()
		}
		wg.Wait()
		st.Chunks, st.Reused = memo.misses.Load(), memo.hits.Load()
		var add bytes.Buffer
		for j, k := range todo {
			if fresh[j] < 0 {
				st.Failed++
				continue
			}
			st.Counted++
			counts[k] = fresh[j]
			fmt.Fprintf(&add, "%s %d\n", k, fresh[j])
		}
		tc.remember(counts, add.Bytes())
	}
	for k, idx := range where {
		n, ok := counts[k]
		if !ok {
			n = -1
		}
		for _, i := range idx {
			out[i] = n
		}
	}
	tc.addStats(st)
	return out
}

func (tc *Counter) addStats(s Stats) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	t := &tc.stats
	t.Events += s.Events
	t.Unique += s.Unique
	t.Cached += s.Cached
	t.Counted += s.Counted
	t.Failed += s.Failed
	t.Chunks += s.Chunks
	t.Reused += s.Reused
}

// countOne counts one event's content; -1 when it cannot be read.
func (tc *Counter) countOne(ctx context.Context, e *gitstore.Event, memo *lineMemo, pc *pieceCounter) int64 {
	if ctx.Err() != nil {
		return -1
	}
	if gitstore.IsEncrypted(e) {
		// Age ciphertext (lossless.encrypt): a receipt is built without
		// identities, so an encrypted span is not counted, never counted
		// as its ciphertext.
		return -1
	}
	content, err := tc.Store.Objects().Blob(ctx, e.Blob)
	if err != nil {
		return -1
	}
	n, err := memo.count(ModelText(e, content), pc)
	if err != nil {
		return -1
	}
	return n
}

// remember keeps new counts in memory and appends their lines to the
// cache file in one write with O_APPEND, so that concurrent builds never
// interleave within a line (a duplicate line is harmless). A failure to
// write only costs recounting later.
func (tc *Counter) remember(counts map[string]int64, lines []byte) {
	tc.mu.Lock()
	for k, n := range counts {
		tc.counts[k] = n
	}
	tc.mu.Unlock()
	if tc.Dir == "" || len(lines) == 0 {
		return
	}
	if _, err := os.Stat(tc.Dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(tc.Dir, 0o700); err != nil {
			return
		}
		// The first write of this layout retires the previous one.
		os.RemoveAll(filepath.Join(filepath.Dir(tc.Dir), oldCounterDir))
	}
	f, err := os.OpenFile(filepath.Join(tc.Dir, counterFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	f.Write(lines)
	f.Close()
}
