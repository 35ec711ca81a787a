package blame

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Commits attributes what each commit of revRange (git log's notation:
// "A..B", "B", "--all" is not accepted) added: for every file it changed
// against its first parent, the lines it added, each with the archived
// agent write it came from. Merge commits are left out, as git log leaves
// their changes out of --numstat. Commits come oldest first.
//
// git computes the diffs (`git log -p --unified=0`), so the line counts
// are git's; the origin of an added line follows the rule of File.
func Commits(ctx context.Context, st *gitstore.Store, revRange string, opt Options) ([]CommitChange, error) {
	top := st.Location().WorkTree
	if top == "" {
		return nil, fmt.Errorf("blame: the archive of a bare repository has no work tree")
	}
	if strings.HasPrefix(revRange, "-") {
		return nil, fmt.Errorf("blame: %q is not a revision range", revRange)
	}
	// git log runs (and its output is read) while the archive loads:
	// every file's writes, as which files the range touches is known only
	// once git log has run. Its commits are then matched on every core as
	// it prints them, beside git's diffing instead of after it.
	var order []*CommitChange
	commits := make(chan loggedCommit, 1<<16)
	logDone := make(chan error, 1)
	go func() {
		logDone <- runGitLog(ctx, top, revRange, func(lc loggedCommit) {
			order = append(order, lc.c)
			commits <- lc
		})
		close(commits)
	}()
	a := newArchive(ctx, st, opt.HarnessOf)
	if err := a.load(ctx, nil); err != nil {
		for range commits {
		}
		<-logDone
		return nil, err
	}
	var all []string
	for p := range a.byPath {
		all = append(all, p)
	}
	a.index(ctx, all)
	a.cache.flush()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var werr error
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lc := range commits {
				if err := a.attributeCommit(ctx, st, lc, opt); err != nil {
					mu.Lock()
					if werr == nil {
						werr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := <-logDone; err != nil {
		return nil, err
	}
	if werr != nil {
		return nil, werr
	}
	changes := make([]CommitChange, len(order))
	for k, c := range order {
		changes[k] = *c
	}
	var origins []*Origin
	for ci := range changes {
		for fi := range changes[ci].Files {
			for li := range changes[ci].Files[fi].Added {
				if o := changes[ci].Files[fi].Added[li].Origin; o != nil {
					origins = append(origins, o)
				}
			}
		}
	}
	if err := fillModels(ctx, st, origins); err != nil {
		return nil, err
	}
	return changes, nil
}

// attributeCommit finds the origin of every added line of one commit
// that has candidates, reading the commit's version of each such file (by
// the blob id git log names).
func (a *archive) attributeCommit(ctx context.Context, st *gitstore.Store, lc loggedCommit, opt Options) error {
	c := lc.c
	for fi := range c.Files {
		f := &c.Files[fi]
		need := false
		for _, l := range f.Added {
			if a.hasCandidate(f.Path, []byte(l.Text)) {
				need = true
				break
			}
		}
		if !need {
			continue
		}
		var content []byte
		var err error
		if blob := lc.blobs[fi]; blob != "" {
			var typ string
			if typ, content, err = a.st.Objects().ReadObject(ctx, blob); err == nil && typ != "blob" {
				err = fmt.Errorf("blame: %s:%s is a %s", short(c.Commit), f.Path, typ)
			}
		} else {
			content, err = blobAt(ctx, st, c.Commit, f.Path)
		}
		if err != nil {
			return err
		}
		fc := a.h.version(content)
		idx := make([]int, len(f.Added))
		for li, l := range f.Added {
			at := l.N - 1
			if at < 0 || at >= len(fc.lines) || string(fc.lines[at]) != l.Text {
				return fmt.Errorf("blame: git log puts an added line at %s:%d in %s, which does not hold it", f.Path, l.N, short(c.Commit))
			}
			idx[li] = at
		}
		credited := map[*write]bool{}
		for li, m := range a.attribute(ctx, fc, idx, c.CommitTime, f.Path) {
			if m != nil {
				f.Added[li].Origin = a.origin(m, opt)
				credited[m.w] = true
			}
		}
		for w := range credited {
			for _, al := range w.lines {
				if fc.countOf(al.h) == 0 {
					f.Rewritten++
				}
			}
		}
	}
	return nil
}

// runGitLog runs git log -p over the range and reads, per commit, the
// files and the added lines with their numbers in the commit's version.
func runGitLog(ctx context.Context, top, revRange string, emit func(loggedCommit)) error {
	args := []string{"-C", top, "-c", "core.quotePath=false", "log", "--reverse", "--no-merges", "-p", "--unified=0", "--full-index",
		"--no-color", "--no-ext-diff", "--no-textconv", "--format=%x00%H%x00%P%x00%an%x00%ae%x00%at%x00%ct%x00%s", revRange, "--"}
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	perr := parseLog(out, emit)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("git log %s: %s", revRange, msg)
	}
	if perr != nil {
		return fmt.Errorf("git log %s: %w", revRange, perr)
	}
	return nil
}

// loggedCommit is one commit as git log printed it: its change, and per
// file the version the index line names (the file as the commit has it;
// "" when not named).
type loggedCommit struct {
	c     *CommitChange
	blobs []string
}

// parseLog reads git log's patches and hands each commit to emit once
// its patch is whole.
func parseLog(r io.Reader, emit func(loggedCommit)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var cur *loggedCommit
	var c *CommitChange
	var f *FileChange
	next := 0          // the number of the next added line in the current hunk
	oldN, newN := 0, 0 // lines of the current hunk still to come
	for {
		raw, err := readLine(br)
		if len(raw) == 0 && err != nil {
			if err == io.EOF {
				if cur != nil {
					emit(*cur)
				}
				return nil
			}
			return err
		}
		line := bytes.TrimSuffix(raw, []byte{'\n'})
		if f != nil && (oldN > 0 || newN > 0) && len(line) > 0 {
			// Inside a hunk the counts of its header say which lines
			// are its own, whatever they look like.
			switch line[0] {
			case '+':
				f.Added = append(f.Added, AddedLine{N: next, Text: string(line[1:])})
				next++
				newN--
				continue
			case '-':
				f.Removed++
				oldN--
				continue
			case '\\':
				continue
			}
		}
		switch {
		case len(line) > 0 && line[0] == 0:
			fs := strings.Split(string(line[1:]), "\x00")
			if len(fs) < 7 {
				return fmt.Errorf("unexpected commit header %q", line)
			}
			at, _ := strconv.ParseInt(fs[4], 10, 64)
			ct, _ := strconv.ParseInt(fs[5], 10, 64)
			cc := CommitChange{Commit: fs[0], Author: fs[2], AuthorMail: fs[3], AuthorTime: time.Unix(at, 0).UTC(),
				CommitTime: time.Unix(ct, 0).UTC(), Summary: fs[6], Files: []FileChange{}}
			if ps := strings.Fields(fs[1]); len(ps) > 0 {
				cc.Parent = ps[0]
			}
			if cur != nil {
				emit(*cur)
			}
			cur = &loggedCommit{c: &cc}
			c, f = cur.c, nil
		case c == nil:
			// Nothing before the first commit header.
		case bytes.HasPrefix(line, []byte("diff --git ")):
			c.Files = append(c.Files, FileChange{Added: []AddedLine{}})
			cur.blobs = append(cur.blobs, "")
			f = &c.Files[len(c.Files)-1]
		case f == nil:
		case bytes.HasPrefix(line, []byte("index ")):
			// index OLD..NEW[ MODE]
			v, _, _ := bytes.Cut(line[len("index "):], []byte{' '})
			if _, nb, ok := bytes.Cut(v, []byte("..")); ok && len(nb) >= 40 && strings.Trim(string(nb), "0") != "" {
				cur.blobs[len(cur.blobs)-1] = string(nb)
			}
		case bytes.HasPrefix(line, []byte("rename from ")):
			f.OldPath = unquotePath(string(line[len("rename from "):]))
		case bytes.HasPrefix(line, []byte("--- ")):
			if f.Path == "" && f.OldPath == "" {
				if p := diffPath(line[4:], "a/"); p != "" {
					f.OldPath = p
				}
			}
		case bytes.HasPrefix(line, []byte("+++ ")):
			if p := diffPath(line[4:], "b/"); p != "" {
				f.Path = p
			}
			if f.OldPath == f.Path {
				f.OldPath = ""
			}
		case bytes.HasPrefix(line, []byte("Binary files ")):
			f.Binary = true
			if f.Path == "" {
				// "Binary files a/X and b/Y differ": the name after " b/".
				s := string(line)
				if i := strings.LastIndex(s, " b/"); i >= 0 {
					f.Path = strings.TrimSuffix(s[i+3:], " differ")
				}
			}
		case bytes.HasPrefix(line, []byte("@@ ")):
			// @@ -a[,b] +c[,d] @@
			fs := strings.Fields(string(line))
			if len(fs) < 3 || !strings.HasPrefix(fs[2], "+") {
				return fmt.Errorf("unexpected hunk header %q", line)
			}
			var e1, e2 error
			next, newN, e1 = hunkRange(fs[2])
			_, oldN, e2 = hunkRange(fs[1])
			if e1 != nil || e2 != nil {
				return fmt.Errorf("unexpected hunk header %q", line)
			}
		}
	}
}

// hunkRange reads "+c,d" or "-a,b" (a count left out is 1).
func hunkRange(s string) (start, count int, err error) {
	if len(s) < 2 {
		return 0, 0, fmt.Errorf("bad range %q", s)
	}
	a, b, ok := strings.Cut(s[1:], ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	count = 1
	if ok {
		if count, err = strconv.Atoi(b); err != nil {
			return 0, 0, err
		}
	}
	return start, count, nil
}

// diffPath reads the name on a ---/+++ line ("/dev/null": "").
func diffPath(v []byte, prefix string) string {
	s := unquotePath(string(v))
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}
