package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

const (
	imSample      = testkit.SampleSession
	imSampleAgent = testkit.SampleAgent
)

// imCorpus is a projects directory, laid out as Claude Code lays it out,
// of copies of the real sample session (main and subagent, compaction
// included), each with its own session id, whose cwds are two
// repositories of the sandbox and a directory that does not exist.
type imCorpus struct {
	sb           *sandbox
	projects     string
	repoA, repoB string
	missing      string
	embedded     string
}

func newImCorpus(t *testing.T, sb *sandbox, projects string, perDest int) *imCorpus {
	t.Helper()
	root, err := filepath.EvalSymlinks(sb.root)
	if err != nil {
		t.Fatal(err)
	}
	c := &imCorpus{sb: sb, projects: projects, repoA: filepath.Join(root, "repo-a"), repoB: filepath.Join(root, "repo-b"),
		missing: filepath.Join(root, "gone", "project"), embedded: filepath.Join(sb.data, "git-lossless", "archive.git")}
	c.reset(t)
	n := 0
	for _, cwd := range []string{c.repoA, c.repoB, c.missing} {
		slug := strings.ReplaceAll(cwd, "/", "-")
		for range perDest {
			id := imSample
			if n > 0 {
				id = fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
			}
			n++
			testkit.CopySample(t, filepath.Join(projects, slug), cwd, id)
		}
	}
	return c
}

// reset makes the two repositories anew at the same paths and removes
// the embedded archive: nothing archived, no cursors.
func (c *imCorpus) reset(t *testing.T) {
	t.Helper()
	for _, d := range []string{c.repoA, c.repoB, c.embedded} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []string{c.repoA, c.repoB} {
		c.sb.git(c.sb.root, "init", "-q", "-b", "main", r)
		c.sb.git(r, "config", "lossless.fsync", "false")
	}
}

func (c *imCorpus) archives() []string { return []string{c.repoA, c.repoB, c.embedded} }

// events is every event of an archive as writer|key|op|path|blob, sorted.
func (c *imCorpus) events(t *testing.T, dir string) []string {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	loc := gitstore.Location{GitDir: filepath.Join(dir, ".git"), CommonDir: filepath.Join(dir, ".git"), WorkTree: dir}
	if dir == c.embedded {
		loc = gitstore.Location{GitDir: dir, CommonDir: dir, Embedded: true}
	}
	st, err := gitstore.Open(loc, gitstore.Options{})
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

func (c *imCorpus) fsck(t *testing.T) {
	t.Helper()
	c.sb.fsck(c.repoA)
	c.sb.fsck(c.repoB)
	c.sb.git(c.sb.root, "--git-dir", c.embedded, "fsck", "--strict", "--no-dangling")
}

func importJSON(t *testing.T, r result) hooks.ImportStats {
	t.Helper()
	var s hooks.ImportStats
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("import --json: %v\n%s", err, r.stdout)
	}
	return s
}

// TestImportE2E: `git lossless import` with no argument imports Claude
// Code's projects directory (~/.claude/projects, then
// $CLAUDE_CONFIG_DIR/projects) into the repositories the sessions' cwds
// belong to and, for the cwd that is gone, into the embedded archive; a
// second import adds nothing.
func TestImportE2E(t *testing.T) {
	sb := newSandbox(t)
	c := newImCorpus(t, sb, filepath.Join(sb.home, ".claude", "projects"), 1)

	dry := sb.ok(sb.root, "import", "--dry-run")
	if !strings.Contains(dry.stdout, "would import 3 sessions (6 transcripts") || !strings.Contains(dry.stdout, c.embedded+" (embedded archive)") {
		t.Fatalf("dry run:\n%s", dry.stdout)
	}
	if refs := sb.git(c.repoA, "for-each-ref", "refs/lossless"); refs != "" {
		t.Fatalf("dry run stored: %s", refs)
	}

	r := sb.ok(sb.root, "import")
	for _, want := range []string{
		`(?m)^imported 3 sessions \(6 transcripts, 0 already up to date; [\d.]+ MB read\) in .*: (\d+) events stored, 3 already archived$`,
		`(?m)^  ` + regexp.QuoteMeta(c.repoA) + `\s+1\s+2\s+[\d.]+ MB\s+\d+$`,
		`(?m)^  ` + regexp.QuoteMeta(c.repoB) + `\s+1\s+2\s+[\d.]+ MB\s+\d+$`,
		`(?m)^  ` + regexp.QuoteMeta(c.embedded) + ` \(embedded archive\)\s+1\s+2\s+[\d.]+ MB\s+\d+$`,
		`(?m)^skipped 3 files:$`,
		`(?m)^  3 not a transcript of the harness$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("summary lacks %s:\n%s", want, r.stdout)
		}
	}
	// Plain progress lines on a pipe, the last one at 6/6.
	if !regexp.MustCompile(`(?m)^import: 6/6 files, [\d.]+/[\d.]+ MB, \d+ events`).MatchString(r.stderr) {
		t.Errorf("progress:\n%s", r.stderr)
	}
	// Every archive holds its session's events, read back by the CLI
	// (the embedded one from a directory outside any repository).
	for _, d := range []string{c.repoA, c.repoB, filepath.Join(sb.root, "gone")} {
		if d == filepath.Join(sb.root, "gone") {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		_, evs := sb.log(d)
		var compact, sidechain, reads int
		for _, e := range evs {
			switch {
			case e.Op == "compact":
				compact++
			case e.Op == "read" && strings.HasSuffix(e.Path, "hello.txt"):
				reads++
			}
			if strings.Contains(e.Line, `"agent":"`+imSampleAgent+`"`) {
				sidechain++
			}
		}
		if len(evs) == 0 || compact != 1 || reads == 0 || sidechain == 0 {
			t.Errorf("%s: %d events, %d compactions, %d reads of hello.txt, %d subagent events", d, len(evs), compact, reads, sidechain)
		}
	}
	c.fsck(t)
	before := map[string][]string{}
	for _, d := range c.archives() {
		before[d] = c.events(t, d)
	}

	// Again, with CLAUDE_CONFIG_DIR naming the same directory's parent: nothing new.
	sb.setenv("CLAUDE_CONFIG_DIR", filepath.Join(sb.home, ".claude"))
	again := importJSON(t, sb.ok(sb.root, "import", "--json", "--quiet"))
	if again.Events != 0 || again.UpToDate != 6 || again.Sessions != 3 {
		t.Fatalf("second import: %+v", again)
	}
	for _, d := range c.archives() {
		if got := c.events(t, d); strings.Join(got, "\n") != strings.Join(before[d], "\n") {
			t.Errorf("%s changed on the second import", d)
		}
	}

	sb.setenv("GIT_DIR", filepath.Join(c.repoA, ".git"))
	if r := sb.run(sb.root, "import"); r.code != exitError || !strings.Contains(r.stderr, "GIT_DIR is set") {
		t.Errorf("GIT_DIR set: exit %d\n%s", r.code, r.stderr)
	}
	sb.setenv("GIT_DIR", "")
	sb.setenv("CLAUDE_CONFIG_DIR", filepath.Join(sb.root, "nowhere"))
	// Every registered harness is looked for: the message names them all
	// and where each was looked for.
	if r := sb.run(sb.root, "import"); r.code != exitError || !strings.Contains(r.stderr, "no sessions of claude-code") || !strings.Contains(r.stderr, filepath.Join(sb.root, "nowhere", "projects")) {
		t.Errorf("no projects directory: exit %d\n%s", r.code, r.stderr)
	}
}

// TestImportKilledResumes: an import killed with SIGKILL halfway and run
// again ends with the archives one uninterrupted import makes (the same
// events by writer, key, op, path and blob, none twice).
func TestImportKilledResumes(t *testing.T) {
	sb := newSandbox(t)
	c := newImCorpus(t, sb, filepath.Join(sb.root, "projects"), 20)
	files := 120

	whole := importJSON(t, sb.ok(sb.root, "import", "--json", "--quiet", c.projects))
	if whole.Transcripts != files || whole.Events == 0 {
		t.Fatalf("uninterrupted import: %+v", whole)
	}
	want := map[string][]string{}
	for _, d := range c.archives() {
		want[d] = c.events(t, d)
		if len(want[d]) == 0 {
			t.Fatalf("%s: nothing imported", d)
		}
	}

	c.reset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2eBin, "import", c.projects)
	cmd.Dir, cmd.Env = sb.root, sb.env
	progress, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill as soon as a progress line shows some files done but fewer
	// than half.
	re := regexp.MustCompile(`^import: (\d+)/(\d+) files`)
	sc := bufio.NewScanner(progress)
	var seen []string
	killed := false
	for sc.Scan() {
		seen = append(seen, sc.Text())
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		done, _ := strconv.Atoi(m[1])
		total, _ := strconv.Atoi(m[2])
		if total != files {
			t.Fatalf("progress names %d files, want %d: %q", total, files, sc.Text())
		}
		if done > 0 && done < total/2 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
	}
	// The pipe ends when the process does; then reap it, so that a lock
	// it held is seen as stale at once.
	if _, err := io.Copy(io.Discard, progress); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("no progress line with some but not half of the files done:\n%s", strings.Join(seen, "\n"))
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("import was not killed (it finished first?): %v", err)
	}
	interrupted := 0
	for _, d := range c.archives() {
		interrupted += len(c.events(t, d))
	}

	again := importJSON(t, sb.ok(sb.root, "import", "--json", "--quiet", c.projects))
	if again.Transcripts != files || again.UpToDate == 0 || again.UpToDate == files || len(again.Failed) > 0 {
		t.Fatalf("resumed import: %d transcripts, %d up to date (want some, not all), failed %v", again.Transcripts, again.UpToDate, again.Failed)
	}
	total := 0
	for _, d := range c.archives() {
		got := c.events(t, d)
		total += len(got)
		if strings.Join(got, "\n") != strings.Join(want[d], "\n") {
			t.Errorf("%s: %d events after kill and resume, %d after one uninterrupted import", d, len(got), len(want[d]))
		}
	}
	if interrupted >= total {
		t.Errorf("the killed import had stored all %d events already", total)
	}
	c.fsck(t)
}
