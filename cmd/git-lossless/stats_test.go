package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// statsScript is a scripted history for stats: a person and two agent
// contexts of different harnesses, with the test's own bookkeeping of
// what each commit adds and who wrote it.
type statsScript struct {
	sb   *sandbox
	repo string
	st   *gitstore.Store
	now  time.Time
	// files is each file's lines as the script made them.
	files map[string][]string
}

// statsWant is the bookkeeping of one commit.
type statsWant struct {
	commit, author   string
	added, removed   int
	human, rewritten int
	harness, session map[string]int // agent lines
	agentLines       int
}

type statsAgent struct{ writer, session, harness string }

var (
	statsAlpha = statsAgent{"cc-alpha", "alpha", "claude-code"}
	statsBeta  = statsAgent{"codex-beta", "beta", "codex"}
)

func (s *statsScript) tick() time.Time {
	s.now = s.now.Add(time.Minute)
	return s.now
}

func (s *statsScript) content(f string) []byte {
	if len(s.files[f]) == 0 {
		return nil
	}
	return []byte(strings.Join(s.files[f], "\n") + "\n")
}

// event archives what an agent context read or wrote of f: the script's
// lines of f as they are.
func (s *statsScript) event(a statsAgent, op, f string) {
	s.sb.t.Helper()
	e := gitstore.Event{TS: s.tick(), Session: a.session, Op: gitstore.Op(op), Source: "hook", View: "full", Tool: "Edit", Harness: a.harness,
		Key: a.session + "-" + strconv.FormatInt(s.now.Unix(), 10)}
	e.SetPath(f)
	if _, err := s.st.Append(context.Background(), a.writer, []gitstore.Record{{Event: e, Content: s.content(f), HasContent: true}}); err != nil {
		s.sb.t.Fatal(err)
	}
}

func (s *statsScript) write(f string) {
	s.sb.t.Helper()
	writeFile(s.sb.t, filepath.Join(s.repo, f), s.content(f))
}

// agentAppend: the context reads f, then its write appends lines.
func (s *statsScript) agentAppend(a statsAgent, f string, lines ...string) {
	if len(s.files[f]) > 0 {
		s.event(a, "read", f)
	}
	s.files[f] = append(s.files[f], lines...)
	s.event(a, "edit", f)
	s.write(f)
}

func (s *statsScript) commit(author, msg string) string {
	s.sb.t.Helper()
	s.sb.git(s.repo, "add", "-A")
	stamp := s.tick().Format(time.RFC3339)
	env := s.sb.env
	s.sb.env = append(append([]string(nil), env...), "GIT_AUTHOR_NAME="+author, "GIT_AUTHOR_DATE="+stamp, "GIT_COMMITTER_DATE="+stamp)
	s.sb.git(s.repo, "commit", "-q", "-m", msg)
	s.sb.env = env
	return strings.TrimSpace(s.sb.git(s.repo, "rev-parse", "HEAD"))
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + " line number " + strconv.Itoa(i+1) + " of the script"
	}
	return out
}

// buildStatsScript runs the script and returns the bookkeeping of each
// commit, oldest first.
func buildStatsScript(t *testing.T) (*statsScript, []statsWant) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &statsScript{sb: sb, repo: repo, st: st, now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), files: map[string][]string{}}
	var wants []statsWant

	// 1. Pat writes calc.go: 6 lines of a person.
	s.files["calc.go"] = numbered("pat calc", 6)
	s.write("calc.go")
	wants = append(wants, statsWant{commit: s.commit("Pat", "calc"), author: "Pat", added: 6, human: 6})

	// 2. alpha (Claude Code) appends 5 lines; Pat commits them.
	s.agentAppend(statsAlpha, "calc.go", numbered("alpha mul", 5)...)
	wants = append(wants, statsWant{commit: s.commit("Pat", "mul by alpha"), author: "Pat", added: 5,
		harness: map[string]int{"claude-code": 5}, session: map[string]int{"alpha": 5}})

	// 3. beta (Codex) appends 4 lines; Sam changes one of them and adds 3
	// of his own before committing: beta's changed line is Sam's, and it
	// counts as rewritten.
	beta := numbered("beta sub", 4)
	s.agentAppend(statsBeta, "calc.go", beta...)
	n := len(s.files["calc.go"])
	s.files["calc.go"][n-2] = "sam changed what beta wrote here"
	s.files["calc.go"] = append(s.files["calc.go"], numbered("sam div", 3)...)
	s.write("calc.go")
	wants = append(wants, statsWant{commit: s.commit("Sam", "sub and div"), author: "Sam", added: 7, human: 1 + 3, rewritten: 1,
		harness: map[string]int{"codex": 3}, session: map[string]int{"beta": 3}})

	// 4. alpha writes notes.md (3 lines); Pat drops 2 of his first lines
	// of calc.go in the same commit.
	s.agentAppend(statsAlpha, "notes.md", numbered("alpha notes", 3)...)
	s.files["calc.go"] = s.files["calc.go"][2:]
	s.write("calc.go")
	wants = append(wants, statsWant{commit: s.commit("Pat", "notes"), author: "Pat", added: 3, removed: 2,
		harness: map[string]int{"claude-code": 3}, session: map[string]int{"alpha": 3}})

	// 5. beta appends 2 lines to notes.md and Sam commits them; Sam also
	// removes one of alpha's lines from calc.go.
	s.agentAppend(statsBeta, "notes.md", numbered("beta notes", 2)...)
	s.files["calc.go"] = append(s.files["calc.go"][:4], s.files["calc.go"][5:]...)
	s.write("calc.go")
	wants = append(wants, statsWant{commit: s.commit("Sam", "more notes"), author: "Sam", added: 2, removed: 1,
		harness: map[string]int{"codex": 2}, session: map[string]int{"beta": 2}})
	for i := range wants {
		for _, n := range wants[i].harness {
			wants[i].agentLines += n
		}
	}
	return s, wants
}

type statsDoc struct {
	Range   string `json:"range"`
	By      string `json:"by"`
	Commits []struct {
		Commit    string         `json:"commit"`
		Summary   string         `json:"summary"`
		Author    string         `json:"author"`
		Added     int            `json:"added"`
		Agent     int            `json:"agent"`
		Human     int            `json:"human"`
		Removed   int            `json:"removed"`
		Rewritten int            `json:"rewritten"`
		By        map[string]int `json:"by"`
	} `json:"commits"`
	Totals struct {
		Commits   int            `json:"commits"`
		Added     int            `json:"added"`
		Agent     int            `json:"agent"`
		Human     int            `json:"human"`
		Removed   int            `json:"removed"`
		Rewritten int            `json:"rewritten"`
		By        map[string]int `json:"by"`
	} `json:"totals"`
	Shortstat struct {
		Files      int `json:"files"`
		Insertions int `json:"insertions"`
		Deletions  int `json:"deletions"`
	} `json:"shortstat"`
	Differs bool   `json:"differs"`
	Note    string `json:"note"`
}

func (sb *sandbox) statsJSON(repo string, args ...string) statsDoc {
	sb.t.Helper()
	r := sb.ok(repo, append([]string{"stats", "--json"}, args...)...)
	var doc statsDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		sb.t.Fatalf("stats --json is not one document: %v\n%s", err, r.stdout)
	}
	return doc
}

// gitShortstatOf is what the real git prints, read by the test itself.
func gitShortstatOf(sb *sandbox, repo string, args ...string) (files, ins, del int, line string) {
	sb.t.Helper()
	line = strings.TrimSpace(sb.git(repo, append([]string{"diff", "--shortstat"}, args...)...))
	for _, m := range regexp.MustCompile(`(\d+) (file|insertion|deletion)`).FindAllStringSubmatch(line, -1) {
		n, _ := strconv.Atoi(m[1])
		switch m[2] {
		case "file":
			files = n
		case "insertion":
			ins = n
		case "deletion":
			del = n
		}
	}
	return files, ins, del, line
}

// TestStatsCommand: per commit, the agent and human lines stats finds
// from the archive and git are the script's own bookkeeping; totals by
// harness, session, author and model add up; the shortstat is git's own;
// --json has the documented keys; a bad range fails with git's message.
func TestStatsCommand(t *testing.T) {
	s, wants := buildStatsScript(t)
	sb, repo := s.sb, s.repo

	doc := sb.statsJSON(repo, "HEAD")
	if doc.Range != "HEAD" || doc.By != "harness" || len(doc.Commits) != len(wants) {
		t.Fatalf("stats --json HEAD: range %q by %q, %d commits, want %d", doc.Range, doc.By, len(doc.Commits), len(wants))
	}
	var tot statsWant
	tot.harness = map[string]int{}
	for i, w := range wants {
		c := doc.Commits[i]
		if c.Commit != w.commit || c.Author != w.author {
			t.Errorf("commit %d: %s by %s, want %s by %s", i+1, c.Commit, c.Author, w.commit, w.author)
		}
		if c.Added != w.added || c.Agent != w.agentLines || c.Human != w.human || c.Removed != w.removed || c.Rewritten != w.rewritten {
			t.Errorf("commit %d (%s): added %d agent %d human %d removed %d rewritten %d; want %d %d %d %d %d", i+1, c.Summary,
				c.Added, c.Agent, c.Human, c.Removed, c.Rewritten, w.added, w.agentLines, w.human, w.removed, w.rewritten)
		}
		want := map[string]int{}
		for k, n := range w.harness {
			want[k] = n
			tot.harness[k] += n
		}
		if w.human > 0 {
			want["human"] = w.human
		}
		if !sameCounts(c.By, want) {
			t.Errorf("commit %d: by %v, want %v", i+1, c.By, want)
		}
		tot.added += w.added
		tot.removed += w.removed
		tot.human += w.human
		tot.agentLines += w.agentLines
		tot.rewritten += w.rewritten
	}
	tot.harness["human"] = tot.human
	if tt := doc.Totals; tt.Commits != len(wants) || tt.Added != tot.added || tt.Agent != tot.agentLines || tt.Human != tot.human ||
		tt.Removed != tot.removed || tt.Rewritten != tot.rewritten || !sameCounts(tt.By, tot.harness) {
		t.Errorf("totals %+v, want %+v", doc.Totals, tot)
	}
	// The shortstat is the real git's, from the empty tree to HEAD; with
	// lines removed in the range it is not the per-commit sums, and says so.
	emptyTree := strings.TrimSpace(sb.git(repo, "hash-object", "-t", "tree", "/dev/null"))
	files, ins, del, line := gitShortstatOf(sb, repo, emptyTree, "HEAD")
	if doc.Shortstat.Files != files || doc.Shortstat.Insertions != ins || doc.Shortstat.Deletions != del || files != 2 {
		t.Errorf("shortstat %+v, git diff --shortstat says %q", doc.Shortstat, line)
	}
	if !doc.Differs || ins == tot.added || !strings.Contains(doc.Note, "counts in both commits") {
		t.Errorf("differs %v (note %q): git's %d insertions, sums %d", doc.Differs, doc.Note, ins, tot.added)
	}

	// The documented keys, read as a plain map.
	r := sb.ok(repo, "stats", "--json", "HEAD")
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"range", "by", "commits", "totals", "shortstat", "differs", "note"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("stats --json lacks %q: %s", k, r.stdout)
		}
	}
	c0 := raw["commits"].([]any)[0].(map[string]any)
	for _, k := range []string{"commit", "summary", "author", "added", "agent", "human", "removed", "rewritten", "by"} {
		if _, ok := c0[k]; !ok {
			t.Errorf("a commit of stats --json lacks %q: %v", k, c0)
		}
	}
	for _, k := range []string{"commits", "added", "agent", "human", "removed", "rewritten", "by"} {
		if _, ok := raw["totals"].(map[string]any)[k]; !ok {
			t.Errorf("totals of stats --json lack %q", k)
		}
	}
	for _, k := range []string{"files", "insertions", "deletions"} {
		if _, ok := raw["shortstat"].(map[string]any)[k]; !ok {
			t.Errorf("shortstat of stats --json lacks %q", k)
		}
	}

	// --by session, author and model.
	bySession, byAuthor := map[string]int{"human": tot.human}, map[string]int{"human": tot.human}
	for _, w := range wants {
		for k, n := range w.session {
			bySession[k] += n
			byAuthor[w.author] += n
		}
	}
	if d := sb.statsJSON(repo, "HEAD", "--by", "session"); !sameCounts(d.Totals.By, bySession) || d.By != "session" {
		t.Errorf("--by session: %v, want %v", d.Totals.By, bySession)
	}
	if d := sb.statsJSON(repo, "HEAD", "--by", "author"); !sameCounts(d.Totals.By, byAuthor) {
		t.Errorf("--by author: %v, want %v", d.Totals.By, byAuthor)
	}
	if d := sb.statsJSON(repo, "HEAD", "--by", "model"); !sameCounts(d.Totals.By, map[string]int{"unknown": tot.agentLines, "human": tot.human}) {
		t.Errorf("--by model (the archive names none): %v", d.Totals.By)
	}

	// A range A..B: its commits only, and git diff A..B's numbers.
	d := sb.statsJSON(repo, wants[1].commit+".."+wants[3].commit)
	if len(d.Commits) != 2 || d.Commits[0].Commit != wants[2].commit || d.Commits[1].Commit != wants[3].commit {
		t.Fatalf("range of 2 commits: %+v", d.Commits)
	}
	files, ins, del, line = gitShortstatOf(sb, repo, wants[1].commit, wants[3].commit)
	if d.Shortstat.Files != files || d.Shortstat.Insertions != ins || d.Shortstat.Deletions != del {
		t.Errorf("range shortstat %+v, git says %q", d.Shortstat, line)
	}
	if sums := wants[2].added + wants[3].added; d.Differs != (ins != sums || del != wants[2].removed+wants[3].removed) {
		t.Errorf("range: differs %v, git %d/%d, sums %d", d.Differs, ins, del, sums)
	}

	// The table: one row per commit, the groups, git's line as printed.
	r = sb.ok(repo, "stats", "HEAD")
	for i, w := range wants {
		row := regexp.MustCompile(`(?m)^` + w.commit[:12] + `  .*?  ` + strconv.Itoa(w.added) + ` +` + strconv.Itoa(w.agentLines) + ` +` +
			strconv.Itoa(w.human) + ` +` + strconv.Itoa(w.removed) + ` +` + strconv.Itoa(w.rewritten) + `$`)
		if !row.MatchString(r.stdout) {
			t.Errorf("table lacks the row of commit %d (%s):\n%s", i+1, row, r.stdout)
		}
	}
	_, _, _, line = gitShortstatOf(sb, repo, emptyTree, "HEAD")
	share := func(n int) string { return strconv.FormatFloat(100*float64(n)/float64(tot.added), 'f', 1, 64) + "%" }
	for _, k := range []string{"claude-code", "codex", "human"} {
		if re := regexp.MustCompile(`(?m)^` + k + ` +` + strconv.Itoa(tot.harness[k]) + ` +` + regexp.QuoteMeta(share(tot.harness[k])) + `$`); !re.MatchString(r.stdout) {
			t.Errorf("table lacks the %s group (%s):\n%s", k, re, r.stdout)
		}
	}
	for _, want := range []string{
		"HEAD: 5 commits, " + strconv.Itoa(tot.added) + " lines added",
		"agent lines: " + strconv.Itoa(tot.agentLines) + " committed as written, 1 changed or dropped before commit",
		"git diff --shortstat " + emptyTree + " HEAD: " + line + "\n",
		"the per-commit sums differ (" + strconv.Itoa(tot.added) + " lines added, 3 lines removed): ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	// One commit: singular words, sums equal to git's.
	r = sb.ok(repo, "stats", wants[3].commit+"^.."+wants[3].commit)
	for _, want := range []string{": 1 commit, 3 lines added", "the per-commit sums are the same"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("one-commit table lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "%!") || strings.Contains(r.stdout, "map[") {
		t.Errorf("Go value formatting in the table:\n%s", r.stdout)
	}
}

// A bad range fails, non-zero, with git's own message.
func TestStatsBadRange(t *testing.T) {
	sb := newSandbox(t)
	repo := sb.initRepo("repo")
	writeFile(t, filepath.Join(repo, "f.txt"), []byte("x\n"))
	sb.git(repo, "add", "f.txt")
	sb.git(repo, "commit", "-q", "-m", "one")
	_, gitErr, err := sb.gitRaw(repo, nil, "log", "no-such-rev..HEAD", "--")
	if err == nil {
		t.Fatal("git log accepts a bad range")
	}
	gitMsg := strings.TrimSpace(strings.Split(string(gitErr), "\n")[0])
	r := sb.run(repo, "stats", "no-such-rev..HEAD")
	if r.code == 0 || !strings.Contains(r.stderr, gitMsg) || r.stdout != "" {
		t.Errorf("bad range: exit %d, stderr %q (git says %q), stdout %q", r.code, r.stderr, gitMsg, r.stdout)
	}
	for _, c := range [][]string{{"stats", "--by", "file"}, {"stats", "A..B", "C"}, {"stats", "--", "-x"}} {
		if r := sb.run(repo, c...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", c, r.code, exitUsage, r.stderr)
		}
	}
	// The default range: all history without an upstream; the commits
	// not pushed with one.
	if d := sb.statsJSON(repo); d.Range != "HEAD" || len(d.Commits) != 1 {
		t.Errorf("default range without an upstream: %q, %d commits", d.Range, len(d.Commits))
	}
	up := sb.initRepo("up", "--bare")
	sb.git(repo, "remote", "add", "origin", up)
	sb.git(repo, "push", "-q", "-u", "origin", "main")
	writeFile(t, filepath.Join(repo, "f.txt"), []byte("x\ny\n"))
	sb.git(repo, "commit", "-q", "-am", "two")
	if d := sb.statsJSON(repo); d.Range != "origin/main..HEAD" || len(d.Commits) != 1 || d.Commits[0].Summary != "two" {
		t.Errorf("default range with an upstream: %q, %+v", d.Range, d.Commits)
	}
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	return true
}
