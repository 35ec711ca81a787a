package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
	"github.com/git-lossless/git-lossless/seal"
)

func PrintRecorded(w io.Writer, ev gitstore.Event) {
	if ev.Excluded {
		fmt.Fprintf(w, "recorded %s %s (excluded: content withheld by the deny list) as %s#%d\n", ev.Op, ev.Path, ev.Writer, ev.Seq)
		return
	}
	fmt.Fprintf(w, "recorded %s %s blob %s (%d bytes) as %s#%d\n", ev.Op, ev.Path, ev.Blob, ev.Bytes, ev.Writer, ev.Seq)
}

// FileRecord reads one path for recording: regular files (or symlinks to
// them) only, byte for byte.
func FileRecord(st *gitstore.Store, dir, p string) (gitstore.Record, error) {
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, p)
	}
	abs = filepath.Clean(abs)
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return gitstore.Record{}, fmt.Errorf("%s: no such file", p)
	case errors.Is(err, fs.ErrPermission):
		return gitstore.Record{}, fmt.Errorf("%s: permission denied", p)
	case err != nil:
		return gitstore.Record{}, fmt.Errorf("%s: %v", p, err)
	case fi.IsDir():
		return gitstore.Record{}, fmt.Errorf("%s: is a directory; record files one by one", p)
	case !fi.Mode().IsRegular():
		return gitstore.Record{}, fmt.Errorf("%s: not a regular file", p)
	}
	rec := gitstore.Record{File: abs}
	rec.SetPath(st.RelPath(abs))
	if _, _, denied := st.Deny().Check(abs); denied {
		rec.Excluded = true // never even read
		return rec, nil
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return gitstore.Record{}, fmt.Errorf("%s: permission denied", p)
		}
		return gitstore.Record{}, fmt.Errorf("%s: %v", p, err)
	}
	rec.Content, rec.HasContent = data, true
	return rec, nil
}

func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func PrintReport(w io.Writer, r *seal.Report) {
	if r.OK() {
		fmt.Fprintf(w, "OK     %s: %s in %s, %s checked, seal %.16s\n", r.Writer, Plural(int(r.Entries), "entry"), Plural(r.Batches, "batch"), Plural(r.Blobs, "blob"), r.Head)
	} else {
		b := r.Break
		fmt.Fprintf(w, "BREAK  %s: %s at entry %d", r.Writer, b.Kind, b.Seq)
		if b.Commit != "" {
			fmt.Fprintf(w, " (commit %.12s)", b.Commit)
		}
		if b.Blob != "" {
			fmt.Fprintf(w, " blob %s", b.Blob)
		}
		fmt.Fprintf(w, ": %s\n", b.Detail)
	}
	if len(r.Pruned) > 0 {
		fmt.Fprintf(w, "       %s: %s pruned (expected: removed by a prune record)\n", r.Writer, Plural(len(r.Pruned), "entry"))
	}
}

func PrintVerify(w io.Writer, res *receipt.Result) {
	if res.OK() {
		fmt.Fprintf(w, "OK    %s %s: signed by %s", Short12(res.Commit), res.Ref, strings.ToUpper(res.KeyID))
		if res.UserID != "" {
			fmt.Fprintf(w, " (%s)", res.UserID)
		}
		fmt.Fprintf(w, "; %s, %s in %s, %s checked", Plural(res.Checked.Paths, "path"), Plural(res.Checked.Events, "event"), Plural(res.Checked.Writers, "writer"), Plural(res.Checked.Blobs, "blob"))
		if len(res.Harnesses) > 0 {
			fmt.Fprintf(w, "; harness %s", strings.Join(res.Harnesses, ", "))
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "FAIL  %s %s:\n", Short12(res.Commit), res.Ref)
		for _, p := range res.Problems {
			fmt.Fprintf(w, "      %s: %s\n", p.Kind, p.Detail)
		}
	}
	for _, c := range res.Carried {
		how := "its receipt is gone: the carried window is a signed claim"
		if c.HasReceipt {
			how = "its receipt is on the same ref and the window matches"
		}
		if !c.CommitExists {
			how += "; the commit itself is no longer in the repository"
		}
		fmt.Fprintf(w, "      carried from %s: %s\n", Short12(c.Commit), how)
	}
	if len(res.Pruned) > 0 {
		fmt.Fprintf(w, "      %d blobs pruned on purpose (expected)\n", len(res.Pruned))
	}
}

func Short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func wname(r *note.Receipt, ref note.Ref) string {
	if ref.IsZero() {
		return "-"
	}
	return fmt.Sprintf("w%d#%d", ref.W, ref.Seq)
}

func WriteReceipt(w io.Writer, r *note.Receipt, writer, how string) {
	utc := func(unix int64) string { return time.Unix(unix, 0).UTC().Format("2006-01-02 15:04:05 UTC") }
	fmt.Fprintf(w, "Receipt for commit %s\n", r.Commit)
	fmt.Fprintf(w, "  tree %s", r.Tree)
	for _, p := range r.Parents {
		fmt.Fprintf(w, ", parent %s", Short12(p))
	}
	fmt.Fprintln(w)
	if len(r.Carried) > 0 {
		if r.HasFrom {
			fmt.Fprintf(w, "  events from %s to %s (the window of the commits it was carried from)\n", utc(r.From), utc(r.WindowEnd()))
		} else {
			fmt.Fprintf(w, "  events up to %s (the window of the commits it was carried from)\n", utc(r.WindowEnd()))
		}
		for _, c := range r.Carried {
			fmt.Fprintf(w, "  carried from %s\n", c.Commit)
		}
	} else if r.HasFrom {
		fmt.Fprintf(w, "  events from %s (parent committed) to %s (committed)\n", utc(r.From), utc(r.Committed))
	} else {
		fmt.Fprintf(w, "  events up to %s (committed; a root commit)\n", utc(r.Committed))
	}
	fmt.Fprintf(w, "  issued %s, %s on %s%s\n", r.Issued.Format("2006-01-02 15:04:05 UTC"), how, gitstore.NotesPrefix, writer)
	fmt.Fprintf(w, "  signed by key %s\n", strings.ToUpper(receipt.KeyIDOfWriter(writer)))

	fmt.Fprintf(w, "\nChanged paths (%d): %d written, %d seen, %d changed-after, %d unseen, %d excluded\n", len(r.Paths),
		r.Coverage.Written, r.Coverage.Seen, r.Coverage.ChangedAfter, r.Coverage.Unseen, r.Coverage.Excluded)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STATUS\tCHANGE\tBLOB\tEVIDENCE\tPATH")
	for _, p := range r.Paths {
		blob := Short12(p.Blob)
		switch {
		case p.Status == note.Excluded:
			blob = "(withheld)"
		case p.Change == note.Deleted:
			blob = "(deleted)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", p.Status, p.Change, blob, wname(r, p.Evidence), note.Token(p.Path))
	}
	tw.Flush()

	if len(r.Contexts) > 0 {
		fmt.Fprintf(w, "\nContexts (%d)\n", len(r.Contexts))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tSESSION\tAGENT\tHARNESS\tEVENTS\tFROM\tTO\tSPANS\tFILE TOKENS\tSPAN TOKENS")
		for i, c := range r.Contexts {
			agent := c.Agent
			if agent == "" {
				agent = "main"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\n", note.ContextID(i), note.Token(c.Session), agent, Dash(c.Harness), c.Events,
				c.First.Format("2006-01-02 15:04:05"), c.Last.Format("15:04:05"), len(c.Spans), c.FileTokens, c.SpanTokens)
		}
		tw.Flush()
		fmt.Fprintf(w, "  o200k tokens in total: %d of file versions, %d of conversation spans\n", r.FileTokens(), r.SpanTokens())

		fmt.Fprintf(w, "\nRead set (%d versions)\n", len(r.Reads))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  CTX\tSTATE\tOPS\tBLOB\tVIEW\tEVIDENCE\tPATH")
		for _, rd := range r.Reads {
			blob := rd.Blob
			if blob == "" {
				blob = "(withheld)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", note.ContextID(rd.Context-1), rd.State, strings.Join(rd.Ops, ","), blob, rd.View, wname(r, rd.Evidence), note.Token(rd.Path))
		}
		tw.Flush()
	}

	if len(r.Writers) > 0 {
		fmt.Fprintf(w, "\nRests on (%d events)\n", r.Coverage.Events)
		for i, wr := range r.Writers {
			fmt.Fprintf(w, "  w%d  refs/lossless/%s entries %d-%d; head entry %d sealed %s\n", i+1, wr.Name, wr.From, wr.To, wr.HeadSeq, wr.HeadSeal)
		}
	}
	fmt.Fprintln(w, "\nCoverage")
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
}

// Commas prints 1130722 as 1,130,722.
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Plural is "1 writer", "2 writers": a count and its noun, the noun made
// Plural the regular English way (entry -> entries, batch -> batches,
// ref -> refs). Every count a command prints goes through it, so no
// output says "1 writers" (TestNoGoFormattingInOutput).
func Plural(n int, noun string) string {
	return strconv.Itoa(n) + " " + NounFor(n, noun)
}

// NounFor is noun, made plural unless n is 1.
func NounFor(n int, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}

// MiB prints a byte count in megabytes, one decimal.
func MiB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
