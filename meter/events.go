package meter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/git-lossless/git-lossless/gitstore"
)

// ReadOps are the ops by which a model is shown a file's content (see the
// package doc for why restore is one of them).
var ReadOps = []string{"read", "attach", "restore"}

// opCompact is a context's compaction boundary (recorded by the sweep).
const opCompact = "compact"

func isReadOp(op string) bool {
	return op == "read" || op == "attach" || op == "restore"
}

// eachEvent calls fn with every read event of the archive (of one
// session when session is set), and every compaction too when withCompact
// is set, in archive order: writer by writer (in name order), by Seq. Each
// e is freshly parsed: fn may keep it.
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
// A line that does not parse is skipped and counted (skipped), as Events
// skips it with a warning: one damaged line must not hide the rest.
func eachEvent(ctx context.Context, st *gitstore.Store, session string, withCompact bool, fn func(e *gitstore.Event)) (skipped int, err error) {
	sel := gitstore.Selection{}
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
		// unknown field holds an object with an op of its own; then, as
		// for a line of another form, the parse judges.
		if i := bytes.Index(line, opKey); i >= 0 {
			v := line[i+len(opKey):]
			if j := bytes.IndexByte(v, '"'); j >= 0 && !bytes.Contains(v[j:], opKey) {
				op := v[:j]
				if !(isReadOp(string(op)) || (withCompact && string(op) == opCompact)) {
					return false
				}
			}
		}
		if needle != nil && !bytes.Contains(line, needle) {
			return false
		}
		e, err := gitstore.ParseEvent(line)
		if err != nil {
			skipped++
			return false
		}
		// The needles preselect; the parse decides (a needle's bytes
		// could sit, escaped differently, in another field).
		if (isReadOp(e.Op) || (withCompact && e.Op == opCompact)) && (session == "" || e.Session == session) {
			e.Writer = writer
			fn(&e)
		}
		return false
	}
	if _, err := st.Select(ctx, sel); err != nil {
		return skipped, fmt.Errorf("read the archive's reads: %w", err)
	}
	return skipped, nil
}
