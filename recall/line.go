package recall

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// eventFields are the fields of an event line the index uses. A full
// gitstore.ParseEvent keeps every field (unknown ones in a map, through
// encoding/json when the line has any, as every sweep line does); the
// index needs a dozen, so parseLine reads just those, and falls back to
// ParseEvent for a line it cannot read.
type eventFields struct {
	seq                                            int64
	ts                                             time.Time
	session, agent, source, tool, path, view, blob string
	op                                             gitstore.Op
	kind, span, enc, harness                       string
	bytes                                          int64
	sidechain                                      bool
}

// fieldsOf takes the fields of a parsed event.
func fieldsOf(ev *gitstore.Event) eventFields {
	return eventFields{
		seq: ev.Seq, ts: ev.TS, session: ev.Session, agent: ev.Agent, source: ev.Source, op: ev.Op, tool: ev.Tool,
		path: ev.Path, view: ev.View, blob: ev.Blob, kind: ev.ExtraString("kind"), span: ev.ExtraString("span"),
		enc: ev.ExtraString("enc"), bytes: ev.Bytes, sidechain: ev.Sidechain, harness: ev.Harness,
	}
}

// readLine returns the fields of an event line.
func readLine(l []byte) (eventFields, bool) {
	if f, ok := parseLine(l); ok {
		return f, true
	}
	ev, err := gitstore.ParseEvent(l)
	if err != nil {
		return eventFields{}, false
	}
	return fieldsOf(&ev), true
}

// parseLine reads the top-level members of a JSON object line, keeping
// the ones eventFields holds. It fails (and readLine falls back) on
// anything unexpected: white space outside strings, a duplicate-free
// canonical line never has it.
func parseLine(b []byte) (f eventFields, ok bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return f, false
	}
	i := 1
	if b[i] == '}' {
		return f, false
	}
	var scratch []byte
	for {
		if i >= len(b) || b[i] != '"' {
			return f, false
		}
		ks := i + 1
		ke := ks
		for ke < len(b) && b[ke] != '"' && b[ke] != '\\' {
			ke++
		}
		if ke >= len(b) || b[ke] != '"' {
			return f, false // an escaped key: not one of ours, but let ParseEvent judge
		}
		key := b[ks:ke]
		i = ke + 1
		if i >= len(b) || b[i] != ':' {
			return f, false
		}
		i++
		vs := i
		ve, vok := skipJSON(b, i, 0)
		if !vok {
			return f, false
		}
		v := b[vs:ve]
		i = ve
		str := func() (string, bool) {
			if len(v) < 2 || v[0] != '"' {
				return "", false
			}
			plain := true
			for _, c := range v[1 : len(v)-1] {
				if c == '\\' {
					plain = false
					break
				}
			}
			if plain {
				return string(v[1 : len(v)-1]), true
			}
			j := 0
			var uok bool
			scratch, uok = unquote(scratch[:0], v, &j)
			return string(scratch), uok
		}
		num := func() (int64, bool) {
			n, err := strconv.ParseInt(string(v), 10, 64)
			return n, err == nil
		}
		var good = true
		switch string(key) {
		case "seq":
			f.seq, good = num()
		case "bytes":
			f.bytes, good = num()
		case "ts":
			var s string
			if s, good = str(); good {
				t, err := time.Parse(time.RFC3339Nano, s)
				f.ts, good = t, err == nil
			}
		case "session":
			f.session, good = str()
		case "agent":
			f.agent, good = str()
		case "source":
			f.source, good = str()
		case "op":
			var op string
			op, good = str()
			f.op = gitstore.Op(op)
		case "tool":
			f.tool, good = str()
		case "path":
			f.path, good = str()
		case "view":
			f.view, good = str()
		case "blob":
			f.blob, good = str()
		case "kind":
			f.kind, _ = str() // a kind that is not a string is no kind
		case "span":
			f.span, _ = str()
		case "enc":
			f.enc, _ = str()
		case "harness":
			f.harness, good = str()
		case "sidechain":
			f.sidechain = string(v) == "true"
		}
		if !good {
			return f, false
		}
		if i >= len(b) {
			return f, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return f, i == len(b)-1
		default:
			return f, false
		}
	}
}

// skipJSON returns the end of the JSON value at b[i] (no white space
// allowed around tokens).
func skipJSON(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxDepth {
		return i, false
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '"':
				return j + 1, true
			case '\\':
				j++
			}
		}
		return i, false
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		j := i + 1
		if j < len(b) && b[j] == closer {
			return j + 1, true
		}
		for {
			if b[i] == '{' {
				k, ok := skipJSON(b, j, depth+1)
				if !ok || k >= len(b) || b[j] != '"' || b[k] != ':' {
					return i, false
				}
				j = k + 1
			}
			k, ok := skipJSON(b, j, depth+1)
			if !ok || k >= len(b) {
				return i, false
			}
			switch b[k] {
			case ',':
				j = k + 1
			case closer:
				return k + 1, true
			default:
				return i, false
			}
		}
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ':' {
				break
			}
			j++
		}
		return j, j > i
	}
}

// eventOf is the gitstore.Event OpenContent needs for a document's
// content: its blob, and whether it is encrypted.
func eventOf(m *docMeta) gitstore.Event {
	ev := gitstore.Event{Blob: blobHex(m)}
	if m.Flags&flagEncrypted != 0 {
		ev.Extra = map[string]json.RawMessage{"enc": json.RawMessage(`"` + gitstore.EncAge + `"`)}
	}
	return ev
}
