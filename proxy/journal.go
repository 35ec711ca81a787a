package proxy

// Full capture (lossless.proxy.capture journal): every message of every
// session archived as it arrives, not only what compaction folds away.
//
// A client resends its whole history on every turn, so the journal
// stores each message once per session: a message is a journal span of
// its own (kind "journal", one message), whose id is a hash of the
// session, the message's index and its bytes (with Anthropic
// cache_control markers removed, as for the summary memo). The id is also
// the event's dedupe key (gitstore Event.Key), so a message already
// stored — by an earlier turn, an earlier run of the proxy, a batch that
// is retried — is skipped by the store; a later turn refers to it by that
// id and writes nothing for it. With lossless.encrypt on the hash is
// keyed by a key derived from the local identity, so that the id (which
// is in the clear, in the event line) says nothing about the message to
// anyone without that identity; without encryption the message itself is
// in the clear and the hash is plain.
//
// The request path does as little as it can: a fast in-memory hash of
// each message, compared with what this session's earlier turns sent,
// and a copy of the messages that are new. Everything else — the ids,
// the span documents, redaction, encryption, the git write — happens on
// one background writer that batches the queued messages into one append
// at a time. Close flushes the queue. A failure never touches a request:
// a full queue drops the turn's new messages (the next turn, which
// resends them, enqueues them again), a failed write forgets them for the
// same reason, and both are counted (Stats.Journal).

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/maphash"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// Capture modes (Config.Capture, lossless.proxy.capture).
const (
	// CaptureOff archives only what compaction folds away.
	CaptureOff = "off"
	// CaptureJournal archives every message of every session, once per
	// session.
	CaptureJournal = "journal"
)

// KindJournal is the kind of a journal span: one message as a client
// sent it, archived whether or not it was ever compacted.
const KindJournal = "journal"

// JournalArchive is an Archive that also takes journal spans. Unlike a
// compaction's spans, journal spans may be stored already (their ids are
// their dedupe keys): WriteJournal stores those that are not and returns
// how many it stored.
type JournalArchive interface {
	WriteJournal(ctx context.Context, spans []*Span) (stored int, err error)
}

// Journal limits.
const (
	// journalMaxPending bounds the bytes of messages queued and not yet
	// written; beyond it a turn's new messages are dropped (and enqueued
	// again by the next turn, which resends them).
	journalMaxPending = 64 << 20
	// journalBatch is the most messages one append carries.
	journalBatch = 512
	// journalTimeout bounds one append.
	journalTimeout = time.Minute
)

// journal is the background writer of full capture.
type journal struct {
	sink  JournalArchive
	logf  func(string, ...any)
	seed  maphash.Seed
	ids   func() hash.Hash // the id hash: keyed when encryption is on
	maxSS int              // sessions remembered

	mu       sync.Mutex
	sessions map[string]*journalSession
	queue    []journalJob
	pending  int  // bytes of messages queued
	busy     bool // a batch is being written
	closed   bool
	wake     chan struct{} // signalled when work is queued or on close
	idle     chan struct{} // closed while nothing is queued or being written
	done     chan struct{} // closed when the writer has exited
	stats    JournalStats  // counters (Capture set at creation)
	lastErr  string        // the last failure, for Stats
}

// journalSession is what the journal knows a session has sent: the fast
// hash of the message at each index already queued (0 for none), slot 0
// for Anthropic's top-level system, slot i+1 for message i.
type journalSession struct {
	seen []uint64
	used time.Time
}

// journalJob is one turn's new messages.
type journalJob struct {
	session, model, route string
	ts                    time.Time
	msgs                  []journalMsg
}

type journalMsg struct {
	index int // -1: Anthropic's top-level system
	slot  int // in journalSession.seen
	hash  uint64
	raw   []byte // a copy: the request's body buffer is reused
}

// JournalStats is what /lossless/stats reports of full capture.
type JournalStats struct {
	// Capture is the capture mode: off or journal.
	Capture string `json:"capture"`
	// Messages counts journal spans stored; Duplicates those the
	// archive held already (a message sent again under a session the
	// proxy had forgotten, or by a run before this one).
	Messages   int `json:"messages"`
	Duplicates int `json:"duplicates"`
	// Batches counts appends.
	Batches int `json:"batches"`
	// Queued is the messages waiting to be written.
	Queued int `json:"queued"`
	// Dropped counts messages not queued because the queue was full,
	// Failed those whose write failed; both are queued again by the
	// session's next turn, which resends them.
	Dropped int `json:"dropped"`
	Failed  int `json:"failed"`
	// LastError is the last failure, if any.
	LastError string `json:"last_error,omitempty"`
}

// newJournal starts the journal's writer. ids is the id hash: nil for
// the plain one.
func newJournal(sink JournalArchive, ids func() hash.Hash, sessions int, logf func(string, ...any)) *journal {
	if ids == nil {
		ids = sha256.New
	}
	j := &journal{
		sink: sink, logf: logf, seed: maphash.MakeSeed(), ids: ids, maxSS: max(64, 4*sessions),
		sessions: map[string]*journalSession{},
		wake:     make(chan struct{}, 1),
		idle:     make(chan struct{}),
		done:     make(chan struct{}),
		stats:    JournalStats{Capture: CaptureJournal},
	}
	close(j.idle)
	go j.run()
	return j
}

// journalIDHash returns the id hash for a store: HMAC-SHA256 keyed by
// sha256("git-lossless journal id v1\n" || the local identity) when
// lossless.encrypt is on (the ids are in the clear: a plain hash of a
// short message could be confirmed by guessing it), plain SHA-256
// otherwise.
func journalIDHash(ctx context.Context, st *gitstore.Store) (func() hash.Hash, error) {
	on, _, err := st.Crypt().Encryption(ctx)
	if err != nil {
		return nil, err
	}
	if !on {
		return nil, nil
	}
	id, err := gitstore.LocalIdentity(true)
	if err != nil {
		return nil, fmt.Errorf("journal ids need the local identity when lossless.encrypt is on: %w", err)
	}
	key := sha256.Sum256([]byte("git-lossless journal id v1\n" + id.String()))
	return func() hash.Hash { return hmac.New(sha256.New, key[:]) }, nil
}

// observe queues the messages of a request that this session has not
// sent before. It is on the request path: it hashes each message (a fast,
// in-memory hash), copies the new ones, and returns. It never fails the
// request; a panic is counted as a failure.
func (j *journal) observe(session string, r *request, now time.Time) {
	defer func() {
		if v := recover(); v != nil {
			j.mu.Lock()
			j.stats.Failed++
			j.lastErr = fmt.Sprintf("panic: %v", v)
			j.mu.Unlock()
		}
	}()
	// Slot k holds message k-1; slot 0 Anthropic's top-level system
	// (journaled as message -1, {"role":"system","content":<system>}).
	n := len(r.msgs) + 1
	raw := func(slot int) []byte {
		if slot == 0 {
			return r.system
		}
		return r.msgs[slot-1].raw
	}
	hs := make([]uint64, n)
	for k := range hs {
		if b := raw(k); b != nil {
			hs[k] = maphash.Bytes(j.seed, b) | 1 // never 0: 0 is "none"
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	ss := j.session(session, now)
	var fresh []int
	size := 0
	for k, h := range hs {
		if h == 0 || k < len(ss.seen) && ss.seen[k] == h {
			continue
		}
		fresh = append(fresh, k)
		size += len(raw(k))
		if k == 0 {
			size += len(systemOpen) + 1
		}
	}
	if len(fresh) == 0 {
		return
	}
	if j.pending+size > journalMaxPending {
		j.stats.Dropped += len(fresh)
		j.lastErr = "queue full"
		return
	}
	// One allocation for the copies of this turn's new messages.
	buf := make([]byte, 0, size)
	job := journalJob{session: session, model: r.model, route: r.d.String(), ts: now, msgs: make([]journalMsg, len(fresh))}
	for i, k := range fresh {
		start := len(buf)
		if k == 0 {
			buf = append(append(append(buf, systemOpen...), raw(k)...), '}')
		} else {
			buf = append(buf, raw(k)...)
		}
		job.msgs[i] = journalMsg{index: k - 1, slot: k, hash: hs[k], raw: buf[start:len(buf):len(buf)]}
	}
	if len(ss.seen) < n {
		ss.seen = append(ss.seen, make([]uint64, n-len(ss.seen))...)
	}
	for _, k := range fresh {
		ss.seen[k] = hs[k]
	}
	j.queue = append(j.queue, job)
	j.pending += size
	j.stats.Queued += len(fresh)
	if !j.busy && len(j.queue) == 1 {
		j.idle = make(chan struct{})
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// session returns the journal's state of a session (j.mu held), dropping
// the least recently used one when full. A dropped session's messages
// are queued again when it returns, and the archive skips them (Event.Key).
func (j *journal) session(key string, now time.Time) *journalSession {
	ss := j.sessions[key]
	if ss == nil {
		if len(j.sessions) >= j.maxSS {
			var oldKey string
			var old *journalSession
			for k, s := range j.sessions {
				if old == nil || s.used.Before(old.used) {
					oldKey, old = k, s
				}
			}
			delete(j.sessions, oldKey)
		}
		ss = &journalSession{}
		j.sessions[key] = ss
	}
	ss.used = now
	return ss
}

// run is the writer: it takes what is queued, at most journalBatch
// messages at a time, and appends it, until closed and drained.
func (j *journal) run() {
	defer close(j.done)
	for {
		j.mu.Lock()
		for len(j.queue) == 0 {
			if j.closed {
				j.mu.Unlock()
				return
			}
			j.mu.Unlock()
			<-j.wake
			j.mu.Lock()
		}
		var batch []journalJob
		n := 0
		for len(j.queue) > 0 && n < journalBatch {
			job := &j.queue[0]
			if take := journalBatch - n; len(job.msgs) > take {
				// A turn larger than what the batch has room for is split.
				head := *job
				head.msgs = job.msgs[:take:take]
				job.msgs = job.msgs[take:]
				batch = append(batch, head)
				n += take
				break
			}
			batch = append(batch, *job)
			n += len(job.msgs)
			j.queue[0] = journalJob{}
			j.queue = j.queue[1:]
		}
		j.busy = true
		j.mu.Unlock()

		stored, err := j.write(batch)

		j.mu.Lock()
		size := 0
		for _, job := range batch {
			for _, m := range job.msgs {
				size += len(m.raw)
			}
		}
		j.pending -= size
		j.stats.Queued -= n
		j.stats.Batches++
		if err != nil {
			j.stats.Failed += n
			j.lastErr = err.Error()
			// Forget them: the session's next turn resends them and
			// they are queued again.
			for _, job := range batch {
				if ss := j.sessions[job.session]; ss != nil {
					for _, m := range job.msgs {
						if m.slot < len(ss.seen) && ss.seen[m.slot] == m.hash {
							ss.seen[m.slot] = 0
						}
					}
				}
			}
		} else {
			j.stats.Messages += stored
			j.stats.Duplicates += n - stored
		}
		j.busy = false
		if len(j.queue) == 0 {
			close(j.idle)
		}
		j.mu.Unlock()
		if err != nil {
			j.logf("journal: %d messages not archived (the next turn of their sessions retries them): %v", n, err)
		}
	}
}

// write builds the batch's journal spans and hands them to the archive;
// a panic is an error.
func (j *journal) write(batch []journalJob) (stored int, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	var spans []*Span
	for _, job := range batch {
		for _, m := range job.msgs {
			spans = append(spans, &Span{
				Format: SpanFormat, ID: journalSpanID(j.ids, job.session, m.index, m.raw), Kind: KindJournal,
				Session: job.session, Model: job.model, Route: job.route, TS: job.ts,
				Messages: []SpanMessage{{Index: m.index, Message: m.raw}},
			})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	return j.sink.WriteJournal(ctx, spans)
}

// systemOpen starts the message an Anthropic request's top-level system
// is journaled as (index -1): {"role":"system","content":<system>}.
const systemOpen = `{"role":"system","content":`

// journalSpanID is a journal span's id: "sp-" and the first 80 bits of
// H("git-lossless journal v1" 0 session 0 index(8 bytes, big-endian) 0
// message), in the span id alphabet, H being SHA-256 or, with encryption
// on, the keyed hash of journalIDHash, and message the message's bytes
// without its cache_control members (clients move those markers from
// turn to turn). It is a function of the session, the index and the
// message, so a message resent by a later turn has the id it was stored
// under.
func journalSpanID(newHash func() hash.Hash, session string, index int, raw []byte) string {
	h := newHash()
	var ix [8]byte
	binary.BigEndian.PutUint64(ix[:], uint64(index))
	h.Write([]byte("git-lossless journal v1\x00"))
	h.Write([]byte(session))
	h.Write([]byte{0})
	h.Write(ix[:])
	h.Write([]byte{0})
	h.Write(withoutCacheControl(raw))
	sum := h.Sum(nil)
	return "sp-" + spanEnc().EncodeToString(sum[:10])
}

// withoutCacheControl returns raw without its "cache_control" members,
// every other byte as it is. A bare `"cache_control"` followed by a colon
// is always a member name: inside a string a quote is escaped.
func withoutCacheControl(raw []byte) []byte {
	key := []byte(`"cache_control"`)
	if !bytes.Contains(raw, key) {
		return raw
	}
	out := raw
	copied := false
	for from := 0; ; {
		i := bytes.Index(out[from:], key)
		if i < 0 {
			return out
		}
		i += from
		c := jsonscan.WS(out, i+len(key))
		if c >= len(out) || out[c] != ':' {
			from = i + len(key)
			continue
		}
		v := jsonscan.WS(out, c+1)
		e, ok := jsonscan.Skip(out, v, jsonscan.Quotes)
		if !ok {
			return out
		}
		// Cut the member and one comma: the one before it, else the one
		// after it (a first member).
		lo, hi := i, e
		if p := lastNonWS(out[:i]); p >= 0 && out[p] == ',' {
			lo = p
		} else if n := jsonscan.WS(out, e); n < len(out) && out[n] == ',' {
			hi = n + 1
		}
		if !copied {
			out = append([]byte(nil), out...)
			copied = true
		}
		out = append(out[:lo], out[hi:]...)
		from = lo
	}
}

func lastNonWS(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return -1
}

// flush waits until everything queued so far is written, or ctx ends.
func (j *journal) flush(ctx context.Context) error {
	j.mu.Lock()
	idle := j.idle
	j.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("journal: flushing: %w", ctx.Err())
	}
}

// close stops taking messages, writes what is queued and stops the
// writer.
func (j *journal) close() {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-j.done
}

func (j *journal) snapshot() JournalStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.stats
	s.LastError = j.lastErr
	return s
}

// FlushJournal waits until every message the journal has queued is
// archived (or its write has failed), or ctx ends. Without full capture
// it returns at once. Close flushes too.
func (p *Proxy) FlushJournal(ctx context.Context) error {
	if p.journal == nil {
		return nil
	}
	return p.journal.flush(ctx)
}

// WriteJournal stores the journal spans the writer does not hold yet,
// one event per message, the span id as the dedupe key, in one append.
func (a *StoreArchive) WriteJournal(ctx context.Context, spans []*Span) (int, error) {
	recs := make([]gitstore.Record, 0, len(spans))
	for _, sp := range spans {
		rec, err := spanRecord(sp)
		if err != nil {
			return 0, err
		}
		rec.Event.Key = sp.ID
		recs = append(recs, rec)
	}
	res, err := a.Store.Append(ctx, a.Writer, recs)
	if err != nil {
		return 0, err
	}
	stored := 0
	for _, e := range res.Events {
		if e.Op == gitstore.OpSpan {
			stored++
		}
	}
	if stored+res.Deduped != len(recs) {
		return stored, fmt.Errorf("%d of %d journal spans were neither stored nor found stored", len(recs)-stored-res.Deduped, len(recs))
	}
	return stored, nil
}

// WriteJournal stores copies of the spans whose ids it does not hold.
func (a *MemoryArchive) WriteJournal(ctx context.Context, spans []*Span) (int, error) {
	a.mu.Lock()
	if a.Fail != nil {
		err := a.Fail
		a.mu.Unlock()
		return 0, err
	}
	if a.ids == nil {
		a.ids = map[string]bool{}
	}
	var fresh []*Span
	for _, sp := range spans {
		if !a.ids[sp.ID] {
			a.ids[sp.ID] = true
			fresh = append(fresh, sp)
		}
	}
	a.mu.Unlock()
	for _, sp := range fresh {
		if err := a.WriteSpan(ctx, sp); err != nil {
			return 0, err
		}
	}
	return len(fresh), nil
}
