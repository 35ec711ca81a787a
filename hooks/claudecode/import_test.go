package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
)

// imCorpus is a Claude Code projects directory made of copies of the real
// sample session, each with its own session id, whose cwds (and the
// paths they name) point at two repositories and at a directory that
// does not exist.
type imCorpus struct {
	projects         string
	repoA, repoB     string
	missing          string
	sessions         map[string]string // session id -> its cwd
	embedded         string            // XDG_DATA_HOME's archive
	mainOf, subOf    map[string]string // session id -> transcript paths
	transcriptsBytes int64
}

// imSessionID is the id of the n-th copy (the first keeps the sample's).
func imSessionID(n int) string {
	if n == 0 {
		return trSampleSession
	}
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
}

// imNewCorpus copies the sample session perDest times for each of the
// three cwds (repoA, repoB, missing). The embedded archive is pointed at a
// temporary directory through XDG_DATA_HOME, as gitstore.EmbeddedDir
// reads it.
func imNewCorpus(t testing.TB, perDest int) *imCorpus {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	t.Setenv("XDG_DATA_HOME", data)
	c := &imCorpus{
		projects: filepath.Join(root, "claude", "projects"),
		repoA:    filepath.Join(root, "repo-a"),
		repoB:    filepath.Join(root, "repo-b"),
		missing:  filepath.Join(root, "gone", "project"),
		embedded: filepath.Join(data, "git-lossless", "archive.git"),
		sessions: map[string]string{}, mainOf: map[string]string{}, subOf: map[string]string{},
	}
	c.initRepos(t)
	n := 0
	for _, cwd := range []string{c.repoA, c.repoB, c.missing} {
		slug := strings.ReplaceAll(cwd, "/", "-")
		for range perDest {
			id := imSessionID(n)
			n++
			main := testkit.CopySample(t, filepath.Join(c.projects, slug), cwd, id)
			sub := filepath.Join(c.projects, slug, id, "subagents", "agent-"+trSampleAgent+".jsonl")
			c.sessions[id], c.mainOf[id], c.subOf[id] = cwd, main, sub
			c.transcriptsBytes += swSize(t, main) + swSize(t, sub)
		}
	}
	return c
}

// initRepos (re)creates the two repositories and removes the embedded
// archive: the same paths, nothing archived.
func (c *imCorpus) initRepos(t testing.TB) {
	t.Helper()
	for _, d := range []string{c.repoA, c.repoB, c.embedded} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []string{c.repoA, c.repoB} {
		if out, err := exec.Command("git", "init", "-q", r).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		// The default opener reads lossless.fsync from the repository.
		swGit(t, r, "config", "lossless.fsync", "false")
	}
}

func imWrite(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// archives are the corpus's three archives.
func (c *imCorpus) archives() []string { return []string{c.repoA, c.repoB, c.embedded} }

// imEventSet is every event of the archive at dir as
// writer|key|op|path|blob, sorted, with duplicates kept.
func imEventSet(t testing.TB, dir string) []string {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	var st *gitstore.Store
	var err error
	if strings.HasSuffix(dir, ".git") {
		st, err = gitstore.Open(gitstore.Location{GitDir: dir, CommonDir: dir, Embedded: true}, gitstore.Options{})
	} else {
		st, err = gitstore.OpenDir(dir, gitstore.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, strings.Join([]string{e.Writer, e.Key, string(e.Op), e.RawPath(), e.Blob}, "|"))
	}
	sort.Strings(out)
	return out
}

// imDuplicates returns the writer|key pairs stored more than once.
func imDuplicates(set []string) []string {
	seen := map[string]int{}
	var dup []string
	for _, s := range set {
		f := strings.SplitN(s, "|", 3)
		k := f[0] + "|" + f[1]
		if seen[k]++; seen[k] == 2 {
			dup = append(dup, k)
		}
	}
	return dup
}

func imFsck(t testing.TB, dir string) {
	t.Helper()
	args := []string{"-C", dir, "fsck", "--strict", "--no-dangling"}
	if strings.HasSuffix(dir, ".git") {
		args = []string{"--git-dir", dir, "fsck", "--strict", "--no-dangling"}
	}
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		t.Fatalf("git fsck %s: %v\n%s", dir, err, out)
	}
}

// imRefs is `git for-each-ref refs/lossless` of an archive.
func imRefs(t testing.TB, dir string) string {
	t.Helper()
	args := []string{"-C", dir, "for-each-ref", "refs/lossless"}
	if strings.HasSuffix(dir, ".git") {
		args = []string{"--git-dir", dir, "for-each-ref", "refs/lossless"}
	}
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref %s: %v\n%s", dir, err, out)
	}
	return string(out)
}

func TestImportProjects(t *testing.T) {
	ctx := context.Background()
	c := imNewCorpus(t, 1)
	// What a projects directory also holds: a file with no cwd, one being
	// written (its last line has no newline yet), a link, a pipe.
	slugA := filepath.Dir(c.mainOf[imSessionID(0)])
	imWrite(t, filepath.Join(slugA, "nocwd.jsonl"), []byte(`{"type":"queue-operation","operation":"enqueue","sessionId":"x"}`+"\n"))
	writing := c.mainOf[imSessionID(1)]
	swAppend(t, writing, `{"type":"user","uuid":"u-partial","cwd":"`+c.repoB+`","message":{"role":"user","content":"still bein`)
	if err := os.Symlink(c.mainOf[imSessionID(0)], filepath.Join(slugA, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(slugA, "pipe.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}

	var last hooks.ImportProgress
	calls := 0
	stats, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{Progress: func(p hooks.ImportProgress) { last, calls = p, calls+1 }})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sessions != 3 || stats.Transcripts != 6 || stats.UpToDate != 0 || len(stats.Failed) != 0 || len(stats.Stores) != 3 {
		t.Fatalf("stats %+v", stats)
	}
	if calls != 4 || last.FilesDone != 6 || last.Files != 6 || last.BytesDone != last.Bytes || last.Events != stats.Events {
		t.Fatalf("progress: %d calls, last %+v", calls, last)
	}
	// The sample's post-resume Edit reuses a key: one record per session
	// is deduped, as in TestSweepSampleSession.
	if stats.Deduped != 3 || stats.Events != stats.Sweep.Records-3 || stats.Events%3 != 0 {
		t.Fatalf("stats %+v", stats)
	}
	wantStores := []hooks.ImportStore{
		{Archive: c.embedded, Embedded: true, Sessions: 1, Transcripts: 2, Events: stats.Events / 3},
		{Archive: c.repoA, Sessions: 1, Transcripts: 2, Events: stats.Events / 3},
		{Archive: c.repoB, Sessions: 1, Transcripts: 2, Events: stats.Events / 3},
	}
	sort.Slice(wantStores, func(i, j int) bool { return wantStores[i].Archive < wantStores[j].Archive })
	for i, w := range wantStores {
		g := stats.Stores[i]
		g.Bytes = 0
		if g != w {
			t.Errorf("archive %d: %+v, want %+v", i, stats.Stores[i], w)
		}
	}
	skips := map[string]string{}
	for _, s := range stats.Skipped {
		skips[filepath.Base(s.Path)] = s.Reason
	}
	want := map[string]string{
		"nocwd.jsonl": hooks.SkipNoCwd, "link.jsonl": hooks.SkipSymlink, "pipe.jsonl": hooks.SkipNotRegular,
		filepath.Base(writing): hooks.SkipBeingWritten, "agent-" + trSampleAgent + ".meta.json": hooks.SkipNotTranscript,
	}
	for k, v := range want {
		if skips[k] != v {
			t.Errorf("skipped %s: %q, want %q (all: %+v)", k, skips[k], v, stats.Skipped)
		}
	}

	// Each session in its cwd's archive, under its own writer, main and
	// subagent, compaction included; paths relative inside a repository,
	// absolute in the embedded archive.
	for id, cwd := range c.sessions {
		dir, path := cwd, "hello.txt"
		if cwd == c.missing {
			dir, path = c.embedded, filepath.Join(c.missing, "hello.txt")
		}
		w := gitstore.WriterName("cc-", id)
		set := imEventSet(t, dir)
		var mine, reads, sub, compact int
		for _, e := range set {
			f := strings.Split(e, "|")
			if f[0] != w {
				continue
			}
			mine++
			switch {
			case f[2] == "read" && f[3] == path:
				reads++
			case f[2] == "compact":
				compact++
			}
		}
		for _, e := range swEvents(t, imStore(t, dir), gitstore.Query{Writers: []string{w}}) {
			if e.Agent == trSampleAgent && e.Sidechain && e.Session == id {
				sub++
			}
		}
		if mine != stats.Events/3 || reads == 0 || compact != 1 || sub == 0 {
			t.Errorf("session %s in %s: %d events (want %d), %d reads of %s, %d compactions, %d subagent events", id, dir, mine, stats.Events/3, reads, path, compact, sub)
		}
		if len(set) != mine {
			t.Errorf("%s holds %d events of other sessions", dir, len(set)-mine)
		}
	}
	refsBefore := map[string]string{}
	for _, d := range c.archives() {
		imFsck(t, d)
		refsBefore[d] = imRefs(t, d)
	}

	// A second import adds nothing.
	again, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Events != 0 || again.UpToDate != 6 || again.Transcripts != 6 || again.Sessions != 3 || again.Bytes != 0 {
		t.Fatalf("second import: %+v", again)
	}
	for _, d := range c.archives() {
		if got := imRefs(t, d); got != refsBefore[d] {
			t.Errorf("second import moved refs of %s:\n%s\nwas\n%s", d, got, refsBefore[d])
		}
	}
}

func imStore(t testing.TB, dir string) *gitstore.Store {
	t.Helper()
	if strings.HasSuffix(dir, ".git") {
		st, err := gitstore.Open(gitstore.Location{GitDir: dir, CommonDir: dir, Embedded: true}, gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	return swOpen(t, dir)
}

// TestImportConcurrent: two imports of the same corpus at once, and the
// hooks' session sweep of some of its sessions beside them (what a live
// Claude Code session does), end with the archive one import makes: one
// copy of each event.
func TestImportConcurrent(t *testing.T) {
	ctx := context.Background()
	c := imNewCorpus(t, 4)
	if _, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, d := range c.archives() {
		want[d] = imEventSet(t, d)
	}
	c.initRepos(t)

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 2 {
		wg.Go(func() {
			_, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{Workers: 2})
			errs <- err
		})
	}
	wg.Go(func() {
		st, err := hooks.OpenForCwd(c.repoA, gitstore.Options{})
		if err != nil {
			errs <- err
			return
		}
		for id, cwd := range c.sessions {
			if cwd == c.repoA {
				if _, err := hooks.SweepSession(ctx, st, New(), c.mainOf[id], hooks.SweepOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}
		errs <- nil
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range c.archives() {
		got := imEventSet(t, d)
		if dup := imDuplicates(got); len(dup) > 0 {
			t.Errorf("%s: keys stored twice: %v", d, dup)
		}
		if strings.Join(got, "\n") != strings.Join(want[d], "\n") {
			t.Errorf("%s: %d events after concurrent imports, %d after one", d, len(got), len(want[d]))
		}
		imFsck(t, d)
	}
}

// TestImportArguments: a project's directory and a single transcript
// are accepted as well as the projects directory, a dry run stores
// nothing, and a missing directory is an error.
func TestImportArguments(t *testing.T) {
	ctx := context.Background()
	c := imNewCorpus(t, 1)
	id := imSessionID(0)
	dry, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Sessions != 3 || dry.Transcripts != 6 || len(dry.Stores) != 3 || dry.Events != 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	if refs := imRefs(t, c.repoA); refs != "" {
		t.Fatalf("dry run stored: %s", refs)
	}
	// A projects directory reached through a symbolic link (a config
	// directory kept elsewhere) is walked, its transcripts named under
	// the link.
	link := filepath.Join(t.TempDir(), "projects-link")
	if err := os.Symlink(c.projects, link); err != nil {
		t.Fatal(err)
	}
	viaLink, err := hooks.Import(ctx, New(), []string{link}, hooks.ImportOptions{DryRun: true})
	if err != nil || viaLink.Sessions != 3 || viaLink.Transcripts != 6 || len(viaLink.Skipped) != 3 {
		t.Fatalf("dry run through a link: %+v %v", viaLink, err)
	}
	for _, sk := range viaLink.Skipped {
		if !strings.HasPrefix(sk.Path, link+string(filepath.Separator)) {
			t.Errorf("skipped %s: not named under the link %s", sk.Path, link)
		}
	}
	// The subagent alone: placed by its own cwd, swept into the session's
	// writer.
	s, err := hooks.Import(ctx, New(), []string{c.subOf[id]}, hooks.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Sessions != 1 || s.Transcripts != 1 || s.Events == 0 || len(s.Stores) != 1 || s.Stores[0].Archive != c.repoA {
		t.Fatalf("subagent alone: %+v", s)
	}
	// Then its project's directory: the main transcript is new, the
	// subagent up to date.
	s, err = hooks.Import(ctx, New(), []string{filepath.Dir(c.mainOf[id])}, hooks.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Sessions != 1 || s.Transcripts != 2 || s.UpToDate != 1 || s.Events == 0 {
		t.Fatalf("project dir: %+v", s)
	}
	if _, err := hooks.Import(ctx, New(), []string{filepath.Join(c.projects, "nope")}, hooks.ImportOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
}

// BenchmarkImport imports a generated projects directory (sessions with a
// subagent each, cwds in two repositories) into fresh repositories, fsync
// on; MB/s is of transcript.
func BenchmarkImport(b *testing.B) {
	root := b.TempDir()
	b.Setenv("XDG_DATA_HOME", filepath.Join(root, "data"))
	projects := filepath.Join(root, "projects")
	repos := []string{filepath.Join(root, "repo-a"), filepath.Join(root, "repo-b")}
	var total int64
	for i := range 8 {
		repo := repos[i%2]
		id := fmt.Sprintf("bench-%02d", i)
		main := filepath.Join(projects, strings.ReplaceAll(repo, "/", "-"), id+".jsonl")
		sub := filepath.Join(strings.TrimSuffix(main, ".jsonl"), "subagents", "agent-"+transcriptgen.SubagentID(int64(i+1))+".jsonl")
		var mb, sb bytes.Buffer
		if err := transcriptgen.GenerateWith(&mb, transcriptgen.Options{Seed: int64(i + 1), TargetBytes: 4 << 20, Root: repo, SessionID: id, Subagent: &sb}); err != nil {
			b.Fatal(err)
		}
		imWrite(b, main, mb.Bytes())
		imWrite(b, sub, sb.Bytes())
		total += int64(mb.Len() + sb.Len())
	}
	b.SetBytes(total)
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		for _, r := range repos {
			os.RemoveAll(r)
			if out, err := exec.Command("git", "init", "-q", r).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
			if os.Getenv("IMPORT_NOFSYNC") != "" {
				exec.Command("git", "-C", r, "config", "lossless.fsync", "false").Run()
			}
		}
		b.StartTimer()
		c0 := swCPUTime()
		s, err := hooks.Import(context.Background(), New(), []string{projects}, hooks.ImportOptions{})
		cpu += swCPUTime() - c0
		if err != nil || s.Sessions != 8 || s.Events == 0 {
			b.Fatalf("%+v %v", s, err)
		}
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// TestImportSmallBatches: a session's transcripts are stored together
// unless they hold more than MaxBatchBytes of content; stored in many
// small flushes (mid-transcript and between transcripts, each writing
// the cursors of what it stored), the archive is the one a single flush
// per session makes, and a second import adds nothing.
func TestImportSmallBatches(t *testing.T) {
	ctx := context.Background()
	c := imNewCorpus(t, 2)
	one, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, d := range c.archives() {
		want[d] = imEventSet(t, d)
	}
	commits := strings.Count(swGit(t, c.repoA, "log", "--oneline", "--all"), "\n")
	c.initRepos(t)
	small, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{Sweep: hooks.SweepOptions{MaxBatchBytes: 2_000}})
	if err != nil {
		t.Fatal(err)
	}
	if small.Events != one.Events || small.Deduped != one.Deduped || small.Transcripts != one.Transcripts {
		t.Fatalf("small batches: %+v\none batch: %+v", small, one)
	}
	for _, d := range c.archives() {
		if got := imEventSet(t, d); strings.Join(got, "\n") != strings.Join(want[d], "\n") {
			t.Errorf("%s: %d events in small batches, %d in one", d, len(got), len(want[d]))
		}
	}
	// More batch commits than one flush per session makes: the flushes
	// were many.
	if n := strings.Count(swGit(t, c.repoA, "log", "--oneline", "--all"), "\n"); n <= commits {
		t.Errorf("repo-a: %d batch commits in small batches, %d in one", n, commits)
	}
	again, err := hooks.Import(ctx, New(), []string{c.projects}, hooks.ImportOptions{})
	if err != nil || again.Events != 0 || again.UpToDate != again.Transcripts {
		t.Fatalf("second import: %+v %v", again, err)
	}
}

// TestImportKeepsSecretsOut attacks the import as a hostile history
// would: a past session whose prompt, shell output (Bash `env`) and Grep
// result carry credentials, and which read .env and a symlink with an
// innocent name pointing at it. The import goes through the sweep, so no
// credential may reach any object of the archive (read back with the real
// git cat-file), the denied reads are recorded without content, and the
// archive passes git fsck.
func TestImportKeepsSecretsOut(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	repo := swGitInit(t)
	sec := testkit.PlantedSecrets(42)
	envFile := filepath.Join(repo, ".env")
	imWrite(t, envFile, []byte("OPENAI_API_KEY="+sec["openai"]+"\n"))
	link := filepath.Join(repo, "settings.txt")
	if err := os.Symlink(envFile, link); err != nil {
		t.Fatal(err)
	}
	envOut := "HOME=/home/dev\nGITHUB_TOKEN=" + sec["github"] + "\nAWS_ACCESS_KEY_ID=" + sec["aws-id"] +
		"\nAWS_SECRET_ACCESS_KEY=" + sec["aws-key"] + "\nSLACK_BOT_TOKEN=" + sec["slack"] + "\n"
	lines := []string{
		trLine("user", "u1", `"message":{"role":"user","content":`+trQ("deploy with key "+sec["anthropic"]+" please")+`}`),
		trToolUse("a1", "tb", "Bash", `{"command":"env"}`),
		trToolResult("r1", "tb", trQ(envOut), `{"stdout":`+trQ(envOut)+`,"stderr":"","interrupted":false}`),
		trToolUse("a2", "tg", "Grep", `{"pattern":"sk-"}`),
		trToolResult("r2", "tg", trQ("config/prod.yaml:3:  stripe: "+sec["stripe"]), ""),
	}
	for i, f := range []string{envFile, link} {
		id := fmt.Sprint("tr", i)
		content := "OPENAI_API_KEY=" + sec["openai"] + "\n"
		lines = append(lines,
			trToolUse(fmt.Sprint("ar", i), id, "Read", `{"file_path":`+trQ(f)+`}`),
			trToolResult(fmt.Sprint("rr", i), id, trQ("1\t"+content),
				`{"type":"text","file":{"filePath":`+trQ(f)+`,"content":`+trQ(content)+`,"numLines":2,"startLine":1,"totalLines":2}}`))
	}
	text := strings.ReplaceAll(strings.Join(lines, "\n")+"\n", `"cwd":"/p"`, `"cwd":`+trQ(repo))
	projects := t.TempDir()
	imWrite(t, filepath.Join(projects, "-repo", "s1.jsonl"), []byte(text))

	stats, err := hooks.Import(context.Background(), New(), []string{projects}, hooks.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Events == 0 {
		t.Fatalf("nothing imported: %+v", stats)
	}
	objects := swGit(t, repo, "cat-file", "--batch-all-objects", "--batch")
	for kind, v := range sec {
		if kind != "password" && strings.Contains(objects, v) {
			t.Errorf("the planted %s credential reached the archive", kind)
		}
	}
	st := swOpen(t, repo)
	reads := swEvents(t, st, gitstore.Query{Op: "read"})
	if len(reads) != 2 {
		t.Fatalf("%d reads archived, want the two of .env", len(reads))
	}
	for _, e := range reads {
		if !e.Excluded || e.Blob != "" {
			t.Errorf("a denied read was archived with content: %s", e.Raw)
		}
	}
	swGit(t, repo, "fsck", "--strict", "--no-progress")
}
