// Package gitstore is git-lossless's one store: every writer (hooks, sweep,
// proxy, MCP, CLI) archives through it, and nothing else writes refs or
// objects.
//
// It owns the event log — append, import, dedupe, query, the index, the
// deny list, redaction, encryption, prune, notes as receipts' storage,
// discovery of the archive and the push gate — and builds it on the git
// object layer, internal/gitobj (objects, packs, refs and their locks, the
// commit and tree codec), which is the only package that talks to git's
// files. It may import gitobj, internal/jsonscan, seal, secrets and the
// standard library, with age (and x/crypto's ssh keys through agessh) for
// encryption and doublestar for the deny list.
//
// The Store type is the log itself; the object database and the refs
// beyond the writers' chains (Store.Objects), remotes (Store.Transport)
// and encryption (Store.Crypt) are views of the same open archive with
// method sets of their own (rooms.go), so a caller names the concern it
// uses. Every method that touches the disk or a remote takes a
// context.Context. Event ops are the typed constants of op.go.
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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
}

// Options has no way to open a store without its witness and the heads
// anchored before (witness.go): the zero value is the safe store, and
// there is no other.

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

	// readOnly: a fetch quarantine's view (Quarantine.Store), whose
	// every write is refused with ErrReadOnly.
	readOnly bool

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
	if len(w) > 128 || ValidWriter(w) != nil || labelHoldsSecret(label, w) { // writername.go
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
	if s.readOnly {
		return AppendResult{}, fmt.Errorf("append: %w", ErrReadOnly)
	}
	if err := ValidWriter(writer); err != nil {
		return AppendResult{}, err
	}
	if err := checkWriterName(writer); err != nil { // writername.go
		return AppendResult{}, err
	}
	if len(recs) == 0 {
		return AppendResult{}, nil
	}
	if err := s.CheckWritable(ctx, writer); err != nil {
		return AppendResult{}, err
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()

	// 1. Blobs: denied paths never reach an object.
	var pending []string
	sink := gitobj.LooseSink{DB: s.odb, Pending: &pending}
	events, err := s.prepareRecords(ctx, recs, sink)
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
		res = AppendResult{} // a lost race's attempt is not this one's
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
	s.markOwn(writer)
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
func (s *Store) prepareRecords(ctx context.Context, recs []Record, sink gitobj.Sink) ([]Event, error) {
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
			if !d && filepath.IsAbs(p) {
				// Anything in a git directory (.git/config holds remote
				// URLs with passwords) is denied on every route, not only
				// the MCP server's read_file (gitpath.go).
				_, d = s.GitInternal(ctx, p)
			}
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
			content, err := s.storedContent(ctx, r, &e, content)
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
func (s *Store) Locks(ctx context.Context) ([]LockInfo, error) { return s.refs.Locks(RefPrefix) }

// CleanStaleLocks removes the stale ones and returns what it removed.
func (s *Store) CleanStaleLocks(ctx context.Context) ([]LockInfo, error) {
	ls, err := s.Locks(ctx)
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
func (o Objects) Blob(ctx context.Context, id string) ([]byte, error) {
	s := o.s
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

// Verify checks one writer's chain (see package seal), and compares it
// with every head of it this clone saw before (SeenHeads: the witness and
// the anchored heads).
func (s *Store) Verify(ctx context.Context, writer string, opt seal.Options) (*seal.Report, error) {
	return seal.Verify(ctx, sealSource{s: s}, writer, opt)
}

// VerifyAt checks writer's chain as it stands at commit — a head fetched
// from a remote, before the writer's ref is moved to it — against the
// heads seen before (SeenHeads), as Verify does for the ref.
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
	return src.s.SeenHeads(ctx, writer)
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
func (s *Store) StateDir(ctx context.Context, name string) (string, error) {
	if s.readOnly {
		return "", fmt.Errorf("state dir %s: %w", name, ErrReadOnly)
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || name == "index" || name == "quarantine" {
		return "", fmt.Errorf("invalid state dir name %q", name)
	}
	d := s.stateDir(name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("create state dir: %w", err)
	}
	return d, nil
}
