package gitstore

// The fetch quarantine against real git on both sides: a bare remote
// filled by a peer archive (or by git itself, for hostile content), an
// archive fetching from it, and git cat-file, count-objects, show-ref and
// fsck --strict as the judges of what the archive holds afterwards.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/seal"
)

// qSpecs are the refspecs sync fetches (anchor/sync.go), for remote id rid.
func qSpecs(rid string) []string {
	t := TrackingPrefix + rid + "/"
	return []string{
		"+" + RefPrefix + "*:" + t + "lossless/*",
		"+" + NotesPrefix + "*:" + t + "notes/*",
		"+" + AnchorPrefix + "*:" + t + "incoming/anchor/*",
		"+" + AnchorTagPrefix + "*:" + t + "incoming/tags/*",
	}
}

// qPeer is a second machine's archive and the bare remote it pushes to.
type qPeer struct {
	t      testing.TB
	repo   string // the peer's work tree
	s      *Store
	remote string // the bare remote
}

func newQPeer(t testing.TB) *qPeer {
	t.Helper()
	repo := itInit(t)
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &qPeer{t: t, repo: repo, s: s, remote: itInit(t, "--bare")}
}

// add appends n events with distinct content of size bytes each to
// writer, and returns the content blob ids.
func (p *qPeer) add(writer string, n, size int) []string {
	p.t.Helper()
	var recs []Record
	for i := 0; i < n; i++ {
		c := []byte(fmt.Sprintf("%s event %d %d\n", writer, i, time.Now().UnixNano()))
		for len(c) < size {
			c = append(c, fmt.Sprintf("line %d of %s\n", len(c), writer)...)
		}
		recs = append(recs, Record{Event: Event{Op: "read", Source: "cli", Path: fmt.Sprintf("src/%s-%d.txt", writer, i)}, Content: c, HasContent: true})
	}
	res, err := p.s.Append(context.Background(), writer, recs)
	if err != nil {
		p.t.Fatal(err)
	}
	var blobs []string
	for _, e := range res.Events {
		blobs = append(blobs, e.Blob)
	}
	return blobs
}

// push pushes the peer's writers (and anchors) to the remote, deleting
// there what the peer lacks.
func (p *qPeer) push() {
	p.t.Helper()
	itGit(p.t, p.repo, "push", "-q", "--prune", p.remote, "+refs/lossless/*:refs/lossless/*", "+refs/lossless-anchor/*:refs/lossless-anchor/*")
}

// qJunkRefs creates n refs <prefix>NNN in repo, each naming a commit of
// its own (one git fast-import), and returns their ids in order.
func qJunkRefs(t testing.TB, repo, prefix string, n int) []string {
	t.Helper()
	var in strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "commit %s%03d\ncommitter x <x@example.invalid> 1700000000 +0000\ndata <<EOF\n%s %d\nEOF\n\n", prefix, i, prefix, i)
	}
	itGitIn(t, repo, []byte(in.String()), "fast-import", "--quiet")
	// Sorted by name, which the zero-padded numbers keep in order.
	dir := prefix[:strings.LastIndexByte(prefix, '/')+1]
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(itGit(t, repo, "for-each-ref", "--format=%(objectname) %(refname)", dir)), "\n") {
		if id, name, _ := strings.Cut(l, " "); strings.HasPrefix(name, prefix) {
			out = append(out, id)
		}
	}
	if len(out) != n {
		t.Fatalf("fast-import made %d refs, want %d", len(out), n)
	}
	return out
}

// qArchive opens a fresh archive.
func qArchive(t testing.TB) (*Store, string) {
	t.Helper()
	repo := itInit(t)
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, repo
}

// qObjects describes the archive's object store as git counts it, and
// the total size of every file under objects/.
type qObjects struct {
	count, inPack string
	packs         []string
	bytes         int64
}

func qObjectState(t testing.TB, repo string) qObjects {
	t.Helper()
	var st qObjects
	for _, l := range strings.Split(itGit(t, repo, "count-objects", "-v"), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		switch k {
		case "count":
			st.count = v
		case "in-pack":
			st.inPack = v
		}
	}
	objs := filepath.Join(repo, ".git", "objects")
	st.packs, _ = filepath.Glob(filepath.Join(objs, "pack", "*"))
	filepath.WalkDir(objs, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				st.bytes += fi.Size()
			}
		}
		return nil
	})
	return st
}

// qNoQuarantine fails when a quarantine directory is left.
func qNoQuarantine(t testing.TB, s *Store) {
	t.Helper()
	ents, _ := os.ReadDir(s.quarantineRoot())
	for _, e := range ents {
		t.Errorf("quarantine left behind: %s", filepath.Join(s.quarantineRoot(), e.Name()))
	}
}

// qHas reports whether git finds object id in repo.
func qHas(repo, id string) bool {
	_, _, err := itGitRaw(repo, nil, "cat-file", "-e", id)
	return err == nil
}

// qTracking is the archive's tracking refs, as git lists them.
func qTracking(t testing.TB, repo string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(itGit(t, repo, "for-each-ref", "--format=%(objectname) %(refname)", TrackingPrefix)), "\n") {
		if id, name, ok := strings.Cut(l, " "); ok {
			out[name] = id
		}
	}
	return out
}

// TestQuarantineFetchAccept: a normal fetch goes through the quarantine
// into the archive: nothing is in the archive before Accept, everything
// is after it (git cat-file, fsck --strict), the tracking refs are the
// remote's, and the quarantine is gone. A second fetch of the unchanged
// remote fetches nothing; a writer deleted there is pruned here, packed
// or loose.
func TestQuarantineFetchAccept(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	b1 := peer.add("w1", 5, 2000)
	b2 := peer.add("w2", 3, 50_000)
	peer.push()
	s, repo := qArchive(t)
	before := qObjectState(t, repo)

	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Discard()
	if !q.Fetched() {
		t.Fatal("nothing fetched from a remote with new writers")
	}
	want := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(itGit(t, peer.remote, "for-each-ref", "--format=%(objectname) %(refname)", "refs/lossless/")), "\n") {
		id, name, _ := strings.Cut(l, " ")
		want[TrackingPrefix+"r1/lossless/"+strings.TrimPrefix(name, RefPrefix)] = id
	}
	if got := q.Refs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched refs %v, want %v", got, want)
	}
	// Not in the archive yet; readable through the view.
	view := q.Store()
	for _, id := range append(b1, b2...) {
		if qHas(repo, id) {
			t.Fatalf("blob %s in the archive before Accept", id)
		}
		if _, err := view.Objects().Blob(ctx, id); err != nil {
			t.Fatalf("view cannot read fetched blob %s: %v", id, err)
		}
	}
	if got, err := view.Objects().RefsUnder(ctx, TrackingPrefix+"r1/lossless/"); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("view's tracking refs %v (%v), want %v", got, err, want)
	}
	if rep, err := view.VerifyAt(ctx, "w2", want[TrackingPrefix+"r1/lossless/w2"], seal.Options{}); err != nil || !rep.OK() {
		t.Fatalf("verify the fetched w2 through the view: %v %+v", err, rep)
	}
	if got := qTracking(t, repo); len(got) != 0 {
		t.Fatalf("tracking refs before Accept: %v", got)
	}
	if mid := qObjectState(t, repo); mid.bytes != before.bytes {
		t.Fatalf("the archive's objects grew from %d to %d bytes before Accept", before.bytes, mid.bytes)
	}

	if err := q.AcceptAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Discard(); err != nil {
		t.Fatal(err)
	}
	qNoQuarantine(t, s)
	for _, id := range append(b1, b2...) {
		if !qHas(repo, id) {
			t.Fatalf("blob %s missing after Accept", id)
		}
	}
	if got := qTracking(t, repo); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tracking refs %v, want %v", got, want)
	}
	itFsck(t, repo)

	// Up to date: no fetch at all, the same refs.
	q2, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if q2.Fetched() || fmt.Sprint(q2.Refs()) != fmt.Sprint(want) || len(q2.Gone()) != 0 {
		t.Fatalf("up to date: fetched %v, refs %v, gone %v", q2.Fetched(), q2.Refs(), q2.Gone())
	}
	if err := q2.AcceptAll(ctx); err != nil {
		t.Fatal(err)
	}
	q2.Discard()

	// w1 deleted there, w2 grown: w1's tracking ref is pruned here, from
	// packed-refs (git pack-refs packed it) and loose alike.
	itGit(t, repo, "pack-refs", "--all")
	itGit(t, peer.repo, "update-ref", "-d", RefPrefix+"w1")
	b3 := peer.add("w2", 2, 1000)
	peer.push()
	q3, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer q3.Discard()
	gone := q3.Gone()
	if len(gone) != 1 || gone[TrackingPrefix+"r1/lossless/w1"] != want[TrackingPrefix+"r1/lossless/w1"] {
		t.Fatalf("gone %v, want w1 at its old value", gone)
	}
	if err := q3.AcceptAll(ctx); err != nil {
		t.Fatal(err)
	}
	q3.Discard()
	got := qTracking(t, repo)
	if _, ok := got[TrackingPrefix+"r1/lossless/w1"]; ok || len(got) != 1 {
		t.Fatalf("after the prune: %v", got)
	}
	if got[TrackingPrefix+"r1/lossless/w2"] != strings.TrimSpace(itGit(t, peer.repo, "rev-parse", RefPrefix+"w2")) {
		t.Fatalf("w2 not moved: %v", got)
	}
	for _, id := range b3 {
		if !qHas(repo, id) {
			t.Fatalf("blob %s of the second fetch missing", id)
		}
	}
	if strings.Contains(itGit(t, repo, "show-ref"), "r1/lossless/w1") {
		t.Fatal("git still shows the pruned ref")
	}
	itFsck(t, repo)
	qNoQuarantine(t, s)
}

// TestQuarantineMaxRefs: a remote listing more refs than MaxRefs is
// refused before anything is fetched: no quarantine, no object, no ref.
func TestQuarantineMaxRefs(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	peer.add("seed", 1, 100)
	seed := strings.TrimSpace(itGit(t, peer.repo, "rev-parse", RefPrefix+"seed"))
	var stdin strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&stdin, "create %sjunk-%03d %s\n", RefPrefix, i, seed)
	}
	itGitIn(t, peer.repo, []byte(stdin.String()), "update-ref", "--stdin")
	peer.push()
	s, repo := qArchive(t)
	before := qObjectState(t, repo)
	_, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{MaxRefs: 20})
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrOverLimit) || le.Limit != "refs" || le.Max != 20 || le.Seen != 21 {
		t.Fatalf("err = %v, want a refs LimitError (max 20, stopped at 21)", err)
	}
	if _, err := os.Stat(s.quarantineRoot()); err == nil {
		qNoQuarantine(t, s)
	}
	if after := qObjectState(t, repo); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("objects changed: %+v -> %+v", before, after)
	}
	if qHas(repo, seed) {
		t.Fatal("the remote's commit reached the archive")
	}
	if got := qTracking(t, repo); len(got) != 0 {
		t.Fatalf("tracking refs: %v", got)
	}
	// Set in git config, the cap applies to a zero FetchLimits.
	itGit(t, repo, "config", "lossless.fetchMaxRefs", "20")
	withConfig, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withConfig.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{}); !errors.As(err, &le) || le.Limit != "refs" || le.Max != 20 {
		t.Fatalf("with lossless.fetchMaxRefs=20: %v", err)
	}
	itGit(t, repo, "config", "--unset", "lossless.fetchMaxRefs")
	// Refs the archive does not hold yet count against MaxNewRefs.
	if _, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{MaxNewRefs: 10}); !errors.As(err, &le) || le.Limit != "new-refs" || le.Max != 10 || le.Seen != 61 {
		t.Fatalf("err = %v, want a new-refs LimitError (max 10, seen 61)", err)
	}
	if after := qObjectState(t, repo); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("objects changed: %+v -> %+v", before, after)
	}
	// At the caps it goes through.
	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{MaxRefs: 61, MaxNewRefs: 61})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Discard()
	if len(q.Refs()) != 61 {
		t.Fatalf("%d refs, want 61", len(q.Refs()))
	}
	if err := q.AcceptAll(ctx); err != nil {
		t.Fatal(err)
	}
	q.Discard()
	// Once they are here, only what moves counts as new.
	stdin.Reset()
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&stdin, "create %smore-%d %s\n", RefPrefix, i, seed)
	}
	itGitIn(t, peer.repo, []byte(stdin.String()), "update-ref", "--stdin")
	peer.push()
	q, err = s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{MaxNewRefs: 5})
	if err != nil {
		t.Fatalf("5 new refs of 66 under MaxNewRefs 5: %v", err)
	}
	q.Discard()
}

// qBigBlobRemote makes a bare remote whose checkpoint ref names a commit
// holding one blob of size bytes: random (incompressible) or zeros.
func qBigBlobRemote(t testing.TB, size int, random bool) (remote, blob string) {
	t.Helper()
	remote = itInit(t, "--bare")
	data := make([]byte, size)
	if random {
		// Stored, not deflated: the remote is built and served in a
		// fraction of the time, and random bytes would not shrink anyway.
		itGit(t, remote, "config", "core.compression", "0")
		r := rand.NewChaCha8([32]byte{1})
		r.Read(data)
	}
	blob = strings.TrimSpace(itGitIn(t, remote, data, "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(itGitIn(t, remote, []byte("100644 blob "+blob+"\tcheckpoint\n"), "mktree"))
	commit := strings.TrimSpace(itGitIn(t, remote, []byte("junk checkpoint\n"), "commit-tree", tree))
	itGit(t, remote, "update-ref", AnchorPrefix+"m/big", commit)
	return remote, blob
}

// TestQuarantineBigBlob: a 60 MB checkpoint blob is refused — while
// downloading when it is incompressible (MaxBytes), from its header after
// the fetch when it compresses to almost nothing (MaxObject) — and the
// archive's objects do not grow by more than a few KB, nor is any
// quarantine left.
func TestQuarantineBigBlob(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		random bool
		limit  string
	}{
		{"random-over-MaxBytes", true, "bytes"},
		{"zeros-over-MaxObject", false, "object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remote, blob := qBigBlobRemote(t, 60_000_000, tc.random)
			s, repo := qArchive(t)
			before := qObjectState(t, repo)
			_, err := s.Transport().FetchQuarantine(ctx, Remote{URL: remote}, qSpecs("r1"), FetchLimits{MaxBytes: 16 << 20, MaxObject: 16 << 20})
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tc.limit {
				t.Fatalf("err = %v, want a %s LimitError", err, tc.limit)
			}
			if tc.limit == "object" && (le.Object != blob || le.Seen != 60_000_000 || fmt.Sprint(le.Refs) != "["+TrackingPrefix+"r1/incoming/anchor/m/big]") {
				t.Fatalf("limit error names %s of %d bytes in %v, want %s of 60000000 in the checkpoint ref", le.Object, le.Seen, le.Refs, blob)
			}
			after := qObjectState(t, repo)
			if after.bytes-before.bytes > 4096 || fmt.Sprint(after.packs) != fmt.Sprint(before.packs) || after.count != before.count {
				t.Fatalf("the archive's objects grew: %+v -> %+v", before, after)
			}
			if qHas(repo, blob) {
				t.Fatal("the big blob reached the archive")
			}
			if got := qTracking(t, repo); len(got) != 0 {
				t.Fatalf("tracking refs: %v", got)
			}
			qNoQuarantine(t, s)
		})
	}
}

// TestQuarantinePartialAccept: of two fetched writers, only the accepted
// one's objects and ref reach the archive; the other's objects end in no
// object directory of it.
func TestQuarantinePartialAccept(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	keep := peer.add("keep", 4, 3000)
	drop := peer.add("drop", 4, 3000)
	peer.push()
	s, repo := qArchive(t)
	before := qObjectState(t, repo)
	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Discard()
	keepRef, dropRef := TrackingPrefix+"r1/lossless/keep", TrackingPrefix+"r1/lossless/drop"
	refs := q.Refs()
	if refs[keepRef] == "" || refs[dropRef] == "" {
		t.Fatalf("fetched %v", refs)
	}
	if err := q.Accept(ctx, map[string]string{keepRef: refs[keepRef]}); err != nil {
		t.Fatal(err)
	}
	if err := q.Discard(); err != nil {
		t.Fatal(err)
	}
	qNoQuarantine(t, s)
	for _, id := range append(keep, refs[keepRef]) {
		if !qHas(repo, id) {
			t.Fatalf("accepted object %s missing", id)
		}
	}
	for _, id := range append(drop, refs[dropRef]) {
		if qHas(repo, id) {
			t.Fatalf("refused object %s is in the archive", id)
		}
	}
	after := qObjectState(t, repo)
	if len(after.packs) != len(before.packs)+2 { // one .pack and its .idx
		t.Fatalf("packs %v -> %v: want exactly one new pack", before.packs, after.packs)
	}
	// git agrees: the new pack holds exactly what keep reaches.
	var idx string
	for _, p := range after.packs {
		if strings.HasSuffix(p, ".idx") && !strings.Contains(strings.Join(before.packs, " "), p) {
			idx = p
		}
	}
	packed := map[string]bool{}
	out, errOut, err := itGitRaw(repo, nil, "verify-pack", "-v", idx)
	if err != nil {
		t.Fatalf("git verify-pack: %v\n%s", err, errOut)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && len(f[0]) == 40 {
			packed[f[0]] = true
		}
	}
	reach := strings.Fields(itGit(t, repo, "rev-list", "--objects", "--no-object-names", refs[keepRef]))
	sort.Strings(reach)
	var got []string
	for id := range packed {
		got = append(got, id)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(reach) {
		t.Fatalf("the new pack holds %d objects, keep reaches %d", len(got), len(reach))
	}
	if got := qTracking(t, repo); len(got) != 1 || got[keepRef] != refs[keepRef] {
		t.Fatalf("tracking refs %v", got)
	}
	itFsck(t, repo)
}

// TestQuarantineDriver is a driver for measuring a fetch from outside
// (time, peak RSS): with LOSSLESS_QUARANTINE_DRIVER set to a remote, it
// fetches everything sync fetches from it into a fresh archive through
// the quarantine, with the limits of LOSSLESS_QUARANTINE_LIMITS
// ("refs,new-refs,bytes,object"; empty: the defaults), accepts it all, and prints
// the outcome. Run it as
//
//	go test -c -o /tmp/gs.test ./gitstore
//	LOSSLESS_QUARANTINE_DRIVER=/path/to/remote.git /usr/bin/time -v /tmp/gs.test -test.run TestQuarantineDriver -test.v
func TestQuarantineDriver(t *testing.T) {
	remote := os.Getenv("LOSSLESS_QUARANTINE_DRIVER")
	if remote == "" {
		t.Skip("a driver for measurements: set LOSSLESS_QUARANTINE_DRIVER")
	}
	var lim FetchLimits
	if v := os.Getenv("LOSSLESS_QUARANTINE_LIMITS"); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d,%d,%d", &lim.MaxRefs, &lim.MaxNewRefs, &lim.MaxBytes, &lim.MaxObject); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	s, repo := qArchive(t)
	start := time.Now()
	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: remote}, qSpecs("r1"), lim)
	fetched := time.Since(start)
	if err == nil {
		err = q.AcceptAll(ctx)
		q.Discard()
	}
	after := qObjectState(t, repo)
	t.Logf("fetch %v, total %v: err=%v; archive objects %d bytes, %d tracking refs; quarantine dirs left: %d",
		fetched, time.Since(start), err, after.bytes, len(qTracking(t, repo)), len(qDirs(s)))
}

func qDirs(s *Store) []string {
	ents, _ := os.ReadDir(s.quarantineRoot())
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestQuarantineCloneSharedArchive: an archive that is a `git clone
// --shared` (or --reference) of another holds its objects through
// objects/info/alternates; the store reads them (every writer verifies,
// content included), where it used to find none.
func TestQuarantineCloneSharedArchive(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	peer.add("w1", 4, 3000)
	peer.add("w2", 2, 20_000)
	itGit(t, peer.repo, "repack", "-adq") // packed objects too
	peer.add("w1", 2, 500)
	clone := filepath.Join(t.TempDir(), "clone.git")
	itGit(t, filepath.Dir(clone), "clone", "-q", "--mirror", "--shared", peer.repo, clone)
	s, err := OpenDir(clone, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := s.Writers(ctx)
	if err != nil || len(ws) != 2 {
		t.Fatalf("writers %v: %v", ws, err)
	}
	for _, w := range ws {
		if w.Err != "" {
			t.Fatalf("writer %s: %s", w.Name, w.Err)
		}
		rep, err := s.Verify(ctx, w.Name, seal.Options{})
		if err != nil || !rep.OK() {
			t.Fatalf("verify %s in a --shared clone: %v %+v", w.Name, err, rep)
		}
	}
	evs, err := s.Events(ctx, Query{Writers: []string{"w2"}})
	if err != nil || len(evs) != 2 {
		t.Fatalf("events: %d %v", len(evs), err)
	}
	for _, e := range evs {
		b, err := s.Objects().Blob(ctx, e.Blob)
		if err != nil || !bytesEqual(b, itCatFile(t, clone, e.Blob)) {
			t.Fatalf("blob %s: %v", e.Blob, err)
		}
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// TestQuarantineViewRefusesWrites: every write through the quarantine's
// view fails with ErrReadOnly, and neither the archive nor the
// quarantine changes.
func TestQuarantineViewRefusesWrites(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	peer.add("w1", 2, 100)
	peer.push()
	s, repo := qArchive(t)
	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Discard()
	snapshot := func() string {
		var b strings.Builder
		for _, root := range []string{filepath.Join(repo, ".git"), q.Dir()} {
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil {
					fi, _ := d.Info()
					size := fi.Size()
					if d.IsDir() {
						size = 0 // a directory's size is its file system's business
					}
					fmt.Fprintf(&b, "%s %v %d\n", p, d.IsDir(), size)
				}
				return nil
			})
		}
		return b.String()
	}
	// An archive from before ownership was recorded: reading ownership
	// through the view must not migrate it.
	os.RemoveAll(filepath.Join(repo, ".git", "lossless", "own"))
	before := snapshot()
	v := q.Store()
	head := q.Refs()[TrackingPrefix+"r1/lossless/w1"]
	anchor := AnchorPrefix + "m/c"
	attempts := map[string]error{}
	_, attempts["Append"] = v.Append(ctx, "w9", []Record{{Event: Event{Op: "read", Source: "cli", Path: "x"}, Content: []byte("x"), HasContent: true}})
	_, attempts["Import"] = v.Import(ctx, "w9", []Record{{Event: Event{Op: "read", Source: "cli", Path: "x"}, Content: []byte("x"), HasContent: true}}, 0)
	attempts["SetRef"] = v.Objects().SetRef(ctx, TrackingPrefix+"r1/x", "", head)
	_, attempts["CommitFiles"] = v.Objects().CommitFiles(ctx, anchor, "", []TreeFile{{Name: "f", Data: []byte("x")}}, "m", "", time.Now())
	_, attempts["WriteTag"] = v.Objects().WriteTag(ctx, "lossless-anchor/m/c/1", head, "m", "", time.Now())
	attempts["FastForward"] = v.Objects().FastForward(ctx, RefPrefix+"w1", "", head)
	attempts["DeleteTrackingRef"] = v.Objects().DeleteTrackingRef(ctx, TrackingPrefix+"r1/lossless/w1", head)
	attempts["Fetch"] = v.Transport().Fetch(ctx, Remote{URL: peer.remote}, qSpecs("r1"), true)
	_, attempts["FetchQuarantine"] = v.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	_, attempts["PushRefs"] = v.Transport().PushRefs(ctx, Remote{URL: peer.remote}, []RefPush{{Src: head, Dst: RefPrefix + "x"}}, false)
	_, attempts["WriteNote"] = v.WriteNote(ctx, "w1", head, []byte("note"), nil)
	_, attempts["StateDir"] = v.StateDir(ctx, "anchor")
	attempts["Reindex"] = v.Reindex(ctx)
	attempts["RecordAnchored"] = v.RecordAnchored(ctx, "w1", 1, strings.Repeat("ab", 32), AnchoredSeen, "test")
	_, attempts["RedactWriter"] = v.RedactWriter(ctx, "w1", nil, false)
	// Reads of this clone's memory (witness, ownership, clone id) write
	// none of it through the view (the snapshot below says so).
	if _, err := v.CloneID(ctx); err != nil && !errors.Is(err, ErrReadOnly) {
		t.Errorf("CloneID through the view: %v", err)
	}
	if _, err := v.Owns(ctx, "w1"); err != nil {
		t.Errorf("Owns through the view: %v", err)
	}
	if _, err := v.OwnedWriters(ctx); err != nil {
		t.Errorf("OwnedWriters through the view: %v", err)
	}
	if _, err := v.SeenHeads(ctx, "w1"); err != nil {
		t.Errorf("SeenHeads through the view: %v", err)
	}
	for name, err := range attempts {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s through the view: %v, want ErrReadOnly", name, err)
		}
	}
	// Reads work, and write nothing either (no derived index).
	if evs, err := v.Events(ctx, Query{}); err != nil {
		t.Fatal(err)
	} else if len(evs) != 0 {
		t.Fatalf("the view lists %d events of writers the archive does not have", len(evs))
	}
	if after := snapshot(); after != before {
		t.Fatalf("files changed:\n%s\nthen\n%s", before, after)
	}
}

// TestQuarantineAcceptRaced: a tracking ref moved by someone else between
// the fetch and Accept is not overwritten (ErrRefChanged); the other
// accepted refs are set.
func TestQuarantineAcceptRaced(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	peer.add("a", 1, 100)
	peer.add("b", 1, 100)
	peer.push()
	s, repo := qArchive(t)
	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Discard()
	// Another process sets a's tracking ref meanwhile, to b's commit
	// (an object the archive holds once b is accepted; any id will do
	// for git's update-ref --no-deref with a known object, so use a
	// blob git writes here).
	other := strings.TrimSpace(itGitIn(t, repo, []byte("someone else\n"), "hash-object", "-w", "--stdin"))
	aRef, bRef := TrackingPrefix+"r1/lossless/a", TrackingPrefix+"r1/lossless/b"
	itGit(t, repo, "update-ref", aRef, other)
	err = q.AcceptAll(ctx)
	if !errors.Is(err, ErrRefChanged) || !strings.Contains(err.Error(), aRef) {
		t.Fatalf("accept over a moved ref: %v", err)
	}
	got := qTracking(t, repo)
	if got[aRef] != other || got[bRef] != q.Refs()[bRef] {
		t.Fatalf("tracking refs %v", got)
	}
}

// qSlowUploadPack writes a script that serves the first request (the
// ls-remote) from serve, and then, for a fetch, writes its pid into
// fifo and blocks: a fetch that stays in flight until the test kills it.
func qUploadPackScript(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "upload-pack.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestQuarantineToctouRefFlood: a remote that lists some refs to
// ls-remote and then serves many more to the fetch gets only the listed
// refs accepted (git writes no ref of the fetch: the listing is the only
// source of names and ids). With a few refs to fetch, git asks for those
// by name and the rest is never sent; with more than explicitRefs, it asks
// by pattern, and the junk that comes stays in the quarantine and is
// deleted with it. When what it serves lacks what it listed, the fetch
// fails with ErrRemoteChanged and nothing is left.
func TestQuarantineToctouRefFlood(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		listed     int
		withListed bool
	}{{1, true}, {explicitRefs + 40, true}, {1, false}} {
		t.Run(fmt.Sprintf("listed=%d/serves-the-listed=%v", tc.listed, tc.withListed), func(t *testing.T) {
			few := newQPeer(t)
			few.add("seed", 1, 100)
			if tc.listed > 1 {
				qJunkRefs(t, few.repo, RefPrefix+"listed-", tc.listed-1)
			}
			few.push()
			many := newQPeer(t)
			many.add("other", 1, 100)
			junk := qJunkRefs(t, many.repo, RefPrefix+"junk-", 100)
			many.push()
			if tc.withListed {
				itGit(t, few.repo, "push", "-q", many.remote, "refs/lossless/*:refs/lossless/*")
			}
			counter := filepath.Join(t.TempDir(), "n")
			script := qUploadPackScript(t, fmt.Sprintf(`n=$(cat %[1]q 2>/dev/null || echo 0); echo $((n+1)) > %[1]q
if [ "$n" = 0 ]; then exec git-upload-pack %[2]q; fi
exec git-upload-pack %[3]q
`, counter, few.remote, many.remote))
			s, repo := qArchive(t)
			itGit(t, repo, "config", "remote.flip.url", few.remote)
			itGit(t, repo, "config", "remote.flip.uploadpack", script)
			before := qObjectState(t, repo)
			lim := FetchLimits{MaxRefs: tc.listed, MaxNewRefs: tc.listed}
			q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: "flip"}, qSpecs("r1"), lim)
			if n, _ := os.ReadFile(counter); strings.TrimSpace(string(n)) != "2" {
				t.Fatalf("upload-pack ran %q times, want 2 (ls-remote, then the fetch)", n)
			}
			if !tc.withListed {
				if !errors.Is(err, ErrRemoteChanged) {
					t.Fatalf("err = %v, want ErrRemoteChanged", err)
				}
				if after := qObjectState(t, repo); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("objects changed: %+v -> %+v", before, after)
				}
				if got := qTracking(t, repo); len(got) != 0 {
					t.Fatalf("tracking refs: %v", got)
				}
				qNoQuarantine(t, s)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(itGit(t, few.remote, "for-each-ref", "--format=%(objectname) %(refname)", RefPrefix)), "\n") {
				id, name, _ := strings.Cut(l, " ")
				want[TrackingPrefix+"r1/lossless/"+strings.TrimPrefix(name, RefPrefix)] = id
			}
			if fmt.Sprint(q.Refs()) != fmt.Sprint(want) {
				t.Fatalf("%d refs, want only the %d listed", len(q.Refs()), len(want))
			}
			if err := q.AcceptAll(ctx); err != nil {
				t.Fatal(err)
			}
			q.Discard()
			for _, id := range want {
				if !qHas(repo, id) {
					t.Fatalf("listed commit %s is missing", id)
				}
			}
			for _, id := range junk {
				if qHas(repo, id) {
					t.Fatalf("junk commit %s reached the archive", id)
				}
			}
			if got := qTracking(t, repo); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("tracking refs: %d, want %d", len(got), len(want))
			}
			itFsck(t, repo)
			qNoQuarantine(t, s)
		})
	}
}

// qChildEnv switches the test binary into a process that fetches
// GITSTORE_Q_REMOTE into the archive GITSTORE_Q_DIR through a quarantine
// and is killed by its parent in the middle of the fetch.
const qChildEnv = "GITSTORE_Q_CHILD"

func qChildMain() int {
	s, err := OpenDir(os.Getenv("GITSTORE_Q_DIR"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	r := Remote{URL: os.Getenv("GITSTORE_Q_REMOTE")}
	switch mode := os.Getenv("GITSTORE_Q_MODE"); mode {
	case "old", "new", "accept":
		// A measurement (BenchmarkQuarantineHostile): the outcome on
		// stdout, for the parent, which measures time and memory.
		if mode == "old" {
			err = s.Transport().Fetch(ctx, r, qSpecs("r1"), true)
		} else {
			var q *Quarantine
			if q, err = s.Transport().FetchQuarantine(ctx, r, qSpecs("r1"), FetchLimits{}); err == nil {
				if mode == "accept" {
					err = q.AcceptAll(ctx)
				}
				q.Discard() // "new": the caller refuses what came
			}
		}
		// Peak memory: this process's own high-water mark (a child's
		// rusage would start from its parent's, whose memory it shared
		// until exec) and its git children's.
		var kids syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
		hwm := int64(0)
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					fmt.Sscanf(strings.TrimSpace(v), "%d", &hwm)
				}
			}
		}
		fmt.Printf("peak-kb %d\n%v\n", max(hwm, kids.Maxrss), err)
		return 0
	}
	q, err := s.Transport().FetchQuarantine(ctx, r, qSpecs("r1"), FetchLimits{})
	fmt.Fprintln(os.Stderr, "the fetch returned, and was to hang:", err)
	if q != nil {
		q.Discard()
	}
	return 1
}

// TestQuarantineKilledMidFetch: a process killed (SIGKILL) while its git
// fetch runs leaves its quarantine behind. While the process lives, no
// other fetch removes it, however old; git does not outlive the process
// (Linux: it dies with it); once the process is gone and the quarantine
// is older than StaleQuarantineAge, the next fetch removes it. A young
// unlocked quarantine is left alone (it may be one being created).
func TestQuarantineKilledMidFetch(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	peer.add("w1", 1, 100)
	peer.push()
	other := newQPeer(t)
	other.add("w2", 1, 100)
	other.push()

	// The remote answers ls-remote, then blocks the fetch and says so
	// through a FIFO (its pid), so the test knows the fetch is in flight.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	counter := filepath.Join(t.TempDir(), "n")
	script := qUploadPackScript(t, fmt.Sprintf(`n=$(cat %[1]q 2>/dev/null || echo 0); echo $((n+1)) > %[1]q
if [ "$n" = 0 ]; then exec git-upload-pack "$@"; fi
echo $$ > %[2]q
exec sleep 600
`, counter, fifo))
	var warnings []string
	s, repo := qArchive(t)
	s.warn = func(m string) { warnings = append(warnings, m) }
	itGit(t, repo, "config", "remote.slow.url", peer.remote)
	itGit(t, repo, "config", "remote.slow.uploadpack", script)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), qChildEnv+"=1", "GITSTORE_Q_DIR="+repo, "GITSTORE_Q_REMOTE=slow")
	var childErr strings.Builder
	child.Stderr = &childErr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	pidc := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the script writes
		pidc <- strings.TrimSpace(string(b))
	}()
	var sleeper string
	select {
	case sleeper = <-pidc:
	case err := <-exited:
		t.Fatalf("the child ended before its fetch blocked: %v\n%s", err, childErr.String())
	}
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(sleeper); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	dirs := qDirs(s)
	if len(dirs) != 1 {
		t.Fatalf("quarantines while the child fetches: %v", dirs)
	}
	qdir := filepath.Join(s.quarantineRoot(), dirs[0])
	old := time.Now().Add(-2 * StaleQuarantineAge)
	age := func() {
		if err := os.Chtimes(qdir, old, old); err != nil {
			t.Fatal(err)
		}
	}

	// Live and old: kept.
	age()
	fetchOther := func() {
		q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: other.remote}, qSpecs("r2"), FetchLimits{})
		if err != nil {
			t.Fatal(err)
		}
		q.Discard()
	}
	fetchOther()
	if _, err := os.Stat(qdir); err != nil {
		t.Fatalf("a live process's quarantine was removed: %v", err)
	}

	// kill -9 mid-fetch.
	child.Process.Kill()
	<-exited
	if runtime.GOOS == "linux" {
		// git got SIGKILL with its parent (Pdeathsig): no process runs
		// on the quarantine any more.
		deadline := time.Now().Add(30 * time.Second)
		for qProcessesOn(qdir) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("git still runs on %s after its parent was killed", qdir)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := os.Stat(qdir); err != nil {
		t.Fatalf("the killed fetch left no quarantine to clean: %v", err)
	}

	// Dead but young: kept (it could be one being created).
	now := time.Now()
	os.Chtimes(qdir, now, now)
	fetchOther()
	if _, err := os.Stat(qdir); err != nil {
		t.Fatalf("a young quarantine was removed: %v", err)
	}
	// Dead and old: removed.
	age()
	fetchOther()
	if _, err := os.Stat(qdir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the stale quarantine is still there: %v", err)
	}
	qNoQuarantine(t, s)
	if len(warnings) != 1 || !strings.Contains(warnings[0], dirs[0]) {
		t.Fatalf("warnings %q", warnings)
	}
}

// qProcessesOn counts the processes whose command line names dir
// (Linux's /proc).
func qProcessesOn(dir string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir) {
			n++
		}
	}
	return n
}

// TestQuarantineManyRefs: more refs than go loose (packedUpdates), and
// more than a fetch names one by one (explicitRefs), are fetched by
// pattern and accepted as one packed-refs rewrite, and pruned the same
// way: git reads
// the tracking refs exactly as the remote has them, before and after the
// remote loses most of them, and fsck is clean.
func TestQuarantineManyRefs(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	qJunkRefs(t, peer.repo, RefPrefix+"w-", explicitRefs+2*packedUpdates)
	var stdin strings.Builder
	peer.push()
	s, repo := qArchive(t)
	check := func() {
		t.Helper()
		want := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(itGit(t, peer.remote, "for-each-ref", "--format=%(objectname) %(refname)", RefPrefix)), "\n") {
			id, name, _ := strings.Cut(l, " ")
			want[TrackingPrefix+"r1/lossless/"+strings.TrimPrefix(name, RefPrefix)] = id
		}
		if got := qTracking(t, repo); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("tracking refs: %d, the remote has %d", len(got), len(want))
		}
		itFsck(t, repo)
	}
	fetch := func() {
		t.Helper()
		q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Discard()
		if err := q.AcceptAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fetch()
	check()
	if loose, _ := filepath.Glob(filepath.Join(repo, ".git", "refs", "lossless-tracking", "r1", "lossless", "*")); len(loose) != 0 {
		t.Fatalf("%d loose tracking refs: they were to be packed", len(loose))
	}
	stdin.Reset()
	for i := 0; i < 2*packedUpdates; i++ {
		fmt.Fprintf(&stdin, "delete %sw-%03d\n", RefPrefix, i)
	}
	itGitIn(t, peer.repo, []byte(stdin.String()), "update-ref", "--stdin")
	peer.push()
	fetch()
	check()
}

// TestDeleteTrackingRef: only tracking refs, only at the expected value,
// loose or packed.
func TestDeleteTrackingRef(t *testing.T) {
	ctx := context.Background()
	s, repo := qArchive(t)
	id := strings.TrimSpace(itGitIn(t, repo, []byte("x\n"), "hash-object", "-w", "--stdin"))
	other := strings.TrimSpace(itGitIn(t, repo, []byte("y\n"), "hash-object", "-w", "--stdin"))
	packed, loose := TrackingPrefix+"r/packed", TrackingPrefix+"r/loose"
	itGit(t, repo, "update-ref", packed, id)
	itGit(t, repo, "pack-refs", "--all")
	itGit(t, repo, "update-ref", loose, id)
	itGit(t, repo, "update-ref", RefPrefix+"w", id)
	if err := s.Objects().DeleteTrackingRef(ctx, RefPrefix+"w", id); err == nil {
		t.Fatal("deleted a writer's ref")
	}
	if err := s.Objects().DeleteTrackingRef(ctx, loose, other); !errors.Is(err, ErrRefChanged) {
		t.Fatalf("delete at the wrong value: %v", err)
	}
	for _, r := range []string{packed, loose} {
		if err := s.Objects().DeleteTrackingRef(ctx, r, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := qTracking(t, repo); len(got) != 0 {
		t.Fatalf("left: %v", got)
	}
	if strings.TrimSpace(itGit(t, repo, "rev-parse", RefPrefix+"w")) != id {
		t.Fatal("the writer's ref moved")
	}
	itFsck(t, repo)
}

// TestQuarantineUsersGit: the quarantine's git is the user's, configured
// as for the archive: a remote named in the archive's config, reached
// over HTTP behind basic authentication through the credential helper
// and an insteadOf rewrite set there (the quarantine includes the
// archive's config), and a wrong password fails with git's message and
// leaves nothing.
func TestQuarantineUsersGit(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	blobs := peer.add("w1", 2, 500)
	peer.push()
	url := testkit.ServeHTTPAuth(t, peer.remote, "alice", "s3cret pass")
	s, repo := qArchive(t)
	itGit(t, repo, "config", "url."+url+".insteadOf", "lossless-test:")
	itGit(t, repo, "config", "remote.team.url", "lossless-test:")
	itGit(t, repo, "config", "credential.helper", testkit.CredentialHelper("alice", "s3cret pass"))
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: "team"}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Discard()
	if err := q.AcceptAll(ctx); err != nil {
		t.Fatal(err)
	}
	q.Discard()
	for _, id := range blobs {
		if !qHas(repo, id) {
			t.Fatalf("blob %s missing", id)
		}
	}
	itGit(t, repo, "config", "credential.helper", testkit.CredentialHelper("alice", "wrong"))
	peer.add("w1", 1, 100)
	peer.push()
	before := qObjectState(t, repo)
	s, _ = OpenDir(repo, Options{})
	if _, err := s.Transport().FetchQuarantine(ctx, Remote{URL: "team"}, qSpecs("r1"), FetchLimits{}); err == nil || !strings.Contains(err.Error(), "git ls-remote") {
		t.Fatalf("with a wrong password: %v", err)
	}
	if after := qObjectState(t, repo); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("objects changed: %+v -> %+v", before, after)
	}
	qNoQuarantine(t, s)
}

// TestQuarantineAcceptRefuses: Accept takes only refs under the fetched
// destinations and ids whose history is in the quarantine or the archive;
// a refused Accept changes nothing, and the quarantine can still be
// accepted properly after.
func TestQuarantineAcceptRefuses(t *testing.T) {
	ctx := context.Background()
	peer := newQPeer(t)
	peer.add("w", 1, 100)
	peer.push()
	s, repo := qArchive(t)
	q, err := s.Transport().FetchQuarantine(ctx, Remote{URL: peer.remote}, qSpecs("r1"), FetchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Discard()
	id := q.Refs()[TrackingPrefix+"r1/lossless/w"]
	before := qObjectState(t, repo)
	for name, bad := range map[string]map[string]string{
		"a writer's ref":    {RefPrefix + "w": id},
		"another remote's":  {TrackingPrefix + "r2/lossless/w": id},
		"an unknown object": {TrackingPrefix + "r1/lossless/w": strings.Repeat("ab", 20)},
		"not an id":         {TrackingPrefix + "r1/lossless/w": "HEAD"},
	} {
		if err := q.Accept(ctx, bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if after := qObjectState(t, repo); fmt.Sprint(after) != fmt.Sprint(before) || len(qTracking(t, repo)) != 0 || strings.Contains(itGit(t, repo, "for-each-ref"), "lossless/w") {
		t.Fatalf("a refused Accept changed the archive: %+v -> %+v", before, after)
	}
	if err := q.AcceptAll(ctx); err != nil {
		t.Fatal(err)
	}
	if !qHas(repo, id) {
		t.Fatal("not accepted")
	}
	q.Discard()
	if err := q.Accept(ctx, q.Refs()); err == nil {
		t.Fatal("accepted after Discard")
	}
}

// TestQuarantineCancelled: a fetch whose context ends while git runs
// (the user's ^C) stops git, returns the context's error and leaves no
// quarantine and no object.
func TestQuarantineCancelled(t *testing.T) {
	peer := newQPeer(t)
	peer.add("w", 1, 100)
	peer.push()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	counter := filepath.Join(t.TempDir(), "n")
	script := qUploadPackScript(t, fmt.Sprintf(`n=$(cat %[1]q 2>/dev/null || echo 0); echo $((n+1)) > %[1]q
if [ "$n" = 0 ]; then exec git-upload-pack "$@"; fi
echo $$ > %[2]q
exec sleep 600
`, counter, fifo))
	s, repo := qArchive(t)
	itGit(t, repo, "config", "remote.slow.url", peer.remote)
	itGit(t, repo, "config", "remote.slow.uploadpack", script)
	s, err := OpenDir(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pidc := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // the fetch is in flight
		cancel()
		pidc <- strings.TrimSpace(string(b))
	}()
	before := qObjectState(t, repo)
	_, err = s.Transport().FetchQuarantine(ctx, Remote{URL: "slow"}, qSpecs("r1"), FetchLimits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Cancelled, so the script ran and said its pid.
	if pid, err := strconv.Atoi(<-pidc); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if after := qObjectState(t, repo); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("objects changed: %+v -> %+v", before, after)
	}
	qNoQuarantine(t, s)
}
