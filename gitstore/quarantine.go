package gitstore

// The fetch quarantine: what a remote serves is fetched into a temporary
// repository beside the archive, bounded, looked at, and only then moved
// in (Accept) or thrown away (Discard). A remote is someone else's data:
// a hostile run served 5,000 junk checkpoint refs, 3,000 junk writer refs
// and a 60 MB checkpoint blob, and `git fetch` straight into the archive
// (what Fetch does) cost seconds and hundreds of MB and left the junk in
// the archive's objects. Through FetchQuarantine that remote is refused
// after one ref listing, before any object is asked for (0.22 s, 13 MB,
// nothing left: BenchmarkQuarantineHostile), and whatever a fetch brings
// that is refused later is deleted with the quarantine.
//
// # Design
//
//  1. Refs first. `git ls-remote` (the user's git, as every remote
//     operation here) lists the refs the refspecs' sources match, read as
//     a stream: past FetchLimits.MaxRefs git is stopped and the fetch
//     refused, and so it is when more than MaxNewRefs of them are new or
//     moved (not at that value in the archive's tracking refs), all with
//     a *LimitError before a single object is asked for. The listing is
//     the fetch's only source of ref names and ids (Refs): git writes no
//     ref (--dry-run, which still downloads and keeps the pack), so a
//     remote that lists few refs and then serves many gets none of the
//     others accepted. When every listed id is already the value of a ref
//     of the archive, nothing is fetched at all: there is no quarantine
//     repository, and Accept only moves tracking refs. An up-to-date
//     remote costs one ls-remote, a third less than the fetch it replaces.
//
//  2. The quarantine is a bare repository at
//     <common>/lossless/quarantine/q-<16 hex> (0700, files 0600). Its
//     objects/info/alternates names the archive's objects directory, so
//     git fetches only what the archive lacks, and its config includes the
//     archive's own config file, so a remote name, insteadOf, http.*,
//     core.sshCommand and credential helpers configured for the archive
//     apply as they did (the user's global config applies anyway: same
//     HOME). Up to explicitRefs (256) refs to fetch are named one by one,
//     so that git asks the remote to advertise just those (protocol v2
//     ref-prefix) and lists just those of the archive's refs as common
//     ground (core.alternateRefsPrefixes): with a fleet of 20,000 tracking
//     refs, advertising and listing them all again cost more than the
//     fetch. More are fetched by the refspecs' patterns. The fetch runs
//     with --no-tags --no-write-fetch-head --no-recurse-submodules
//     --no-auto-maintenance --no-show-forced-updates and an empty --refmap,
//     with fetch.unpackLimit=1 (always one pack, never loose objects: one
//     file to watch, one to rename) and with core.bigFileThreshold at
//     MaxObject, so that index-pack streams an oversized blob instead of
//     holding it in memory (60 MB of zeros: 4.7 MB against 63 MB).
//
//  3. MaxBytes is enforced while git runs: git 2.39 has no fetch-side
//     input cap (receive.maxInputSize is the server's), so a watchdog sums
//     the sizes of the files under the quarantine's objects/ every 10 ms
//     (every ten times its own cost when that is longer) and kills git's
//     whole process group past the cap. The quarantine can exceed the cap
//     by what git writes in one interval: measured 0.1-1.2 MB at local
//     speed (cap 16 MiB = 16.8 MB: stopped at 16.8-17.3 MB; cap 64 MiB =
//     67.1 MB: at 67.4-68.3 MB). RLIMIT_FSIZE was the other candidate (a `sh -c 'ulimit -f'`
//     wrapper stopped index-pack at exactly the cap), but Go cannot set it
//     on a child without a shell wrapper (whose `ulimit -f` unit is 512
//     bytes in dash and POSIX sh, 1024 in bash) or a prlimit racing the
//     child's first writes, and it bounds one file, not the total; so the
//     watchdog it is. git is started with the kernel told to kill it when
//     this process dies (Linux: gitobj.DieWithParent), so a kill -9 does
//     not leave a fetch running unwatched.
//
//  4. Before anything is accepted: every listed id that moved must have
//     come (else ErrRemoteChanged: the remote moved a ref to another
//     history meanwhile), and every object of the quarantine is sized from
//     its header alone (gitobj.DB.Info, never the body): one larger than
//     MaxObject refuses the fetch, the error naming it and the refs whose
//     history holds it.
//
//  5. Quarantine.Store is a read-only view: objects of the quarantine
//     and then of the archive (the alternates), refs of the archive with
//     the tracking refs under the refspecs' destinations as listed — what
//     the archive's refs would be after AcceptAll, as Fetch with prune
//     would have left them. Every write through it is refused with
//     ErrReadOnly (and it writes no derived index).
//
//  6. Accept moves exactly the objects reachable from the accepted ids
//     that the archive lacks (a walk from the refs that move, stopping at
//     objects the archive has, as git's own connectivity check does): when
//     those are every object the quarantine holds (the usual case), its
//     pack is renamed into the archive (the same file system: O(1));
//     otherwise the reachable ones are written as a new pack and the rest
//     stays behind to be deleted. Then each tracking ref is moved by
//     compare-and-swap under the ref lock, from its value when the fetch
//     began (Before): a few refs as loose files, fsynced together, more
//     than packedUpdates (64) as one packed-refs rewrite. A second `git
//     fetch` from the quarantine into the archive would also be correct,
//     and costs 75-100 ms against 3.5-5 ms (BenchmarkQuarantine,
//     accept=git-fetch against accept=move). `git maintenance run --auto`
//     follows when gc --auto's thresholds are passed, as it did after the
//     git fetch into the archive.
//
//  7. Discard deletes the quarantine; call it in a defer. A quarantine
//     left by a killed process is removed by the next FetchQuarantine of
//     any process once it is older than StaleQuarantineAge and nobody
//     holds its lock: each quarantine holds an flock on its lossless.lock
//     for as long as its process uses it (the kernel drops it when the
//     process dies), and the age covers the instant between creating the
//     directory and taking the lock.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

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
// destination) -> id, every ref the remote listed under the fetched
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
// fetched destinations as Refs gives them (what AcceptAll would leave).
// Every write is refused with ErrReadOnly. It must not be used after
// Discard.
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
func (t Transport) FetchQuarantine(ctx context.Context, r Remote, refspecs []string, lim FetchLimits) (*Quarantine, error) {
	s := t.s
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
		if validRefName(ref) != nil || validRefName(dst) != nil {
			// git would not make such a ref; a server can still list one.
			perr = fmt.Errorf("git ls-remote %s: the remote lists a malformed ref name %s", QuotePath(r.URL), QuotePath(ref))
			break
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
	fetchFlags := []string{"--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
		"--no-auto-maintenance", "--no-show-forced-updates", "--refmap=", "--dry-run", "--quiet", "--", q.remote.URL}
	if len(q.want) <= explicitRefs {
		// Just the refs to fetch, by name: git then asks the remote to
		// advertise only those (protocol v2 ref-prefix), where a pattern
		// has it send every ref again, as many as ls-remote just listed.
		// And of the archive's refs, git (which lists them with a
		// for-each-ref twice: to negotiate, then to check connectivity)
		// needs only those of the same names, at their old values: with
		// tens of thousands of tracking refs, the listing costs more than
		// the fetch.
		var names []string
		for _, w := range q.want {
			src, dst, _ := strings.Cut(w, ":")
			names = append(names, src, dst)
		}
		args = append(args, "-c", "core.alternateRefsPrefixes="+strings.Join(names, " "))
		args = append(args, "fetch")
		args = append(args, fetchFlags...)
		for _, w := range q.want {
			args = append(args, "+"+w)
		}
	} else {
		args = append(args, "fetch")
		args = append(args, fetchFlags...)
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
