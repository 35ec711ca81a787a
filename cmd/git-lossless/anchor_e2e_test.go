package main

// End-to-end tests of git lossless anchor, sync and verify --anchor: the
// real binary (built in TestMain) in sandboxes, against bare repositories
// served by real git over every transport a user's remote can be on
// (internal/testkit), with git itself reading back what reached the
// remote.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/git-lossless/git-lossless/anchor"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

// anchorSandbox is a sandbox (one machine: its own HOME, config dirs,
// anchor key and identity) for the anchor tests.
func anchorSandbox(t *testing.T) *sandbox {
	t.Helper()
	testkit.NeedTool(t, "git")
	sb := newSandbox(t)
	sb.setenv("LOSSLESS_ANCHOR_KEY_FILE", filepath.Join(sb.root, "config", "anchor-key"))
	sb.setenv("LOSSLESS_IDENTITY_FILE", filepath.Join(sb.root, "config", "identity.age"))
	return sb
}

// recordFiles records files (created with the given contents) on writer
// through the binary, one batch.
func (sb *sandbox) recordFiles(repo, writer string, files ...string) {
	sb.t.Helper()
	var names []string
	for i := 0; i < len(files); i += 2 {
		writeFile(sb.t, filepath.Join(repo, files[i]), []byte(files[i+1]))
		names = append(names, files[i])
	}
	sb.ok(repo, append([]string{"record", "--op", "read", "--writer", writer}, names...)...)
}

// refsOf returns the refs of a repository under prefixes, as git reads
// them.
func (sb *sandbox) refsOf(dir string, prefixes ...string) map[string]string {
	sb.t.Helper()
	out := map[string]string{}
	list := sb.git(dir, append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, prefixes...)...)
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if id, ref, ok := strings.Cut(line, " "); ok {
			out[ref] = id
		}
	}
	return out
}

var checkpointLine = regexp.MustCompile(`(?m)^checkpoint (\d+) of ([A-Za-z0-9._-]+)/([0-9a-f]{8}) `)

// pushedCheckpoint is the checkpoint an anchor push names.
type pushedCheckpoint struct {
	machine, clone, n string
}

// ref is the clone's anchor ref, refs/lossless-anchor/<machine>/<clone>.
func (c pushedCheckpoint) ref() string { return anchor.AnchorRef(c.machine, c.clone) }

// anchorPush runs a successful `anchor push` and returns the checkpoint
// it names.
func (sb *sandbox) anchorPush(repo string, args ...string) (pushedCheckpoint, result) {
	sb.t.Helper()
	r := sb.ok(repo, append([]string{"anchor", "push"}, args...)...)
	m := checkpointLine.FindStringSubmatch(r.stdout)
	if m == nil {
		sb.t.Fatalf("anchor push %v: no checkpoint line:\n%s", args, r.stdout)
	}
	return pushedCheckpoint{machine: m[2], clone: m[3], n: m[1]}, r
}

// anchorRecords returns the names of the files in .git/lossless/anchor/remotes/.
func anchorRecords(t *testing.T, repo string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(repo, ".git", "lossless", "anchor", "remotes"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// anchorRecord reads the record of what repo anchored on the remote whose
// resolved URL is url.
func anchorRecord(t *testing.T, repo, url string) (anchor.RemoteRecord, bool) {
	t.Helper()
	var rec anchor.RemoteRecord
	b, err := os.ReadFile(filepath.Join(repo, ".git", "lossless", "anchor", "remotes", anchor.RemoteID(url)+"."+anchor.ModeRef+".json"))
	if os.IsNotExist(err) {
		return rec, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec, true
}

// deadGitURL returns a git:// URL on a local port nobody listens on: a
// socket bound to it, never listening, holds it for the test, so that no
// server started meanwhile (by a parallel test) can take it, and a
// connection is refused.
func deadGitURL(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("git://127.0.0.1:%d/remote.git", sa.(*syscall.SockaddrInet4).Port)
}

// sortedLines returns s's non-empty lines, sorted.
func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// transport serves a bare repository and says how to reach it: the URL,
// variables both machines need (GIT_SSH_COMMAND) and a credential helper
// for the clones' configuration ("" when none is needed).
type transport struct {
	name  string
	serve func(t *testing.T, bare string) (url string, env []string, helper string)
}

var anchorTransports = []transport{
	{"path", func(t *testing.T, bare string) (string, []string, string) { return bare, nil, "" }},
	{"git-daemon", func(t *testing.T, bare string) (string, []string, string) {
		return testkit.ServeDaemon(t, bare), nil, ""
	}},
	{"smart-http", func(t *testing.T, bare string) (string, []string, string) {
		return testkit.ServeHTTP(t, bare), nil, ""
	}},
	{"smart-http-auth", func(t *testing.T, bare string) (string, []string, string) {
		const user, password = "anchor-user", `pa ss'"$(false)#`
		return testkit.ServeHTTPAuth(t, bare, user, password), nil, testkit.CredentialHelper(user, password)
	}},
	{"ssh-host-alias", func(t *testing.T, bare string) (string, []string, string) {
		url, env := testkit.ServeSSH(t, bare)
		return url, env, ""
	}},
}

// TestAnchorTransports: over each transport, machine A anchors (the
// remote then holds exactly its checkpoint ref, and A records the remote
// by its URL), machine B's verify --anchor accepts it, A anchors as a tag
// too, and sync carries each machine's writers to the other: both end
// with the same events, and verify (with the remote's anchors) passes on
// B. Over HTTP with basic auth the credentials come only from a
// credential.helper in the clones' configuration: without it the push
// fails.
func TestAnchorTransports(t *testing.T) {
	for _, tr := range anchorTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			bare := testkit.NewBare(t, "remote.git")
			url, env, helper := tr.serve(t, bare)
			sbA, sbB := anchorSandbox(t), anchorSandbox(t)
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				sbA.setenv(k, v)
				sbB.setenv(k, v)
			}
			c1, c2 := sbA.initRepo("c1"), sbB.initRepo("c2")
			sbA.recordFiles(c1, "alpha", "a.txt", "alpha one\n")
			sbA.recordFiles(c1, "alpha", "b.txt", "alpha two\n")
			sbB.recordFiles(c2, "beta", "c.txt", "beta one\n")

			if helper != "" {
				// No credentials: refused, nothing recorded.
				r := sbA.run(c1, "anchor", "push", url)
				if r.code != exitFailed || !strings.Contains(r.stderr, "git-lossless: anchor on "+url+" failed: ") || !strings.Contains(r.stderr, "could not read Username") {
					t.Fatalf("anchor push without credentials: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				if recs := anchorRecords(t, c1); len(recs) != 0 {
					t.Fatalf("a refused anchor push left records %v", recs)
				}
				if refs := sbA.refsOf(bare); len(refs) != 0 {
					t.Fatalf("a refused anchor push reached the remote: %v", refs)
				}
				sbA.git(c1, "config", "credential.helper", helper)
				sbB.git(c2, "config", "credential.helper", helper)
			}

			cp, r := sbA.anchorPush(c1, url)
			ref := cp.ref()
			if cp.n != "1" || !strings.Contains(r.stdout, "anchored on "+url+": "+ref+"\n") {
				t.Fatalf("anchor push:\n%s", r.stdout)
			}
			local := sbA.refsOf(c1, "refs/lossless-anchor/")
			if got := sbA.refsOf(bare); !maps.Equal(got, local) || len(got) != 1 || got[ref] == "" {
				t.Fatalf("the remote's refs after anchor push: %v; want only %s = A's %v", got, ref, local)
			}
			if rec, ok := anchorRecord(t, c1, url); !ok || rec.URL != url || rec.N != 1 || rec.Commit != local[ref] {
				t.Fatalf("record of the anchor on %s: %+v (found %v); records %v", url, rec, ok, anchorRecords(t, c1))
			}

			r = sbB.ok(c2, "verify", "--anchor", url)
			if !strings.Contains(r.stdout, "OK     anchor "+url+": 1 checkpoint chains, 1 newly accepted\n") {
				t.Fatalf("verify --anchor on B:\n%s", r.stdout)
			}

			if tcp, r := sbA.anchorPush(c1, "--tags", url); tcp != cp || !strings.Contains(r.stdout, "anchored on "+url+": refs/tags/lossless-anchor/") {
				t.Fatalf("anchor push --tags: %+v\n%s", tcp, r.stdout)
			}
			tag := "refs/tags/" + anchor.TagName(cp.machine, cp.clone, 1)
			if typ := strings.TrimSpace(sbA.git(bare, "cat-file", "-t", tag)); typ != "tag" {
				t.Fatalf("%s on the remote is a %q, want an annotated tag", tag, typ)
			}
			if got := strings.TrimSpace(sbA.git(bare, "rev-parse", tag+"^{commit}")); got != local[ref] {
				t.Fatalf("%s names %s, want checkpoint commit %s", tag, got, local[ref])
			}

			// Sync: A's writer to the remote, then to B, and B's back.
			sbA.ok(c1, "sync", url)
			r = sbB.ok(c2, "sync", url)
			if !strings.Contains(r.stdout, "1 adopted (behind 0, new there 1), 1 to push (ahead 0, new here 1)") {
				t.Fatalf("B's sync:\n%s", r.stdout)
			}
			r = sbA.ok(c1, "sync", url)
			if !strings.Contains(r.stdout, "1 equal, 1 adopted (behind 0, new there 1), 0 to push") {
				t.Fatalf("A's second sync:\n%s", r.stdout)
			}
			archive := sbA.refsOf(c1, "refs/lossless/")
			if len(archive) != 2 || !maps.Equal(sbB.refsOf(c2, "refs/lossless/"), archive) || !maps.Equal(sbA.refsOf(bare, "refs/lossless/"), archive) {
				t.Fatalf("archive refs: A %v, B %v, remote %v", archive, sbB.refsOf(c2, "refs/lossless/"), sbA.refsOf(bare, "refs/lossless/"))
			}
			if a, b := sbA.git(c1, "log", "--format=%H %s", "refs/lossless/alpha"), sbB.git(c2, "log", "--format=%H %s", "refs/lossless/alpha"); a != b || len(sortedLines(a)) != 2 {
				t.Fatalf("git log of alpha: A\n%s\nB\n%s", a, b)
			}
			logA, evs := sbA.log(c1)
			logB, _ := sbB.log(c2)
			if !slices.Equal(sortedLines(logA), sortedLines(logB)) {
				t.Fatalf("git lossless log differs:\nA\n%s\nB\n%s", logA, logB)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.Writer+" "+e.Path)
			}
			sort.Strings(got)
			if want := []string{"alpha a.txt", "alpha b.txt", "beta c.txt"}; !slices.Equal(got, want) {
				t.Fatalf("events %v, want %v", got, want)
			}
			r = sbB.ok(c2, "verify", "--anchor", url)
			if !strings.Contains(r.stdout, "2 writers, 2 ok, 0 broken") {
				t.Fatalf("verify on B after sync:\n%s", r.stdout)
			}
		})
	}
}

// TestAnchorInsteadOfAlias: a url.<real>.insteadOf rewrite in the
// repository's configuration is applied, whether the alias is a remote's
// URL or given as REMOTE itself: the anchor reaches the real remote and
// is recorded under the real URL (anchors key remotes by resolved URL),
// and sync's tracking refs are the real remote's.
func TestAnchorInsteadOfAlias(t *testing.T) {
	bare := testkit.NewBare(t, "remote.git")
	real := testkit.ServeDaemon(t, bare)
	sb := anchorSandbox(t)
	repo := sb.initRepo("repo")
	sb.recordFiles(repo, "alpha", "a.txt", "alpha\n")
	sb.git(repo, "config", "url."+real+".insteadOf", "lossless-test-alias:")
	sb.git(repo, "remote", "add", "aliased", "lossless-test-alias:")
	rid := anchor.RemoteID(real) + "." + anchor.ModeRef + ".json"

	for _, remote := range []string{"aliased", "lossless-test-alias:"} {
		t.Run(remote, func(t *testing.T) {
			cp, r := sb.anchorPush(repo, remote)
			ref := cp.ref()
			if !strings.Contains(r.stdout, "anchored on "+remote+": ") {
				t.Fatalf("anchor push %s:\n%s", remote, r.stdout)
			}
			if got := sb.refsOf(bare, "refs/lossless-anchor/"); got[ref] == "" {
				t.Fatalf("the real remote lacks %s: %v", ref, got)
			}
			if recs := anchorRecords(t, repo); !slices.Equal(recs, []string{rid}) {
				t.Fatalf("records %v, want only %s (the real URL %s): the remote was not resolved through insteadOf (gitstore's RemoteURL)", recs, rid, real)
			}
			if rec, ok := anchorRecord(t, repo, real); !ok || rec.URL != real || rec.Remote != remote {
				t.Fatalf("record %+v (found %v): want URL %s, remote %s", rec, ok, real, remote)
			}
		})
	}
	t.Run("sync", func(t *testing.T) {
		sb.ok(repo, "sync", "lossless-test-alias:")
		if got, want := sb.refsOf(bare, "refs/lossless/"), sb.refsOf(repo, "refs/lossless/"); len(want) != 1 || !maps.Equal(got, want) {
			t.Fatalf("the real remote's writers %v, want %v", got, want)
		}
		tracking := sb.refsOf(repo, gitstore.TrackingPrefix)
		for ref := range tracking {
			if !strings.HasPrefix(ref, gitstore.TrackingPrefix+anchor.RemoteID(real)+"/") {
				t.Errorf("tracking ref %s is not the real remote's (%s)", ref, anchor.RemoteID(real))
			}
		}
		if len(tracking) == 0 {
			t.Error("sync left no tracking refs")
		}
	})
}

// TestAnchorVerifyFromSecondCloneSameMachine: two clones of one
// repository on one machine have separate checkpoint chains
// (anchor/FORMAT.md section 1). The second clone's verify --anchor
// accepts the first one's checkpoints and finds nothing wrong: it never
// held the first clone's writers, so their absence here is not a
// rollback.
func TestAnchorVerifyFromSecondCloneSameMachine(t *testing.T) {
	sb := anchorSandbox(t)
	bare := testkit.NewBare(t, "remote.git")
	c1, c2 := sb.initRepo("c1"), sb.initRepo("c2")
	sb.recordFiles(c1, "alpha", "a.txt", "alpha\n")
	sb.anchorPush(c1, bare)
	r := sb.run(c2, "verify", "--anchor", bare)
	if r.code != exitOK || !strings.Contains(r.stdout, "OK     anchor "+bare+": 1 checkpoint chains, 1 newly accepted\n") {
		t.Fatalf("verify --anchor in a second clone of the same machine: exit %d (the first clone's checkpoints taken as this clone's own?)\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// failedPush is a remote an anchor push must fail on, and what its error
// line must say.
type failedPush struct{ url, why string }

// checkFailedAnchorPush checks a failed anchor push's outcome: exit 1;
// on stderr exactly one line per failed remote naming it and why, the
// summary error and one hint; no record of a failed remote.
func checkFailedAnchorPush(t *testing.T, repo string, r result, targets int, bad ...failedPush) {
	t.Helper()
	if r.code != exitFailed {
		t.Fatalf("anchor push: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	var failLines []string
	for _, l := range lines {
		if strings.HasPrefix(l, "git-lossless: anchor on ") {
			failLines = append(failLines, l)
		}
	}
	if len(failLines) != len(bad) || len(lines) != len(bad)+2 {
		t.Fatalf("stderr has %d lines, %d naming a failed remote; want %d and %d:\n%s", len(lines), len(failLines), len(bad)+2, len(bad), r.stderr)
	}
	for _, b := range bad {
		n := 0
		for _, l := range failLines {
			if strings.HasPrefix(l, "git-lossless: anchor on "+b.url+" failed: ") {
				n++
				if !strings.Contains(l, b.why) {
					t.Errorf("the line of %s does not say why (%q): %s", b.url, b.why, l)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d lines name %s, want 1:\n%s", n, b.url, r.stderr)
		}
		if _, ok := anchorRecord(t, repo, b.url); ok {
			t.Errorf("the failed remote %s is recorded as anchored", b.url)
		}
	}
	if want := fmt.Sprintf("git-lossless: error: anchor failed on %d of %d targets; nothing is recorded as anchored there", len(bad), targets); lines[len(lines)-2] != want {
		t.Errorf("error line %q, want %q", lines[len(lines)-2], want)
	}
	if h := lines[len(lines)-1]; !strings.HasPrefix(h, "git-lossless: hint: ") || !strings.Contains(h, "git ls-remote") {
		t.Errorf("no hint line: %q", h)
	}
}

// TestAnchorPushFailures: an unreachable remote and one refusing the
// credentials make anchor push exit 1, naming each with why, recording
// nothing there; beside a good remote, the good one is anchored and
// recorded, the others not.
func TestAnchorPushFailures(t *testing.T) {
	const user = "anchor-user"
	bare := testkit.NewBare(t, "remote.git")
	authURL := testkit.ServeHTTPAuth(t, bare, user, "right password")
	dead := deadGitURL(t)
	t.Run("group", func(t *testing.T) { anchorPushFailures(t, bare, authURL, dead) })
	if refs := testkit.Git(t, bare, nil, "for-each-ref"); refs != "" {
		t.Fatalf("the remote refusing the credentials holds refs:\n%s", refs)
	}
}

func anchorPushFailures(t *testing.T, bare, authURL, dead string) {
	const user = "anchor-user"
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		sb := anchorSandbox(t)
		repo := sb.initRepo("repo")
		sb.recordFiles(repo, "alpha", "a.txt", "alpha\n")
		r := sb.run(repo, "anchor", "push", dead)
		checkFailedAnchorPush(t, repo, r, 1, failedPush{dead, "unable to connect"})
		if recs := anchorRecords(t, repo); len(recs) != 0 {
			t.Fatalf("records %v after a failed push", recs)
		}
	})
	t.Run("auth refused", func(t *testing.T) {
		t.Parallel()
		sb := anchorSandbox(t)
		repo := sb.initRepo("repo")
		sb.recordFiles(repo, "alpha", "a.txt", "alpha\n")
		sb.git(repo, "config", "credential.helper", testkit.CredentialHelper(user, "wrong password"))
		r := sb.run(repo, "anchor", "push", authURL)
		checkFailedAnchorPush(t, repo, r, 1, failedPush{authURL, "authentication required"})
		if recs := anchorRecords(t, repo); len(recs) != 0 {
			t.Fatalf("records %v after a failed push", recs)
		}
	})
	t.Run("one good, two bad", func(t *testing.T) {
		t.Parallel()
		sb := anchorSandbox(t)
		good := testkit.NewBare(t, "good.git")
		repo := sb.initRepo("repo")
		sb.recordFiles(repo, "alpha", "a.txt", "alpha\n")
		sb.git(repo, "config", "credential.helper", testkit.CredentialHelper(user, "wrong password"))
		r := sb.run(repo, "anchor", "push", dead, good, authURL)
		checkFailedAnchorPush(t, repo, r, 3, failedPush{dead, "unable to connect"}, failedPush{authURL, "authentication required"})
		m := checkpointLine.FindStringSubmatch(r.stdout)
		if m == nil || !strings.Contains(r.stdout, "anchored on "+good+": ") {
			t.Fatalf("the good remote is not reported anchored:\n%s", r.stdout)
		}
		ref := anchor.AnchorRef(m[2], m[3])
		if got := sb.refsOf(good); len(got) != 1 || got[ref] == "" {
			t.Fatalf("the good remote holds %v, want %s", got, ref)
		}
		if recs := anchorRecords(t, repo); !slices.Equal(recs, []string{anchor.RemoteID(good) + ".ref.json"}) {
			t.Fatalf("records %v, want only the good remote's", recs)
		}
	})
}

// TestSyncAndAnchorPrivacy: an archive holding a span with a planted
// token (stored unredacted: lossless.redact off) and a file version of a
// git-ignored path. sync refuses, naming each, and pushes nothing; anchor
// push --with-archive refuses the archive and still anchors; anchor push
// sends no content at all (every object on the remote is read back); with
// --allow-secrets --allow-ignored, sync sends it all.
func TestSyncAndAnchorPrivacy(t *testing.T) {
	sb := anchorSandbox(t)
	// This process appends the span itself, as the transcript sweep does:
	// it must see the sandbox's configuration, not the developer's.
	for _, kv := range sb.env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "GIT_CONFIG"), strings.HasPrefix(k, "LOSSLESS_"):
			t.Setenv(k, v)
		}
	}
	for _, k := range []string{"LOSSLESS_ARCHIVE_EXCLUDE", "LOSSLESS_AGE_IDENTITY"} {
		t.Setenv(k, "")
	}
	repo := sb.initRepo("repo")
	bare := testkit.NewBare(t, "remote.git")
	sb.git(repo, "remote", "add", "origin", bare)
	tok := pushToken()
	ignored := "ignored content UNIQUE-" + randomHex(t, 8)
	writeFile(t, filepath.Join(repo, ".gitignore"), []byte("local.yml\n"))
	sb.recordFiles(repo, "files", "local.yml", ignored+"\n", "main.go", "package main\n")
	sb.git(repo, "config", "lossless.redact", "off")
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	span := gitstore.Record{Event: gitstore.Event{Op: "span", Source: "sweep", Session: "s1", Key: "span:1"},
		Content: []byte(`{"role":"user","content":"deploy with GITHUB_TOKEN=` + tok + `"}`), HasContent: true}
	if _, err := st.Append(context.Background(), "talk", []gitstore.Record{span}); err != nil {
		t.Fatal(err)
	}
	if all := sb.git(repo, "cat-file", "--batch-all-objects", "--batch"); !strings.Contains(all, tok) || !strings.Contains(all, ignored) {
		t.Fatal("the planted token or the ignored file's content is not in the archive")
	}
	wantProblems := []string{
		"talk#1 span: span holds 1 secret(s): github-token ",
		"files#1 read local.yml: git ignores it (.gitignore:1: local.yml)",
	}
	noLeak := func(what string, r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, tok) || strings.Contains(r.stdout+r.stderr, tok[6:30]) {
			t.Fatalf("%s prints the token:\n%s%s", what, r.stdout, r.stderr)
		}
	}
	remoteObjects := func() string { return sb.git(bare, "cat-file", "--batch-all-objects", "--batch") }

	r := sb.run(repo, "sync")
	noLeak("sync", r)
	if r.code != exitFailed || !strings.Contains(r.stderr, "sync: 2 item(s) held back; nothing was pushed") {
		t.Fatalf("sync: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range wantProblems {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sync's output lacks %q:\n%s", want, r.stdout)
		}
	}
	if out := sb.git(repo, "ls-remote", bare); strings.Contains(out, "refs/lossless/") || strings.Contains(out, "refs/notes/lossless/") {
		t.Fatalf("a refused sync pushed:\n%s", out)
	}

	r = sb.run(repo, "anchor", "push", "--with-archive")
	noLeak("anchor push --with-archive", r)
	if r.code != exitFailed || !strings.Contains(r.stderr, "archive not pushed: origin: 2 item(s) held back") || !checkpointLine.MatchString(r.stdout) {
		t.Fatalf("anchor push --with-archive: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range append(wantProblems, "anchored on origin: refs/lossless-anchor/") {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("anchor push --with-archive's output lacks %q:\n%s", want, r.stdout)
		}
	}
	onlyAnchors := func(when string) {
		t.Helper()
		refs := sb.refsOf(bare)
		if len(refs) != 1 {
			t.Fatalf("%s: the remote holds %v, want one checkpoint ref", when, refs)
		}
		for ref := range refs {
			if !strings.HasPrefix(ref, gitstore.AnchorPrefix) {
				t.Fatalf("%s: the remote holds %s", when, ref)
			}
		}
	}
	onlyAnchors("after anchor push --with-archive")

	// A new checkpoint (another writer's head moved), anchored by default.
	sb.recordFiles(repo, "files", "main.go", "package main\n\nfunc main() {}\n")
	if cp, _ := sb.anchorPush(repo); cp.n != "2" {
		t.Fatalf("checkpoint %s, want 2", cp.n)
	}
	onlyAnchors("after anchor push")
	all := remoteObjects()
	for _, planted := range []string{tok, ignored, "package main", "func main"} {
		if strings.Contains(all, planted) {
			t.Fatalf("%q reached the remote through anchor push", planted)
		}
	}
	// Two checkpoint commits, their trees, their checkpoints and one key.
	if objs := sortedLines(sb.git(bare, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype)")); !slices.Equal(objs, []string{"blob", "blob", "blob", "commit", "commit", "tree", "tree"}) {
		t.Fatalf("the remote's objects: %v", objs)
	}

	r = sb.ok(repo, "sync", "--allow-secrets", "--allow-ignored")
	noLeak("sync --allow-secrets --allow-ignored", r)
	if got, want := sb.refsOf(bare, "refs/lossless/"), sb.refsOf(repo, "refs/lossless/"); len(want) != 2 || !maps.Equal(got, want) {
		t.Fatalf("after the allowed sync the remote's writers are %v, want %v", got, want)
	}
	if all := remoteObjects(); !strings.Contains(all, tok) || !strings.Contains(all, ignored) {
		t.Fatal("the allowed sync did not send the span and the ignored file")
	}
}
