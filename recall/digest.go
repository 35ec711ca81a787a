package recall

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// DigestQuery selects digests.
type DigestQuery struct {
	Session string    // one session's groups only
	Since   time.Time // groups with a span at or after Since
	Harness string    // one agent harness's groups only (gitstore.HarnessOf)
}

// Digest is one line of an overview: a group of spans of one context. A
// harness context's spans form a group from its start to its first
// compaction, then one per compaction (the compaction summary opens it);
// a proxy compaction's span is a group of its own (it is one
// compaction); the proxy's journal spans (full capture) of a session
// form one group.
type Digest struct {
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	Writer  string    `json:"writer"`
	Session string    `json:"session,omitempty"`
	Agent   string    `json:"agent,omitempty"`
	// Harness is the context's agent harness (gitstore.HarnessOf of its
	// first span); "" for proxy spans.
	Harness string `json:"harness,omitempty"`
	Source  string `json:"source"`
	// Group counts the context's compactions before the group (0: from
	// the start). Proxy spans: 0.
	Group int `json:"group"`
	// Kinds counts the group's spans by kind.
	Kinds map[string]int `json:"kinds"`
	Spans int            `json:"spans"`
	Bytes int64          `json:"bytes"`
	// Locked counts the group's spans that are encrypted and were not
	// opened.
	Locked int `json:"locked,omitempty"`
	// Words are the first words (at most 80 characters, secrets masked)
	// of the group's compaction summary, else of its first user prompt;
	// of a proxy span, its summary.
	Words string `json:"words,omitempty"`
	// ID is the group's first span, for Span.
	ID string `json:"id"`
}

// String is the digest as one line.
func (d Digest) String() string {
	var b strings.Builder
	b.WriteString(d.First.UTC().Format("2006-01-02 15:04"))
	if !d.Last.Equal(d.First) {
		if d.Last.UTC().Format("2006-01-02") == d.First.UTC().Format("2006-01-02") {
			b.WriteString("–" + d.Last.UTC().Format("15:04"))
		} else {
			b.WriteString("–" + d.Last.UTC().Format("2006-01-02 15:04"))
		}
	}
	fmt.Fprintf(&b, "  %s", d.Writer)
	if d.Session != "" {
		fmt.Fprintf(&b, "  session %s", d.Session)
	}
	if d.Agent != "" {
		fmt.Fprintf(&b, "  agent %s", d.Agent)
	}
	if d.Harness != "" {
		fmt.Fprintf(&b, "  harness %s", d.Harness)
	}
	if d.Group > 0 {
		fmt.Fprintf(&b, "  after compaction %d", d.Group)
	}
	fmt.Fprintf(&b, "  %d %s, %s", d.Spans, plural(d.Spans, "span"), humanBytes(d.Bytes))
	kinds := make([]string, 0, len(d.Kinds))
	for k, n := range d.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	if len(kinds) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(kinds, ", "))
	}
	if d.Locked > 0 {
		fmt.Fprintf(&b, ", %d locked", d.Locked)
	}
	if d.Words != "" {
		fmt.Fprintf(&b, "  %q", d.Words)
	}
	fmt.Fprintf(&b, "  [%s]", d.ID)
	return b.String()
}

func plural(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

func humanBytes(n int64) string {
	switch {
	case n < 10_000:
		return fmt.Sprintf("%d B", n)
	case n < 10_000_000:
		return fmt.Sprintf("%d KB", (n+500)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// Digests returns one digest per span group (see Digest), oldest first.
func (ix *Index) Digests(ctx context.Context, q DigestQuery) ([]Digest, error) {
	defer runtime.KeepAlive(ix)
	defer ix.damaged(ctx)
	var docs []docMeta
	for _, s := range ix.segs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sess := uint32(0)
		if q.Session != "" {
			i, ok := s.findString(q.Session)
			if !ok {
				continue
			}
			sess = i
		}
		fileIdx, hasFile := s.findString(KindFile)
		for d := range s.nDocs {
			if !s.isLive(d) {
				continue
			}
			r := s.rec(d)
			if hasFile && r.Kind == fileIdx || q.Session != "" && r.Session != sess || q.Harness != "" && ix.harnessOf(s, r) != q.Harness {
				continue
			}
			docs = append(docs, s.meta(d))
		}
	}
	slices.SortFunc(docs, func(a, b docMeta) int {
		if c := strings.Compare(a.Writer, b.Writer); c != 0 {
			return c
		}
		return int(a.Seq - b.Seq)
	})
	var out []*Digest
	open := map[string]*Digest{} // the current group of each context
	for i := range docs {
		m := &docs[i]
		var g *Digest
		key := m.Writer + "\x00" + m.Session + "\x00" + m.Agent
		cur := open[key]
		switch {
		case m.Kind == KindProxy && m.Flags&flagJournal == 0:
			// A compaction's span stands alone; the proxy's journal
			// (one message per span) groups by session like a harness's.
			g = &Digest{}
			out = append(out, g)
		case cur == nil:
			g = &Digest{}
			open[key] = g
			out = append(out, g)
		case m.Kind == KindCompactSummary:
			g = &Digest{Group: cur.Group + 1}
			open[key] = g
			out = append(out, g)
		default:
			g = cur
		}
		ts := time.Unix(0, m.TS).UTC()
		if g.Spans == 0 {
			*g = Digest{First: ts, Last: ts, Writer: m.Writer, Session: m.Session, Agent: m.Agent, Source: m.Source,
				Harness: gitstore.HarnessOf(m.Harness, m.Writer, ix.opt.HarnessOf),
				Group:   g.Group, Kinds: map[string]int{}, ID: hitID(m)}
			if m.Kind == KindCompactSummary || m.Kind == KindProxy {
				g.Words = m.Head
			}
		}
		if ts.Before(g.First) {
			g.First = ts
		}
		if ts.After(g.Last) {
			g.Last = ts
		}
		g.Spans++
		g.Bytes += m.Bytes
		g.Kinds[m.Kind]++
		if m.Flags&flagEncrypted != 0 && m.Flags&flagDecrypted == 0 {
			g.Locked++
		}
		if g.Words == "" && m.Kind == KindUserPrompt {
			g.Words = m.Head
		}
	}
	res := make([]Digest, 0, len(out))
	for _, g := range out {
		if !q.Since.IsZero() && g.Last.Before(q.Since) {
			continue
		}
		res = append(res, *g)
	}
	slices.SortStableFunc(res, func(a, b Digest) int {
		if c := a.First.Compare(b.First); c != 0 {
			return c
		}
		return strings.Compare(a.Writer, b.Writer)
	})
	return res, nil
}
