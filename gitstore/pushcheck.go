package gitstore

// The push gate's check: what a push may not send (secrets, ignored
// files, non-fast-forward updates), under a policy. See outgoing.go.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/internal/gitobj"
	"github.com/git-lossless/git-lossless/secrets"
)

// ProblemKind says why an outgoing item is held back.
type ProblemKind string

const (
	// ProblemSecret: the content holds a secret (the scanner finds one, or
	// the file version was marked at write). Allowed by AllowSecrets.
	ProblemSecret ProblemKind = "secret"
	// ProblemIgnored: git ignores the file's path. Allowed by AllowIgnored.
	ProblemIgnored ProblemKind = "ignored"
	// ProblemOutside: the path is outside the repository (another
	// directory, another repository, the .git directory): git would never
	// commit it. Allowed by AllowIgnored.
	ProblemOutside ProblemKind = "outside"
	// ProblemIgnoreUnknown: the ignore rules cannot be read (the
	// repository is not on this machine any more, or git check-ignore
	// failed there). Allowed by AllowIgnored.
	ProblemIgnoreUnknown ProblemKind = "ignore-unknown"
	// ProblemNonFastForward: the update discards the remote's history of
	// the ref. Allowed by Force.
	ProblemNonFastForward ProblemKind = "non-fast-forward"
	// ProblemUnreadable: the plan or the content could not be read (a
	// damaged archive): never allowed; `git lossless verify` says more.
	ProblemUnreadable ProblemKind = "unreadable"
)

// SecretFinding is one secret the scanner found, without its value.
type SecretFinding struct {
	Kind   string `json:"kind"`
	Masked string `json:"masked"` // secrets.Mask of the value
	Line   int    `json:"line"`   // 1-based line of the content it starts on
}

// PushProblem is one reason a push holds something back. It never holds a
// secret's value: the names it shows (ref, writer, path) are masked where
// they hold one.
type PushProblem struct {
	Kind   ProblemKind `json:"kind"`
	Ref    string      `json:"ref"`
	Writer string      `json:"writer"` // the writer or notes name
	Seq    int64       `json:"seq,omitempty"`
	// ToSeq is the last entry when the problem covers several: a batch's
	// commit or tree, or the same secret in the same field of several
	// entries (Entries of them).
	ToSeq   int64       `json:"to_seq,omitempty"`
	Op      Op          `json:"op,omitempty"`
	Content ContentKind `json:"content,omitempty"`
	Path    string      `json:"path,omitempty"` // raw: print it with QuotePath
	// Field is where a secret outside content is: an event's field
	// ("session", "agent", "path", "real_path", "tool", "key", ...), a
	// commit's "message", a tree's "entry name", or "ref" (the ref name).
	Field    string          `json:"field,omitempty"`
	Blob     string          `json:"blob,omitempty"`
	Object   string          `json:"object,omitempty"`  // the commit or tree
	Entries  int             `json:"entries,omitempty"` // entries or objects covered, when more than one
	Reason   string          `json:"reason"`            // a sentence, already safe to print
	Findings []SecretFinding `json:"findings,omitempty"`
	// Rule is the ignore rule that matched: "<source>:<line>:<pattern>".
	Rule    string `json:"rule,omitempty"`
	Allowed bool   `json:"allowed"` // the policy lets it through
}

// String is the problem on one line, the path quoted when it needs to be.
func (p PushProblem) String() string {
	var b strings.Builder
	b.WriteString(p.Writer)
	if p.Seq > 0 {
		fmt.Fprintf(&b, "#%d", p.Seq)
		if p.ToSeq > p.Seq {
			fmt.Fprintf(&b, "-%d", p.ToSeq)
		}
	}
	if p.Op != "" {
		b.WriteString(" " + string(p.Op))
	}
	if p.Path != "" {
		b.WriteString(" " + QuotePath(p.Path))
	} else if p.Object != "" {
		b.WriteString(" " + string(p.Content) + " " + gitobj.Short(p.Object))
	} else if p.Blob != "" && p.Seq == 0 {
		b.WriteString(" blob " + p.Blob)
	}
	b.WriteString(": " + p.Reason)
	return b.String()
}

// QuotePath returns s as it is when it is only printable ASCII other than
// space, `"` and `\`, else Go's quoted form: control characters, newlines
// and invalid UTF-8 never reach a terminal raw.
func QuotePath(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			if utf8.ValidString(s) {
				return strconv.QuoteToGraphic(s)
			}
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// Refused returns the problems the policy does not allow.
func Refused(ps []PushProblem) []PushProblem {
	var out []PushProblem
	for _, p := range ps {
		if !p.Allowed {
			out = append(out, p)
		}
	}
	return out
}

// PushPolicy says what a push may send anyway.
type PushPolicy struct {
	AllowSecrets bool // content holding secrets (flag --allow-secrets, git config lossless.push.allowSecrets)
	AllowIgnored bool // ignored, outside or unknown paths (--allow-ignored, lossless.push.allowIgnored)
	Force        bool // non-fast-forward updates (--force)

	// Ignore checks ignore rules; nil is GitCheckIgnore.
	Ignore IgnoreChecker
	// Scan finds secrets; nil is secrets.Scan for content and
	// secrets.ScanName for names and fields (event lines, notes, commits,
	// tree entries, ref names). A Scan given is used for both.
	Scan func([]byte) []secrets.Finding
}

// PushPolicyFromConfig reads lossless.push.allowSecrets and
// lossless.push.allowIgnored (git booleans; unset is false).
func PushPolicyFromConfig(c *Config) (PushPolicy, error) {
	var p PushPolicy
	for _, kv := range []struct {
		key string
		dst *bool
	}{{"lossless.push.allowSecrets", &p.AllowSecrets}, {"lossless.push.allowIgnored", &p.AllowIgnored}} {
		if len(c.GetAll(kv.key)) == 0 {
			continue
		}
		v := c.Get(kv.key)
		b, err := parseBool(v)
		if v == "" {
			b, err = true, nil // `[lossless "push"] allowSecrets` alone is true, as in git
		}
		if err != nil {
			return p, fmt.Errorf("git config %s: %w", kv.key, err)
		}
		*kv.dst = b
	}
	return p, nil
}

// ageHeader starts every age file (binary format); content marked
// "enc":"age" without it is scanned like plaintext.
const ageHeader = "age-encryption.org/v1\n"

// Check checks everything o sends against the policy and returns every
// problem found, allowed ones included (Allowed set); Refused keeps the
// ones that stop the push. Each blob, commit and tree is read and scanned
// once; ignore rules are read with one IgnoreChecker call per work tree.
//
// Everything that leaves is scanned, not only content: a credential in a
// session id, an agent name, a path, a ref name or a receipt leaves just
// as surely (see outgoing.go). A problem names it by writer, entry, field
// and the secret's kind and masked form; the names a problem shows (ref,
// writer, path) are masked too when they hold the secret.
func (o *Outgoing) Check(ctx context.Context, p PushPolicy) ([]PushProblem, error) {
	// Content is scanned as text; names and fields (event lines, commits,
	// tree entries, ref names) as names, where a key may also follow a
	// '-' or '_' (secrets.ScanName). A policy's own Scan does both.
	scan, scanName := p.Scan, p.Scan
	if scan == nil {
		scan, scanName = secrets.Scan, secrets.ScanName
	}
	ign := p.Ignore
	if ign == nil {
		ign = GitCheckIgnore{}
	}
	var probs []PushProblem
	// refSecrets are the values found in each ref's name: a batch commit
	// repeats its writer's name, and is not reported again for it. Kept in
	// memory only.
	refSecrets := map[string]map[string]bool{}
	for _, u := range o.Refs() {
		if u.Err != "" {
			probs = append(probs, PushProblem{Kind: ProblemUnreadable, Ref: u.Ref, Writer: u.Name,
				Reason: "cannot be read: " + u.Err})
		}
		if u.NonFastForward {
			why := "the remote's " + u.Ref + " is not an ancestor of this one (rewritten here, by prune or redact)"
			if u.RemoteMissing {
				why = "the remote's " + u.Ref + " holds history this machine does not have (fetch it first)"
			}
			probs = append(probs, PushProblem{Kind: ProblemNonFastForward, Ref: u.Ref, Writer: u.Name,
				Reason: "non-fast-forward: " + why + "; pushing discards the remote's history of it", Allowed: p.Force})
		}
		if fs, vals := findSecrets(scanName, []byte(u.Ref)); len(fs) > 0 {
			refSecrets[u.Ref] = vals.set
			probs = append(probs, PushProblem{Kind: ProblemSecret, Ref: u.Ref, Writer: u.Name, Content: ContentRef, Field: "ref",
				Findings: fs, Allowed: p.AllowSecrets, Reason: "the ref name " + holds(fs) + " (a writer name is chosen by us only when it holds none: this one was given)"})
		}
	}

	// Blobs: scan each distinct one that is not age ciphertext once; an
	// events.jsonl field by field.
	type scanned struct {
		findings  []SecretFinding
		events    []eventFinding // for an events.jsonl
		encrypted bool           // really age ciphertext
		err       error
	}
	results := map[string]*scanned{}
	isEvents := map[string]bool{}
	bodies := map[string][]byte{} // events.jsonl the plan kept
	isNote := map[string]bool{}   // a receipt: names (sessions, writers, paths), scanned as names
	var order []string
	for _, it := range o.Items {
		if _, ok := results[it.Blob]; !ok {
			results[it.Blob] = &scanned{}
			order = append(order, it.Blob)
		}
		switch it.Kind {
		case ContentEvents:
			isEvents[it.Blob] = true
			if it.body != nil {
				bodies[it.Blob] = it.body
			}
		case ContentNote:
			isNote[it.Blob] = true
		}
	}
	encOnly := map[string]bool{} // every event naming it says "enc":"age"
	for _, it := range o.Items {
		v, ok := encOnly[it.Blob]
		encOnly[it.Blob] = (v || !ok) && it.Encrypted
	}
	if err := parallel(ctx, len(order), func(i int) {
		id := order[i]
		r := results[id]
		if b, ok := bodies[id]; ok {
			r.events = scanEvents(scanName, b)
			return
		}
		typ, body, err := o.s.odb.Read(id)
		if err == nil && typ != "blob" {
			err = fmt.Errorf("%s is a %s, not a blob", gitobj.Short(id), typ)
		}
		if err != nil {
			r.err = err
			return
		}
		if encOnly[id] && bytes.HasPrefix(body, []byte(ageHeader)) {
			r.encrypted = true
			return
		}
		if isEvents[id] {
			r.events = scanEvents(scanName, body)
			return
		}
		if isNote[id] {
			r.findings, _ = findSecrets(scanName, body)
			return
		}
		r.findings, _ = findSecrets(scan, body)
	}); err != nil {
		return nil, err
	}

	// Commits (message and headers) and trees (entry names).
	objFindings := make([][]SecretFinding, len(o.objects))
	objErr := make([]error, len(o.objects))
	if err := parallel(ctx, len(o.objects), func(i int) {
		ob := o.objects[i]
		body := ob.text
		if body == nil {
			kind := ob.kind()
			typ, raw, err := o.s.odb.Read(ob.id)
			if err == nil && typ != string(kind) {
				err = fmt.Errorf("%s is a %s, not a %s", gitobj.Short(ob.id), typ, kind)
			}
			if err == nil && ob.tree {
				raw, err = treeNames(raw)
			}
			if err != nil {
				objErr[i] = err
				return
			}
			body = raw
		}
		fs, vals := findSecrets(scanName, body)
		for k := 0; k < len(fs); k++ {
			if refSecrets[o.objRefs[ob.ref].ref][vals.list[k]] {
				continue // the writer's own name, reported for the ref
			}
			objFindings[i] = append(objFindings[i], fs[k])
		}
	}); err != nil {
		return nil, err
	}
	for i, ob := range o.objects {
		if objErr[i] == nil && len(objFindings[i]) == 0 {
			continue
		}
		or := o.objRefs[ob.ref]
		base := PushProblem{Ref: or.ref, Writer: or.name, Seq: ob.first, ToSeq: ob.seq, Content: ob.kind(), Object: ob.id}
		if ob.seq == ob.first {
			base.ToSeq = 0
		}
		if objErr[i] != nil {
			pp := base
			pp.Kind, pp.Reason = ProblemUnreadable, fmt.Sprintf("%s %s cannot be read: %v (run `git lossless verify %s`)", ob.kind(), gitobj.Short(ob.id), objErr[i], or.name)
			probs = append(probs, pp)
			continue
		}
		if fs := objFindings[i]; len(fs) > 0 {
			pp := base
			pp.Kind, pp.Allowed, pp.Findings = ProblemSecret, p.AllowSecrets, fs
			pp.Field = "message"
			what := "commit"
			if ob.tree {
				pp.Field, what = "entry name", "tree entry names"
			}
			pp.Reason = what + " " + holds(fs)
			probs = append(probs, pp)
		}
	}

	// Ignore rules: resolve each name a file version is judged by
	// (linkcheck.go) to the work tree that holds it, then ask once per
	// work tree.
	res := newPathResolver()
	links := newResolver()
	type pending struct {
		item  int
		slot  int // the name's index among the item's names (its verdict slot)
		rel   string
		name  fileName
		shown string // the name as the reason shows it
	}
	byTree := map[string][]pending{}
	verdicts := make([][]*PushProblem, len(o.Items)) // per item, per name tried: the path problems
	hard := map[string][]int{}                       // work tree → items whose file has other hard links
	hardFI := map[int]os.FileInfo{}
	for i, it := range o.Items {
		r := results[it.Blob]
		base := PushProblem{Ref: refOf(it), Writer: it.Writer, Seq: it.Seq, Op: it.Op, Content: it.Kind, Path: it.Path, Blob: it.Blob}
		if r.err != nil {
			pp := base
			pp.Kind, pp.Reason = ProblemUnreadable, fmt.Sprintf("content %s cannot be read: %v (run `git lossless verify %s`)", gitobj.Short(it.Blob), r.err, it.Writer)
			probs = append(probs, pp)
			continue
		}
		if it.Kind == ContentEvents {
			probs = append(probs, eventProblems(it, r.events, p.AllowSecrets)...)
			continue
		}
		if it.Encrypted && !r.encrypted {
			// Marked encrypted, but not age ciphertext: scanned as it is.
			it.Encrypted = false
		}
		if len(r.findings) > 0 || (it.Kind == ContentFile && it.Marked > 0) {
			pp := base
			pp.Kind, pp.Allowed, pp.Findings = ProblemSecret, p.AllowSecrets, r.findings
			pp.Reason = secretReason(it, r.findings)
			probs = append(probs, pp)
		}
		if it.Encrypted || it.Path == "" || it.Kind != ContentFile && it.Kind != ContentSpan {
			continue
		}
		names := []fileName{{it.Path, viaPath}}
		var fi os.FileInfo
		if repo := cmp.Or(it.Repo, o.s.loc.WorkTree); it.Kind == ContentFile && repo != "" && res.dirExists(repo) {
			names, fi = namesOf(it, o.s.loc.WorkTree, links) // nothing to follow where the repository is gone
		}
		verdicts[i] = make([]*PushProblem, len(names)+1)
		for k, n := range names {
			wt, rel, kind, why := res.resolve(it.Repo, n.path, o.s.loc.WorkTree)
			if kind != "" {
				pp := base
				pp.Kind, pp.Reason, pp.Allowed = kind, viaReason(n, n.path, why), p.AllowIgnored
				verdicts[i][k] = &pp
				continue
			}
			byTree[wt] = append(byTree[wt], pending{i, k, rel, n, n.path})
			if n.via == viaPath && fi != nil {
				hard[wt] = append(hard[wt], i)
				hardFI[i] = fi
			}
		}
	}
	// Hard links: the other names of a linked file that git ignores in
	// the same work tree are judged with the rest.
	for _, wt := range sortedKeysP(hard) {
		items := hard[wt]
		fis := make([]os.FileInfo, len(items))
		for k, i := range items {
			fis[k] = hardFI[i]
		}
		partners, err := hardLinkPartners(ctx, wt, fis)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			for _, i := range items {
				it := o.Items[i]
				pp := PushProblem{Kind: ProblemIgnoreUnknown, Ref: refOf(it), Writer: it.Writer, Seq: it.Seq, Op: it.Op, Content: it.Kind,
					Path: it.Path, Blob: it.Blob, Allowed: p.AllowIgnored,
					Reason: "ignore rules unknown: it is a hard link and its other names could not be checked: " + err.Error() + " in " + QuotePath(wt)}
				verdicts[i][len(verdicts[i])-1] = &pp
			}
			continue
		}
		for k, i := range items {
			for _, rel := range partners[k] {
				byTree[wt] = append(byTree[wt], pending{i, len(verdicts[i]) - 1, rel, fileName{rel, viaHardLink}, rel})
			}
		}
	}
	for _, wt := range sortedKeysP(byTree) {
		ps := byTree[wt]
		seen := map[string]bool{}
		var rels []string
		for _, q := range ps {
			if !seen[q.rel] {
				seen[q.rel] = true
				rels = append(rels, q.rel)
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ignored, err := ign.CheckIgnore(ctx, wt, rels)
		for _, q := range ps {
			it := o.Items[q.item]
			pp := PushProblem{Ref: refOf(it), Writer: it.Writer, Seq: it.Seq, Op: it.Op, Content: it.Kind,
				Path: it.Path, Blob: it.Blob, Allowed: p.AllowIgnored}
			if err != nil {
				pp.Kind, pp.Reason = ProblemIgnoreUnknown, "ignore rules unknown: "+err.Error()+" in "+QuotePath(wt)
			} else if rule, ok := ignored[q.rel]; ok {
				pp.Kind, pp.Rule = ProblemIgnored, rule.String()
				pp.Reason = viaReason(q.name, q.shown, "git ignores it ("+QuotePath(rule.Source)+":"+strconv.Itoa(rule.Line)+": "+QuotePath(rule.Pattern)+")")
			} else {
				continue
			}
			if verdicts[q.item][q.slot] == nil { // one hard-link partner is enough
				verdicts[q.item][q.slot] = &pp
			}
		}
	}
	for _, vs := range verdicts {
		if v := firstVerdict(vs); v != nil {
			probs = append(probs, *v)
		}
	}
	probs = mergeProblems(probs)
	for i := range probs {
		maskNames(&probs[i])
	}
	sortProblems(probs)
	return probs, nil
}

// kind is ContentTree or ContentCommit.
func (ob outObject) kind() ContentKind {
	if ob.tree {
		return ContentTree
	}
	return ContentCommit
}

// refOf is the ref an item is on.
func refOf(it OutgoingItem) string {
	if it.Notes {
		return NotesPrefix + it.Writer
	}
	return RefPrefix + it.Writer
}

// firstVerdict picks an item's path problem: the first name, in the
// order they were tried, that git would not commit; a name git would
// commit but whose rules are unknown counts only when no name gives a
// firm answer.
func firstVerdict(vs []*PushProblem) *PushProblem {
	var unknown *PushProblem
	for _, v := range vs {
		switch {
		case v == nil:
		case v.Kind == ProblemIgnoreUnknown:
			if unknown == nil {
				unknown = v
			}
		default:
			return v
		}
	}
	return unknown
}

// findSecrets scans text and returns its findings, without their values,
// and the values themselves (kept in memory only, for comparing).
func findSecrets(scan func([]byte) []secrets.Finding, text []byte) ([]SecretFinding, secretValues) {
	var out []SecretFinding
	var vals secretValues
	for _, f := range scan(text) {
		if f.Start < 0 || f.End > len(text) || f.Start >= f.End {
			continue
		}
		v := text[f.Start:f.End]
		out = append(out, SecretFinding{Kind: f.Kind, Masked: secrets.Mask(v), Line: 1 + bytes.Count(text[:f.Start], []byte{'\n'})})
		vals.add(string(v))
	}
	return out, vals
}

// secretValues are found values, in order and as a set.
type secretValues struct {
	list []string
	set  map[string]bool
}

func (v *secretValues) add(s string) {
	v.list = append(v.list, s)
	if v.set == nil {
		v.set = map[string]bool{}
	}
	v.set[s] = true
}

// holds says "holds N secret(s): kind masked (line L), ...".
func holds(fs []SecretFinding) string {
	var parts []string
	for i, f := range fs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(fs)-3))
			break
		}
		parts = append(parts, f.Kind+" "+f.Masked)
	}
	return fmt.Sprintf("holds %d secret(s): %s", len(fs), strings.Join(parts, ", "))
}

// treeNames returns a tree's entry names, one a line: what a tree says
// besides object ids.
func treeNames(body []byte) ([]byte, error) {
	ents, err := gitobj.ParseTree(body)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, e := range ents {
		b.WriteString(e.Name)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

func sortedKeysP[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var problemOrder = map[ProblemKind]int{ProblemUnreadable: 0, ProblemNonFastForward: 1, ProblemSecret: 2,
	ProblemIgnored: 3, ProblemOutside: 4, ProblemIgnoreUnknown: 5}

func sortProblems(ps []PushProblem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := &ps[i], &ps[j]
		if a.Kind != b.Kind {
			return problemOrder[a.Kind] < problemOrder[b.Kind]
		}
		if a.Ref != b.Ref {
			return a.Ref < b.Ref
		}
		return a.Seq < b.Seq
	})
}

func secretReason(it OutgoingItem, fs []SecretFinding) string {
	what := "content"
	switch it.Kind {
	case ContentSpan:
		what = "span"
	case ContentFile:
		what = "file version"
	}
	if len(fs) == 0 {
		return fmt.Sprintf("%s marked at write as holding %d secret(s)", what, it.Marked)
	}
	var parts []string
	for i, f := range fs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(fs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (line %d)", f.Kind, f.Masked, f.Line))
	}
	return fmt.Sprintf("%s holds %d secret(s): %s", what, len(fs), strings.Join(parts, ", "))
}

// parallel runs fn(0..n-1) on a few goroutines; it returns the context's
// error when it was cancelled.
func parallel(ctx context.Context, n int, fn func(int)) error {
	workers := min(runtime.GOMAXPROCS(0), 8, n)
	if workers <= 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			fn(i)
		}
		return nil
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	var err error
	for i := range n {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return err
}
