package hooks

// Import: archive a harness's past sessions — months of history from
// before git-lossless was installed — in one go (for Claude Code its
// projects directory).
//
// Every transcript goes through the hooks' own sweep (sweepFile): the same
// records, deny list and secret redaction, the same cursors and dedupe
// keys, the same writer (<prefix><session>). That is what makes an import
//
//   - resumable: a transcript's cursor moves only after the store accepted
//     its records, so an import killed at any point and run again goes on
//     from the cursors, and whatever the killed run stored past a cursor
//     is deduped by key;
//   - idempotent: a second import finds every cursor at the end of its
//     file and adds nothing (without cursors, the keys still do);
//   - safe while the harness is running: a live session's hooks sweep the
//     same transcripts with the same cursors into the same writer. Both
//     store through the writer's ref lock, and every record is deduped
//     against the writer's events under that lock, so whichever comes
//     second stores only what the first did not. A cursor written by one
//     over the other's can only move back, which costs a re-read, never
//     an event; the trailing line the harness is still writing is left
//     for the next sweep.
//
// Which files are transcripts, and of which session, the harness says
// (Harness.SessionFile); where a session goes is the repository its cwd
// belongs to (Harness.TranscriptCwd: the first its main transcript names,
// else its subagents'), found by the hooks' rule (OpenForCwd). Subagent
// transcripts go with their session, as the hooks sweep them.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// OpenForCwd opens the archive a session whose cwd is dir records into, with options o: the repository dir belongs to (found as
// git finds it), else the embedded archive (gitstore.Discover), with the
// witness wired in (anchor). A dir that no longer exists — a project
// deleted, a linked worktree removed since the session — also goes to the
// embedded archive rather than to whatever repository encloses its
// nearest surviving parent (a home directory kept in git would otherwise
// collect every deleted project's history). The hooks open their store
// with gitstore.OpenDir alone: their cwd is the harness's working
// directory as it runs, which exists; a missing one is an error they report.
func OpenForCwd(dir string, o gitstore.Options) (*gitstore.Store, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		loc, err := gitstore.Embedded()
		if err != nil {
			return nil, err
		}
		return gitstore.Open(loc, o)
	}
	return gitstore.OpenDir(dir, o)
}

// ImportOptions configures Import. The zero value is what `git lossless
// import` uses.
type ImportOptions struct {
	// Open opens the archive of a session's cwd (default: OpenForCwd with
	// Warn). Sessions whose stores have the same location share one store.
	Open func(cwd string) (*gitstore.Store, error)
	// Warn receives one-line warnings of the default Open (a repository
	// that cannot be written, so its sessions go to the embedded archive).
	Warn func(string)
	// Progress, when set, is told how far the import is after the scan
	// and after each session (its transcripts are stored together);
	// calls never overlap.
	Progress func(ImportProgress)
	// DryRun finds the transcripts and where each session would go, and
	// sweeps nothing.
	DryRun bool
	// Workers is how many sessions are swept at once (0: GOMAXPROCS).
	// Each sweep also compresses on the other cores (gitstore.Prepack).
	Workers int
	// Sweep tunes each transcript's sweep.
	Sweep SweepOptions
}

// ImportProgress is how far an import is. Sizes are taken at the scan.
type ImportProgress struct {
	Files, FilesDone int   // transcripts to sweep, and done (swept, up to date or failed)
	Bytes, BytesDone int64 // their sizes
	Read             int64 // transcript bytes read so far (nothing for a transcript up to date)
	Events           int   // events stored so far
	Elapsed          time.Duration
}

// Skip reasons of ImportSkip.
const (
	SkipNotTranscript = "not a transcript of the harness"
	SkipNotRegular    = "not a regular file"
	SkipSymlink       = "symbolic link (not followed)"
	SkipUnreadable    = "unreadable"
	SkipNoCwd         = "no cwd in its lines (nowhere to put it)"
	SkipBeingWritten  = "last line still being written (left for the next sweep)"
)

// ImportSkip is a file not imported, or not wholly, and why.
type ImportSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"` // one of the Skip constants
	Detail string `json:"detail,omitempty"`
}

// ImportStore is what an import did in one archive.
type ImportStore struct {
	Archive     string `json:"archive"` // work tree, or the git dir of a bare or the embedded archive
	Embedded    bool   `json:"embedded,omitempty"`
	Sessions    int    `json:"sessions"`
	Transcripts int    `json:"transcripts"`
	Bytes       int64  `json:"bytes"`  // transcript bytes read
	Events      int    `json:"events"` // events stored
}

// ImportStats says what an import did.
type ImportStats struct {
	Harness     string        `json:"harness,omitempty"` // the harness imported (set by the caller)
	Sessions    int           `json:"sessions"`          // sessions imported (or found up to date)
	Transcripts int           `json:"transcripts"`       // transcripts swept, subagents' included
	UpToDate    int           `json:"up_to_date"`        // of which had nothing new
	Bytes       int64         `json:"bytes"`             // transcript bytes read
	Events      int           `json:"events"`            // events stored
	Deduped     int           `json:"deduped"`           // records already archived (same key)
	Stores      []ImportStore `json:"archives"`          // by archive name
	Skipped     []ImportSkip  `json:"skipped"`
	Failed      []ImportSkip  `json:"failed,omitempty"` // transcripts whose sweep failed
	Sweep       SweepStats    `json:"sweep"`            // the sweeps' totals
	Elapsed     time.Duration `json:"elapsed_ns"`
}

// importFile is one transcript to sweep.
type importFile struct {
	path string
	size int64
}

// importSession is a session's transcripts: its main transcript (absent
// when only subagent transcripts were found) and its subagents', in the
// order sweepSession sweeps them.
type importSession struct {
	main  string // the main transcript's path, found or not
	files []importFile
	bytes int64
	cwd   string
	store *importStore
}

// importStore is an open archive and its share of the stats.
type importStore struct {
	st    *gitstore.Store
	cwd   string // the cwd st was opened for
	stats ImportStore
}

// workerStores gives each sweeping goroutine a Store of its own for each
// archive: a Store serialises its appends (one at a time per process
// keeps ref retries rare), which would make the goroutines sweeping two
// sessions of one repository take turns at storing, fsyncs included.
// Sessions have writers of their own, so their stores do not contend
// otherwise. The first goroutine uses the store placeSessions opened;
// the others open the same cwd again, and fall back to that store if
// they cannot.
type workerStores struct {
	open  func(string) (*gitstore.Store, error)
	mu    sync.Mutex
	taken map[*importStore]bool
}

// of returns the calling goroutine's store for is, from its own cache.
func (w *workerStores) of(is *importStore, mine map[*importStore]*gitstore.Store) *gitstore.Store {
	if st := mine[is]; st != nil {
		return st
	}
	w.mu.Lock()
	first := !w.taken[is]
	w.taken[is] = true
	w.mu.Unlock()
	st := is.st
	if !first {
		if o, err := w.open(is.cwd); err == nil && o.Location() == is.st.Location() {
			st = o
		}
	}
	mine[is] = st
	return st
}

// Import archives every session and subagent transcript of harness h
// under dirs (each a directory where h keeps sessions, a part of one, or
// one transcript), each session into the archive its cwd belongs to (see
// ImportOptions.Open). It sweeps all it can: a transcript that cannot be
// read, has no cwd or is no transcript is skipped with its reason; one
// whose sweep fails is reported in Failed and the error, and the others
// go on. The returned error is ctx's when it ended, else one naming how
// many failed and the first.
func Import(ctx context.Context, h Harness, dirs []string, opt ImportOptions) (ImportStats, error) {
	start := time.Now()
	var stats ImportStats
	if opt.Open == nil {
		o := gitstore.Options{Warn: opt.Warn}
		opt.Open = func(cwd string) (*gitstore.Store, error) { return OpenForCwd(cwd, o) }
	}
	sessions, skipped, err := scanSessions(h, dirs)
	if err != nil {
		return stats, err
	}
	stats.Skipped = skipped
	sessions = placeSessions(h, sessions, opt.Open, &stats)
	var p ImportProgress
	for _, s := range sessions {
		p.Files += len(s.files)
		p.Bytes += s.bytes
	}
	report := func() {
		if opt.Progress != nil {
			p.Elapsed = time.Since(start)
			opt.Progress(p)
		}
	}
	report()
	if !opt.DryRun {
		err = sweepSessions(ctx, h, sessions, opt, &stats, &p, report)
	}
	storesOf(sessions, &stats, opt.DryRun)
	sortSkips(stats.Skipped)
	stats.Elapsed = time.Since(start)
	if err == nil && len(stats.Failed) > 0 {
		f := stats.Failed[0]
		err = fmt.Errorf("%d transcripts not imported (first: %s: %s: %s)", len(stats.Failed), f.Path, f.Reason, f.Detail)
	}
	return stats, err
}

// scanSessions finds h's transcripts under dirs, grouped by session, and
// the files it skips.
func scanSessions(h Harness, dirs []string) ([]*importSession, []ImportSkip, error) {
	byMain := map[string]*importSession{}
	seen := map[string]bool{}
	var skipped []ImportSkip
	add := func(path, main string, size int64) {
		if seen[path] {
			return
		}
		seen[path] = true
		s := byMain[main]
		if s == nil {
			s = &importSession{main: main}
			byMain[main] = s
		}
		s.files = append(s.files, importFile{path: path, size: size})
		s.bytes += size
	}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, nil, fmt.Errorf("import %s: %w", d, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, nil, fmt.Errorf("import: %w", err)
		}
		if !fi.IsDir() {
			if main, sk, ok := classify(h, abs, fi.Mode().Type(), fi); ok {
				add(abs, main, fi.Size())
			} else {
				skipped = append(skipped, sk)
			}
			continue
		}
		// Walk the directory a symlinked root names (a trailing separator
		// makes WalkDir's Lstat follow it), reporting paths under the name
		// given: the hooks name transcripts by the path the harness
		// gives, and the cursors are keyed by it.
		root := abs
		if li, err := os.Lstat(abs); err == nil && li.Mode()&fs.ModeSymlink != 0 {
			root = abs + string(filepath.Separator)
		}
		err = filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				if path == root {
					return err
				}
				skipped = append(skipped, ImportSkip{Path: path, Reason: SkipUnreadable, Detail: errDetail(err)})
				if de != nil && de.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if de.IsDir() {
				return nil
			}
			var fi fs.FileInfo
			if de.Type().IsRegular() {
				if fi, err = de.Info(); err != nil {
					skipped = append(skipped, ImportSkip{Path: path, Reason: SkipUnreadable, Detail: errDetail(err)})
					return nil
				}
			}
			if main, sk, ok := classify(h, path, de.Type(), fi); ok {
				add(path, main, fi.Size())
			} else {
				skipped = append(skipped, sk)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("import %s: %w", d, err)
		}
	}
	out := make([]*importSession, 0, len(byMain))
	for _, s := range byMain {
		// The main transcript first, then the subagents by name, as
		// sweepSession sweeps them.
		sort.Slice(s.files, func(i, j int) bool {
			a, b := s.files[i].path == s.main, s.files[j].path == s.main
			if a != b {
				return a
			}
			return s.files[i].path < s.files[j].path
		})
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].main < out[j].main })
	return out, skipped, nil
}

// classify says whether the file at path (of type typ; fi nil when it is
// not a regular file) is one of h's transcripts to import, and of which
// session (its main transcript), and if not, why.
func classify(h Harness, path string, typ fs.FileMode, fi fs.FileInfo) (string, ImportSkip, bool) {
	main, ok := h.SessionFile(path)
	switch {
	case !ok:
		return "", ImportSkip{Path: path, Reason: SkipNotTranscript}, false
	case typ&fs.ModeSymlink != 0:
		return "", ImportSkip{Path: path, Reason: SkipSymlink}, false
	case !typ.IsRegular() || fi == nil:
		return "", ImportSkip{Path: path, Reason: SkipNotRegular}, false
	}
	return main, ImportSkip{}, true
}

// errDetail is an error's text without the path it names (the skip
// names it).
func errDetail(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// placeSessions finds each session's cwd and opens its store, dropping
// (into stats) the files it cannot read and the sessions without a cwd.
// Each cwd is opened once, and cwds whose stores share a location share
// the first store opened there.
func placeSessions(h Harness, sessions []*importSession, open func(string) (*gitstore.Store, error), stats *ImportStats) []*importSession {
	byCwd := map[string]*importStore{}
	byLoc := map[gitstore.Location]*importStore{}
	out := sessions[:0]
	for _, s := range sessions {
		readable := s.files[:0]
		for _, f := range s.files {
			cwd, err := h.TranscriptCwd(f.path, f.size)
			if err != nil {
				stats.Skipped = append(stats.Skipped, ImportSkip{Path: f.path, Reason: SkipUnreadable, Detail: errDetail(err)})
				s.bytes -= f.size
				continue
			}
			if s.cwd == "" {
				s.cwd = cwd
			}
			readable = append(readable, f)
		}
		s.files = readable
		if len(s.files) == 0 {
			continue
		}
		if s.cwd == "" {
			for _, f := range s.files {
				stats.Skipped = append(stats.Skipped, ImportSkip{Path: f.path, Reason: SkipNoCwd})
			}
			continue
		}
		is, ok := byCwd[s.cwd]
		if !ok {
			st, err := open(s.cwd)
			if err != nil {
				for _, f := range s.files {
					stats.Failed = append(stats.Failed, ImportSkip{Path: f.path, Reason: "open archive", Detail: fmt.Sprintf("cwd %s: %v", s.cwd, err)})
				}
				byCwd[s.cwd] = nil
				continue
			}
			loc := st.Location()
			if is = byLoc[loc]; is == nil {
				is = &importStore{st: st, cwd: s.cwd, stats: ImportStore{Archive: archiveName(loc), Embedded: loc.Embedded}}
				byLoc[loc] = is
			}
			byCwd[s.cwd] = is
		}
		if is == nil {
			for _, f := range s.files {
				stats.Failed = append(stats.Failed, ImportSkip{Path: f.path, Reason: "open archive", Detail: "cwd " + s.cwd})
			}
			continue
		}
		s.store = is
		out = append(out, s)
	}
	return out
}

func archiveName(loc gitstore.Location) string {
	if loc.WorkTree != "" {
		return loc.WorkTree
	}
	return loc.GitDir
}

// sweepSessions sweeps the sessions on opt.Workers goroutines, largest
// first (so that the last to finish is a small one), the files of one
// session in order on one goroutine, stored together.
func sweepSessions(ctx context.Context, h Harness, sessions []*importSession, opt ImportOptions, stats *ImportStats, p *ImportProgress, report func()) error {
	order := append([]*importSession(nil), sessions...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].bytes > order[j].bytes })
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(order)))
	if opt.Sweep.resolved == nil {
		opt.Sweep.resolved = &sync.Map{}
	}
	ws := &workerStores{open: opt.Open, taken: map[*importStore]bool{}}
	var mu sync.Mutex // guards stats, p, the stores' stats and report
	next := make(chan *importSession)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := map[*importStore]*gitstore.Store{}
			for s := range next {
				st := ws.of(s.store, mine)
				sweepImportSession(ctx, st, h, s, opt.Sweep, func(fn func()) {
					mu.Lock()
					defer mu.Unlock()
					fn()
				}, stats, p, report)
			}
		}()
	}
feed:
	for _, s := range order {
		select {
		case next <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	stats.Bytes, stats.Events, stats.Deduped = stats.Sweep.Bytes, stats.Sweep.Appended, stats.Sweep.Deduped
	return ctx.Err()
}

// sweepImportSession sweeps one session's transcripts into st as one group (one
// pack per flush: see sweepGroup) and, under locked, adds what it did to
// stats and p and reports. An interrupted session adds nothing: what it
// parsed was not stored, and its cursors did not move.
func sweepImportSession(ctx context.Context, st *gitstore.Store, h Harness, s *importSession, opt SweepOptions, locked func(func()), stats *ImportStats, p *ImportProgress, report func()) {
	type fileDone struct {
		f   importFile
		ss  SweepStats
		err error
	}
	g := newSweepGroup(st, opt)
	defer g.close()
	var done []fileDone
	for _, f := range s.files {
		var ss SweepStats
		err := sweepFileTo(ctx, st, h, f.path, opt, &ss, nil, g)
		if ctx.Err() != nil {
			return
		}
		done = append(done, fileDone{f, ss, err})
	}
	ferr := g.flush(ctx)
	if ctx.Err() != nil {
		return
	}
	locked(func() {
		swept := false
		for _, d := range done {
			err := d.err
			if err == nil {
				err = ferr
			}
			p.FilesDone++
			p.BytesDone += d.f.size
			p.Read += d.ss.Bytes
			if err != nil {
				stats.Failed = append(stats.Failed, ImportSkip{Path: d.f.path, Reason: "sweep", Detail: err.Error()})
				continue
			}
			swept = true
			stats.Transcripts++
			if d.ss.Lines == 0 && d.ss.Resets == 0 {
				stats.UpToDate++
			}
			if unsweptTail(ctx, st, h, d.f.path) {
				stats.Skipped = append(stats.Skipped, ImportSkip{Path: d.f.path, Reason: SkipBeingWritten})
			}
			stats.Sweep.add(d.ss)
			s.store.stats.Transcripts++
			s.store.stats.Bytes += d.ss.Bytes
		}
		if ferr == nil {
			stats.Sweep.Appended += g.Appended
			stats.Sweep.Deduped += g.Deduped
			s.store.stats.Events += g.Appended
			p.Events += g.Appended
		}
		if swept {
			stats.Sessions++
			s.store.stats.Sessions++
		}
		report()
	})
}

// unsweptTail reports whether the transcript at path holds bytes past its
// cursor after a sweep: a last line without its newline, being written.
func unsweptTail(ctx context.Context, st *gitstore.Store, h Harness, path string) bool {
	cfile, err := CursorFile(ctx, st, h, path)
	if err != nil {
		return false
	}
	cur := readCursor(cfile)
	fi, err := os.Stat(path)
	return cur != nil && err == nil && fi.Size() > cur.Offset
}

// storesOf puts the stores' stats into stats, by archive name. In a dry
// run they count the sessions and transcripts that would go there.
func storesOf(sessions []*importSession, stats *ImportStats, dry bool) {
	seen := map[*importStore]bool{}
	for _, s := range sessions {
		if dry {
			stats.Sessions++
			stats.Transcripts += len(s.files)
			s.store.stats.Sessions++
			s.store.stats.Transcripts += len(s.files)
			s.store.stats.Bytes += s.bytes
		}
		if !seen[s.store] {
			seen[s.store] = true
			stats.Stores = append(stats.Stores, s.store.stats)
		}
	}
	sort.Slice(stats.Stores, func(i, j int) bool { return stats.Stores[i].Archive < stats.Stores[j].Archive })
}

func sortSkips(s []ImportSkip) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Reason != s[j].Reason {
			return s[i].Reason < s[j].Reason
		}
		return s[i].Path < s[j].Path
	})
}
