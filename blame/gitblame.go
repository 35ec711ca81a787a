package blame

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// gitLine is one line as `git blame --line-porcelain` reports it.
type gitLine struct {
	Line
	commitTime time.Time
	headers    []string // the key-value lines git wrote for it, as written
}

// Uncommitted is the commit id git blame gives lines of the working tree
// that no commit holds yet.
const Uncommitted = "0000000000000000000000000000000000000000"

// runGitBlame runs the real git blame over path (repository-relative) in
// the work tree top: it decides which commit brought each line into
// history, so our answer and git's agree by construction. rev "" blames
// the working tree.
func runGitBlame(ctx context.Context, top, rev, path string, opt Options) ([]gitLine, error) {
	args := []string{"-C", top, "blame", "--line-porcelain"}
	if opt.Moves {
		args = append(args, "-M")
	}
	if opt.Copies {
		args = append(args, "-C")
	}
	if opt.Start > 0 {
		end := ""
		if opt.End > 0 {
			end = strconv.Itoa(opt.End)
		}
		args = append(args, "-L", strconv.Itoa(opt.Start)+","+end)
	}
	if rev != "" {
		args = append(args, rev)
	}
	args = append(args, "--", path)
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("git blame: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git blame: %w", err)
	}
	lines, perr := parsePorcelain(out)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git blame %s: %s", path, msg)
	}
	if perr != nil {
		return nil, fmt.Errorf("git blame %s: %w", path, perr)
	}
	return lines, nil
}

// parsePorcelain reads --line-porcelain output: per line a header
// "<commit> <orig> <final> [<count>]", key-value lines, then a tab and the
// line's text.
func parsePorcelain(r io.Reader) ([]gitLine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []gitLine
	var cur *gitLine
	var atz, ctz string
	var atime, ctime int64
	for {
		raw, err := readLine(br)
		if len(raw) == 0 && err != nil {
			if err == io.EOF {
				if cur != nil {
					return nil, fmt.Errorf("porcelain ends inside line %d", cur.N)
				}
				return out, nil
			}
			return nil, err
		}
		line := bytes.TrimSuffix(raw, []byte{'\n'})
		if cur == nil {
			f := strings.Fields(string(line))
			if len(f) < 3 || len(f[0]) != 40 {
				return nil, fmt.Errorf("unexpected porcelain line %q", line)
			}
			orig, e1 := strconv.Atoi(f[1])
			fin, e2 := strconv.Atoi(f[2])
			if e1 != nil || e2 != nil {
				return nil, fmt.Errorf("unexpected porcelain line %q", line)
			}
			out = append(out, gitLine{Line: Line{Commit: f[0], OrigLine: orig, N: fin, Head: string(line)}})
			cur = &out[len(out)-1]
			continue
		}
		if len(line) > 0 && line[0] == '\t' {
			cur.Text = string(line[1:])
			cur.AuthorTime = zoned(atime, atz)
			cur.commitTime = zoned(ctime, ctz)
			cur = nil
			continue
		}
		cur.headers = append(cur.headers, string(line))
		k, v, _ := strings.Cut(string(line), " ")
		switch k {
		case "author":
			cur.Author = v
		case "author-mail":
			cur.AuthorMail = strings.TrimSuffix(strings.TrimPrefix(v, "<"), ">")
		case "author-time":
			atime, _ = strconv.ParseInt(v, 10, 64)
		case "author-tz":
			atz = v
		case "committer-time":
			ctime, _ = strconv.ParseInt(v, 10, 64)
		case "committer-tz":
			ctz = v
		case "summary":
			cur.Summary = v
		case "boundary":
			cur.Boundary = true
		case "filename":
			cur.OrigPath = unquotePath(v)
		}
	}
}

// readLine reads one line of git's output, whole however long (the
// buffer's slice when it fits, a copy when it does not); valid until the
// next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	raw, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return raw, err
	}
	full := append([]byte(nil), raw...)
	for err == bufio.ErrBufferFull {
		raw, err = br.ReadSlice('\n')
		full = append(full, raw...)
	}
	return full, err
}

// zoned is a unix time in the offset git wrote (+hhmm), so times print as
// git prints them.
func zoned(unix int64, tz string) time.Time {
	t := time.Unix(unix, 0)
	if len(tz) == 5 {
		h, e1 := strconv.Atoi(tz[1:3])
		m, e2 := strconv.Atoi(tz[3:5])
		if e1 == nil && e2 == nil {
			off := (h*60 + m) * 60
			if tz[0] == '-' {
				off = -off
			}
			return t.In(time.FixedZone(tz, off))
		}
	}
	return t.UTC()
}

// unquotePath undoes git's quoting of unusual path names ("a\tb",
// octal escapes for bytes outside ASCII), which Go's unquoting of a
// double-quoted string reads the same way.
func unquotePath(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return v
}
