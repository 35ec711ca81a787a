package main

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/seal"
)

func demoCmd() *command {
	return &command{
		Name:    "demo",
		Summary: "run a scripted agent session in a temporary repository",
		Usage:   "[--keep]",
		Long: `Creates a throwaway git repository under the system temporary directory and
records a scripted agent session in it through the real store, the same
code ` + "`git lossless record`" + ` runs: reads (one partial), an edit, a new file,
a read of a .env holding a planted secret (recorded as excluded, its content
never archived), and a subagent's read. Then it prints the log, verifies
the chain, flips one byte of an archived blob in a copy of the repository
and shows verify catching it, and checks the result with plain git.

Nothing outside the temporary directory is read or written: not the
repository you run it in, not the embedded archive. Needs git on PATH.
Exit 0 when every step behaved as described, 1 when one did not.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			keep := fs.Bool("keep", false, "keep the temporary directory and print its path")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 1 && args[0] == "proxy" {
					return runDemoProxy(ctx, e, *keep) // proxy_demo.go
				}
				if len(args) > 0 {
					return cli.Usagef("demo takes no arguments")
				}
				return runDemo(ctx, e, *keep)
			}
		},
	}
}

// The demo's fixed script.
const (
	demoSession = "demo-session-1"
	demoAgent   = "explore-1"
	// demoSecret is planted in the project's .env; the demo proves it
	// reaches no object.
	demoSecret = "lossless-demo-secret-5b9e2c71"
)

var demoFiles = map[string]string{
	"README.md": "# Inventory service\n\nA tiny service the demo agent works on.\n",
	"src/app.go": `package main

import "fmt"

// Item is one stock entry.
type Item struct {
	Name  string
	Count int
}

func main() {
	items := []Item{{"bolts", 40}, {"nuts", 12}}
	for _, it := range items {
		fmt.Println(it.Name, it.Count)
	}
}
`,
	"src/util.go": "package main\n\n// lowStock reports whether an item needs reordering.\nfunc lowStock(it Item) bool { return it.Count < 20 }\n",
	".gitignore":  ".env\n",
	".env":        "INVENTORY_DB_PASSWORD=" + demoSecret + "\n",
}

// demoStep is one tool call of the scripted session.
type demoStep struct {
	say    string // what the agent does, as printed
	op     gitstore.Op
	path   string
	view   string
	agent  string
	source string
	key    string
	// write, when set, changes the file on disk before it is recorded
	// (the agent's edit or new file).
	write func(old string) string
}

func demoScript() []demoStep {
	return []demoStep{
		{say: "reads README.md", op: gitstore.OpRead, path: "README.md", view: "full", key: "toolu_demo_01"},
		{say: "reads lines 5-9 of src/app.go", op: gitstore.OpRead, path: "src/app.go", view: "lines:5-9", key: "toolu_demo_02"},
		{say: "reads src/util.go", op: gitstore.OpRead, path: "src/util.go", view: "full", key: "toolu_demo_03"},
		{say: "edits src/app.go (flags low stock)", op: gitstore.OpEdit, path: "src/app.go", view: "full", key: "toolu_demo_04",
			write: func(old string) string {
				return strings.Replace(old, "fmt.Println(it.Name, it.Count)", "fmt.Println(it.Name, it.Count, lowStock(it))", 1)
			}},
		{say: "writes a new file src/report.go", op: gitstore.OpWrite, path: "src/report.go", view: "full", key: "toolu_demo_05",
			write: func(string) string {
				return "package main\n\n// total sums the stock: written by the agent during the demo.\nfunc total(items []Item) (n int) {\n\tfor _, it := range items {\n\t\tn += it.Count\n\t}\n\treturn n\n}\n"
			}},
		{say: "reads .env (holds a planted secret)", op: gitstore.OpRead, path: ".env", view: "full", key: "toolu_demo_06"},
		{say: "reads src/util.go", op: gitstore.OpRead, path: "src/util.go", view: "full", agent: demoAgent, key: "toolu_demo_07"},
		{say: "re-sends tool call 1 (a session-end sweep)", op: gitstore.OpRead, path: "README.md", view: "full", source: "sweep", key: "toolu_demo_01"},
	}
}

// demoRun holds one run's state.
type demoRun struct {
	ctx    context.Context
	out    io.Writer
	warn   func(string)
	root   string // the temporary directory; everything happens inside
	repo   string // root/project, symlinks resolved
	writer string
	gitEnv []string
	fails  []string
}

func runDemo(ctx context.Context, e *env, keep bool) (err error) {
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(errors.New("demo needs git on PATH"), "install git and run the demo again")
	}
	root, err := os.MkdirTemp("", "git-lossless-demo-")
	if err != nil {
		return fmt.Errorf("demo: create temporary directory: %w", err)
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	d := &demoRun{
		ctx: ctx, out: e.Stdout, root: root, repo: filepath.Join(root, "project"),
		writer: gitstore.WriterName("cli-", demoSession), gitEnv: demoGitEnv(),
		warn: func(msg string) { fmt.Fprintf(e.Stderr, "git-lossless: warning: %s\n", msg) },
	}
	defer func() {
		if keep {
			fmt.Fprintf(d.out, "\nKept %s (project/ and its tampered copy, tampered/).\n", root)
			fmt.Fprintf(d.out, "  try (git-lossless on PATH): git -C %s lossless log\n", d.repo)
			return
		}
		if rerr := os.RemoveAll(root); rerr != nil && err == nil {
			err = fmt.Errorf("demo: remove %s: %w", root, rerr)
		}
	}()

	fmt.Fprintf(d.out, "git-lossless demo: a scripted agent session, recorded by the real store\n")
	fmt.Fprintf(d.out, "in a throwaway repository. Nothing outside %s is touched:\nnot your repository, not the embedded archive.\n", root)

	st, err := d.setup()
	if err != nil {
		return err
	}
	evs, err := d.session(st)
	if err != nil {
		return err
	}
	if err := d.log(st); err != nil {
		return err
	}
	if err := d.verify(st); err != nil {
		return err
	}
	victim, err := d.tamper(evs)
	if err != nil {
		return err
	}
	if err := d.plainGit(evs, victim); err != nil {
		return err
	}
	if err := d.receipt(st); err != nil { // demo_receipt.go
		return err
	}
	d.summary(evs)
	if len(d.fails) > 0 {
		return cli.FailedError{Msg: "demo: " + strings.Join(d.fails, "; ")}
	}
	return nil
}

func (d *demoRun) header(n int, title string) {
	fmt.Fprintf(d.out, "\n[%d/6] %s\n", n, title)
}

func (d *demoRun) fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	d.fails = append(d.fails, msg)
	fmt.Fprintf(d.out, "  UNEXPECTED: %s\n", msg)
}

// setup writes the project, commits it with git, and opens the store on
// exactly this repository (no discovery: GIT_DIR and friends in the
// environment cannot send the demo elsewhere).
func (d *demoRun) setup() (*gitstore.Store, error) {
	d.header(1, "A throwaway project")
	for name, body := range demoFiles {
		p := filepath.Join(d.repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	if _, err := d.git(d.repo, "init", "-q"); err != nil {
		return nil, err
	}
	if _, err := d.git(d.repo, "add", "-A"); err != nil {
		return nil, err
	}
	if _, err := d.git(d.repo, "commit", "-q", "-m", "initial import"); err != nil {
		return nil, err
	}
	fmt.Fprintf(d.out, "  %s: git init, README.md and src/ committed;\n  .env holds a planted secret (%s) and is git-ignored\n", d.repo, demoSecret)
	gd := filepath.Join(d.repo, ".git")
	st, err := gitstore.Open(gitstore.Location{GitDir: gd, CommonDir: gd, WorkTree: d.repo}, gitstore.Options{Warn: d.warn})
	if err != nil {
		return nil, fmt.Errorf("demo: open archive: %w", err)
	}
	return st, nil
}

// session records the scripted tool calls, one append each, as hooks do.
func (d *demoRun) session(st *gitstore.Store) ([]gitstore.Event, error) {
	d.header(2, "The agent works; every tool call is recorded as it happens")
	fmt.Fprintf(d.out, "  session %s: writer %s, ref refs/lossless/%s\n", demoSession, d.writer, d.writer)
	fmt.Fprintf(d.out, "  each call runs the code of `git lossless record --op OP --session S [--agent A] [--view V] PATH`\n")
	var evs []gitstore.Event
	for _, s := range demoScript() {
		who := "agent"
		if s.agent != "" {
			who = "subagent " + s.agent
		}
		fmt.Fprintf(d.out, "  %s %s\n", who, s.say)
		abs := filepath.Join(d.repo, filepath.FromSlash(s.path))
		if s.write != nil {
			old, _ := os.ReadFile(abs)
			if err := os.WriteFile(abs, []byte(s.write(string(old))), 0o600); err != nil {
				return nil, fmt.Errorf("demo: %w", err)
			}
		}
		rec, err := cli.FileRecord(st, d.repo, abs)
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		source := s.source
		if source == "" {
			source = "hook"
		}
		rec.Op, rec.Session, rec.Agent, rec.Sidechain = s.op, demoSession, s.agent, s.agent != ""
		rec.View, rec.Key, rec.Source = s.view, s.key, source
		res, err := st.Append(d.ctx, d.writer, []gitstore.Record{rec})
		if err != nil {
			return nil, fmt.Errorf("demo: record to %s: %w", d.writer, err)
		}
		var buf bytes.Buffer
		for _, ev := range res.Events {
			cli.PrintRecorded(&buf, ev)
		}
		if res.Deduped > 0 {
			fmt.Fprintf(&buf, "skipped %d already recorded (same key)\n", res.Deduped)
		}
		d.indent(buf.String(), "    ")
		evs = append(evs, res.Events...)
	}
	return evs, nil
}

func (d *demoRun) indent(text, prefix string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(d.out, "%s%s\n", prefix, l)
	}
}

// log prints what `git lossless log` shows, with the view column.
func (d *demoRun) log(st *gitstore.Store) error {
	d.header(3, "The log (git lossless log), then verify (git lossless verify)")
	evs, err := st.Events(d.ctx, gitstore.Query{})
	if err != nil {
		return fmt.Errorf("demo: read log: %w", err)
	}
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SEQ\tOP\tVIEW\tCONTEXT\tPATH\tBLOB\tBYTES")
	for _, ev := range evs {
		blob := "-"
		if ev.Excluded {
			blob = "(excluded)"
		} else if ev.Blob != "" {
			blob = ev.Blob[:12]
		}
		ctxName := "main"
		if ev.Agent != "" {
			ctxName = ev.Agent
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%d\n", ev.Seq, ev.Op, cli.Dash(ev.View), ctxName, ev.Path, blob, ev.Bytes)
	}
	return tw.Flush()
}

func (d *demoRun) verify(st *gitstore.Store) error {
	rep, err := st.Verify(d.ctx, d.writer, seal.Options{})
	if err != nil {
		return fmt.Errorf("demo: verify: %w", err)
	}
	fmt.Fprintln(d.out)
	var buf bytes.Buffer
	cli.PrintReport(&buf, rep)
	d.indent(buf.String(), "  ")
	if !rep.OK() {
		d.fail("verify of the untouched archive reported %s", rep.Break.Kind)
	}
	return nil
}

// tamper copies the repository, flips one byte of an archived blob in the
// copy, and shows verify naming the break.
func (d *demoRun) tamper(evs []gitstore.Event) (gitstore.Event, error) {
	d.header(4, "Tamper with a copy: flip one byte of an archived blob")
	var victim gitstore.Event
	for _, ev := range evs {
		if ev.Blob != "" && !ev.Excluded && ev.Bytes > 0 {
			victim = ev
			break
		}
	}
	if victim.Blob == "" {
		return victim, errors.New("demo: no archived blob to tamper with (is everything on the deny list?)")
	}
	copyDir := filepath.Join(d.root, "tampered")
	if err := demoCopyTree(d.repo, copyDir); err != nil {
		return victim, fmt.Errorf("demo: copy repository: %w", err)
	}
	fmt.Fprintf(d.out, "  copied the repository (objects, refs/lossless, witness) to %s\n", copyDir)
	gd := filepath.Join(copyDir, ".git")
	was, now, err := demoFlipBlobByte(gd, victim.Blob)
	if err != nil {
		return victim, fmt.Errorf("demo: tamper: %w", err)
	}
	fmt.Fprintf(d.out, "  rewrote the loose object of blob %s (%s as entry %d saw it):\n  its first byte %q is now %q; the object keeps its name\n", victim.Blob, victim.Path, victim.Seq, was, now)
	st, err := gitstore.Open(gitstore.Location{GitDir: gd, CommonDir: gd, WorkTree: copyDir}, gitstore.Options{Warn: d.warn})
	if err != nil {
		return victim, fmt.Errorf("demo: open the copy: %w", err)
	}
	rep, err := st.Verify(d.ctx, d.writer, seal.Options{})
	if err != nil {
		return victim, fmt.Errorf("demo: verify the copy: %w", err)
	}
	fmt.Fprintf(d.out, "  git lossless verify, in the copy:\n")
	var buf bytes.Buffer
	cli.PrintReport(&buf, rep)
	d.indent(buf.String(), "  ")
	switch {
	case rep.OK():
		d.fail("verify did not catch the flipped byte")
	case rep.Break.Kind != seal.ContentChanged || rep.Break.Seq != victim.Seq:
		d.fail("verify reported %s at entry %d, expected %s at entry %d", rep.Break.Kind, rep.Break.Seq, seal.ContentChanged, victim.Seq)
	default:
		fmt.Fprintf(d.out, "  caught: %s at entry %d (verify exits 1 on this copy)\n", rep.Break.Kind, rep.Break.Seq)
	}
	return victim, nil
}

// plainGit checks the archive with C git, the second implementation.
func (d *demoRun) plainGit(evs []gitstore.Event, victim gitstore.Event) error {
	d.header(5, "Plain git agrees")
	refs, err := d.git(d.repo, "for-each-ref", "refs/lossless")
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  $ git for-each-ref refs/lossless\n")
	d.indent(string(refs), "    ")

	fmt.Fprintf(d.out, "  $ git fsck --strict\n")
	if out, err := d.git(d.repo, "fsck", "--strict", "--no-progress"); err != nil {
		d.fail("git fsck --strict failed: %v", err)
	} else if s := strings.TrimSpace(string(out)); s != "" {
		d.indent(s, "    ")
	} else {
		fmt.Fprintf(d.out, "    clean\n")
	}

	for _, ev := range evs {
		if ev.Op != gitstore.OpEdit || ev.Blob == "" {
			continue
		}
		got, err := d.git(d.repo, "cat-file", "-p", ev.Blob)
		if err != nil {
			return err
		}
		disk, _ := os.ReadFile(filepath.Join(d.repo, filepath.FromSlash(ev.Path)))
		fmt.Fprintf(d.out, "  $ git cat-file -p %s\n", ev.Blob)
		if bytes.Equal(got, disk) {
			fmt.Fprintf(d.out, "    %d bytes, identical to the edited %s on disk\n", len(got), ev.Path)
		} else {
			d.fail("git cat-file -p %s differs from %s on disk", ev.Blob, ev.Path)
		}
	}

	all, err := d.git(d.repo, "cat-file", "--batch-all-objects", "--batch")
	if err != nil {
		return err
	}
	check, err := d.git(d.repo, "cat-file", "--batch-all-objects", "--batch-check")
	if err != nil {
		return err
	}
	objects := bytes.Count(check, []byte("\n"))
	hits := bytes.Count(all, []byte(demoSecret))
	state := 0
	filepath.WalkDir(filepath.Join(d.repo, ".git", "lossless"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(demoSecret)) {
				state++
			}
		}
		return nil
	})
	fmt.Fprintf(d.out, "  $ git cat-file --batch-all-objects --batch | grep -c %s\n", demoSecret)
	fmt.Fprintf(d.out, "    %d (the secret is in none of the repository's %d objects, nor in .git/lossless)\n", hits+state, objects)
	if hits+state > 0 {
		d.fail("the planted secret reached the archive")
	}

	fmt.Fprintf(d.out, "  $ git fsck --strict, in the tampered copy\n")
	out, errOut, err := d.gitOut(filepath.Join(d.root, "tampered"), "fsck", "--strict", "--no-progress")
	if err == nil {
		fmt.Fprintf(d.out, "    clean (git did not re-hash this object; verify did)\n")
		return nil
	}
	// git names the damaged object by the hash of what it now holds, and
	// then misses the blob the trees name.
	var lines []string
	for _, l := range strings.Split(string(errOut)+"\n"+string(out), "\n") {
		if l = strings.TrimSpace(l); strings.Contains(l, "mismatch") || strings.Contains(l, victim.Blob) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		lines = []string{demoFirstLine(string(errOut) + "\n" + err.Error())}
	}
	fmt.Fprintf(d.out, "    fails as well:\n")
	d.indent(strings.Join(lines, "\n"), "      ")
	return nil
}

func demoFirstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func (d *demoRun) summary(evs []gitstore.Event) {
	fmt.Fprintf(d.out, "\nWhat happened: %d tool calls became %d sealed entries on refs/lossless/%s\n", len(demoScript()), len(evs), d.writer)
	fmt.Fprintf(d.out, "(the re-sent call was skipped by its key); the .env read is on record as\n")
	fmt.Fprintf(d.out, "excluded and its content is nowhere; verify passed on the archive and named\n")
	fmt.Fprintf(d.out, "the flipped byte in the copy; plain git reads the same refs, objects and blobs.\n")
	if len(d.fails) == 0 {
		fmt.Fprintf(d.out, "Demo OK.\n")
	}
}

// git runs git in dir with an environment that cannot point it at another
// repository or at the user's configuration, and returns stdout; stderr
// is in the error.
func (d *demoRun) git(dir string, args ...string) ([]byte, error) {
	out, stderr, err := d.gitOut(dir, args...)
	if err != nil {
		return out, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(stderr)))
	}
	return out, nil
}

func (d *demoRun) gitOut(dir string, args ...string) (stdout, stderr []byte, err error) {
	full := append([]string{"-C", dir, "-c", "user.name=git-lossless demo", "-c", "user.email=demo@git-lossless.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)
	cmd := exec.CommandContext(d.ctx, "git", full...)
	cmd.Env = d.gitEnv
	var eb bytes.Buffer
	cmd.Stderr = &eb
	out, err := cmd.Output()
	return out, eb.Bytes(), err
}

// demoGitEnv is the process environment without the variables that
// redirect git to another repository, and without the user's and the
// system's git configuration.
func demoGitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
			"GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
}

// demoCopyTree copies a directory recursively (what `cp -a` does for regular
// files, directories and symlinks).
func demoCopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := de.Info()
		if err != nil {
			return err
		}
		switch {
		case de.IsDir():
			return os.MkdirAll(target, 0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm()|0o600)
		}
		return nil // sockets and the like: not part of a repository
	})
}

// demoFlipBlobByte rewrites the loose object of blob id with its first content
// byte flipped, under the same name: what bit rot or a careless edit does.
func demoFlipBlobByte(gitDir, id string) (was, now byte, err error) {
	p := filepath.Join(gitDir, "objects", id[:2], id[2:])
	raw, err := os.ReadFile(p)
	if err != nil {
		return 0, 0, fmt.Errorf("blob %s is not a loose object: %w", id, err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return 0, 0, err
	}
	obj, err := io.ReadAll(zr)
	if err != nil {
		return 0, 0, err
	}
	nul := bytes.IndexByte(obj, 0)
	if nul < 0 || nul+1 >= len(obj) {
		return 0, 0, fmt.Errorf("blob %s is empty", id)
	}
	was = obj[nul+1]
	obj[nul+1] ^= 0x01
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(obj)
	if err := zw.Close(); err != nil {
		return 0, 0, err
	}
	tmp := p + ".tamper"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o444); err != nil {
		return 0, 0, err
	}
	return was, obj[nul+1], os.Rename(tmp, p)
}
