package receipt

import (
	"bytes"
	"context"
	"encoding/json"
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

// The tokenizer: o200k_base from github.com/tiktoken-go/tokenizer, whose
// vocabulary is compiled into the binary (no download, no network). It is
// loaded on first use only (~45 ms), so commands that count nothing, and
// receipts whose counts are all cached, never pay for it.
var (
	tokOnce sync.Once
	tokEnc  *codec.Codec
	tokErr  error
)

// CountText returns the number of o200k_base tokens in s. Invalid UTF-8
// is counted as Python's tiktoken counts it after errors="replace".
func CountText(s string) (int64, error) {
	tokOnce.Do(func() {
		// codec.NewO200kBase rather than tokenizer.Get: Get links every
		// vocabulary into the binary (four, ~16 MB of tables every
		// git-lossless process, hooks included, would load), this only
		// the one receipts count with.
		tokEnc = codec.NewO200kBase()
		tokEnc.SetErrorMode(codec.ErrorModeReplace)
	})
	if tokErr != nil {
		return 0, tokErr
	}
	n, err := tokEnc.Count(s)
	return int64(n), err
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
	if e.Op == "span" {
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

// TokenCounter counts the tokens of events' content, reading the content
// from the archive. Counts are cached in a derived cache under the
// repository's git dir, lossless/receipts/tokens-o200k/<writer>.txt, one
// line "<seq> <blob> <kind> <count>" per event counted: an event of a
// sealed chain never changes, so a cached count stays right (the blob id
// is checked all the same), and deleting the cache only costs recounting.
type TokenCounter struct {
	Store *gitstore.Store
	// Dir is the cache directory ("" = no cache).
	Dir string

	mu     sync.Mutex
	loaded map[string]map[int64]cached // writer -> seq -> count
}

type cached struct {
	blob, kind string
	n          int64
}

// NewTokenCounter returns a counter with its cache in the store's state
// directory (no cache when that cannot be created).
func NewTokenCounter(st *gitstore.Store) *TokenCounter {
	tc := &TokenCounter{Store: st}
	if d, err := st.StateDir("receipts"); err == nil {
		tc.Dir = filepath.Join(d, "tokens-o200k")
	}
	return tc
}

func kindOf(e *gitstore.Event) string {
	switch {
	case e.Op == "span":
		return "span"
	case strings.HasPrefix(e.View, "lines:"):
		return e.View
	}
	return "full"
}

// Count returns the tokens of e's content (see ModelText).
func (tc *TokenCounter) Count(e *gitstore.Event) (int64, error) {
	if e.Blob == "" || e.Excluded {
		return 0, nil
	}
	content, err := tc.Store.Blob(context.Background(), e.Blob)
	if err != nil {
		return 0, fmt.Errorf("count tokens of %s: %w", e.Blob, err)
	}
	n, err := CountText(ModelText(e, content))
	if err != nil {
		return 0, fmt.Errorf("count tokens of %s: %w", e.Blob, err)
	}
	return n, nil
}

func (tc *TokenCounter) cacheFor(writer string) map[int64]cached {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.loaded == nil {
		tc.loaded = map[string]map[int64]cached{}
	}
	if m, ok := tc.loaded[writer]; ok {
		return m
	}
	m := map[int64]cached{}
	tc.loaded[writer] = m
	if tc.Dir == "" || gitstore.ValidWriter(writer) != nil {
		return m
	}
	b, err := os.ReadFile(filepath.Join(tc.Dir, writer+".txt"))
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue // a torn last line
		}
		seq, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || n < 0 {
			continue
		}
		m[seq] = cached{blob: f[1], kind: f[2], n: n}
	}
	return m
}

// CountAll counts every event's tokens, from the cache where it holds them
// and on all cores where it does not; a failed count is -1.
func (tc *TokenCounter) CountAll(evs []*gitstore.Event) []int64 {
	out := make([]int64, len(evs))
	var todo []int
	for i, e := range evs {
		if e.Blob == "" || e.Excluded {
			continue
		}
		if c, ok := tc.cacheFor(e.Writer)[e.Seq]; ok && c.blob == e.Blob && c.kind == kindOf(e) {
			out[i] = c.n
			continue
		}
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return out
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(todo) {
					return
				}
				i := todo[k]
				n, err := tc.Count(evs[i])
				if err != nil {
					n = -1
				}
				out[i] = n
			}
		}()
	}
	wg.Wait()
	// Remember the new counts: one append per writer file.
	add := map[string]*bytes.Buffer{}
	for _, i := range todo {
		e := evs[i]
		if out[i] < 0 || gitstore.ValidWriter(e.Writer) != nil {
			continue
		}
		buf := add[e.Writer]
		if buf == nil {
			buf = &bytes.Buffer{}
			add[e.Writer] = buf
		}
		fmt.Fprintf(buf, "%d %s %s %d\n", e.Seq, e.Blob, kindOf(e), out[i])
		tc.mu.Lock()
		tc.loaded[e.Writer][e.Seq] = cached{blob: e.Blob, kind: kindOf(e), n: out[i]}
		tc.mu.Unlock()
	}
	if tc.Dir != "" {
		if err := os.MkdirAll(tc.Dir, 0o700); err == nil {
			for w, buf := range add {
				// One write with O_APPEND: concurrent appenders never
				// interleave within it.
				f, err := os.OpenFile(filepath.Join(tc.Dir, w+".txt"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				if err != nil {
					continue
				}
				f.Write(buf.Bytes())
				f.Close()
			}
		}
	}
	return out
}
