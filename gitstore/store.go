// Package gitstore is git-lossless's one store: every writer (hooks, sweep,
// proxy, MCP, CLI) archives through it, and nothing else touches refs or
// objects.
//
// Archived file versions are real git blobs. Each writer (one Claude Code
// session, one proxy instance, ...) appends batches of events as commits on
// its own ref, refs/lossless/<writer>, so writers never contend; processes
// of one writer serialise through git's own ref lock protocol
// (compare-and-swap with retry). Each batch commit's tree holds the batch's
// events as JSON lines and references every blob they name, so everything
// archived is reachable: it survives `git gc` and travels with `git push`.
// The events of each writer form a SHA-256 hash chain (package seal).
//
// FORMAT.md beside this file specifies the layout byte by byte.
//
// Write order (crash consistency): blobs, events blob, trees, commit — all
// fsynced when fsync is on — and only then the ref, through <ref>.lock.
// A crash at any point leaves either the old ref or the new one, plus at
// worst unreachable objects that `git gc` removes.
package gitstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj"
	"github.com/git-lossless/git-lossless/seal"
)

// RefPrefix is where writers' logs live.
const RefPrefix = "refs/lossless/"

// FormatVersion is written in every batch commit.
const FormatVersion = 1

// Options configures a Store. Zero values read the repository's config.
type Options struct {
	// Fsync overrides git config lossless.fsync (default true).
	Fsync *bool
	// Exclude adds deny globs to the defaults, LOSSLESS_ARCHIVE_EXCLUDE and
	// git config lossless.exclude.
	Exclude []string
	// Warn receives one-line warnings (stale locks removed, fallbacks).
	// Default: discard.
	Warn func(string)
	// Now is the clock (tests).
	Now func() time.Time
	// LockTimeout bounds the wait for a busy ref lock (default 10s).
	LockTimeout time.Duration
	// StaleLockAge overrides StaleLockAge.
	StaleLockAge time.Duration
	// Heads is told every head this store moves a writer's ref to, and
	// Checkpoints gives Verify the heads seen before: both are the
	// witness and anchors of package anchor (anchor.StoreOptions sets
	// them). Without them Verify checks each chain on its own.
	Heads       HeadObserver
	Checkpoints CheckpointSource
}

// CheckpointSource gives the heads of a writer seen before (by this
// machine's witness, or anchored on a remote), which verify compares the
// chain with.
type CheckpointSource interface {
	Checkpoints(ctx context.Context, st *Store, writer string) ([]seal.Checkpoint, error)
}

// Store is an open archive. Its methods are safe for concurrent use by
// goroutines; several processes may use one archive at once.
type Store struct {
	loc   Location
	cfg   *Config
	odb   *gitobj.DB
	refs  *gitobj.Refs
	deny  *DenyList
	warn  func(string)
	now   func() time.Time
	lockT time.Duration

	heads HeadObserver     // the witness (Options.Heads), or nil
	cps   CheckpointSource // heads seen before (Options.Checkpoints), or nil

	appendMu sync.Mutex // one append at a time per process keeps retries rare
	redact   redactor   // placeholder key and vault recipient, loaded on the first secret
}

// Open opens the archive at loc.
func Open(loc Location, opt Options) (*Store, error) {
	cfg := LoadConfig(loc.CommonDir)
	fsync := true
	if v := cfg.Get("lossless.fsync"); v != "" {
		b, err := parseBool(v)
		if err != nil {
			return nil, fmt.Errorf("git config lossless.fsync: %w", err)
		}
		fsync = b
	}
	if opt.Fsync != nil {
		fsync = *opt.Fsync
	}
	warn := opt.Warn
	if warn == nil {
		warn = func(string) {}
	}
	globs := append([]string{}, opt.Exclude...)
	globs = append(globs, ParseDenyEnv(os.Getenv("LOSSLESS_ARCHIVE_EXCLUDE"))...)
	globs = append(globs, cfg.GetAll("lossless.exclude")...)
	deny, err := NewDenyList(globs)
	if err != nil {
		return nil, fmt.Errorf("deny list: %w", err)
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	lt := opt.LockTimeout
	if lt == 0 {
		lt = 10 * time.Second
	}
	s := &Store{
		loc:   loc,
		cfg:   cfg,
		odb:   gitobj.NewDB(loc.CommonDir, fsync),
		refs:  gitobj.NewRefs(loc.CommonDir, fsync, opt.StaleLockAge, warn),
		deny:  deny,
		warn:  warn,
		now:   now,
		lockT: lt,
		heads: opt.Heads,
		cps:   opt.Checkpoints,
	}
	return s, nil
}

// OpenDir discovers the archive for dir and opens it.
func OpenDir(dir string, opt Options) (*Store, error) {
	loc, err := Discover(dir)
	if err != nil {
		return nil, err
	}
	if loc.Fallback != "" && opt.Warn != nil {
		opt.Warn(loc.Fallback)
	}
	return Open(loc, opt)
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", v)
}

// Location returns where the store lives.
func (s *Store) Location() Location { return s.loc }

// Config returns the git configuration in force for this store.
func (s *Store) Config() *Config { return s.cfg }

// Deny returns the deny list in force.
func (s *Store) Deny() *DenyList { return s.deny }

// ValidWriter checks a writer name against seal.ValidWriter: letters,
// digits, '.', '_', '-', not starting with a punctuation mark, at most 128
// bytes, and a valid git ref component (no "..", no ".lock" suffix).
func ValidWriter(w string) error {
	if !seal.ValidWriter(w) {
		return fmt.Errorf("invalid writer name %q: use letters, digits, '.', '_' and '-'", w)
	}
	return nil
}

// WriterName turns any label (a session id, a host:port) into a valid
// writer name, deterministically.
func WriterName(prefix, label string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range label {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	w := b.String()
	if len(w) > 128 || ValidWriter(w) != nil {
		sum := sha256.Sum256([]byte(label))
		w = prefix + hex.EncodeToString(sum[:8])
	}
	return w
}

// Record is one event to append, with the content it archives.
type Record struct {
	Event
	// Content is archived as a blob when HasContent is true (empty content
	// is a valid, empty blob).
	Content    []byte
	HasContent bool
	// File is the path on disk the content came from, when it did: the
	// deny list also checks where its symlinks lead.
	File string
	// Encrypt stores the content as age ciphertext when git config
	// lossless.encrypt is on (see crypt.go).
	Encrypt bool
}

// AppendResult says what an append stored.
type AppendResult struct {
	Commit  string  // the new head ("" when everything was a duplicate)
	Events  []Event // the events stored, with seq and prev
	Deduped int     // records skipped because their key was stored already
}

// head is a writer's state at one commit.
type head struct {
	Commit string
	Seq    int64
	Seal   string
}

// Append stores recs as one batch on writer's log: it writes the blobs,
// then builds the batch commit on the writer's current head and moves the
// ref by compare-and-swap, rebuilding on the new head when another process
// got there first. A record whose Key was stored already (by anyone on this
// writer, including a concurrent process) is skipped.
func (s *Store) Append(ctx context.Context, writer string, recs []Record) (AppendResult, error) {
	if err := ValidWriter(writer); err != nil {
		return AppendResult{}, err
	}
	if len(recs) == 0 {
		return AppendResult{}, nil
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()

	// 1. Blobs: denied paths never reach an object.
	var pending []string
	sink := gitobj.LooseSink{DB: s.odb, Pending: &pending}
	events, err := s.prepareRecords(recs, sink)
	if err != nil {
		return AppendResult{}, err
	}

	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	var res AppendResult
	var h, newHead head
	err = s.casRef(ctx, RefPrefix+writer, func(_ int, cur string) (string, error) {
		// 2. Dedupe against everything the writer holds at this head; the
		// values redacted from the spans kept go into one vault event.
		var batch []Event
		var err error
		if h, batch, res.Deduped, err = s.newEvents(ctx, writer, cur, events, sink); err != nil || len(batch) == 0 {
			return "", err
		}
		// 3. Chain and commit on this head.
		if res.Events, res.Commit, newHead, err = s.buildBatchTo(sink, writer, h, batch); err != nil {
			return "", err
		}
		if err := s.odb.Flush(pending); err != nil {
			return "", err
		}
		pending = pending[:0]
		// 4. casRef moves the ref under its lock.
		return res.Commit, nil
	})
	if err != nil {
		return AppendResult{}, err
	}
	if res.Commit == "" {
		return AppendResult{Deduped: res.Deduped}, nil
	}
	s.sawHead(writer, newHead)
	s.indexAppend(writer, h, newHead, res.Events)
	for i := range res.Events {
		res.Events[i].Writer, res.Events[i].Commit = writer, res.Commit
	}
	return res, nil
}

// newEvents reads the chain state at cur (the writer's head) and returns
// it with what of events the writer does not hold yet (deduplicated by
// key, the vault event of their redacted values added) and the number
// dropped as duplicates. Append and Import both build on it.
func (s *Store) newEvents(ctx context.Context, writer, cur string, events []Event, sink gitobj.Sink) (head, []Event, int, error) {
	h, err := s.headAt(cur)
	if err != nil {
		return head{}, nil, 0, fmt.Errorf("writer %s: %w", writer, err)
	}
	batch := events
	deduped := 0
	if hasKeys(events) {
		stored, err := s.storedKeys(ctx, writer, h, events)
		if err != nil {
			return head{}, nil, 0, err
		}
		batch, deduped = dedupe(events, stored)
	}
	if batch, err = s.withVault(batch, sink); err != nil {
		return head{}, nil, 0, err
	}
	return h, batch, deduped, nil
}

// prepareRecords turns records into events ready to chain: it validates
// them, fills defaults, applies the deny list (a denied path never reaches
// an object: its event is stored with excluded:true and no content) and
// stores each kept content as a blob through sink.
func (s *Store) prepareRecords(recs []Record, sink gitobj.Sink) ([]Event, error) {
	redactOn, err := s.redactMode()
	if err != nil {
		return nil, err
	}
	events := make([]Event, len(recs))
	// A batch names the same files many times (a sweep: every read, edit
	// and span of a file), and each check resolves symlinks component by
	// component: check each path once per batch.
	denyMemo := map[string]bool{}
	res := newResolver()
	checkDeny := func(p string) bool {
		d, ok := denyMemo[p]
		if !ok {
			_, _, d = s.deny.check(p, res)
			denyMemo[p] = d
		}
		return d
	}
	for i := range recs {
		r := &recs[i]
		e := r.Event
		e.Seq, e.Prev, e.Raw, e.Writer, e.Commit = 0, "", nil, "", ""
		if e.TS.IsZero() {
			e.TS = s.now()
		}
		if e.Op == "" {
			return nil, fmt.Errorf("record %d: op is required", i)
		}
		if e.Op == OpVault {
			return nil, fmt.Errorf("record %d: op %s is written by the store itself", i, e.Op)
		}
		if e.Source == "" {
			return nil, fmt.Errorf("record %d: source is required", i)
		}
		if e.Repo == "" {
			e.Repo = s.repoLabel()
		}
		denied := e.Excluded
		if !denied && (e.Path != "" || r.File != "") {
			if e.Path != "" {
				// A recorded path is relative to the work tree, not to this
				// process's directory: check it where it really is (or by
				// name alone when there is no work tree).
				p := e.RawPath()
				switch {
				case filepath.IsAbs(p):
					denied = denied || (p != r.File && checkDeny(p))
				case s.loc.WorkTree != "":
					abs := filepath.Join(s.loc.WorkTree, filepath.FromSlash(p))
					denied = denied || (abs != r.File && checkDeny(abs))
				default:
					_, byName := s.deny.Match(p)
					denied = denied || byName
				}
			}
			if r.File != "" && checkDeny(r.File) {
				denied = true
			}
		}
		if denied {
			e.Excluded = true
			e.Blob, e.SHA256, e.Bytes, e.Tokens = "", "", 0, 0
		} else if r.HasContent {
			// Secrets: spans are redacted, file versions marked (redact.go).
			content := s.scanContent(&e, r.Content, redactOn)
			content, err := s.storedContent(r, &e, content)
			if err != nil {
				return nil, fmt.Errorf("record %d: %w", i, err)
			}
			id, err := sink.Put("blob", content)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(content)
			e.Blob = id
			e.SHA256 = hex.EncodeToString(sum[:])
			e.Bytes = int64(len(content))
			if e.Tokens == 0 {
				e.Tokens = EstimateTokens(len(r.Content))
			}
		}
		events[i] = e
	}
	return events, nil
}

func (s *Store) repoLabel() string {
	if s.loc.WorkTree != "" {
		return s.loc.WorkTree
	}
	if s.loc.Embedded {
		return ""
	}
	return s.loc.CommonDir
}

func hasKeys(evs []Event) bool {
	for _, e := range evs {
		if e.Key != "" {
			return true
		}
	}
	return false
}

// dedupe drops events whose key is in stored or occurs earlier in evs. It
// adds the keys it keeps to stored.
func dedupe(evs []Event, stored map[string]bool) ([]Event, int) {
	out := make([]Event, 0, len(evs))
	n := 0
	for _, e := range evs {
		if e.Key != "" {
			if stored[e.Key] {
				n++
				continue
			}
			stored[e.Key] = true
		}
		out = append(out, e)
	}
	return out, n
}

// fewKeys is how many distinct keys storedKeys looks up one by one in the
// writer's index bytes; above it, one pass collects every stored key.
const fewKeys = 16

// storedKeys returns which of evs' dedupe keys writer already holds at
// head h (with more than fewKeys distinct keys: every key it holds). A
// hook's append carries one or two keys and a writer may hold tens of
// thousands of lines: each key is then searched for in the mapped index as
// a byte string (`"key":"<k>"`), which skips every line that does not
// hold it; a sweep's thousands of keys are checked against one set.
func (s *Store) storedKeys(ctx context.Context, writer string, h head, evs []Event) (map[string]bool, error) {
	set := map[string]bool{}
	if h.Commit == "" {
		return set, nil
	}
	var keys []string
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Key != "" && !seen[e.Key] {
			seen[e.Key] = true
			keys = append(keys, e.Key)
		}
	}
	if data, release, ok := s.currentIndex(writer, h.Commit); ok {
		defer release()
		if len(keys) <= fewKeys {
			for _, k := range keys {
				needle := append([]byte(`"key":`), jsonString(k)...)
				scanLinesAt(data, needle, func(start int) {
					if got, ok := lineKey(lineAt(data, start)); ok && got == k {
						set[k] = true
					}
				})
			}
			return set, nil
		}
		scanLines(data, nil, func(l []byte) {
			if k, ok := lineKey(l); ok {
				set[k] = true
			}
		})
		return set, nil
	}
	lines, err := s.writerLines(ctx, writer, h)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if k, ok := lineKey(l); ok {
			set[k] = true
		}
	}
	return set, nil
}

// lineKey extracts a stored line's dedupe key: the top-level "key" member.
// It scans for the canonical `"key":"` member instead of decoding the
// line: a sweep checks thousands of keys against thousands of lines, and
// this keeps that linear. Inside a string a quote is escaped, so a bare
// `"key":"` is always a member name; it is the event's own unless an
// object or array opens before it (an unknown field such as
// {"attestation":{"key":...}}), and only then is the line walked member by
// member. A key without escapes (a tool_use_id) is taken as it is; one with
// escapes is unquoted by encoding/json.
func lineKey(l []byte) (string, bool) {
	needle := []byte(`"key":"`)
	i := bytes.Index(l, needle)
	if i < 0 {
		return "", false
	}
	if len(l) > 0 && bytes.ContainsAny(l[1:i], "{[") {
		if i = topLevelMember(l, "key"); i < 0 || !bytes.HasPrefix(l[i:], needle) {
			return "", false
		}
	}
	rest := l[i+len(needle)-1:] // from the opening quote
	end, escaped := 1, false
	for end < len(rest) && rest[end] != '"' {
		if rest[end] == '\\' {
			end++
			escaped = true
		}
		end++
	}
	if end >= len(rest) {
		return "", false
	}
	if !escaped {
		return string(rest[1:end]), true
	}
	var k string
	if err := json.Unmarshal(rest[:end+1], &k); err != nil {
		return "", false
	}
	return k, true
}

// topLevelMember returns the offset of the top-level member named name
// (its opening quote) in the JSON object l, or -1.
func topLevelMember(l []byte, name string) int {
	want := `"` + name + `":`
	depth, inStr := 0, false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			if depth == 1 && bytes.HasPrefix(l[i:], []byte(want)) {
				return i
			}
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}

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
	b := seal.Batch{Commit: id}
	c, err := s.readCommit(id)
	if err != nil {
		if errors.Is(err, ErrObjectMissing) || errors.Is(err, ErrObjectCorrupt) {
			b.Err = err
			return b, c, nil
		}
		return b, c, err
	}
	b.Seq, b.Seal = c.Seq, c.Seal
	typ, body, err := s.odb.Read(c.Tree)
	if err != nil || typ != "tree" {
		b.Err = fmt.Errorf("tree %s unreadable: %v", gitobj.Short(c.Tree), err)
		return b, c, nil
	}
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		b.Err = err
		return b, c, nil
	}
	b.Blobs = map[string]bool{}
	var eventsID string
	for _, e := range ents {
		switch e.Name {
		case "events.jsonl":
			eventsID = e.ID
		case "blobs":
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
			for _, se := range subEnts {
				b.Blobs[se.ID] = true
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
	b.Lines = splitLines(evBody)
	return b, c, nil
}

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
	id := headID
	for id != "" && id != stop {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		b, c, err := s.readBatch(id)
		if err != nil {
			return nil, false, err
		}
		// A batch whose tree cannot be read goes on to its parent when
		// the commit itself was read (an unreadable commit has no
		// parents): verify then counts the entries before the damage
		// and names the first entry of the damaged batch.
		batches = append(batches, b)
		if stop != "" && c.Seq <= stopSeq {
			reverse(batches)
			return batches, false, nil
		}
		if len(c.Parents) == 0 {
			id = ""
		} else {
			id = c.Parents[0]
		}
	}
	reverse(batches)
	return batches, stop == "" || id == stop, nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// WriterInfo describes one writer's log.
type WriterInfo struct {
	Name   string `json:"writer"`
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	Seq    int64  `json:"entries"`
	Seal   string `json:"seal"`
	Err    string `json:"error,omitempty"`
}

// Writers lists every writer with its head.
func (s *Store) Writers(ctx context.Context) ([]WriterInfo, error) {
	refs, err := s.refs.List(RefPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]WriterInfo, 0, len(refs))
	for name, id := range refs {
		w := WriterInfo{Name: strings.TrimPrefix(name, RefPrefix), Ref: name, Commit: id}
		// The index head names the commit, seq and seal it covers: when it
		// is the ref's commit, the head commit need not be read (with one
		// pack per writer, as an import leaves them, reading a thousand
		// heads opens a thousand pack indexes). A head file that lies
		// cannot hide a rewrite: it names a seal the chain lacks, which
		// verify reports.
		if ih, ok := s.readIndexHead(w.Name); ok && ih.Commit == id && ih.Seq > 0 && len(ih.Seal) == 64 {
			w.Seq, w.Seal = ih.Seq, ih.Seal
		} else if h, err := s.headAt(id); err != nil {
			w.Err = err.Error()
		} else {
			w.Seq, w.Seal = h.Seq, h.Seal
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Locks lists lock files under refs/lossless, stale or not.
func (s *Store) Locks() ([]LockInfo, error) { return s.refs.Locks(RefPrefix) }

// CleanStaleLocks removes the stale ones and returns what it removed.
func (s *Store) CleanStaleLocks() ([]LockInfo, error) {
	ls, err := s.Locks()
	if err != nil {
		return nil, err
	}
	var out []LockInfo
	for _, l := range ls {
		if l.Stale && s.refs.RemoveStale(l.Path) {
			out = append(out, l)
		}
	}
	return out, nil
}

// Blob returns the bytes of an archived blob.
func (s *Store) Blob(ctx context.Context, id string) ([]byte, error) {
	id = strings.ToLower(id)
	if !gitobj.IsID(id) {
		return nil, fmt.Errorf("%q is not a full 40-hex blob id", id)
	}
	typ, body, err := s.odb.Read(id)
	if err != nil {
		return nil, err
	}
	if typ != "blob" {
		return nil, fmt.Errorf("%s is a %s, not a blob", id, typ)
	}
	return body, nil
}

// Verify checks one writer's chain (see package seal).
//
// The chain is compared with the heads Options.Checkpoints gives (the
// witness and anchors); without it, each chain is checked on its own.
func (s *Store) Verify(ctx context.Context, writer string, opt seal.Options) (*seal.Report, error) {
	return seal.Verify(ctx, sealSource{s: s}, writer, opt)
}

// VerifyAt checks writer's chain as it stands at commit — a head fetched
// from a remote, before the writer's ref is moved to it — against the
// heads seen before (Options.Checkpoints), as Verify does for the ref.
func (s *Store) VerifyAt(ctx context.Context, writer, commit string, opt seal.Options) (*seal.Report, error) {
	if !gitobj.IsID(commit) {
		return nil, fmt.Errorf("verify %s at %q: not a commit id", writer, commit)
	}
	return seal.Verify(ctx, sealSource{s: s, head: commit}, writer, opt)
}

// sealSource adapts the store to seal.Source: the writer's ref, or head
// when set.
type sealSource struct {
	s    *Store
	head string
}

func (src sealSource) Batches(ctx context.Context, writer string) ([]seal.Batch, error) {
	id := src.head
	var err error
	if id == "" {
		if id, err = src.s.refs.Read(RefPrefix + writer); err != nil {
			return nil, err
		}
	}
	bs, _, err := src.s.walk(ctx, id, "", 0)
	return bs, err
}

func (src sealSource) Content(ctx context.Context, blob string) ([]byte, error) {
	typ, body, err := src.s.odb.Read(blob)
	switch {
	case errors.Is(err, ErrObjectMissing):
		return nil, fmt.Errorf("%w: %v", seal.ErrMissing, err)
	case errors.Is(err, ErrObjectCorrupt):
		return nil, fmt.Errorf("%w: %v", seal.ErrCorrupt, err)
	case err != nil:
		return nil, err
	case typ != "blob":
		return nil, fmt.Errorf("%w: %s is a %s", seal.ErrCorrupt, blob, typ)
	}
	return body, nil
}

func (src sealSource) Checkpoints(ctx context.Context, writer string) ([]seal.Checkpoint, error) {
	if src.s.cps == nil {
		return nil, nil
	}
	return src.s.cps.Checkpoints(ctx, src.s, writer)
}

// stateDir is where derived, rebuildable state lives: the witness and the
// index. Inside the common dir, never in objects or refs.
func (s *Store) stateDir(parts ...string) string {
	return filepath.Join(append([]string{s.loc.CommonDir, "lossless"}, parts...)...)
}

// RelPath is the path recorded for the file at abs: relative to the work
// tree's top (slash-separated) when inside it, absolute otherwise.
func (s *Store) RelPath(abs string) string {
	abs = filepath.Clean(abs)
	wt := s.loc.WorkTree
	if wt == "" {
		return abs
	}
	try := func(p string) (string, bool) {
		rel, err := filepath.Rel(wt, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", false
		}
		return filepath.ToSlash(rel), true
	}
	if r, ok := try(abs); ok {
		return r
	}
	// The work tree is recorded with symlinks resolved; resolve the file's
	// directory too (e.g. /tmp -> /private/tmp).
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		if r, ok := try(filepath.Join(d, filepath.Base(abs))); ok {
			return r
		}
	}
	return abs
}

// Now returns the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// StateDir returns (creating it, 0700) a directory for an adapter's own
// derived state, such as transcript cursors: <common dir>/lossless/<name>.
// Such state must be rebuildable; the archive is the refs and objects.
func (s *Store) StateDir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || name == "index" {
		return "", fmt.Errorf("invalid state dir name %q", name)
	}
	d := s.stateDir(name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("create state dir: %w", err)
	}
	return d, nil
}
