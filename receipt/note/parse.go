package note

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseError says which line of a receipt body is wrong.
type ParseError struct {
	Line int // 1-based; 0 for the whole text
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "receipt: " + e.Msg
	}
	return fmt.Sprintf("receipt: line %d: %s", e.Line, e.Msg)
}

// Parse reads a receipt body (the text between the clear-signing framing).
// It accepts exactly the canonical form Marshal writes and rejects
// everything else — unknown or misplaced lines, extra spaces, quoted
// strings that could be bare, numbers with leading zeros, unsorted
// entries, dangling references — so a receipt has one text.
func Parse(body []byte) (*Receipt, error) {
	if len(body) > MaxSize {
		return nil, &ParseError{0, fmt.Sprintf("larger than %d bytes", MaxSize)}
	}
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, &ParseError{0, "must end with a newline"}
	}
	p := &parser{lines: strings.Split(string(body[:len(body)-1]), "\n")}
	r, err := p.receipt()
	if err != nil {
		return nil, err
	}
	// The strictest check of all: the canonical encoding of what was read
	// must be the text itself.
	again, err := r.Marshal()
	if err != nil {
		return nil, &ParseError{0, strings.TrimPrefix(err.Error(), "receipt: ")}
	}
	if !bytes.Equal(again, body) {
		return nil, &ParseError{firstDiffLine(again, body), "not in canonical form"}
	}
	return r, nil
}

func firstDiffLine(a, b []byte) int {
	line := 1
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return line
		}
		if a[i] == '\n' {
			line++
		}
	}
	return line
}

type parser struct {
	lines []string
	i     int // index of the next line
	r     *Receipt
	refs  int64 // span references expanded so far
}

func (p *parser) errf(format string, a ...any) error {
	return &ParseError{p.i, fmt.Sprintf(format, a...)}
}

// next returns the fields of the next line if its keyword is kw.
func (p *parser) next(kw string) ([]string, bool, error) {
	if p.i >= len(p.lines) {
		return nil, false, nil
	}
	l := p.lines[p.i]
	if !strings.HasPrefix(l, kw+" ") {
		return nil, false, nil
	}
	p.i++
	if len(l) > MaxLine {
		return nil, false, p.errf("line longer than %d bytes", MaxLine)
	}
	f, err := splitFields(l[len(kw)+1:])
	if err != nil {
		return nil, false, p.errf("%v", err)
	}
	return f, true, nil
}

func (p *parser) must(kw string, n int) ([]string, error) {
	f, ok, err := p.next(kw)
	if err != nil {
		return nil, err
	}
	if !ok {
		p.i++
		return nil, p.errf("expected a %q line", kw)
	}
	if n >= 0 && len(f) != n {
		return nil, p.errf("%q line needs %d fields, has %d", kw, n, len(f))
	}
	return f, nil
}

func (p *parser) receipt() (*Receipt, error) {
	r := &Receipt{}
	p.r = r
	if len(p.lines) == 0 || p.lines[0] != Header {
		p.i = 1
		if len(p.lines) > 0 && strings.HasPrefix(p.lines[0], "git-lossless receipt ") {
			return nil, p.errf("unsupported version %q (this build reads %q)", p.lines[0], Header)
		}
		return nil, p.errf("not a git-lossless receipt: first line must be %q", Header)
	}
	p.i = 1
	f, err := p.must("commit", 1)
	if err != nil {
		return nil, err
	}
	r.Commit = f[0]
	if f, err = p.must("tree", 1); err != nil {
		return nil, err
	}
	r.Tree = f[0]
	for {
		f, ok, err := p.next("parent")
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if len(f) != 1 || !isHex40(f[0]) {
			return nil, p.errf("parent must be a 40-hex id")
		}
		r.Parents = append(r.Parents, f[0])
	}
	if !isHex40(r.Commit) || !isHex40(r.Tree) {
		return nil, &ParseError{2, "commit and tree must be 40-hex ids"}
	}
	if f, err = p.must("committed", 1); err != nil {
		return nil, err
	}
	if r.Committed, err = p.int(f[0]); err != nil {
		return nil, err
	}
	if f, err = p.must("window", 2); err != nil {
		return nil, err
	}
	if f[0] != "-" {
		if r.From, err = p.int(f[0]); err != nil {
			return nil, err
		}
		r.HasFrom = true
	}
	to, err := p.int(f[1])
	if err != nil {
		return nil, err
	}
	for {
		f, ok, err := p.next("carried")
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if len(f) != 4 || f[1] != "window" || !isHex40(f[0]) {
			return nil, p.errf("carried line must be: carried HEX40 window FROM|- TO")
		}
		c := Carried{Commit: f[0]}
		if f[2] != "-" {
			if c.From, err = p.int(f[2]); err != nil {
				return nil, err
			}
			c.HasFrom = true
		}
		if c.To, err = p.int(f[3]); err != nil {
			return nil, err
		}
		r.Carried = append(r.Carried, c)
	}
	if to != r.WindowEnd() {
		if len(r.Carried) > 0 {
			return nil, p.errf("a carried receipt's window must end where its latest source's does")
		}
		return nil, p.errf("window must end at the committer time")
	}
	if f, err = p.must("issued", 1); err != nil {
		return nil, err
	}
	if r.Issued, err = p.time(f[0]); err != nil {
		return nil, err
	}
	if f, err = p.must("tokenizer", 1); err != nil {
		return nil, err
	}
	if f[0] != Tokenizer {
		return nil, p.errf("unknown tokenizer %q", f[0])
	}

	// Writers are listed near the end but referenced before: parse the
	// body into raw sections first, then resolve.
	type rawLine struct {
		n int
		f []string
	}
	sections := map[string][]rawLine{}
	order := []string{"path", "context", "read", "spans", "tokens", "writer", "coverage", "note"}
	at := 0
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		kw, _, _ := strings.Cut(l, " ")
		k := -1
		for j := at; j < len(order); j++ {
			if order[j] == kw {
				k = j
				break
			}
		}
		if k < 0 {
			p.i++
			return nil, p.errf("unexpected %q line here", kw)
		}
		at = k
		if kw == "note" {
			p.i++
			r.Notes = append(r.Notes, strings.TrimPrefix(l, "note "))
			continue
		}
		f, _, err := p.next(kw)
		if err != nil {
			return nil, err
		}
		sections[kw] = append(sections[kw], rawLine{p.i, f})
	}

	// writers
	for k, rl := range sections["writer"] {
		p.i = rl.n
		f := rl.f
		if len(f) != 7 || f[0] != "w"+strconv.Itoa(k+1) || f[2] != "entries" || f[4] != "head" {
			return nil, p.errf("writer line must be: writer w%d NAME entries A-B head SEQ SEAL", k+1)
		}
		a, b, ok := strings.Cut(f[3], "-")
		if !ok {
			return nil, p.errf("entries must be A-B")
		}
		w := Writer{Name: f[1], HeadSeal: f[6]}
		if w.From, err = p.int(a); err != nil {
			return nil, err
		}
		if w.To, err = p.int(b); err != nil {
			return nil, err
		}
		if w.HeadSeq, err = p.int(f[5]); err != nil {
			return nil, err
		}
		r.Writers = append(r.Writers, w)
	}

	// paths
	for _, rl := range sections["path"] {
		p.i = rl.n
		f := rl.f
		if len(f) != 6 {
			return nil, p.errf("path line needs 6 fields")
		}
		e := PathEntry{Change: f[0], Status: f[1], Mode: undash(f[2]), Blob: undash(f[3])}
		if e.Evidence, err = p.ref(f[4]); err != nil {
			return nil, err
		}
		if e.Path, err = p.str(f[5]); err != nil {
			return nil, err
		}
		r.Paths = append(r.Paths, e)
	}
	// contexts
	for k, rl := range sections["context"] {
		p.i = rl.n
		f := rl.f
		if len(f) != 11 && (len(f) != 13 || f[11] != "harness") || f[0] != ContextID(k) || f[1] != "session" || f[3] != "agent" || f[5] != "events" || f[7] != "first" || f[9] != "last" {
			return nil, p.errf("context line must be: context %s session S agent A events N first T last T [harness H]", ContextID(k))
		}
		var c Context
		if c.Session, err = p.str(f[2]); err != nil {
			return nil, err
		}
		if f[4] != "main" {
			if c.Agent, err = p.str(f[4]); err != nil {
				return nil, err
			}
			if c.Agent == "" {
				return nil, p.errf("agent must be main or an id")
			}
		}
		if c.Events, err = p.int(f[6]); err != nil {
			return nil, err
		}
		if c.First, err = p.time(f[8]); err != nil {
			return nil, err
		}
		if c.Last, err = p.time(f[10]); err != nil {
			return nil, err
		}
		if len(f) == 13 {
			if c.Harness, err = p.str(f[12]); err != nil {
				return nil, err
			}
			if c.Harness == "" {
				return nil, p.errf("harness must name one: leave it out when none is known")
			}
		}
		r.Contexts = append(r.Contexts, c)
	}
	ctxIndex := func(s string) (int, error) {
		for k := range r.Contexts {
			if ContextID(k) == s {
				return k + 1, nil
			}
		}
		return 0, p.errf("unknown context %q", s)
	}
	// reads
	for _, rl := range sections["read"] {
		p.i = rl.n
		f := rl.f
		if len(f) != 7 {
			return nil, p.errf("read line needs 7 fields")
		}
		var e ReadEntry
		if e.Context, err = ctxIndex(f[0]); err != nil {
			return nil, err
		}
		e.State = f[1]
		e.Ops = strings.Split(f[2], ",")
		e.Blob = undash(f[3])
		e.View = f[4]
		if e.Evidence, err = p.ref(f[5]); err != nil {
			return nil, err
		}
		if e.Path, err = p.str(f[6]); err != nil {
			return nil, err
		}
		r.Reads = append(r.Reads, e)
	}
	// spans: one line per context, in order
	if len(sections["spans"]) != len(r.Contexts) {
		p.i = len(p.lines)
		return nil, p.errf("need one spans line per context")
	}
	for k, rl := range sections["spans"] {
		p.i = rl.n
		f := rl.f
		if len(f) != 3 || f[0] != ContextID(k) {
			return nil, p.errf("spans line must be: spans %s N REFS", ContextID(k))
		}
		n, err := p.int(f[1])
		if err != nil {
			return nil, err
		}
		if f[2] != "-" {
			if r.Contexts[k].Spans, err = p.refList(f[2]); err != nil {
				return nil, err
			}
		}
		if int64(len(r.Contexts[k].Spans)) != n {
			return nil, p.errf("spans count %d does not match %d refs", n, len(r.Contexts[k].Spans))
		}
	}
	// tokens: one line per context, then total
	if len(sections["tokens"]) != len(r.Contexts)+1 {
		p.i = len(p.lines)
		return nil, p.errf("need one tokens line per context and a total")
	}
	for k, rl := range sections["tokens"] {
		p.i = rl.n
		f := rl.f
		want := "total"
		if k < len(r.Contexts) {
			want = ContextID(k)
		}
		if len(f) != 5 || f[0] != want || f[1] != "files" || f[3] != "spans" {
			return nil, p.errf("tokens line must be: tokens %s files N spans N", want)
		}
		a, err := p.int(f[2])
		if err != nil {
			return nil, err
		}
		b, err := p.int(f[4])
		if err != nil {
			return nil, err
		}
		if k < len(r.Contexts) {
			r.Contexts[k].FileTokens, r.Contexts[k].SpanTokens = a, b
		} else if a != r.FileTokens() || b != r.SpanTokens() {
			return nil, p.errf("token totals do not add up")
		}
	}
	// coverage: two lines
	cov := sections["coverage"]
	if len(cov) != 2 {
		p.i = len(p.lines)
		return nil, p.errf("need two coverage lines")
	}
	p.i = cov[0].n
	f = cov[0].f
	if len(f) != 12 || f[0] != "paths" || f[2] != Written || f[4] != Seen || f[6] != ChangedAfter || f[8] != Unseen || f[10] != Excluded {
		return nil, p.errf("coverage line must be: coverage paths N written N seen N changed-after N unseen N excluded N")
	}
	counts := make([]int, 6)
	for j := range counts {
		v, err := p.int(f[1+2*j])
		if err != nil {
			return nil, err
		}
		counts[j] = int(v)
	}
	r.Coverage.Written, r.Coverage.Seen, r.Coverage.ChangedAfter, r.Coverage.Unseen, r.Coverage.Excluded = counts[1], counts[2], counts[3], counts[4], counts[5]
	if counts[0] != len(r.Paths) {
		return nil, p.errf("coverage counts %d paths, the receipt lists %d", counts[0], len(r.Paths))
	}
	st := map[string]int{}
	for _, pe := range r.Paths {
		st[pe.Status]++
	}
	if st[Written] != counts[1] || st[Seen] != counts[2] || st[ChangedAfter] != counts[3] || st[Unseen] != counts[4] || st[Excluded] != counts[5] {
		return nil, p.errf("coverage counts do not match the path statuses")
	}
	p.i = cov[1].n
	f = cov[1].f
	if len(f) != 6 || f[0] != "contexts" || f[2] != "events" || f[4] != "sources" {
		return nil, p.errf("coverage line must be: coverage contexts N events N sources LIST")
	}
	if n, err := p.int(f[1]); err != nil {
		return nil, err
	} else if int(n) != len(r.Contexts) {
		return nil, p.errf("coverage counts %d contexts, the receipt lists %d", n, len(r.Contexts))
	}
	if r.Coverage.Events, err = p.int(f[3]); err != nil {
		return nil, err
	}
	if f[5] != "-" {
		r.Coverage.Sources = strings.Split(f[5], ",")
	}
	return r, nil
}

func undash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func (p *parser) int(s string) (int64, error) {
	if !canonicalUint(s) {
		return 0, p.errf("%q is not a canonical non-negative integer", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, p.errf("%q: %v", s, err)
	}
	return n, nil
}

func (p *parser) time(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil || t.UTC().Format(timeLayout) != s {
		return time.Time{}, p.errf("%q is not a time of the form 2006-01-02T15:04:05Z", s)
	}
	return t.UTC(), nil
}

func (p *parser) str(tok string) (string, error) {
	if tok == "-" {
		return "", nil
	}
	if tok[0] != '"' {
		return tok, nil
	}
	s, err := strconv.Unquote(tok)
	if err != nil {
		return "", p.errf("bad quoted string %s", tok)
	}
	if Token(s) != tok {
		return "", p.errf("string %s is not written canonically", tok)
	}
	return s, nil
}

func (p *parser) ref(s string) (Ref, error) {
	if s == "-" {
		return Ref{}, nil
	}
	w, seq, ok := strings.Cut(s, "#")
	if !ok || !strings.HasPrefix(w, "w") {
		return Ref{}, p.errf("%q is not an event reference wN#SEQ", s)
	}
	wi, err := p.int(w[1:])
	if err != nil {
		return Ref{}, err
	}
	n, err := p.int(seq)
	if err != nil {
		return Ref{}, err
	}
	if wi < 1 || int(wi) > len(p.r.Writers) || n < 1 {
		return Ref{}, p.errf("reference %s names no listed writer", s)
	}
	if w := p.r.Writers[wi-1]; n < w.From || n > w.To {
		return Ref{}, p.errf("reference %s is outside the entries %d-%d listed for w%d", s, w.From, w.To, wi)
	}
	return Ref{W: int(wi), Seq: n}, nil
}

func (p *parser) refList(s string) ([]Ref, error) {
	var out []Ref
	for _, part := range strings.Split(s, ",") {
		head, last, isRange := strings.Cut(part, "-")
		r, err := p.ref(head)
		if err != nil {
			return nil, err
		}
		end := r.Seq
		if isRange {
			if end, err = p.int(last); err != nil {
				return nil, err
			}
			if end <= r.Seq {
				return nil, p.errf("range %s must be increasing", part)
			}
			if w := p.r.Writers[r.W-1]; end > w.To {
				return nil, p.errf("range %s runs past the entries %d-%d listed for w%d", part, w.From, w.To, r.W)
			}
			if p.refs += end - r.Seq; p.refs > MaxRefs {
				return nil, p.errf("more than %d span references", MaxRefs)
			}
		}
		for q := r.Seq; q <= end; q++ {
			out = append(out, Ref{W: r.W, Seq: q})
		}
		if p.refs++; p.refs > MaxRefs {
			return nil, p.errf("more than %d span references", MaxRefs)
		}
	}
	return out, nil
}

// splitFields splits a line's fields on single spaces; a field starting
// with '"' runs to its closing quote (Go string syntax).
func splitFields(s string) ([]string, error) {
	var out []string
	for len(s) > 0 {
		if s[0] == ' ' {
			return nil, errors.New("extra space")
		}
		end := strings.IndexByte(s, ' ')
		if s[0] == '"' {
			i := 1
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return nil, errors.New("unterminated quoted string")
			}
			end = i + 1
			if end < len(s) && s[end] != ' ' {
				return nil, errors.New("quoted string must end its field")
			}
		}
		if end < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:end])
		s = s[end:]
		if len(s) > 0 {
			s = s[1:]
			if len(s) == 0 {
				return nil, errors.New("trailing space")
			}
		}
	}
	return out, nil
}
