package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// LogFile is the savings log's name in the archive's state directory
// (<git dir>/lossless/proxy/requests.jsonl): one JSON line per chat
// request the proxy handled, counts only (no message text, no summary).
const LogFile = "requests.jsonl"

// Log retention: when the log outgrows logMaxBytes at start, lines older
// than logRetention are dropped (by their timestamps, oldest first), then
// the oldest lines until it fits.
const (
	logMaxBytes  = 16 << 20
	logRetention = 90 * 24 * time.Hour
)

// LogLine is one line of the savings log.
type LogLine struct {
	TS          time.Time `json:"ts"`
	Session     string    `json:"session"`
	Model       string    `json:"model,omitempty"`
	Route       string    `json:"route"`
	Status      int       `json:"status"`
	Window      int       `json:"window,omitempty"`
	Before      int       `json:"tokens_before"`
	After       int       `json:"tokens_after"`
	CountSource string    `json:"count_source"`
	Reported    int       `json:"tokens_reported,omitempty"`
	Compacted   bool      `json:"compacted,omitempty"`
	// Stateful: a Responses request naming previous_response_id,
	// forwarded as it is (its history is on the server).
	Stateful     bool     `json:"stateful,omitempty"`
	Summarised   bool     `json:"summarised,omitempty"`
	Reused       bool     `json:"summary_reused,omitempty"`
	Spills       int      `json:"spills,omitempty"`
	Spans        []string `json:"spans,omitempty"`
	Folded       int      `json:"folded,omitempty"`
	SummaryCalls int      `json:"summary_calls,omitempty"`
	SummaryChars int      `json:"summary_chars,omitempty"`
	FailOpen     string   `json:"fail_open,omitempty"`
	Truncated    bool     `json:"truncated,omitempty"`
	Retried      bool     `json:"retried,omitempty"`
	// UpstreamCut: the backend broke the answer off; the client got what
	// arrived before the cut and then a broken connection.
	UpstreamCut bool `json:"upstream_cut,omitempty"`
	// Recalls is 1 when the request carried a stale recall, RecallLines
	// the archived lines it quoted (recall.go).
	Recalls     int     `json:"recalls,omitempty"`
	RecallLines int     `json:"recall_lines,omitempty"`
	AddedMs     float64 `json:"added_ms"`
	// SpanMs is the part of AddedMs spent writing spans durably.
	SpanMs float64 `json:"span_ms,omitempty"`
}

type savingsLog struct {
	mu sync.Mutex
	f  *os.File
}

func openSavingsLog(path string, now time.Time) (*savingsLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("savings log: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Size() > logMaxBytes {
		if err := trimLog(path, now); err != nil {
			return nil, fmt.Errorf("savings log: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("savings log: %w", err)
	}
	return &savingsLog{f: f}, nil
}

// trimLog drops lines by age: older than the retention first, then the
// oldest until the file is at half its limit.
func trimLog(path string, now time.Time) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	type line struct {
		ts  time.Time
		raw []byte
	}
	var lines []line
	for _, l := range bytes.Split(data, []byte("\n")) {
		var v struct {
			TS time.Time `json:"ts"`
		}
		if len(l) == 0 || json.Unmarshal(l, &v) != nil || now.Sub(v.TS) > logRetention {
			continue
		}
		lines = append(lines, line{v.TS, l})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].ts.Before(lines[j].ts) })
	total := 0
	for _, l := range lines {
		total += len(l.raw) + 1
	}
	for len(lines) > 0 && total > logMaxBytes/2 {
		total -= len(lines[0].raw) + 1
		lines = lines[1:]
	}
	var out bytes.Buffer
	for _, l := range lines {
		out.Write(l.raw)
		out.WriteByte('\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (l *savingsLog) write(line *LogLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.f.Write(append(b, '\n'))
	return err
}

func (l *savingsLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// Report is what `git lossless savings` prints: counted from the savings
// log and the archive, never estimated afterwards.
type Report struct {
	Since           time.Time      `json:"since"`
	Until           time.Time      `json:"until"`
	Requests        int            `json:"requests"`
	Compacted       int            `json:"compacted"`
	TokensBefore    int64          `json:"tokens_before"`
	TokensAfter     int64          `json:"tokens_after"`
	TokensKeptOut   int64          `json:"tokens_kept_out"`
	Summaries       int            `json:"summaries"`
	SummariesReused int            `json:"summaries_reused"`
	SummaryCalls    int            `json:"summary_calls"`
	SummaryChars    int64          `json:"summary_input_chars"`
	Spills          int            `json:"spills"`
	FailOpen        map[string]int `json:"fail_open"`
	Truncations     int            `json:"truncations"`
	UpstreamCuts    int            `json:"upstream_cuts"`
	Recalls         int            `json:"recalls"`
	RecallLines     int            `json:"recall_lines"`
	Sessions        int            `json:"sessions"`
	// From the archive.
	Spans          int   `json:"spans"`
	SpansSummary   int   `json:"spans_summary"`
	SpansSpill     int   `json:"spans_spill"`
	SpansEncrypted int   `json:"spans_encrypted"`
	MessagesKept   int   `json:"messages_archived"`
	ArchivedBytes  int64 `json:"archived_bytes"`
	// Full capture (lossless.proxy.capture journal): messages journaled
	// and their archived bytes, apart from the spans above (compaction's).
	Journaled    int   `json:"messages_journaled"`
	JournalBytes int64 `json:"journal_bytes"`
	LogMissing   bool  `json:"log_missing,omitempty"`
}

// Savings counts what the proxy did since a time, from its log at logPath
// and the spans in st (proxy writers).
func Savings(ctx context.Context, st *gitstore.Store, logPath string, since, until time.Time) (Report, error) {
	r := Report{Since: since, Until: until, FailOpen: map[string]int{}}
	sessions := map[string]bool{}
	f, err := os.Open(logPath)
	switch {
	case os.IsNotExist(err):
		r.LogMissing = true
	case err != nil:
		return r, err
	default:
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var l LogLine
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.TS.Before(since) || !l.TS.Before(until) {
				continue
			}
			r.Requests++
			sessions[l.Session] = true
			if l.Compacted {
				r.Compacted++
				r.TokensBefore += int64(l.Before)
				r.TokensAfter += int64(l.After)
			} else {
				r.TokensBefore += int64(l.Before)
				r.TokensAfter += int64(l.Before)
			}
			if l.Summarised {
				r.Summaries++
			}
			if l.Reused {
				r.SummariesReused++
			}
			r.SummaryCalls += l.SummaryCalls
			r.SummaryChars += int64(l.SummaryChars)
			r.Spills += l.Spills
			if l.FailOpen != "" {
				r.FailOpen[l.FailOpen]++
			}
			if l.Truncated {
				r.Truncations++
			}
			if l.UpstreamCut {
				r.UpstreamCuts++
			}
			r.Recalls += l.Recalls
			r.RecallLines += l.RecallLines
		}
		if err := sc.Err(); err != nil {
			return r, err
		}
	}
	r.TokensKeptOut = r.TokensBefore - r.TokensAfter
	r.Sessions = len(sessions)
	if st != nil {
		evs, err := st.Events(ctx, gitstore.Query{Source: "proxy", Op: gitstore.OpSpan, Since: since, Until: until})
		if err != nil {
			return r, err
		}
		for _, e := range evs {
			var kind string
			_ = json.Unmarshal(e.Extra["kind"], &kind)
			if kind == KindJournal {
				r.Journaled++
				r.JournalBytes += e.Bytes
				continue
			}
			r.Spans++
			switch kind {
			case "summary":
				r.SpansSummary++
			case "spill":
				r.SpansSpill++
			}
			var n int
			_ = json.Unmarshal(e.Extra["messages"], &n)
			r.MessagesKept += n
			r.ArchivedBytes += e.Bytes
			if gitstore.IsEncrypted(&e) {
				r.SpansEncrypted++
			}
		}
	}
	return r, nil
}
