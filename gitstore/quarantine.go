package gitstore

// The fetch quarantine: what a remote serves is fetched into a temporary
// repository beside the archive, bounded, looked at, and only then moved
// in (Accept) or thrown away (Discard). A remote is someone else's data:
// a hostile run served 5,000 junk checkpoint refs, 3,000 junk writer refs
// and a 60 MB checkpoint blob, and `git fetch` straight into the archive
// (what Fetch does) cost 14 s and 400-500 MB and left 112 MB of junk
// objects in it. Through FetchQuarantine the same remote is refused
// before anything is fetched, or fetched into the quarantine and deleted
// with it, and the archive's object directory does not grow.
//
// # Design
//
//  1. Refs first. `git ls-remote` (the user's git, as every remote
//     operation here) lists the refs the refspecs' sources match; more
//     than FetchLimits.MaxRefs refuses the fetch with a *LimitError before
//     a single object is asked for (the listing is read as a stream and
//     git is stopped at the first ref past the cap). When every listed id
//     is already the value of a ref of the archive, nothing is fetched at
//     all: the quarantine holds no repository, and Accept only moves
//     tracking refs. An up-to-date remote costs one ls-remote, less than
//     the fetch it replaces.
//
//  2. The quarantine is a bare repository at
//     <common>/lossless/quarantine/q-<16 hex> (0700). Its
//     objects/info/alternates names the archive's objects directory, so
//     git fetches only what the archive lacks, and its config includes the
//     archive's own config file, so a remote name, insteadOf, http.*,
//     core.sshCommand and credential helpers configured for the archive
//     apply as they did (the user's global config applies anyway: same
//     HOME). Its packed-refs file starts as a copy of the archive's
//     tracking refs under the refspecs' destinations, so git updates only
//     the refs that moved, prunes the ones the remote lost (--prune) and
//     negotiates from what the archive has. The fetch runs with --no-tags
//     --no-write-fetch-head --no-recurse-submodules --no-auto-maintenance
//     --no-show-forced-updates and an empty --refmap (no opportunistic
//     remote-tracking updates), and with core.bigFileThreshold at
//     MaxObject, so that index-pack streams an oversized blob instead of
//     holding it in memory.
//
//  3. MaxBytes is enforced while git runs: git 2.39 has no fetch-side
//     input cap (receive.maxInputSize is the server's), so a watchdog sums
//     the sizes of the files under the quarantine's objects/ and refs/
//     every 10 ms (every ten times its own walk time when that is longer) and
//     kills git's whole process group past the cap (and past MaxRefs ref
//     files: a remote that listed few refs and then serves many). The
//     quarantine can thus exceed the cap by what git writes in one
//     interval: measured about 0.5 MB at local-disk speed (a 60 MB blob
//     from a path remote, cap 16 MiB: killed at 16.9-17.3 MB). RLIMIT_FSIZE
//     was the other candidate (it did stop index-pack at exactly the cap),
//     but Go cannot set it on a child without a shell wrapper (whose
//     `ulimit -f` unit differs between shells) or a racy prlimit, and it
//     bounds one file, not the total, so the watchdog it is.
//
//  4. Before anything is accepted, the fetched refs are counted again
//     (MaxRefs) and every object of the quarantine's own directory that
//     the archive lacks is sized from its header alone (gitobj.DB.Info,
//     never the body): one larger than MaxObject refuses the fetch.
//
//  5. Quarantine.Store is a read-only view: objects of the quarantine
//     and then of the archive (the alternates), refs of the archive with
//     the tracking refs under the refspecs' destinations as the fetch left
//     them — what the archive's refs would be after accepting everything,
//     as Fetch with prune would have left them. Every write through it is
//     refused with ErrReadOnly.
//
//  6. Accept moves exactly the objects reachable from the accepted ids
//     that the archive lacks (a walk stopping at objects the archive has):
//     when those are every object the quarantine holds (the usual case),
//     its packs and loose objects are renamed into the archive (the same
//     file system: O(1) per file); otherwise the reachable ones are
//     written as a new pack and the rest stays behind to be deleted. Then
//     each tracking ref is moved by compare-and-swap through the ref lock,
//     from the value it had when the fetch began. Measured against the
//     alternative of a second `git fetch` from the quarantine into the
//     archive, see BenchmarkQuarantine.
//
//  7. Discard deletes the quarantine; call it in a defer. A quarantine
//     left by a killed process is removed by the next FetchQuarantine of
//     any process once it is older than StaleQuarantineAge and nobody
//     holds its lock: each quarantine holds an flock on its lossless.lock
//     for as long as its process uses it (the kernel drops it when the
//     process dies), and the age covers the microseconds between creating
//     the directory and taking the lock.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// Default caps of a fetch (FetchLimits' zero values, unless git config
// says otherwise: lossless.fetchMaxRefs, lossless.fetchMaxNewRefs,
// lossless.fetchMaxBytes and lossless.fetchMaxObject, the byte counts with
// git's k, m and g suffixes). The reasons, and the measurements behind
// them, are in FORMAT.md section 21.
const (
	// DefaultFetchMaxRefs bounds the refs a remote may list under one
	// fetch's patterns. A real fleet has tens of thousands of writer refs
	// (one per agent session) and, in tags mode, one anchor tag per
	// checkpoint; a ref the archive already holds at the listed value
	// costs an ls-remote line and a packed-refs line, so this cap is
	// generous and bounds only the listing.
	DefaultFetchMaxRefs = 100_000
	// DefaultFetchMaxNewRefs bounds the refs of the listing that are new
	// or moved: what a fetch costs is per such ref (git writes each as a
	// file in the quarantine, Accept moves each). A first sync of a fleet
	// larger than this needs the cap raised (git config
	// lossless.fetchMaxNewRefs).
	DefaultFetchMaxNewRefs = 2_000
	// DefaultFetchMaxBytes bounds what one fetch may download (its pack).
	DefaultFetchMaxBytes = 64 << 20
	// DefaultFetchMaxObject bounds one object's size. Archived file
	// versions are whatever an agent read, so it must admit large source
	// files and logs; a checkpoint is a few KB.
	DefaultFetchMaxObject = 32 << 20
)

// StaleQuarantineAge is how old an unlocked quarantine directory must be
// before FetchQuarantine removes it as left by a killed process.
const StaleQuarantineAge = 5 * time.Minute

// FetchLimits bounds what one fetch may bring. A zero field takes the
// value git config gives it (see the defaults above), else its default; a
// negative one is no limit.
type FetchLimits struct {
	// MaxRefs: refs the remote may list under the fetched patterns,
	// counted with ls-remote before fetching (over it nothing is fetched)
	// and again after.
	MaxRefs int
	// MaxNewRefs: refs of that listing whose destination the archive does
	// not hold at the listed value (new or moved), counted before
	// fetching and again after.
	MaxNewRefs int
	// MaxBytes: bytes the fetch may write into the quarantine's objects (a
	// watchdog kills git's process group past it).
	MaxBytes int64
	// MaxObject: the largest single object accepted (checked after the
	// fetch, before anything is accepted, from object headers).
	MaxObject int64
}

// fetchLimits fills lim's zero fields from git config, then defaults.
func (s *Store) fetchLimits(lim FetchLimits) (FetchLimits, error) {
	get := func(key string, def int64, bytes bool) (int64, error) {
		v := strings.TrimSpace(s.cfg.Get(key))
		if v == "" {
			return def, nil
		}
		mult := int64(1)
		if bytes && len(v) > 1 {
			switch strings.ToLower(v[len(v)-1:]) {
			case "k":
				mult, v = 1<<10, v[:len(v)-1]
			case "m":
				mult, v = 1<<20, v[:len(v)-1]
			case "g":
				mult, v = 1<<30, v[:len(v)-1]
			}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > (1<<62)/mult {
			return 0, fmt.Errorf("git config %s: %q is not a number", key, s.cfg.Get(key))
		}
		return n * mult, nil
	}
	var err error
	var n int64
	if lim.MaxRefs == 0 {
		if n, err = get("lossless.fetchMaxRefs", DefaultFetchMaxRefs, false); err != nil {
			return lim, err
		}
		lim.MaxRefs = int(n)
	}
	if lim.MaxNewRefs == 0 {
		if n, err = get("lossless.fetchMaxNewRefs", DefaultFetchMaxNewRefs, false); err != nil {
			return lim, err
		}
		lim.MaxNewRefs = int(n)
	}
	if lim.MaxBytes == 0 {
		if lim.MaxBytes, err = get("lossless.fetchMaxBytes", DefaultFetchMaxBytes, true); err != nil {
			return lim, err
		}
	}
	if lim.MaxObject == 0 {
		if lim.MaxObject, err = get("lossless.fetchMaxObject", DefaultFetchMaxObject, true); err != nil {
			return lim, err
		}
	}
	return lim, nil
}

// ErrRemoteChanged: a remote moved a ref to another history between
// listing its refs and the fetch; nothing was kept, and a new fetch will
// see the new state.
var ErrRemoteChanged = errors.New("the remote changed during the fetch")

// ErrOverLimit is what a *LimitError matches (errors.Is).
var ErrOverLimit = errors.New("over the fetch limit")

// LimitError says which limit of a fetch was passed, the limit and what
// was seen. Nothing of the refused fetch is left in the archive.
type LimitError struct {
	Remote string
	Limit  string // "refs", "new-refs", "bytes" or "object"
	Max    int64
	// Seen is what was seen when the fetch stopped: for "refs" the count
	// so far (the listing stops at the first ref past the cap), for
	// "new-refs" the count, for "bytes" the bytes written when git was
	// stopped, for "object" the object's size.
	Seen int64
	// For "object": the object, and the fetched tracking refs whose
	// history holds it (sorted).
	Object string
	Refs   []string
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "refs":
		return fmt.Sprintf("remote %s lists more than %d refs under the fetched patterns (counting stopped at %d): refused, nothing fetched", QuotePath(e.Remote), e.Max, e.Seen)
	case "new-refs":
		return fmt.Sprintf("remote %s lists %d new or moved refs, over the limit of %d (git config lossless.fetchMaxNewRefs raises it): refused, nothing fetched", QuotePath(e.Remote), e.Seen, e.Max)
	case "bytes":
		return fmt.Sprintf("fetch from %s passed %d bytes (%d written when stopped; git config lossless.fetchMaxBytes raises the limit): refused, nothing kept", QuotePath(e.Remote), e.Max, e.Seen)
	case "object":
		where := ""
		if len(e.Refs) > 0 {
			where = " (in " + strings.Join(e.Refs, ", ") + ")"
		}
		return fmt.Sprintf("remote %s serves object %s of %d bytes%s, over the limit of %d (git config lossless.fetchMaxObject raises it): refused, nothing kept", QuotePath(e.Remote), e.Object, e.Seen, where, e.Max)
	}
	return fmt.Sprintf("fetch from %s: over the %s limit %d (seen %d)", QuotePath(e.Remote), e.Limit, e.Max, e.Seen)
}

// Unwrap makes errors.Is(err, ErrOverLimit) true.
func (e *LimitError) Unwrap() error { return ErrOverLimit }

// fetchSpec is one parsed refspec "[+]SRC:DST": SRC under refs/, DST under
// TrackingPrefix, each with at most one '*' (both or neither).
type fetchSpec struct {
	raw                            string
	srcPre, srcSuf, dstPre, dstSuf string
	glob                           bool
}

func parseFetchSpecs(specs []string) ([]fetchSpec, error) {
	if len(specs) == 0 {
		return nil, errors.New("fetch: no refspec")
	}
	out := make([]fetchSpec, 0, len(specs))
	for _, rs := range specs {
		src, dst, ok := strings.Cut(strings.TrimPrefix(rs, "+"), ":")
		if !ok || !strings.HasPrefix(dst, TrackingPrefix) || len(dst) == len(TrackingPrefix) || !strings.HasPrefix(src, "refs/") {
			return nil, fmt.Errorf("fetch: refspec %q must fetch refs/... into %s", rs, TrackingPrefix)
		}
		ns, nd := strings.Count(src, "*"), strings.Count(dst, "*")
		if ns > 1 || ns != nd {
			return nil, fmt.Errorf("fetch: refspec %q: one '*' on both sides or none", rs)
		}
		for _, side := range []string{src, dst} {
			if err := validRefName(strings.Replace(side, "*", "x", 1)); err != nil {
				return nil, fmt.Errorf("fetch: refspec %q: %w", rs, err)
			}
		}
		fs := fetchSpec{raw: rs, glob: ns == 1}
		fs.srcPre, fs.srcSuf, _ = strings.Cut(src, "*")
		fs.dstPre, fs.dstSuf, _ = strings.Cut(dst, "*")
		out = append(out, fs)
	}
	return out, nil
}

// dst maps a remote ref name to its tracking ref ("" when it does not
// match the source).
func (f fetchSpec) dst(ref string) string {
	if !f.glob {
		if ref == f.srcPre {
			return f.dstPre
		}
		return ""
	}
	if len(ref) < len(f.srcPre)+len(f.srcSuf)+1 || !strings.HasPrefix(ref, f.srcPre) || !strings.HasSuffix(ref, f.srcSuf) {
		return ""
	}
	return f.dstPre + ref[len(f.srcPre):len(ref)-len(f.srcSuf)] + f.dstSuf
}

// covers reports whether a tracking ref name is one of the destinations.
func (f fetchSpec) covers(name string) bool {
	if !f.glob {
		return name == f.dstPre
	}
	return len(name) > len(f.dstPre)+len(f.dstSuf) && strings.HasPrefix(name, f.dstPre) && strings.HasSuffix(name, f.dstSuf)
}

// dstPrefix is the ref directory the destinations are listed from.
func (f fetchSpec) dstPrefix() string {
	return f.dstPre[:strings.LastIndexByte(f.dstPre, '/')+1]
}

// tracking returns the archive's refs under the fetched destinations, in
// one listing of the directory they share.
func (q *Quarantine) tracking() (map[string]string, error) {
	prefix := q.specs[0].dstPrefix()
	for _, f := range q.specs[1:] {
		p := f.dstPrefix()
		for !strings.HasPrefix(p, prefix) {
			prefix = prefix[:strings.LastIndexByte(prefix[:len(prefix)-1], '/')+1]
		}
	}
	have, err := q.s.refs.List(prefix)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range have {
		if coversAny(q.specs, k) {
			out[k] = v
		}
	}
	return out, nil
}

func coversAny(specs []fetchSpec, name string) bool {
	for _, f := range specs {
		if f.covers(name) {
			return true
		}
	}
	return false
}

// Quarantine is one fetch held apart from the archive; see the design
// above. Its methods are safe for concurrent use.
type Quarantine struct {
	s      *Store
	remote Remote
	specs  []fetchSpec
	lim    FetchLimits

	dir    string     // the quarantine repository; "" when nothing was fetched
	db     *gitobj.DB // its objects, then the archive's (read-only)
	unlock func()     // releases the quarantine's flock

	before map[string]string // the archive's tracking refs under the destinations when the fetch began
	refs   map[string]string // what the remote listed, mapped to the destinations
	want   []string          // "SRC:DST" of the listed refs whose ids the archive lacks
	loose  bool              // the quarantine holds loose objects (fetch.unpackLimit=1 should rule them out)

	mu       sync.Mutex
	view     *Store
	disposed bool
}

// Refs returns what was fetched: tracking-ref name (the refspec's
// destination) -> id, every ref the remote has under the fetched
// patterns, moved or not.
func (q *Quarantine) Refs() map[string]string {
	out := make(map[string]string, len(q.refs))
	for k, v := range q.refs {
		out[k] = v
	}
	return out
}

// Before returns the archive's tracking refs under the fetched
// destinations as they were when the fetch began: the values Accept and
// DeleteTrackingRef compare against.
func (q *Quarantine) Before() map[string]string {
	out := make(map[string]string, len(q.before))
	for k, v := range q.before {
		out[k] = v
	}
	return out
}

// Gone returns the tracking refs the archive had under the destinations
// that the remote no longer has (what `git fetch --prune` would delete),
// each with its value when the fetch began.
func (q *Quarantine) Gone() map[string]string {
	out := map[string]string{}
	for k, v := range q.before {
		if _, ok := q.refs[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// Fetched reports whether objects were fetched (false: every ref the
// remote lists was in the archive already, and no git fetch ran).
func (q *Quarantine) Fetched() bool { return q.dir != "" }

// Dir is the quarantine repository ("" when nothing was fetched).
func (q *Quarantine) Dir() string { return q.dir }

// Store returns a read-only view: objects of the quarantine and then of
// the archive, refs of the archive with the tracking refs under the
// fetched destinations as the fetch left them. Every write is refused
// with ErrReadOnly. It must not be used after Discard.
func (q *Quarantine) Store() *Store {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.view == nil {
		specs := q.specs
		q.view = &Store{
			loc:      q.s.loc,
			cfg:      q.s.cfg,
			odb:      q.db,
			refs:     q.s.refs.View(func(n string) bool { return coversAny(specs, n) }, q.Refs()),
			deny:     q.s.deny,
			warn:     q.s.warn,
			now:      q.s.now,
			lockT:    q.s.lockT,
			readOnly: true,
		}
	}
	return q.view
}

// FetchQuarantine fetches refspecs (each "[+]SRC:DST", SRC under refs/,
// DST under TrackingPrefix, one '*' on both sides or none) from r into a
// new quarantine within lim (see the design above). Past a limit it
// returns a *LimitError and leaves nothing behind. The caller looks at
// the fetch through Refs and Store, then calls Accept with what it takes,
// and Discard in every case.
func (s *Store) FetchQuarantine(ctx context.Context, r Remote, refspecs []string, lim FetchLimits) (*Quarantine, error) {
	if s.readOnly {
		return nil, fmt.Errorf("fetch: %w", ErrReadOnly)
	}
	if err := ValidRemote(r.URL); err != nil {
		return nil, err
	}
	specs, err := parseFetchSpecs(refspecs)
	if err != nil {
		return nil, err
	}
	lim, err = s.fetchLimits(lim)
	if err != nil {
		return nil, err
	}
	s.cleanStaleQuarantines()

	q := &Quarantine{s: s, remote: r, specs: specs, lim: lim}
	if q.before, err = q.tracking(); err != nil {
		return nil, err
	}

	// 1. Count what the remote lists, before fetching anything.
	listed, srcs, err := s.lsRemoteBounded(ctx, r, specs, lim.MaxRefs)
	if err != nil {
		return nil, err
	}
	changed := 0
	for dst, id := range listed {
		if q.before[dst] != id {
			changed++
		}
	}
	if lim.MaxNewRefs >= 0 && changed > lim.MaxNewRefs {
		return nil, &LimitError{Remote: r.URL, Limit: "new-refs", Max: int64(lim.MaxNewRefs), Seen: int64(changed)}
	}
	// 2. Nothing to fetch when the archive's refs hold every id already.
	if have, err := s.refs.List("refs/"); err != nil {
		return nil, err
	} else {
		values := make(map[string]bool, len(have))
		for _, v := range have {
			values[v] = true
		}
		for _, dst := range sortedKeys(listed) {
			if !values[listed[dst]] {
				q.want = append(q.want, srcs[dst]+":"+dst)
			}
		}
		if len(q.want) == 0 {
			q.refs = listed
			q.db = gitobj.NewReadOnlyDB(s.loc.CommonDir)
			return q, nil
		}
	}
	// 3. Fetch into a quarantine.
	q.refs = listed
	if err := q.create(); err != nil {
		q.Discard()
		return nil, err
	}
	if err := q.fetch(ctx); err != nil {
		q.Discard()
		return nil, err
	}
	if err := q.check(); err != nil {
		q.Discard()
		return nil, err
	}
	return q, nil
}

// lsRemoteBounded lists the remote refs the specs' sources match, mapped
// to their destinations, reading git's output as a stream and stopping it
// at the first ref past max.
func (s *Store) lsRemoteBounded(ctx context.Context, r Remote, specs []fetchSpec, max int) (listed, srcs map[string]string, err error) {
	args := []string{"ls-remote", "--", r.URL}
	for _, f := range specs {
		args = append(args, f.srcPre+map[bool]string{true: "*", false: ""}[f.glob]+f.srcSuf)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := s.git(cctx, r, args...)
	var errb strings.Builder
	cmd.Stderr = &limitedWriter{w: &errb, n: 64 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("git ls-remote: %w", err)
	}
	listed, srcs = map[string]string{}, map[string]string{}
	var over *LimitError
	var perr error
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 0; sc.Scan(); {
		line := sc.Text()
		id, ref, ok := strings.Cut(line, "\t")
		if !ok || !gitobj.IsID(id) {
			perr = fmt.Errorf("git ls-remote %s: unexpected line %s", QuotePath(r.URL), QuotePath(line))
			break
		}
		if strings.HasSuffix(ref, "^{}") {
			continue
		}
		dst := ""
		for _, f := range specs {
			if dst = f.dst(ref); dst != "" {
				break
			}
		}
		if dst == "" {
			continue // ls-remote patterns match any tail of a name
		}
		n++
		if max >= 0 && n > max {
			over = &LimitError{Remote: r.URL, Limit: "refs", Max: int64(max), Seen: int64(n)}
			break
		}
		if prev, dup := listed[dst]; dup && prev != id {
			perr = fmt.Errorf("git ls-remote %s: two refs map to %s", QuotePath(r.URL), dst)
			break
		}
		listed[dst], srcs[dst] = id, ref
	}
	if over != nil || perr != nil {
		cancel() // kills git's process group
	}
	io.Copy(io.Discard, out)
	werr := cmd.Wait()
	switch {
	case over != nil:
		return nil, nil, over
	case perr != nil:
		return nil, nil, perr
	case werr != nil:
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("git ls-remote %s: %s", QuotePath(r.URL), gitMessage([]byte(errb.String()), werr))
	case sc.Err() != nil:
		return nil, nil, fmt.Errorf("git ls-remote %s: %w", QuotePath(r.URL), sc.Err())
	}
	return listed, srcs, nil
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// quarantineRoot is where quarantines live.
func (s *Store) quarantineRoot() string { return s.stateDir("quarantine") }

// create makes the quarantine repository and takes its lock.
func (q *Quarantine) create() error {
	root := q.s.quarantineRoot()
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("create quarantine: %w", err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	dir := filepath.Join(root, "q-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create quarantine: %w", err)
	}
	q.dir = dir
	unlock, ok := gitobj.TryLockFile(filepath.Join(dir, "lossless.lock"))
	if !ok {
		return fmt.Errorf("create quarantine: cannot lock %s", dir)
	}
	q.unlock = unlock
	for _, d := range []string{"objects/info", "objects/pack", "refs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return fmt.Errorf("create quarantine: %w", err)
		}
	}
	archiveObjects, err := filepath.Abs(filepath.Join(q.s.loc.CommonDir, "objects"))
	if err != nil {
		return err
	}
	archiveConfig, err := filepath.Abs(filepath.Join(q.s.loc.CommonDir, "config"))
	if err != nil {
		return err
	}
	if strings.HasPrefix(archiveObjects, `"`) || strings.ContainsAny(archiveObjects, "\n\r") {
		// A path git would read as quoted or as two lines: quote it.
		archiveObjects = cQuote(archiveObjects)
	}
	config := "[include]\n\tpath = " + configQuote(archiveConfig) + "\n" +
		"[core]\n\tbare = true\n\tlogAllRefUpdates = false\n" +
		"[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n" +
		"[fetch]\n\twriteCommitGraph = false\n"
	files := map[string]string{
		"HEAD":                    "ref: refs/heads/main\n",
		"config":                  config,
		"objects/info/alternates": archiveObjects + "\n",
	}
	for name, body := range files {
		if err := gitobj.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return fmt.Errorf("create quarantine: %w", err)
		}
	}
	q.db = gitobj.NewReadOnlyDB(dir)
	return nil
}

// cQuote quotes a path as git's unquote_c_style reads it.
func cQuote(p string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// configQuote quotes a value for a git config file.
func configQuote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}

// explicitRefs is how many refs a fetch names one by one at most.
const explicitRefs = 256

// fetch runs `git fetch` into the quarantine under the watchdog.
func (q *Quarantine) fetch(ctx context.Context) error {
	// Everything into one pack (index-pack), never loose objects
	// (unpack-objects): the watchdog watches one growing file, and Accept
	// renames one pack rather than a file per object.
	args := []string{"-c", "fetch.unpackLimit=1"}
	if q.lim.MaxObject > 0 && q.lim.MaxObject < 512<<20 {
		// index-pack streams blobs past the threshold instead of holding
		// them whole: an oversized blob costs no memory before it is
		// refused.
		args = append(args, "-c", "core.bigFileThreshold="+strconv.FormatInt(q.lim.MaxObject, 10))
	}
	// --no-show-forced-updates skips a history walk per moved ref (and
	// its advice would fill stderr).
	args = append(args, "-c", "advice.fetchShowForcedUpdates=false")
	args = append(args, "fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
		"--no-auto-maintenance", "--no-show-forced-updates", "--refmap=", "--dry-run", "--quiet", "--", q.remote.URL)
	if len(q.want) <= explicitRefs {
		// Just the refs to fetch, by name: git then asks the remote to
		// advertise only those (protocol v2 ref-prefix), where a pattern
		// has it send every ref again, as many as ls-remote just listed.
		for _, w := range q.want {
			args = append(args, "+"+w)
		}
	} else {
		// git matches each named refspec against every advertised ref:
		// past a few hundred, the patterns are cheaper.
		for _, f := range q.specs {
			args = append(args, f.raw)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := q.s.gitAt(cctx, q.remote, q.dir, args...)
	// git dies with this process (kill -9 included): its watchdog is here.
	// The thread that starts it must live until it is waited for.
	gitobj.DieWithParent(cmd)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var errb strings.Builder
	cmd.Stderr = &limitedWriter{w: &errb, n: 64 << 10}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git fetch: %w", err)
	}
	done := make(chan struct{})
	var over *LimitError
	go func() {
		defer close(done)
		interval := 10 * time.Millisecond
		t := time.NewTimer(interval)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
			start := time.Now()
			if e := q.overLimit(); e != nil {
				over = e
				cancel() // cmd.Cancel kills git's process group
				return
			}
			// At most a tenth of a CPU, however many files git writes.
			interval = max(10*time.Millisecond, 10*time.Since(start))
			t.Reset(interval)
		}
	}()
	werr := cmd.Wait()
	cancel()
	<-done
	if over != nil {
		return over
	}
	if werr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := gitMessage([]byte(errb.String()), werr)
		if strings.Contains(errb.String(), "couldn't find remote ref") {
			// A listed ref deleted there since.
			return fmt.Errorf("git fetch %s: %s: %w", QuotePath(q.remote.URL), msg, ErrRemoteChanged)
		}
		return fmt.Errorf("git fetch %s: %s", QuotePath(q.remote.URL), msg)
	}
	if e := q.overLimit(); e != nil { // what git wrote after the last look
		return e
	}
	return nil
}

// usage sums the sizes of the files under the quarantine's objects/: what
// a fetch downloads. With fetch.unpackLimit=1 that is one growing
// tmp_pack_ file in objects/pack (then the pack and its index), so a look
// costs two directory reads and a stat per file there; loose objects, which
// that setting should rule out, are counted all the same.
func (q *Quarantine) usage() int64 {
	var n int64
	objs := filepath.Join(q.dir, "objects")
	top, _ := os.ReadDir(objs)
	for _, d := range top {
		if !d.IsDir() || d.Name() == "info" {
			continue
		}
		ents, _ := os.ReadDir(filepath.Join(objs, d.Name()))
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
				n += fi.Size()
			}
		}
	}
	return n
}

// overLimit checks the quarantine's size against MaxBytes.
func (q *Quarantine) overLimit() *LimitError {
	if n := q.usage(); q.lim.MaxBytes >= 0 && n > q.lim.MaxBytes {
		return &LimitError{Remote: q.remote.URL, Limit: "bytes", Max: q.lim.MaxBytes, Seen: n}
	}
	return nil
}

// check reads what the fetch left and holds it to the caps: the refs
// under the destinations, and the size of every object the archive lacks.
func (q *Quarantine) check() error {
	// Every listed id must have come (or be in the archive): a remote
	// that moved a ref to another history between the listing and the
	// fetch served something else.
	for _, name := range sortedKeys(q.refs) {
		if q.refs[name] != q.before[name] && !q.db.Has(q.refs[name]) {
			return fmt.Errorf("fetch from %s: %s was listed at %s, which the fetch did not bring: %w", QuotePath(q.remote.URL), name, gitobj.Short(q.refs[name]), ErrRemoteChanged)
		}
	}
	// Sized from headers (in memory, for a pack); only an object over the
	// limit is looked up in the archive, which may hold it already.
	seen := map[string]bool{}
	return q.db.ForEachOwn(func(id string) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		if !q.db.InPacks(id) {
			q.loose = true
		}
		if q.lim.MaxObject < 0 {
			return nil
		}
		_, n, err := q.db.Info(id)
		if err != nil {
			return fmt.Errorf("quarantine: %w", err)
		}
		if n > q.lim.MaxObject && !q.s.odb.Has(id) {
			return &LimitError{Remote: q.remote.URL, Limit: "object", Max: q.lim.MaxObject, Seen: n, Object: id, Refs: q.reaching(id)}
		}
		return nil
	})
}

// holds reports whether the quarantine's own directory holds id: its
// pack, looked up in memory, and loose objects only if it has any.
func (q *Quarantine) holds(id string) bool {
	if q.db.InPacks(id) {
		return true
	}
	return q.loose && q.db.HasOwn(id)
}

// reaching returns the fetched refs whose history holds id (walking only
// objects the archive lacks), sorted: which refs an alarm is about.
func (q *Quarantine) reaching(id string) []string {
	var out []string
	for _, name := range sortedKeys(q.refs) {
		seen := map[string]bool{}
		stack := []string{q.refs[name]}
		for len(stack) > 0 {
			cur := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if cur == id {
				out = append(out, name)
				break
			}
			if seen[cur] || !q.holds(cur) {
				continue
			}
			seen[cur] = true
			typ, _, err := q.db.Info(cur)
			if err != nil || typ == "blob" {
				continue
			}
			_, body, err := q.db.Read(cur)
			if err != nil {
				continue
			}
			switch typ {
			case "commit":
				if c, err := gitobj.ParseCommit(body); err == nil {
					stack = append(append(stack, c.Tree), c.Parents...)
				}
			case "tree":
				if ents, err := gitobj.ParseTree(body); err == nil {
					for _, e := range ents {
						if e.Mode != "160000" {
							stack = append(stack, e.ID)
						}
					}
				}
			case "tag":
				if t, err := gitobj.ParseTag(body); err == nil {
					stack = append(stack, t.Object)
				}
			}
		}
	}
	return out
}

// Accept moves into the archive exactly the objects reachable from the
// ids of refs that it lacks, then moves each of these tracking refs (which
// must be under the fetched destinations) to its id by compare-and-swap
// from its value when the fetch began (Before): ErrRefChanged when another
// process moved it since. A ref already at its id is left alone. The ids
// need not be the fetched ones (an older checkpoint of a fetched chain
// will do), but every object they reach must be in the quarantine or the
// archive. Errors of single refs are joined; the others are still set.
func (q *Quarantine) Accept(ctx context.Context, refs map[string]string) error {
	return q.accept(ctx, refs, nil)
}

// AcceptAll accepts every fetched ref and deletes the tracking refs the
// remote no longer has (Gone): the archive ends as `git fetch --prune`
// would have left it (Fetch), only bounded.
func (q *Quarantine) AcceptAll(ctx context.Context) error {
	return q.accept(ctx, q.refs, q.Gone())
}

// accept sets refs and deletes gone (name -> expected value).
func (q *Quarantine) accept(ctx context.Context, refs, gone map[string]string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.disposed {
		return errors.New("accept: the quarantine was discarded")
	}
	names := make([]string, 0, len(refs))
	for name, id := range refs {
		if !coversAny(q.specs, name) {
			return fmt.Errorf("accept: %s is not under the fetched destinations", name)
		}
		if !gitobj.IsID(id) {
			return fmt.Errorf("accept %s: %q is not an object id", name, id)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	cur, err := q.tracking()
	if err != nil {
		return err
	}
	// Only refs that move need objects (the others' are the archive's).
	var moving []string
	for _, n := range names {
		if cur[n] != refs[n] {
			moving = append(moving, n)
		}
	}
	if q.dir != "" {
		ids := make([]string, 0, len(moving))
		for _, n := range moving {
			ids = append(ids, refs[n])
		}
		moved, err := q.moveObjects(ctx, ids)
		if err != nil {
			return err
		}
		if moved {
			defer q.s.autoMaintenance(ctx, q.remote)
		}
	} else {
		for _, n := range moving {
			if !q.s.odb.Has(refs[n]) {
				return fmt.Errorf("accept %s: %s is not in the archive: %w", n, gitobj.Short(refs[n]), ErrObjectMissing)
			}
		}
	}
	var ups []gitobj.RefUpdate
	for _, n := range moving {
		ups = append(ups, gitobj.RefUpdate{Name: n, Old: q.before[n], New: refs[n]})
	}
	for n, old := range gone {
		if !coversAny(q.specs, n) || !gitobj.IsID(old) {
			return fmt.Errorf("accept: cannot delete %s (expected %q)", n, old)
		}
		if cur[n] != "" {
			ups = append(ups, gitobj.RefUpdate{Name: n, Old: old})
		}
	}
	return q.s.updateTrackingRefs(ctx, ups)
}

// packedUpdates is how many ref updates go into one packed-refs rewrite
// rather than a loose file each: a few refs are cheaper loose (git's way),
// thousands are cheaper as one file.
const packedUpdates = 64

// updateTrackingRefs applies compare-and-swap updates of tracking refs,
// joining the errors of single refs.
func (s *Store) updateTrackingRefs(ctx context.Context, ups []gitobj.RefUpdate) error {
	if len(ups) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	var errs []error
	if len(ups) > packedUpdates {
		res, err := s.refs.UpdatePacked(ctx, ups, s.peelTag)
		if err != nil {
			return err
		}
		errs = res
	} else {
		// One loose file each, fsynced concurrently (the disk commits
		// them together) rather than one after the other.
		errs = make([]error, len(ups))
		var wg sync.WaitGroup
		for i, u := range ups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lk, err := s.refs.Acquire(ctx, u.Name)
				if err == nil {
					if u.New == "" {
						err = lk.Delete(ctx, u.Old)
					} else {
						err = lk.Commit(u.Old, u.New)
					}
				}
				errs[i] = err
			}()
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

// peelTag returns what an annotated tag id finally points at, "" when id
// is not a tag.
func (s *Store) peelTag(id string) string {
	out := ""
	for i := 0; i < 16; i++ {
		typ, _, err := s.odb.Info(id)
		if err != nil || typ != "tag" {
			return out
		}
		t, err := s.ReadTag(id)
		if err != nil || !gitobj.IsID(t.Object) {
			return ""
		}
		id, out = t.Object, t.Object
	}
	return ""
}

// moveObjects moves the objects reachable from ids that the archive
// lacks: the quarantine's packs and loose objects as they are when that
// is all they hold, else a new pack of just those.
func (q *Quarantine) moveObjects(ctx context.Context, ids []string) (bool, error) {
	arch := q.s.odb
	type item struct {
		id   string
		blob bool // named by a tree as a blob: never read to walk it
	}
	newObjs := map[string]string{} // id -> type
	var order []string
	seen := map[string]bool{}
	stack := make([]item, 0, len(ids))
	for _, id := range ids {
		stack = append(stack, item{id: id})
	}
	for n := 0; len(stack) > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[it.id] {
			continue
		}
		seen[it.id] = true
		if !q.holds(it.id) {
			if arch.Has(it.id) {
				continue // in the archive, with its history (as git assumes of what it has)
			}
			return false, fmt.Errorf("accept: %s is neither fetched nor in the archive: %w", gitobj.Short(it.id), ErrObjectMissing)
		}
		if it.blob {
			newObjs[it.id] = "blob"
			order = append(order, it.id)
			continue
		}
		typ, body, err := q.db.Read(it.id)
		if err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		newObjs[it.id] = typ
		order = append(order, it.id)
		switch typ {
		case "commit":
			c, err := gitobj.ParseCommit(body)
			if err != nil {
				return false, fmt.Errorf("accept: commit %s: %w", gitobj.Short(it.id), err)
			}
			stack = append(stack, item{id: c.Tree})
			for _, p := range c.Parents {
				stack = append(stack, item{id: p})
			}
		case "tree":
			ents, err := gitobj.ParseTree(body)
			if err != nil {
				return false, fmt.Errorf("accept: tree %s: %w", gitobj.Short(it.id), err)
			}
			for _, e := range ents {
				switch {
				case e.Mode == "160000": // a submodule's commit: not ours to hold
				case e.IsTree():
					stack = append(stack, item{id: e.ID})
				default:
					stack = append(stack, item{id: e.ID, blob: true})
				}
			}
		case "tag":
			t, err := gitobj.ParseTag(body)
			if err != nil {
				return false, fmt.Errorf("accept: tag %s: %w", gitobj.Short(it.id), err)
			}
			stack = append(stack, item{id: t.Object})
		}
	}
	if len(newObjs) == 0 {
		return false, nil
	}
	// Everything the quarantine holds is wanted (or in the archive
	// already): move its files as they are.
	whole := true
	if err := q.db.ForEachOwn(func(id string) error {
		if _, ok := newObjs[id]; !ok && !arch.Has(id) {
			whole = false
			return errStopWalk
		}
		return nil
	}); err != nil && !errors.Is(err, errStopWalk) {
		return false, fmt.Errorf("accept: %w", err)
	}
	if whole {
		if err := q.db.MoveOwnTo(arch); err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		return true, nil
	}
	// Only part of it: a pack of exactly the reachable objects, cut every
	// 32 MiB of content so that memory stays bounded.
	sink := gitobj.NewPackSink(nil)
	defer sink.Close()
	held := 0
	for i, id := range order {
		typ, body, err := q.db.Read(id)
		if err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		if typ != newObjs[id] && newObjs[id] == "blob" {
			return false, fmt.Errorf("accept: %s is named as a blob but is a %s", gitobj.Short(id), typ)
		}
		if _, err := sink.Put(typ, body); err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		held += len(body)
		if held >= 32<<20 || i == len(order)-1 {
			if _, err := arch.WritePack(sink); err != nil {
				return false, fmt.Errorf("accept: %w", err)
			}
			sink.Reset()
			held = 0
		}
	}
	return true, nil
}

var errStopWalk = errors.New("stop")

// autoMaintenance runs `git maintenance run --auto` in the archive after
// a fetch brought objects, as `git fetch` into the archive did (with
// maintenance.auto false, not at all): the quarantine's own fetch runs
// without it, and an embedded archive sees no other git command that
// would pack its loose objects. git is started only when gc --auto's own
// thresholds are passed (gc.auto loose objects, estimated from objects/17
// as git does, or gc.autoPackLimit packs): the usual sync pays a directory
// read, not a process. A gc it starts detaches itself.
func (s *Store) autoMaintenance(ctx context.Context, r Remote) {
	cfgInt := func(key string, def int) int {
		if v := s.cfg.Get(key); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
		return def
	}
	if v := s.cfg.Get("maintenance.auto"); v != "" {
		if on, err := parseBool(v); err == nil && !on {
			return
		}
	}
	loose, packs := cfgInt("gc.auto", 6700), cfgInt("gc.autoPackLimit", 50)
	if loose <= 0 {
		return
	}
	objs := filepath.Join(s.loc.CommonDir, "objects")
	need := false
	if ents, err := os.ReadDir(filepath.Join(objs, "17")); err == nil {
		n := 0
		for _, e := range ents {
			if len(e.Name()) == 38 {
				n++
			}
		}
		need = n > (loose+255)/256
	}
	if !need && packs > 0 {
		if idx, err := filepath.Glob(filepath.Join(objs, "pack", "pack-*.idx")); err == nil {
			need = len(idx) > packs
		}
	}
	if !need {
		return
	}
	cmd := s.git(ctx, r, "maintenance", "run", "--auto", "--quiet")
	var errb strings.Builder
	cmd.Stderr = &limitedWriter{w: &errb, n: 4 << 10}
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		s.warn("git maintenance run --auto: " + gitMessage([]byte(errb.String()), err))
	}
}

// Discard deletes the quarantine: nothing of it stays in the archive
// (objects Accept moved are the archive's). Safe to call more than once,
// and after Accept.
func (q *Quarantine) Discard() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.disposed {
		return nil
	}
	q.disposed = true
	if q.dir == "" {
		return nil
	}
	err := os.RemoveAll(q.dir)
	if q.unlock != nil {
		q.unlock()
	}
	if err != nil {
		return fmt.Errorf("discard quarantine: %w", err)
	}
	return nil
}

// cleanStaleQuarantines removes quarantines left by killed processes:
// older than StaleQuarantineAge and not locked by a live process.
func (s *Store) cleanStaleQuarantines() {
	root := s.quarantineRoot()
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "q-") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		fi, err := os.Stat(dir)
		if err != nil || time.Since(fi.ModTime()) < StaleQuarantineAge {
			continue
		}
		unlock, ok := gitobj.TryLockFile(filepath.Join(dir, "lossless.lock"))
		if !ok {
			continue // a live process uses it
		}
		if err := os.RemoveAll(dir); err == nil {
			s.warn(fmt.Sprintf("removed quarantine %s left by a killed fetch", dir))
		}
		unlock()
	}
}
