package gitstore

// What the push gate scans besides content (see Check): the event lines
// field by field, so that a problem names the field that holds the
// secret, and the merging of problems that repeat one secret (a session
// id in every event of its session).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/git-lossless/git-lossless/secrets"
)

// eventFinding is a secret in one field of one event line.
type eventFinding struct {
	line     int // 1-based line of events.jsonl
	seq      int64
	op       Op
	path     string
	field    string
	findings []SecretFinding
}

// scanEvents finds the secrets in an events.jsonl, field by field. The
// blob is scanned whole first: a batch with no finding (nearly all) costs
// one scan. A line with a finding, or with a \u escape (which the whole
// scan reads as a boundary), is parsed and each field scanned twice: as
// it stands in the line ("name":value, so that a secret-named extra field
// is read as the assignment it is) and, for a string, decoded.
func scanEvents(scan func([]byte) []secrets.Finding, body []byte) []eventFinding {
	hits := scan(body)
	if len(hits) == 0 && !bytes.Contains(body, []byte(`\u`)) {
		return nil
	}
	var out []eventFinding
	h := 0
	for lineNo, start := 1, 0; start < len(body); lineNo++ {
		end := bytes.IndexByte(body[start:], '\n')
		if end < 0 {
			end = len(body)
		} else {
			end += start
		}
		line := body[start:end]
		hit := false
		for h < len(hits) && hits[h].Start < end {
			if hits[h].End > start {
				hit = true
			}
			h++
		}
		if hit || bytes.Contains(line, []byte(`\u`)) {
			out = append(out, lineFindings(scan, line, lineNo)...)
		}
		start = end + 1
	}
	return out
}

// lineFindings scans one event line field by field. A line that is not a
// JSON object is reported whole, as field "".
func lineFindings(scan func([]byte) []secrets.Finding, line []byte, lineNo int) []eventFinding {
	base := eventFinding{line: lineNo}
	if e, err := ParseEvent(line); err == nil {
		base.seq, base.op, base.path = e.Seq, e.Op, e.RawPath()
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		if fs, _ := findSecrets(scan, line); len(fs) > 0 {
			ef := base
			ef.findings = atLine(fs, lineNo)
			return []eventFinding{ef}
		}
		return nil
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []eventFinding
	for _, k := range keys {
		v := fields[k]
		frag := append(append(jsonString(k), ':'), v...)
		fs, vals := findSecrets(scan, frag)
		var str string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &str) == nil {
			more, mvals := findSecrets(scan, []byte(str))
			for i, f := range more {
				if !vals.set[mvals.list[i]] {
					fs = append(fs, f)
					vals.add(mvals.list[i])
				}
			}
		}
		if len(fs) > 0 {
			ef := base
			ef.field, ef.findings = k, atLine(fs, lineNo)
			out = append(out, ef)
		}
	}
	return out
}

// atLine sets each finding's line to the events.jsonl line it is on.
func atLine(fs []SecretFinding, line int) []SecretFinding {
	for i := range fs {
		fs[i].Line = line
	}
	return fs
}

// eventProblems turns the findings of an events.jsonl into problems.
func eventProblems(it OutgoingItem, efs []eventFinding, allow bool) []PushProblem {
	var out []PushProblem
	for _, ef := range efs {
		field := ef.field
		if field == "" {
			field = "line"
		}
		out = append(out, PushProblem{Kind: ProblemSecret, Ref: refOf(it), Writer: it.Writer, Seq: ef.seq, Op: ef.op,
			Content: ContentEvents, Path: ef.path, Field: ef.field, Blob: it.Blob, Findings: ef.findings, Allowed: allow,
			Reason: "event field " + field + " " + holds(ef.findings)})
	}
	return out
}

// mergeProblems folds the secret problems that repeat one secret in the
// same field of the same ref (a session id in every event of a session, a
// writer name in every batch commit) into the first of them, with the
// range of entries and how many; the others are kept as they are.
func mergeProblems(ps []PushProblem) []PushProblem {
	type key struct {
		ref, field, sig string
		content         ContentKind
	}
	mergeable := func(p *PushProblem) bool {
		return p.Kind == ProblemSecret && (p.Content == ContentEvents || p.Content == ContentCommit || p.Content == ContentTree)
	}
	n := 0
	for i := range ps {
		if mergeable(&ps[i]) {
			n++
		}
	}
	if n < 2 {
		return ps
	}
	first := map[key]int{}
	out := make([]PushProblem, 0, len(ps))
	for _, p := range ps {
		if !mergeable(&p) {
			out = append(out, p)
			continue
		}
		var sig strings.Builder
		for _, f := range p.Findings {
			sig.WriteString(f.Kind + "\x00" + f.Masked + "\x00")
		}
		k := key{p.Ref, p.Field, sig.String(), p.Content}
		i, ok := first[k]
		if !ok {
			first[k] = len(out)
			p.Entries = 1
			out = append(out, p)
			continue
		}
		m := &out[i]
		m.Entries++
		last := max(p.Seq, p.ToSeq)
		if m.ToSeq < last {
			m.ToSeq = last
		}
		if p.Seq > 0 && (m.Seq == 0 || p.Seq < m.Seq) {
			m.Seq = p.Seq
		}
		if m.Path != p.Path {
			m.Path = ""
		}
		if m.Op != p.Op {
			m.Op = ""
		}
		if m.Object != p.Object {
			m.Object = ""
		}
		if m.Blob != p.Blob {
			m.Blob = ""
		}
	}
	for i := range out {
		p := &out[i]
		if p.Entries > 1 {
			what := map[ContentKind]string{ContentEvents: "events", ContentCommit: "commits", ContentTree: "trees"}[p.Content]
			p.Reason += fmt.Sprintf(" (in %d %s)", p.Entries, what)
		} else {
			p.Entries = 0
		}
	}
	return out
}

// maskNames masks, in the names a problem shows, every secret the
// default scanner finds: the problem is printed and may be shared.
func maskNames(p *PushProblem) {
	p.Ref = secrets.MaskString(p.Ref)
	p.Writer = secrets.MaskString(p.Writer)
	p.Path = secrets.MaskString(p.Path)
}

// Display returns a copy of o for printing, with every secret the
// default scanner finds in its names (refs, writers, paths, tree paths,
// skipped refs) masked. The push itself uses o; Check reports its
// problems masked already.
func (o *Outgoing) Display() *Outgoing {
	d := *o
	refs := func(us []RefUpdate) []RefUpdate {
		out := make([]RefUpdate, len(us))
		for i, u := range us {
			u.Ref, u.Name, u.Err = secrets.MaskString(u.Ref), secrets.MaskString(u.Name), secrets.MaskString(u.Err)
			out[i] = u
		}
		return out
	}
	d.Writers, d.Notes = refs(o.Writers), refs(o.Notes)
	d.Items = make([]OutgoingItem, len(o.Items))
	for i, it := range o.Items {
		it.Writer, it.Path, it.RealPath, it.TreePath = secrets.MaskString(it.Writer), secrets.MaskString(it.Path), secrets.MaskString(it.RealPath), secrets.MaskString(it.TreePath)
		d.Items[i] = it
	}
	if o.Skipped != nil {
		d.Skipped = make([]string, len(o.Skipped))
		for i, s := range o.Skipped {
			d.Skipped[i] = secrets.MaskString(s)
		}
	}
	return &d
}

// MarshalJSON encodes the plan as Display shows it: JSON output (push
// --json, sync --json) is printed, and may be shared.
func (o *Outgoing) MarshalJSON() ([]byte, error) {
	type plain Outgoing // no methods: no recursion
	return json.Marshal((*plain)(o.Display()))
}
