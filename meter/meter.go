package meter

import (
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"sort"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/guard"
)

// Options selects what Meter counts.
type Options struct {
	// Session meters one session only ("" = every session).
	Session string
	// Since counts the reads at or after it (zero: all). Re-reads are
	// still decided on the whole history (see the package doc).
	Since time.Time
	// Counter counts tokens (nil: tokens.NewCounter(st), whose
	// cache receipts share).
	Counter *tokens.Counter
	// Harness meters one agent harness's contexts only ("" = every
	// harness's, and the events of none).
	Harness string
	// HarnessOf maps a writer to its harness's name for events that do
	// not name theirs (gitstore.HarnessOf; the commands pass
	// harnesses.WriterHarness: this package must not import the
	// adapters). nil: only the events' own field counts.
	HarnessOf func(writer string) string
}

// By names a grouping of the figures.
type By string

// The groupings (see the package doc).
const (
	ByFile    By = "file"
	BySession By = "session"
	ByAgent   By = "agent"
	ByRepo    By = "repo"
	ByHarness By = "harness"
)

// Groupings lists them in the order the help names them.
var Groupings = []By{ByFile, BySession, ByAgent, ByRepo, ByHarness}

// Figures are the meter's counts for a set of reads. JSON names are
// stable: scripts read them.
type Figures struct {
	Reads  int   `json:"reads"`  // reads (read, attach, restore events)
	Tokens int64 `json:"tokens"` // o200k tokens those reads showed (uncounted ones left out)

	ReReads      int   `json:"rereads"`       // reads of a path the context had read before
	ReReadTokens int64 `json:"reread_tokens"` // their tokens
	// Changed re-reads showed another blob than the context's previous
	// read of the path; unchanged ones the same blob.
	Changed       int   `json:"rereads_changed"`
	ChangedTokens int64 `json:"rereads_changed_tokens"`
	Unchanged     int   `json:"rereads_unchanged"`
	// AfterCompaction are unchanged re-reads with a compaction of the
	// context since the previous read: needed, not saveable.
	AfterCompaction int `json:"rereads_unchanged_after_compaction"`
	// Saveable are the other unchanged re-reads, and SavedTokens their
	// tokens: what a restore from the archive would have saved (see the
	// package doc).
	Saveable    int   `json:"rereads_saveable"`
	SavedTokens int64 `json:"saved_tokens"`

	// Uncounted reads have no known token count: excluded by the deny
	// list, or content pruned or unreadable.
	Uncounted int `json:"uncounted"`

	// Rates (0 when there is nothing to divide by).
	ReReadRate  float64 `json:"reread_rate"`         // ReReads / Reads
	ChangedRate float64 `json:"reread_changed_rate"` // Changed / ReReads
}

// Row is the figures of one group.
type Row struct {
	Key string `json:"key"`
	// Harness is the agent harness of a session's or a context's row
	// (--by session, agent), "" for one of no harness (and for the other
	// groupings).
	Harness string `json:"harness,omitempty"`
	Figures
}

// Report is what Meter found.
type Report struct {
	Session  string    `json:"session,omitempty"`
	Harness  string    `json:"harness,omitempty"` // the harness metered (Options.Harness)
	Since    time.Time `json:"since,omitzero"`
	Totals   Figures   `json:"totals"`
	Contexts int       `json:"contexts"` // contexts with a counted read
	// Skipped counts event lines that did not parse (left out).
	Skipped int `json:"skipped_lines,omitempty"`
	// Counts says what the token counter did (not part of the JSON: it
	// depends on the cache, not on the archive).
	Counts tokens.Stats `json:"-"`

	groups map[By]map[string]*Figures
	// harnesses are the harness of each session and agent row.
	harnesses map[By]map[string]string
}

// class is what a read was.
type class uint8

const (
	first           class = iota // the context's first read of the path
	excluded                     // no content archived: not compared
	changed                      // re-read, another blob than the previous read
	afterCompaction              // re-read, same blob, a compaction between
	saveable                     // re-read, same blob, no compaction between
)

// Meter counts the read tokens of the archive (see the package doc for
// every definition).
//
// It is one pass over the read and compact events in archive order that
// classifies each read, then one token count per distinct version shown,
// then sums. Contexts, files and repositories are numbered as they are
// first seen, so the pass and the sums index slices rather than hash
// strings, and what is kept per read is a few integers: a meter over
// 100,000 events holds 50,000 reads, not 50,000 events.
//
// The pass is not split across CPUs, though contexts never span writers
// and it could be: on the 2-CPU machine the target is measured on, two
// passes over halves of the writers took 148-160 ms against one pass's
// 137-147 ms (load average 3: the other CPU is never idle).
func Meter(ctx context.Context, st *gitstore.Store, opt Options) (*Report, error) {
	p := newPass(opt.Since)
	p.harnessOf = opt.HarnessOf
	skipped, err := eachEvent(ctx, st, filter{session: opt.Session, harness: opt.Harness, harnessOf: opt.HarnessOf}, true, p.visit)
	if err != nil {
		return nil, err
	}
	tc := opt.Counter
	if tc == nil {
		tc = tokens.NewCounter(ctx, st)
	}
	before := tc.Stats()
	counts := tc.CountAll(ctx, p.versions)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	after := tc.Stats()
	r := &Report{Session: opt.Session, Harness: opt.Harness, Since: opt.Since, Skipped: skipped, groups: map[By]map[string]*Figures{},
		harnesses: map[By]map[string]string{BySession: {}, ByAgent: {}}}
	r.Counts = tokens.Stats{
		Events: after.Events - before.Events, Unique: after.Unique - before.Unique,
		Cached: after.Cached - before.Cached, Counted: after.Counted - before.Counted,
		Failed: after.Failed - before.Failed, Chunks: after.Chunks - before.Chunks,
		Reused: after.Reused - before.Reused,
	}
	byFile := make([]Figures, len(p.files.keys))
	byCtx := make([]Figures, len(p.contexts))
	byRepo := make([]Figures, len(p.repos.keys))
	for _, rd := range p.reads {
		tok := int64(-1)
		if rd.ver >= 0 {
			tok = counts[rd.ver]
		}
		r.Totals.add(rd.cl, tok)
		byFile[rd.file].add(rd.cl, tok)
		byCtx[rd.ctx].add(rd.cl, tok)
		byRepo[rd.repo].add(rd.cl, tok)
	}
	for _, b := range Groupings {
		r.groups[b] = map[string]*Figures{}
	}
	// Labels can meet (one session's contexts in two writers; two raw
	// paths printed alike): their figures are added up.
	into := func(b By, label string, f *Figures) {
		g := r.groups[b][label]
		if g == nil {
			g = &Figures{}
			r.groups[b][label] = g
		}
		g.merge(f)
	}
	for i := range byFile {
		if byFile[i].Reads > 0 {
			into(ByFile, p.files.labels[i], &byFile[i])
		}
	}
	for i := range byRepo {
		if byRepo[i].Reads > 0 {
			into(ByRepo, p.repos.labels[i], &byRepo[i])
		}
	}
	for i := range p.contexts {
		c := &p.contexts[i]
		if !c.counted {
			continue
		}
		r.Contexts++
		into(ByAgent, c.session+" "+c.agent, &byCtx[i])
		into(BySession, c.session, &byCtx[i])
		into(ByHarness, orDash(c.harness), &byCtx[i])
		for _, b := range []By{ByAgent, BySession} {
			label := c.session
			if b == ByAgent {
				label += " " + c.agent
			}
			if r.harnesses[b][label] == "" {
				r.harnesses[b][label] = c.harness
			}
		}
	}
	r.Totals.rates()
	return r, nil
}

type (
	ctxKey  struct{ writer, session, agent string }
	readKey struct{ ctx, file int32 }
	// last is a context's previous read of a file: the blob it showed
	// (numbered) and the compactions seen then.
	last struct{ blob, epoch int32 }
	// read is what is kept of a counted read: its context, file and
	// repository numbers, the version it showed (-1 for an excluded read)
	// and its class.
	read struct {
		ctx, file, repo, ver int32
		cl                   class
	}
	// cstate is a context: its group labels, the compactions seen so
	// far, and whether a read of it is counted.
	cstate struct {
		session, agent string
		harness        string // gitstore.HarnessOf of its first event
		epoch          int32
		counted        bool
	}
)

// pass classifies the reads in archive order.
type pass struct {
	since     time.Time
	harnessOf func(writer string) string
	ctxIDs    map[ctxKey]int32
	contexts  []cstate
	lastKey   ctxKey
	lastID    int32
	files     *interner
	repos     *interner
	prev      map[readKey]last
	blobIDs   map[string]int32
	verIDs    map[string]int32
	versions  []*gitstore.Event // the first event to show each version
	reads     []read
}

func newPass(since time.Time) *pass {
	return &pass{since: since, ctxIDs: map[ctxKey]int32{}, lastID: -1, files: newInterner(), repos: newInterner(),
		prev: map[readKey]last{}, blobIDs: map[string]int32{}, verIDs: map[string]int32{}}
}

// visit classifies one event.
func (p *pass) visit(e *gitstore.Event) {
	// Consecutive events are mostly of one context: compare before
	// hashing.
	k := ctxKey{e.Writer, e.Session, e.Agent}
	id := p.lastID
	if id < 0 || k != p.lastKey {
		var ok bool
		if id, ok = p.ctxIDs[k]; !ok {
			id = int32(len(p.contexts))
			p.ctxIDs[k] = id
			p.contexts = append(p.contexts, cstate{session: sessionKey(e), agent: agentKey(e), harness: gitstore.HarnessOf(e.Harness, e.Writer, p.harnessOf)})
		}
		p.lastKey, p.lastID = k, id
	}
	c := &p.contexts[id]
	if e.Op == gitstore.OpCompact {
		c.epoch++
		return
	}
	file := p.files.id(e.RawPath(), e)
	cl := first
	if e.Excluded || e.Blob == "" {
		cl = excluded
	} else {
		blob, ok := p.blobIDs[e.Blob]
		if !ok {
			blob = int32(len(p.blobIDs))
			p.blobIDs[e.Blob] = blob
		}
		rk := readKey{id, file}
		if pr, ok := p.prev[rk]; ok {
			switch {
			case pr.blob != blob:
				cl = changed
			case pr.epoch != c.epoch:
				cl = afterCompaction
			default:
				cl = saveable
			}
		}
		p.prev[rk] = last{blob, c.epoch}
	}
	if !p.since.IsZero() && e.TS.Before(p.since) {
		return
	}
	ver := int32(-1)
	if cl != excluded {
		vk := versionKey(e)
		v, ok := p.verIDs[vk]
		if !ok {
			v = int32(len(p.versions))
			p.verIDs[vk] = v
			keep := *e
			p.versions = append(p.versions, &keep)
		}
		ver = v
	}
	c.counted = true
	p.reads = append(p.reads, read{ctx: id, file: file, repo: p.repos.id(orDash(e.Repo), nil), ver: ver, cl: cl})
}

// versionKey names what a read showed: its blob, and its view when
// partial (the token counter counts a blob shown as lines A-B apart).
func versionKey(e *gitstore.Event) string {
	if e.View != "" && e.View != "full" {
		return e.Blob + " " + e.View
	}
	return e.Blob
}

// interner numbers strings as they are first seen.
type interner struct {
	ids    map[string]int32
	keys   []string
	labels []string // what a group shows for the key
}

func newInterner() *interner { return &interner{ids: map[string]int32{}} }

// id returns key's number; e, when given, names the file for its label.
func (in *interner) id(key string, e *gitstore.Event) int32 {
	if id, ok := in.ids[key]; ok {
		return id
	}
	label := key
	if e != nil {
		label = fileKey(e)
	}
	return in.add(key, label)
}

// add returns key's number, numbering it with label when new.
func (in *interner) add(key, label string) int32 {
	if id, ok := in.ids[key]; ok {
		return id
	}
	id := int32(len(in.keys))
	in.ids[key] = id
	in.keys = append(in.keys, key)
	in.labels = append(in.labels, label)
	return id
}

func (f *Figures) merge(g *Figures) {
	f.Reads += g.Reads
	f.Tokens += g.Tokens
	f.ReReads += g.ReReads
	f.ReReadTokens += g.ReReadTokens
	f.Changed += g.Changed
	f.ChangedTokens += g.ChangedTokens
	f.Unchanged += g.Unchanged
	f.AfterCompaction += g.AfterCompaction
	f.Saveable += g.Saveable
	f.SavedTokens += g.SavedTokens
	f.Uncounted += g.Uncounted
}

func (f *Figures) add(cl class, tok int64) {
	f.Reads++
	if tok < 0 || cl == excluded {
		f.Uncounted++
		tok = 0
	}
	f.Tokens += tok
	if cl == first || cl == excluded {
		return
	}
	f.ReReads++
	f.ReReadTokens += tok
	switch cl {
	case changed:
		f.Changed++
		f.ChangedTokens += tok
	case afterCompaction:
		f.Unchanged++
		f.AfterCompaction++
	case saveable:
		f.Unchanged++
		f.Saveable++
		f.SavedTokens += tok
	}
}

func (f *Figures) rates() {
	f.ReReadRate, f.ChangedRate = 0, 0
	if f.Reads > 0 {
		f.ReReadRate = float64(f.ReReads) / float64(f.Reads)
	}
	if f.ReReads > 0 {
		f.ChangedRate = float64(f.Changed) / float64(f.ReReads)
	}
}

// Rows returns the figures grouped by b, most tokens first (ties: more
// reads, then the key in byte order), so the order never depends on map
// iteration.
func (r *Report) Rows(b By) ([]Row, error) {
	m, ok := r.groups[b]
	if !ok {
		return nil, fmt.Errorf("unknown grouping %q: file, session, agent, repo or harness", b)
	}
	rows := make([]Row, 0, len(m))
	for k, f := range m {
		row := Row{Key: k, Harness: r.harnesses[b][k], Figures: *f}
		row.rates()
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if a.Tokens != b.Tokens {
			return a.Tokens > b.Tokens
		}
		if a.Reads != b.Reads {
			return a.Reads > b.Reads
		}
		return a.Key < b.Key
	})
	return rows, nil
}

// ParseBy reads a --by value.
func ParseBy(s string) (By, error) {
	for _, b := range Groupings {
		if string(b) == s {
			return b, nil
		}
	}
	return "", fmt.Errorf("%q: want file, session, agent, repo or harness", s)
}

// fileKey is the path as recorded, printable (a path that is not valid
// UTF-8 is shown quoted from its raw bytes).
func fileKey(e *gitstore.Event) string {
	if e.Path64 != "" {
		return guard.Printable(e.RawPath())
	}
	return e.Path
}

// sessionKey is the event's session, or its writer for events recorded
// outside any session.
func sessionKey(e *gitstore.Event) string {
	if e.Session != "" {
		return e.Session
	}
	return "writer:" + e.Writer
}

func agentKey(e *gitstore.Event) string {
	if e.Agent != "" {
		return e.Agent
	}
	return gitstore.MainAgent
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
