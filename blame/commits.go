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
	changes, commitTimes, blobs, err := runGitLog(ctx, top, revRange)
	if err != nil {
		return nil, err
	}
	a := newArchive(st, opt.HarnessOf)
	var paths []string
	seen := map[string]bool{}
	for _, c := range changes {
		for _, f := range c.Files {
			if !seen[f.Path] {
				seen[f.Path] = true
				paths = append(paths, f.Path)
			}
		}
	}
	if err := a.load(ctx, paths); err != nil {
		return nil, err
	}
	a.index(paths)
	a.cache.flush()
	// The files whose added lines have candidates, each read once: the
	// version git log names (--full-index) through git cat-file, all of
	// them asked at once, matched on every core as they arrive.
	type job struct{ ci, fi int }
	var jobs []job
	var specs []string
	for ci := range changes {
		c := &changes[ci]
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
			jobs = append(jobs, job{ci, fi})
			spec := blobs[blobKey{ci, fi}]
			if spec == "" {
				spec = c.Commit + ":" + f.Path
			}
			specs = append(specs, spec)
		}
	}
	err = parallelOver(ctx, prefetch(ctx, top, specs, 4*runtime.GOMAXPROCS(0)), func(r fetched) error {
		c, f := &changes[jobs[r.i].ci], &changes[jobs[r.i].ci].Files[jobs[r.i].fi]
		content := r.body
		if r.err != nil || r.typ != "blob" {
			var err error
			if content, err = blobAt(st, c.Commit, f.Path); err != nil {
				return err
			}
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
		for li, m := range a.attribute(fc, idx, commitTimes[jobs[r.i].ci], f.Path) {
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
		return nil
	})
	if err != nil {
		return nil, err
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

// runGitLog runs git log -p over the range and reads, per commit, the
// files and the added lines with their numbers in the commit's version.
func runGitLog(ctx context.Context, top, revRange string) ([]CommitChange, []time.Time, map[blobKey]string, error) {
	args := []string{"-C", top, "-c", "core.quotePath=false", "log", "--reverse", "--no-merges", "-p", "--unified=0", "--full-index",
		"--no-color", "--no-ext-diff", "--no-textconv", "--format=%x00%H%x00%P%x00%an%x00%ae%x00%at%x00%ct%x00%s", revRange, "--"}
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("git log: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("git log: %w", err)
	}
	changes, times, blobs, perr := parseLog(out)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, nil, nil, fmt.Errorf("git log %s: %s", revRange, msg)
	}
	if perr != nil {
		return nil, nil, nil, fmt.Errorf("git log %s: %w", revRange, perr)
	}
	return changes, times, blobs, nil
}

// blobKey names a file change: the commit's and the file's index.
type blobKey struct{ commit, file int }

// parseLog reads git log's patches; blobs are the versions the index
// lines name (the file as the commit has it).
func parseLog(r io.Reader) ([]CommitChange, []time.Time, map[blobKey]string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []CommitChange
	var times []time.Time
	var c *CommitChange
	var f *FileChange
	blobs := map[blobKey]string{}
	next := 0          // the number of the next added line in the current hunk
	oldN, newN := 0, 0 // lines of the current hunk still to come
	for {
		raw, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			full := append([]byte(nil), raw...)
			for err == bufio.ErrBufferFull {
				raw, err = br.ReadSlice('\n')
				full = append(full, raw...)
			}
			raw = full
		}
		if len(raw) == 0 && err != nil {
			if err == io.EOF {
				return out, times, blobs, nil
			}
			return nil, nil, nil, err
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
				return nil, nil, nil, fmt.Errorf("unexpected commit header %q", line)
			}
			at, _ := strconv.ParseInt(fs[4], 10, 64)
			ct, _ := strconv.ParseInt(fs[5], 10, 64)
			cc := CommitChange{Commit: fs[0], Author: fs[2], AuthorMail: fs[3], AuthorTime: time.Unix(at, 0).UTC(),
				CommitTime: time.Unix(ct, 0).UTC(), Summary: fs[6], Files: []FileChange{}}
			if ps := strings.Fields(fs[1]); len(ps) > 0 {
				cc.Parent = ps[0]
			}
			out = append(out, cc)
			times = append(times, cc.CommitTime)
			c, f = &out[len(out)-1], nil
		case c == nil:
			// Nothing before the first commit header.
		case bytes.HasPrefix(line, []byte("diff --git ")):
			c.Files = append(c.Files, FileChange{Added: []AddedLine{}})
			f = &c.Files[len(c.Files)-1]
		case f == nil:
		case bytes.HasPrefix(line, []byte("index ")):
			// index OLD..NEW[ MODE]
			v, _, _ := bytes.Cut(line[len("index "):], []byte{' '})
			if _, nb, ok := bytes.Cut(v, []byte("..")); ok && len(nb) >= 40 && strings.Trim(string(nb), "0") != "" {
				blobs[blobKey{len(out) - 1, len(c.Files) - 1}] = string(nb)
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
				return nil, nil, nil, fmt.Errorf("unexpected hunk header %q", line)
			}
			var e1, e2 error
			next, newN, e1 = hunkRange(fs[2])
			_, oldN, e2 = hunkRange(fs[1])
			if e1 != nil || e2 != nil {
				return nil, nil, nil, fmt.Errorf("unexpected hunk header %q", line)
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
