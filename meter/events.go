package meter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// isReadOp reports whether op is one by which a model is shown a file's
// content (see the package doc for why restore is one of them).
func isReadOp(op gitstore.Op) bool {
	switch op {
	case gitstore.OpRead, gitstore.OpAttach, gitstore.OpRestore:
		return true
	}
	return false
}

// eachEvent calls fn with every read event of the archive (of one
// session when session is set), and every compaction too when withCompact
// is set, in archive order: writer by writer (in name order), by Seq. Each
// e is reused for the next line: fn copies what it keeps.
//
// It reads through Store.Select, the bulk reader, in one pass over each
// writer's lines: the Keep callback looks at a line's op bytes and
// declines the conversation spans, edits and writes (half of a Claude
// Code archive's events) unparsed — one pass rather than a search of the
// whole index per op, which cost four. The other lines are parsed and
// handed over there too, and declined: a meter over 100,000 events never
// holds them all as Events (400 bytes each; growing that slice cost more
// than parsing them).
//
// Lines in the plain form (every line this version writes: see
// internal/jsonscan) are decoded by decoder, which takes only the fields
// used here; any other line is parsed by gitstore.ParseEvent.
//
// A line that does not parse is skipped and counted (skipped), as Events
// skips it with a warning: one damaged line must not hide the rest.
func eachEvent(ctx context.Context, st *gitstore.Store, f filter, withCompact bool, fn func(e *gitstore.Event)) (skipped int, err error) {
	session := f.session
	sel := gitstore.Selection{}
	var dec decoder
	opKey := []byte(`"op":"`)
	var needle []byte
	if session != "" {
		b, err := json.Marshal(session)
		if err != nil {
			return 0, err
		}
		needle = append([]byte(`"session":`), b...)
	}
	sel.Keep = func(writer string, line []byte) bool {
		// Decline by the op's bytes before parsing: `"op":"` occurs once
		// in a line (a string value holds it only escaped), unless an
		// unknown field holds an object with an op of its own — a line
		// with a "{" past its first byte is left to the parse, as a line
		// of another form is.
		if i := bytes.Index(line, opKey); i >= 0 && bytes.IndexByte(line[1:], '{') < 0 {
			v := line[i+len(opKey):]
			if j := bytes.IndexByte(v, '"'); j >= 0 {
				op := v[:j]
				if !(isReadOp(gitstore.Op(op)) || (withCompact && gitstore.Op(op) == gitstore.OpCompact)) {
					return false
				}
			}
		}
		if needle != nil && !bytes.Contains(line, needle) {
			return false
		}
		e, ok := dec.decode(line)
		if !ok {
			full, err := gitstore.ParseEvent(line)
			if err != nil {
				skipped++
				return false
			}
			e = &full
		}
		// The needles preselect; the parse decides (a needle's bytes
		// could sit, escaped differently, in another field).
		if (isReadOp(e.Op) || (withCompact && e.Op == gitstore.OpCompact)) && (session == "" || e.Session == session) &&
			(f.harness == "" || gitstore.HarnessOf(e.Harness, writer, f.harnessOf) == f.harness) {
			e.Writer = writer
			fn(e)
		}
		return false
	}
	if _, err := st.Select(ctx, sel); err != nil {
		return skipped, fmt.Errorf("read the archive's reads: %w", err)
	}
	return skipped, nil
}

// filter selects the events eachEvent hands over: of one session, of one
// harness (as gitstore.HarnessOf tells it with harnessOf), or all.
type filter struct {
	session, harness string
	harnessOf        func(writer string) string
}

// decoder decodes the fields of a plain event line that the meter and the
// pack use — agent, blob, excluded, harness, op, path, path64, repo, seq,
// session, ts and view — without copying the line or decoding the rest
// (gitstore.ParseEvent keeps the whole line and every field: twice the
// time and most of the garbage of a meter over 100,000 events). Values
// equal to the previous line's session, agent and repo share its string,
// ops and views are constants, and paths and blobs are interned (a
// 100,000-event archive names 2,000 paths and 10,800 blobs in 50,000
// reads), so a read allocates nothing it need not. A line with an "enc" field (age-encrypted content) is left to
// ParseEvent, which keeps it in Extra.
type decoder struct {
	session, agent, repo, harness string
	ev                            gitstore.Event // the event decode returns, reused
	// paths and blobs already seen, so that a path or blob read again
	// (most reads are) costs a lookup, not a new string.
	strs map[string]string
}

func (d *decoder) decode(line []byte) (*gitstore.Event, bool) {
	e := &d.ev
	*e = gitstore.Event{}
	reuse := func(last *string, val []byte) string {
		if string(val) != *last {
			*last = string(val)
		}
		return *last
	}
	ok := jsonscan.Plain(line, func(key, val []byte, quoted bool) bool {
		switch string(key) {
		case "agent":
			e.Agent = reuse(&d.agent, val)
		case "blob":
			e.Blob = d.intern(val)
		case "excluded":
			e.Excluded = string(val) == "true"
			return !quoted
		case "harness":
			e.Harness = reuse(&d.harness, val)
		case "op":
			e.Op = gitstore.Op(constant(val, string(gitstore.OpRead), string(gitstore.OpAttach), string(gitstore.OpRestore), string(gitstore.OpCompact)))
		case "path":
			e.Path = d.intern(val)
		case "path64":
			e.Path64 = string(val)
		case "repo":
			e.Repo = reuse(&d.repo, val)
		case "seq":
			n, ok := jsonscan.Int(val)
			e.Seq = n
			return ok && !quoted
		case "session":
			e.Session = reuse(&d.session, val)
		case "ts":
			t, err := time.Parse(time.RFC3339Nano, string(val))
			e.TS = t
			return err == nil && quoted
		case "view":
			e.View = constant(val, "full")
		case "enc":
			return false
		default:
			return true
		}
		return quoted
	})
	return e, ok
}

func (d *decoder) intern(val []byte) string {
	if s, ok := d.strs[string(val)]; ok {
		return s
	}
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	s := string(val)
	d.strs[s] = s
	return s
}

// constant returns the one of consts that equals val, else val copied.
func constant(val []byte, consts ...string) string {
	for _, c := range consts {
		if string(val) == c {
			return c
		}
	}
	return string(val)
}
