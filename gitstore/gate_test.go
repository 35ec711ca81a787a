package gitstore_test

// The push gate sees everything that leaves (issue 19, item 5): event
// metadata, commit messages, tree entry names, ref names and notes, and
// judges each file version by the file it was read from (symlinks, a
// recorded real_path, hard links). Each test here reproduces a hole a
// hostile run found, with real git on both sides.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/secrets"
)

// fieldKeys lists problems as kind:writer#seq:content:field.
func fieldKeys(ps []gitstore.PushProblem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p.Kind)+":"+p.Writer+"#"+strconv.FormatInt(p.Seq, 10)+":"+string(p.Content)+":"+p.Field)
	}
	sort.Strings(out)
	return out
}

// noSecretShown fails when the raw secret appears in a problem's line, its
// JSON, or the plan as it is printed (its JSON).
func noSecretShown(t *testing.T, plan *gitstore.Outgoing, probs []gitstore.PushProblem, raw ...string) {
	t.Helper()
	planJS, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		if bytes.Contains(planJS, []byte(r)) {
			t.Errorf("the plan's JSON shows the secret %.8s…", r)
		}
		for _, p := range probs {
			js, _ := json.Marshal(p)
			if strings.Contains(p.String(), r) || bytes.Contains(js, []byte(r)) {
				t.Errorf("a problem shows the secret %.8s…: %s", r, p)
			}
		}
	}
}

func gateCheck(t *testing.T, st *gitstore.Store, remote map[string]string, pol gitstore.PushPolicy) (*gitstore.Outgoing, []gitstore.PushProblem) {
	t.Helper()
	plan, err := st.Outgoing(context.Background(), remote)
	if err != nil {
		t.Fatal(err)
	}
	probs, err := plan.Check(context.Background(), pol)
	if err != nil {
		t.Fatal(err)
	}
	return plan, probs
}

// A session id, an agent name, a file name and a real_path holding a
// credential were pushed with exit 0 (the gate scanned content only): each
// is now a secret problem naming writer, entry and field, the secret only
// masked; the same session id in several events is one problem.
func TestGateEventMetadata(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	st := ogOpen(t, dir)
	tok := ogToken(4)
	pw := "hunter2verysecretvalue"
	s1 := ogRead("f.txt", "hello\n")
	s1.Session = "sess-" + tok
	s1b := ogRead("f2.txt", "hello again\n")
	s1b.Session = "sess-" + tok
	a := ogRead("g.txt", "g\n")
	a.Agent = "password=" + pw
	named := ogRead("token="+tok+".txt", "fine\n")
	rp := ogRead("h.txt", "h\n")
	rp.Extra = map[string]json.RawMessage{"real_path": json.RawMessage(`"keys/` + tok + `"`)}
	clean := ogRead("clean.txt", "nothing\n")
	// Event lines are JSON: a key hidden behind \u escapes is still read.
	esc := ogRead("e.txt", "e\n")
	esc.Extra = map[string]json.RawMessage{"note": json.RawMessage(`"\u0067hp_` + tok[4:] + `"`)}
	ogAppend(t, st, "w", s1, s1b, a, named, rp, clean, esc)

	plan, probs := gateCheck(t, st, nil, gitstore.PushPolicy{})
	sameStrings(t, "problems", fieldKeys(probs), []string{
		"secret:w#1:events:session", // #1 and #2, merged
		"secret:w#3:events:agent",
		"secret:w#4:events:path",
		"secret:w#5:events:real_path",
		"secret:w#7:events:note",
	})
	if len(gitstore.Refused(probs)) != 5 {
		t.Fatalf("refused: %v", fieldKeys(gitstore.Refused(probs)))
	}
	for _, p := range probs {
		if len(p.Findings) == 0 || p.Blob == "" {
			t.Errorf("%s: no findings or no events blob: %+v", p.Field, p)
		}
		switch p.Field {
		case "session":
			if p.Entries != 2 || p.Seq != 1 || p.ToSeq != 2 || !strings.Contains(p.Reason, "in 2 events") ||
				p.Findings[0].Kind != "github-token" || p.Findings[0].Masked != secrets.Mask([]byte(tok)) {
				t.Errorf("session problem: %+v", p)
			}
			if !strings.HasPrefix(p.String(), "w#1-2 ") {
				t.Errorf("session line: %s", p)
			}
		case "agent":
			if p.Findings[0].Kind != "password" || p.Op != "read" || p.Path != "g.txt" {
				t.Errorf("agent problem: %+v", p)
			}
		case "path":
			// The path is shown, masked.
			if want := "token=" + secrets.Mask([]byte(tok)) + ".txt"; p.Path != want || !strings.Contains(p.String(), want) {
				t.Errorf("path problem shows %q, want %q", p.Path, want)
			}
		}
	}
	noSecretShown(t, plan, probs, tok, pw, tok[4:30])
	// AllowSecrets lets metadata through like content.
	_, probs = gateCheck(t, st, nil, gitstore.PushPolicy{AllowSecrets: true})
	if len(probs) != 5 || len(gitstore.Refused(probs)) != 0 {
		t.Fatalf("allowed: %v", fieldKeys(gitstore.Refused(probs)))
	}
}

// gitOut runs git in dir with stdin and returns its trimmed output.
func gitOut(t *testing.T, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// Ref names, commit messages and tree entries leave too: a writer ref
// whose name holds a key (its batch commits repeat it: one problem), a
// batch commit whose message holds one, a hand-made batch tree whose
// extra entry is named after one and holds another, and a notes ref named
// after one are each held back, shown masked.
func TestGateRefsCommitsTrees(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	st := ogOpen(t, dir)
	tok, tok2 := ogToken(5), ogToken(6)
	res := ogAppend(t, st, "w", ogRead("a.txt", "a\n"))
	head := res.Commit
	body := []byte(gitOut(t, dir, nil, "cat-file", "commit", head) + "\n")
	tree := gitOut(t, dir, nil, "rev-parse", head+"^{tree}")

	// A writer named after a key: a batch commit that names it, as this
	// store writes them.
	bad := "cli-sess-" + tok
	named := bytes.ReplaceAll(body, []byte(" on w "), []byte(" on "+bad+" "))
	named = bytes.ReplaceAll(named, []byte("Lossless-Writer: w\n"), []byte("Lossless-Writer: "+bad+"\n"))
	c1 := gitOut(t, dir, named, "hash-object", "-t", "commit", "-w", "--stdin")
	gitOut(t, dir, nil, "update-ref", "refs/lossless/"+bad, c1)

	// A commit message holding a key.
	msg := bytes.Replace(body, []byte("lossless: 1 event on w (1-1)"), []byte("lossless: deployed with "+tok2), 1)
	c2 := gitOut(t, dir, msg, "hash-object", "-t", "commit", "-w", "--stdin")
	gitOut(t, dir, nil, "update-ref", "refs/lossless/w2", c2)

	// A batch tree with an extra directory: its entry name holds a key,
	// its file a key of AWS.
	aws := "AK" + "IA" + "QWERTYUIOPASDFGH"
	blob := gitOut(t, dir, []byte("id "+aws+"\n"), "hash-object", "-w", "--stdin")
	sub := gitOut(t, dir, []byte("100644 blob "+blob+"\t"+"cfg-"+tok2+".txt\n"), "mktree")
	ents := gitOut(t, dir, nil, "ls-tree", tree)
	t3 := gitOut(t, dir, []byte(ents+"\n040000 tree "+sub+"\textra\n"), "mktree")
	withTree := bytes.Replace(body, []byte("tree "+tree), []byte("tree "+t3), 1)
	c3 := gitOut(t, dir, withTree, "hash-object", "-t", "commit", "-w", "--stdin")
	gitOut(t, dir, nil, "update-ref", "refs/lossless/w3", c3)

	// A notes ref named after a key.
	if _, err := st.WriteNote(context.Background(), "receipts-x", head, []byte("ok\n"), nil); err != nil {
		t.Fatal(err)
	}
	gitOut(t, dir, nil, "update-ref", "refs/notes/lossless/receipts-"+tok, gitOut(t, dir, nil, "rev-parse", "refs/notes/lossless/receipts-x"))

	plan, probs := gateCheck(t, st, nil, gitstore.PushPolicy{})
	mask := secrets.Mask([]byte(tok))
	sameStrings(t, "problems", fieldKeys(probs), []string{
		"secret:cli-sess-" + mask + "#0:ref:ref",
		"secret:receipts-" + mask + "#0:ref:ref",
		"secret:w2#1:commit:message",
		"secret:w3#1:tree:entry name",
		"secret:w3#1:unnamed:",
	})
	for _, p := range probs {
		if p.Content == gitstore.ContentUnnamed && (len(p.Findings) != 1 || p.Findings[0].Kind != "aws-access-key-id") {
			t.Errorf("extra blob: %+v", p)
		}
		if p.Content == gitstore.ContentCommit && p.Object != c2 {
			t.Errorf("commit problem names %s, want %s", p.Object, c2)
		}
	}
	// The extra blob is planned with its tree path.
	found := false
	for _, it := range plan.Items {
		if it.Writer == "w3" && it.Kind == gitstore.ContentUnnamed && it.TreePath == "extra/cfg-"+tok2+".txt" && it.Blob == blob {
			found = true
		}
	}
	if !found {
		t.Fatalf("the extra blob is not planned: %+v", plan.Items)
	}
	noSecretShown(t, plan, probs, tok, tok2, aws)
}

// The receipts' notes leave with a push: --dry-run said "blobs 0 bytes 0"
// for the notes ref while a receipt blob (paths, session ids) left
// unscanned. The plan now lists and counts each note blob, scans it, and
// plans only what the remote's notes tree lacks after a real push.
func TestGateNotes(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	ogGit(t, dir, "init", "-q", "--bare", bare)
	st := ogOpen(t, dir)
	ctx := context.Background()
	tok := ogToken(7)
	r1 := ogAppend(t, st, "w", ogRead("a.txt", "a\n"))
	r2 := ogAppend(t, st, "w", ogRead("b.txt", "b\n"))
	receipt := []byte(`{"v":1,"contexts":[{"session":"sess-` + tok + `","paths":["a.txt"]}]}` + "\n")
	if _, err := st.WriteNote(ctx, "receipts-k", r1.Commit, receipt, nil); err != nil {
		t.Fatal(err)
	}
	plan, probs := gateCheck(t, st, nil, gitstore.PushPolicy{})
	if len(plan.Notes) != 1 {
		t.Fatalf("notes: %+v", plan.Notes)
	}
	n := plan.Notes[0].Counts
	if n.Batches != 1 || n.Blobs != 1 || n.Bytes != int64(len(receipt)) || n.Objects != 3 {
		t.Fatalf("notes counts: %+v", n)
	}
	var notes []gitstore.OutgoingItem
	for _, it := range plan.Items {
		if it.Kind == gitstore.ContentNote {
			notes = append(notes, it)
		}
	}
	if len(notes) != 1 || notes[0].TreePath != r1.Commit || !notes[0].Notes || notes[0].Bytes != int64(len(receipt)) {
		t.Fatalf("note items: %+v", notes)
	}
	sameStrings(t, "problems", fieldKeys(probs), []string{"secret:receipts-k#0:note:"})
	if plan.Total.Blobs != 3 {
		t.Fatalf("total blobs %d, want 2 content + 1 note", plan.Total.Blobs)
	}

	// Push it all (allowed), to a real bare remote, then add a clean note:
	// only the new note, commit and tree are planned.
	res, err := st.Transport().Push(ctx, gitstore.Remote{URL: bare}, plan, false)
	if err != nil || len(res) != 2 {
		t.Fatalf("push: %+v %v", res, err)
	}
	if got := ogGit(t, bare, "cat-file", "-p", strings.TrimSpace(ogGit(t, bare, "rev-parse", "refs/notes/lossless/receipts-k"))+":"+r1.Commit); got != string(receipt) {
		t.Fatalf("the remote's note: %q", got)
	}
	if _, err := st.WriteNote(ctx, "receipts-k", r2.Commit, []byte(`{"v":1}`+"\n"), nil); err != nil {
		t.Fatal(err)
	}
	remote, err := st.Transport().LsRemote(ctx, gitstore.Remote{URL: bare})
	if err != nil {
		t.Fatal(err)
	}
	plan, probs = gateCheck(t, st, remote, gitstore.PushPolicy{})
	if len(plan.Notes) != 1 || len(plan.Writers) != 0 || len(probs) != 0 {
		t.Fatalf("incremental: %+v %v", plan, fieldKeys(probs))
	}
	if n := plan.Notes[0].Counts; n.Batches != 1 || n.Blobs != 1 || n.Objects != 3 || plan.Notes[0].NonFastForward {
		t.Fatalf("incremental notes counts: %+v", plan.Notes[0])
	}
	if len(plan.Items) != 1 || plan.Items[0].TreePath != r2.Commit {
		t.Fatalf("incremental items: %+v", plan.Items)
	}
}

// Links: the bytes of a git-ignored file, or of a file outside the
// repository, left under the name of an in-repository symlink to it, even
// when the hook had recorded the event's real_path. Each file version is
// now judged by the file it was read from: the link's target now, the
// recorded real_path, and the other names of a hard-linked file, with
// real symlinks, hard links and git's own ignore rules.
func TestGateLinks(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	ogWrite(t, outside, "from elsewhere\n")
	ogWrite(t, filepath.Join(dir, ".gitignore"), "local.yml\nprivate/\n")
	ogWrite(t, filepath.Join(dir, "local.yml"), "db: prod\n")
	ogWrite(t, filepath.Join(dir, "private", "creds.txt"), "x\n")
	ogWrite(t, filepath.Join(dir, "normal.txt"), "normal\n")
	ogWrite(t, filepath.Join(dir, "was-link.txt"), "db: prod\n") // a link when read, a file now
	for _, l := range [][2]string{{"local.yml", "notes.txt"}, {outside, "ext.txt"}, {"normal.txt", "ok.txt"}, {"private/creds.txt", "deep.txt"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "local.yml"), filepath.Join(dir, "hard.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	ogWrite(t, filepath.Join(dir, "single.txt"), "one link\n")
	st := ogOpen(t, dir)
	viaReal := ogRead("was-link.txt", "db: prod\n")
	viaReal.Extra = map[string]json.RawMessage{"real_path": json.RawMessage(`"local.yml"`)}
	viaRealOut := ogRead("gone.txt", "from elsewhere\n")
	viaRealOut.Extra = map[string]json.RawMessage{"real_path": json.RawMessage(strconv.Quote(outside))}
	ogAppend(t, st, "w",
		ogRead("notes.txt", "db: prod\n"),     // #1 symlink to an ignored file
		ogRead("ext.txt", "from elsewhere\n"), // #2 symlink out of the repository
		ogRead("hard.txt", "db: prod\n"),      // #3 hard link of an ignored file
		ogRead("ok.txt", "normal\n"),          // #4 symlink to a file git commits
		ogRead("deep.txt", "x\n"),             // #5 symlink into an ignored directory
		viaReal,                               // #6 recorded real_path: ignored
		viaRealOut,                            // #7 recorded real_path: outside
		ogRead("single.txt", "one link\n"),    // #8 plain
		ogRead("normal.txt", "normal\n"),      // #9 plain
	)
	ci := &countingIgnore{}
	plan, probs := gateCheck(t, st, nil, gitstore.PushPolicy{Ignore: ci})
	_ = plan
	sameStrings(t, "problems", probKeys(probs), []string{
		"ignored:w#1:notes.txt",
		"outside:w#2:ext.txt",
		"ignored:w#3:hard.txt",
		"ignored:w#5:deep.txt",
		"ignored:w#6:was-link.txt",
		"outside:w#7:gone.txt",
	})
	want := map[int64]string{
		1: "a symlink to " + filepath.Join(dir, "local.yml") + ", which git ignores (.gitignore:1: local.yml)",
		2: "a symlink to " + outside + ": outside the repository",
		3: "a hard link of local.yml, which git ignores (.gitignore:1: local.yml)",
		5: "a symlink to " + filepath.Join(dir, "private", "creds.txt") + ", which git ignores (.gitignore:2: private/)",
		6: "read through a symlink to local.yml, which git ignores (.gitignore:1: local.yml)",
		7: "read through a symlink to " + outside + ": outside",
	}
	for _, p := range probs {
		if !strings.HasPrefix(p.Reason, want[p.Seq]) {
			t.Errorf("#%d reason %q, want it to start %q", p.Seq, p.Reason, want[p.Seq])
		}
		if p.Kind == gitstore.ProblemIgnored && !strings.HasPrefix(p.Rule, ".gitignore:") {
			t.Errorf("#%d rule %q", p.Seq, p.Rule)
		}
	}
	if len(ci.calls) != 1 || ci.calls[dir] != 1 {
		t.Fatalf("check-ignore calls: %v (want one in %s)", ci.calls, dir)
	}
	// Allowed, they stay listed.
	_, probs = gateCheck(t, st, nil, gitstore.PushPolicy{AllowIgnored: true})
	if len(probs) != 6 || len(gitstore.Refused(probs)) != 0 {
		t.Fatalf("allowed: %v", probKeys(gitstore.Refused(probs)))
	}
}

// Links a hostile or careless work tree holds: a link whose ignored
// target was deleted after the read (judged by the target's name), a
// chain of links, a link into .git, a link loop (judged by its name, no
// hang), a non-UTF-8 real_path64; a file with a second link that nothing
// ignores passes.
func TestGateLinksHostile(t *testing.T) {
	ogEnv(t)
	dir := ogRepo(t)
	ogWrite(t, filepath.Join(dir, ".gitignore"), "local.yml\n*.bin\n")
	ogWrite(t, filepath.Join(dir, "local.yml"), "db: prod\n")
	ogWrite(t, filepath.Join(dir, "plain.txt"), "plain\n")
	for _, l := range [][2]string{
		{"local.yml", "dangling.txt"}, {"hop2.txt", "hop1.txt"}, {"local.yml", "hop2.txt"},
		{".git/config", "cfg.txt"}, {"loop2.txt", "loop1.txt"}, {"loop1.txt", "loop2.txt"},
	} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "plain.txt"), filepath.Join(dir, "plain2.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	st := ogOpen(t, dir)
	raw := ogRead("raw.txt", "r\n")
	raw.Extra = map[string]json.RawMessage{"real_path64": json.RawMessage(strconv.Quote(base64Std("x\xff.bin")))}
	ogAppend(t, st, "w",
		ogRead("dangling.txt", "db: prod\n"), // #1
		ogRead("hop1.txt", "db: prod\n"),     // #2
		ogRead("cfg.txt", "[core]\n"),        // #3
		ogRead("loop1.txt", "?\n"),           // #4
		raw,                                  // #5
		ogRead("plain2.txt", "plain\n"),      // #6
	)
	// The ignored target goes after the read: the link now dangles.
	if err := os.Remove(filepath.Join(dir, "local.yml")); err != nil {
		t.Fatal(err)
	}
	_, probs := gateCheck(t, st, nil, gitstore.PushPolicy{})
	sameStrings(t, "problems", probKeys(probs), []string{
		"ignored:w#1:dangling.txt",
		"ignored:w#2:hop1.txt",
		"ignored:w#5:raw.txt",
	})
	// A link into .git never reached an object: denied when it was
	// recorded (the store's git-directory rule), so nothing of it leaves.
	evs, err := st.Events(context.Background(), gitstore.Query{Writers: []string{"w"}})
	if err != nil {
		t.Fatal(err)
	}
	if e := evs[2]; !e.Excluded || e.Blob != "" {
		t.Errorf("link into .git archived: %+v", e)
	}
}

func base64Std(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
}
