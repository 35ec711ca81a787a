package gitstore

// The push gate: what a push of the archive would send, and whether it may.
//
// Everything that sends the archive to another machine (git lossless push;
// later anchor push and sync) goes through the same three steps:
//
//  1. the remote's refs, as `git ls-remote` reports them (LsRemote, or any
//     map of ref name to commit id);
//  2. the plan (Store.Outgoing): per writer, the batches from the local head
//     back to (not including) the remote's commit for that ref, their
//     events and the content blobs their trees list (blobs/) — a pruned
//     blob is in no tree and is not sent; a remote commit that is not an
//     ancestor of the local head (a writer rewritten by prune, or one the
//     remote has batches of that this machine lacks) makes the update
//     non-fast-forward and the plan holds the writer's whole history;
//     receipts' notes refs (refs/notes/lossless/*) likewise by commit;
//  3. the check (Outgoing.Check): every outgoing content blob that is not
//     age ciphertext is scanned for secrets, every file version marked
//     "secrets": N at write is flagged, every file version (and every
//     span naming a path) whose path git ignores — or that git would never
//     commit, being outside the repository — is flagged, non-fast-forward
//     updates are flagged; a policy (PushPolicy) allows some kinds, the
//     rest refuse the push. Encrypted content cannot be scanned: it is
//     counted and listed, never refused.
//
// Then Push sends exactly the planned refs, each as a compare-and-swap
// against the remote value the plan was made from (--force-with-lease), so
// what leaves is what was checked.

import (
	"github.com/git-lossless/git-lossless/internal/gitobj"

	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/git-lossless/git-lossless/secrets"
)

// PushRefPatterns are the ref patterns that hold the archive: the writers'
// logs and the receipts' notes. `git ls-remote REMOTE PATTERNS...` lists
// what a remote holds of them.
var PushRefPatterns = []string{RefPrefix + "*", NotesPrefix + "*"}

// ContentKind classifies an outgoing content blob by the event naming it.
type ContentKind string

const (
	// ContentFile is a file version: any op with content that is not a
	// span or a vault entry (read, edit, write, attach, restore, ...).
	ContentFile ContentKind = "file"
	// ContentSpan is conversation text (op "span").
	ContentSpan ContentKind = "span"
	// ContentVault is a vault entry (op "vault"): redacted values, age
	// ciphertext to the local identity.
	ContentVault ContentKind = "vault"
	// ContentUnnamed is a blob a batch tree lists that no event of the
	// batch names (a damaged or hand-made archive): sent all the same.
	ContentUnnamed ContentKind = "unnamed"
)

// contentKind returns the kind of an event's content.
func contentKind(op string) ContentKind {
	switch op {
	case "span":
		return ContentSpan
	case OpVault:
		return ContentVault
	}
	return ContentFile
}

// OutgoingItem is one content blob a push sends, as one event names it.
type OutgoingItem struct {
	Writer    string      `json:"writer"`
	Seq       int64       `json:"seq,omitempty"` // 0 for an unnamed blob
	Op        string      `json:"op,omitempty"`
	Kind      ContentKind `json:"kind"`
	Path      string      `json:"path,omitempty"` // the raw path (Event.RawPath)
	Repo      string      `json:"repo,omitempty"`
	Blob      string      `json:"blob"`
	Bytes     int64       `json:"bytes"`
	Encrypted bool        `json:"encrypted,omitempty"` // "enc":"age": sent as ciphertext, not scanned
	Marked    int64       `json:"secrets,omitempty"`   // the "secrets": N mark written with a file version
}

// OutgoingCounts sums up what a push sends.
type OutgoingCounts struct {
	Batches      int   `json:"batches"` // batch commits (notes commits for a notes ref)
	Events       int   `json:"events"`
	Spans        int   `json:"spans"`
	FileVersions int   `json:"file_versions"`
	Vault        int   `json:"vault"`
	Encrypted    int   `json:"encrypted"` // content items sent as age ciphertext (spans, vault entries, ...)
	Blobs        int   `json:"blobs"`     // distinct content blobs
	Bytes        int64 `json:"bytes"`     // their bytes, as the events record them
	Pruned       int   `json:"pruned"`    // events whose content was pruned: the event goes, the content does not
}

func (c *OutgoingCounts) add(o OutgoingCounts) {
	c.Batches += o.Batches
	c.Events += o.Events
	c.Spans += o.Spans
	c.FileVersions += o.FileVersions
	c.Vault += o.Vault
	c.Encrypted += o.Encrypted
	c.Pruned += o.Pruned
}

// RefUpdate is one ref a push updates.
type RefUpdate struct {
	Ref    string `json:"ref"`
	Name   string `json:"name"` // the writer (refs/lossless/<name>) or notes name (refs/notes/lossless/<name>)
	Notes  bool   `json:"notes,omitempty"`
	Local  string `json:"local"`            // the commit pushed
	Remote string `json:"remote,omitempty"` // the remote's commit before ("" when it lacks the ref)
	// NonFastForward: the remote's commit is not an ancestor of Local, so
	// the update discards the remote's history of this ref (after a prune
	// rewrote the writer, or when the remote holds batches this machine
	// lacks). The plan then holds the whole history.
	NonFastForward bool `json:"non_fast_forward,omitempty"`
	// RemoteMissing: the remote's commit is not on this machine at all
	// (someone else pushed to this writer).
	RemoteMissing bool           `json:"remote_missing,omitempty"`
	FromSeq       int64          `json:"from_seq,omitempty"` // first entry sent (writers)
	ToSeq         int64          `json:"to_seq,omitempty"`   // last entry sent
	Counts        OutgoingCounts `json:"counts"`
	// Err says why the local ref could not be planned (a damaged chain);
	// Check refuses such a ref.
	Err string `json:"error,omitempty"`
}

// Outgoing is the plan of a push: what it would send, ref by ref.
type Outgoing struct {
	Writers  []RefUpdate    `json:"writers"`
	Notes    []RefUpdate    `json:"notes"`
	UpToDate int            `json:"up_to_date"` // local refs the remote already has at the same commit
	Items    []OutgoingItem `json:"items"`      // every content blob sent, per event naming it
	Total    OutgoingCounts `json:"total"`
	// Skipped lists local refs under the archive's prefixes that are not
	// valid writer names: never pushed.
	Skipped []string `json:"skipped,omitempty"`

	s *Store
}

// Empty reports whether there is nothing to push.
func (o *Outgoing) Empty() bool { return len(o.Writers) == 0 && len(o.Notes) == 0 }

// Refs returns every planned ref update, writers first.
func (o *Outgoing) Refs() []RefUpdate {
	return append(append([]RefUpdate(nil), o.Writers...), o.Notes...)
}

// ParseLsRemote reads `git ls-remote` output ("<id>\t<ref>" lines) into a
// map of ref name to commit id, keeping only refs under the archive's
// prefixes (ls-remote matches patterns against any tail of a ref name).
func ParseLsRemote(out []byte) (map[string]string, error) {
	refs := map[string]string{}
	for n, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		id, ref, ok := strings.Cut(line, "\t")
		if !ok || !gitobj.IsID(id) {
			return nil, fmt.Errorf("ls-remote line %d: not \"<id>\\t<ref>\": %s", n+1, QuotePath(line))
		}
		if strings.HasSuffix(ref, "^{}") {
			continue
		}
		if strings.HasPrefix(ref, RefPrefix) || strings.HasPrefix(ref, NotesPrefix) {
			refs[ref] = id
		}
	}
	return refs, nil
}

// Outgoing plans a push of the archive to a remote whose refs are remote
// (ref name → commit id, as `git ls-remote` reports them; refs outside
// refs/lossless/ and refs/notes/lossless/ are ignored). It reads only
// through the store's own readers and changes nothing.
func (s *Store) Outgoing(ctx context.Context, remote map[string]string) (*Outgoing, error) {
	o := &Outgoing{s: s, Writers: []RefUpdate{}, Notes: []RefUpdate{}, Items: []OutgoingItem{}}
	local, err := s.refs.List(RefPrefix)
	if err != nil {
		return nil, err
	}
	notes, err := s.refs.List(NotesPrefix)
	if err != nil {
		return nil, err
	}
	seenBlob := map[string]bool{}
	for _, ref := range sortedKeys(local) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(ref, RefPrefix)
		if ValidWriter(name) != nil {
			o.Skipped = append(o.Skipped, ref)
			continue
		}
		id, rid := local[ref], remote[ref]
		if id == rid {
			o.UpToDate++
			continue
		}
		u, items, err := s.planWriter(ctx, name, id, rid)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if !seenBlob[it.Blob] {
				seenBlob[it.Blob] = true
				o.Total.Blobs++
				o.Total.Bytes += it.Bytes
			}
		}
		o.Total.add(u.Counts)
		o.Writers = append(o.Writers, u)
		o.Items = append(o.Items, items...)
	}
	for _, ref := range sortedKeys(notes) {
		name := strings.TrimPrefix(ref, NotesPrefix)
		if ValidWriter(name) != nil {
			o.Skipped = append(o.Skipped, ref)
			continue
		}
		id, rid := notes[ref], remote[ref]
		if id == rid {
			o.UpToDate++
			continue
		}
		u := RefUpdate{Ref: ref, Name: name, Notes: true, Local: id, Remote: rid}
		n, ff, missing, err := s.commitsSince(ctx, id, rid)
		if err != nil {
			u.Err = err.Error()
		}
		u.Counts.Batches, u.NonFastForward, u.RemoteMissing = n, !ff, missing
		o.Notes = append(o.Notes, u)
	}
	return o, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// planWriter plans one writer's update from remote commit rid ("" when
// the remote lacks it) to local head id.
func (s *Store) planWriter(ctx context.Context, name, id, rid string) (RefUpdate, []OutgoingItem, error) {
	u := RefUpdate{Ref: RefPrefix + name, Name: name, Local: id, Remote: rid}
	h, err := s.headAt(id)
	if err != nil {
		u.Err = err.Error()
		return u, nil, nil
	}
	stop, stopSeq := "", int64(0)
	if rid != "" {
		c, err := s.readCommit(rid)
		switch {
		case err == nil && c.Seq > 0 && c.Seq < h.Seq:
			stop, stopSeq = rid, c.Seq
		case errors.Is(err, ErrObjectMissing):
			u.NonFastForward, u.RemoteMissing = true, true
		default:
			// Not a batch commit of ours, or not behind the head: no
			// fast-forward can reach it.
			u.NonFastForward = true
		}
	}
	batches, found, err := s.walk(ctx, id, stop, stopSeq)
	if err != nil {
		return u, nil, err
	}
	if stop != "" && !found {
		// The remote's commit is not on this history (a prune rewrote
		// it): the whole history goes.
		u.NonFastForward = true
		if batches, _, err = s.walk(ctx, id, "", 0); err != nil {
			return u, nil, err
		}
	}
	var items []OutgoingItem
	seen := map[string]bool{}
	for _, b := range batches {
		if b.Err != nil {
			u.Err = fmt.Sprintf("batch %s: %v (run `git lossless verify %s`)", gitobj.Short(b.Commit), b.Err, name)
			return u, nil, nil
		}
		u.Counts.Batches++
		named := map[string]bool{}
		for _, l := range b.Lines {
			e, err := ParseEvent(l)
			if err != nil {
				u.Err = fmt.Sprintf("batch %s: %v", gitobj.Short(b.Commit), err)
				return u, nil, nil
			}
			u.Counts.Events++
			if u.FromSeq == 0 {
				u.FromSeq = e.Seq
			}
			u.ToSeq = e.Seq
			if e.Blob == "" || e.Excluded {
				continue
			}
			if !b.Blobs[e.Blob] {
				u.Counts.Pruned++
				continue
			}
			named[e.Blob] = true
			it := OutgoingItem{Writer: name, Seq: e.Seq, Op: e.Op, Kind: contentKind(e.Op), Path: e.RawPath(),
				Repo: e.Repo, Blob: e.Blob, Bytes: e.Bytes, Encrypted: IsEncrypted(&e), Marked: extraInt(&e, "secrets")}
			switch it.Kind {
			case ContentSpan:
				u.Counts.Spans++
			case ContentVault:
				u.Counts.Vault++
			default:
				u.Counts.FileVersions++
			}
			if it.Encrypted {
				u.Counts.Encrypted++
			}
			if !seen[it.Blob] {
				seen[it.Blob] = true
				u.Counts.Blobs++
				u.Counts.Bytes += it.Bytes
			}
			items = append(items, it)
		}
		for _, bl := range sortedSet(b.Blobs) {
			if !named[bl] {
				items = append(items, OutgoingItem{Writer: name, Kind: ContentUnnamed, Blob: bl})
				if !seen[bl] {
					seen[bl] = true
					u.Counts.Blobs++
				}
			}
		}
	}
	return u, items, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// extraInt returns an unknown field's value as an integer (0 when absent
// or not a number).
func extraInt(e *Event, k string) int64 {
	raw, ok := e.Extra[k]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// commitsSince counts the commits reachable from id without passing
// through rid (a notes ref's history: what the push sends), and says
// whether rid is among id's ancestors (a fast-forward) and whether rid is
// missing here.
func (s *Store) commitsSince(ctx context.Context, id, rid string) (n int, ff, missing bool, err error) {
	if rid != "" {
		if _, err := s.readCommit(rid); errors.Is(err, ErrObjectMissing) {
			missing = true
		}
	}
	ff = rid == ""
	seen := map[string]bool{}
	queue := []string{id}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return n, false, missing, err
		}
		c := queue[0]
		queue = queue[1:]
		if seen[c] {
			continue
		}
		seen[c] = true
		if c == rid {
			ff = true
			continue
		}
		info, err := s.readCommit(c)
		if err != nil {
			return n, false, missing, fmt.Errorf("commit %s: %w", gitobj.Short(c), err)
		}
		n++
		queue = append(queue, info.Parents...)
	}
	return n, ff, missing, nil
}

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
// secret's value.
type PushProblem struct {
	Kind     ProblemKind     `json:"kind"`
	Ref      string          `json:"ref"`
	Writer   string          `json:"writer"` // the writer or notes name
	Seq      int64           `json:"seq,omitempty"`
	Op       string          `json:"op,omitempty"`
	Content  ContentKind     `json:"content,omitempty"`
	Path     string          `json:"path,omitempty"` // raw: print it with QuotePath
	Blob     string          `json:"blob,omitempty"`
	Reason   string          `json:"reason"` // a sentence, already safe to print
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
	}
	if p.Op != "" {
		b.WriteString(" " + p.Op)
	}
	if p.Path != "" {
		b.WriteString(" " + QuotePath(p.Path))
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

// IgnoreRule is the rule that makes git ignore a path.
type IgnoreRule struct {
	Source  string // the file the rule is in (.gitignore, .git/info/exclude, core.excludesFile)
	Line    int
	Pattern string
}

func (r IgnoreRule) String() string {
	return fmt.Sprintf("%s:%d:%s", r.Source, r.Line, r.Pattern)
}

// IgnoreChecker says which paths git ignores in a work tree.
type IgnoreChecker interface {
	// CheckIgnore returns the paths of rels (slash-separated, relative to
	// the top of workTree) that git ignores there, each with its rule.
	CheckIgnore(ctx context.Context, workTree string, rels []string) (map[string]IgnoreRule, error)
}

// GitCheckIgnore is the IgnoreChecker of the real git: one `git
// check-ignore -v --stdin -z` process per call, run in the work tree, so
// nested .gitignore files, .git/info/exclude and core.excludesFile apply
// as git applies them, and a tracked file is not ignored.
type GitCheckIgnore struct{}

// CheckIgnore implements IgnoreChecker.
func (GitCheckIgnore) CheckIgnore(ctx context.Context, workTree string, rels []string) (map[string]IgnoreRule, error) {
	var in bytes.Buffer
	for _, r := range rels {
		// "./" keeps a path that starts with ':' from being read as
		// pathspec magic; check-ignore echoes the path as given.
		in.WriteString("./" + r)
		in.WriteByte(0)
	}
	cmd := exec.CommandContext(ctx, "git", "check-ignore", "-v", "--stdin", "-z")
	cmd.Dir = workTree
	cmd.Env = gitEnv()
	cmd.Stdin = &in
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: nothing ignored
		return nil, fmt.Errorf("git check-ignore: %s", gitMessage(errb.Bytes(), err))
	}
	f := bytes.Split(out.Bytes(), []byte{0})
	res := map[string]IgnoreRule{}
	for i := 0; i+3 < len(f); i += 4 {
		pat := string(f[i+2])
		if strings.HasPrefix(pat, "!") {
			continue // a negated pattern matched: not ignored
		}
		line, _ := strconv.Atoi(string(f[i+1]))
		p := strings.TrimPrefix(string(f[i+3]), "./")
		res[p] = IgnoreRule{Source: string(f[i]), Line: line, Pattern: pat}
	}
	return res, nil
}

// gitMessage is the first line of a git process's stderr (escaped), or
// the process error.
func gitMessage(stderr []byte, err error) string {
	// One line: git's first messages joined ("fatal: unable to connect to
	// host:" is followed by the reason on the next line), its hints and
	// progress left out.
	var parts []string
	for _, l := range strings.Split(strings.TrimSpace(string(stderr)), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "hint:") || strings.HasPrefix(l, "To ") {
			continue
		}
		parts = append(parts, l)
		if len(parts) == 3 {
			break
		}
	}
	msg := strings.Join(parts, " ")
	if msg == "" {
		return err.Error()
	}
	return strings.Trim(strconv.QuoteToGraphic(msg), `"`)
}

// gitEnv is the environment of the git processes the gate runs: the
// user's own (their SSH config, credential helpers), without the
// variables that would point git at another repository or change how it
// reads paths, and never prompting on a terminal.
func gitEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_LITERAL_PATHSPECS",
			"GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_TERMINAL_PROMPT":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0")
}

// PushPolicy says what a push may send anyway.
type PushPolicy struct {
	AllowSecrets bool // content holding secrets (flag --allow-secrets, git config lossless.push.allowSecrets)
	AllowIgnored bool // ignored, outside or unknown paths (--allow-ignored, lossless.push.allowIgnored)
	Force        bool // non-fast-forward updates (--force)

	// Ignore checks ignore rules; nil is GitCheckIgnore.
	Ignore IgnoreChecker
	// Scan finds secrets; nil is secrets.Scan.
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
// ones that stop the push. Each content blob is read and scanned once,
// ignore rules are read with one IgnoreChecker call per work tree.
func (o *Outgoing) Check(ctx context.Context, p PushPolicy) ([]PushProblem, error) {
	scan := p.Scan
	if scan == nil {
		scan = secrets.Scan
	}
	ign := p.Ignore
	if ign == nil {
		ign = GitCheckIgnore{}
	}
	var probs []PushProblem
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
	}

	// Secrets: scan each distinct blob that is not age ciphertext once.
	type scanned struct {
		findings  []SecretFinding
		encrypted bool // really age ciphertext
		err       error
	}
	results := map[string]*scanned{}
	var order []string
	for _, it := range o.Items {
		if _, ok := results[it.Blob]; !ok {
			results[it.Blob] = &scanned{}
			order = append(order, it.Blob)
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
		for _, f := range scan(body) {
			if f.Start < 0 || f.End > len(body) || f.Start >= f.End {
				continue
			}
			r.findings = append(r.findings, SecretFinding{Kind: f.Kind, Masked: secrets.Mask(body[f.Start:f.End]),
				Line: 1 + bytes.Count(body[:f.Start], []byte{'\n'})})
		}
	}); err != nil {
		return nil, err
	}

	// Ignore rules: resolve each file path to the work tree that holds it,
	// then ask once per work tree.
	res := newPathResolver()
	type pending struct {
		item int
		rel  string
	}
	byTree := map[string][]pending{}
	verdict := make([]*PushProblem, len(o.Items)) // the path problem of item i
	for i, it := range o.Items {
		r := results[it.Blob]
		base := PushProblem{Ref: RefPrefix + it.Writer, Writer: it.Writer, Seq: it.Seq, Op: it.Op, Content: it.Kind, Path: it.Path, Blob: it.Blob}
		if r.err != nil {
			pp := base
			pp.Kind, pp.Reason = ProblemUnreadable, fmt.Sprintf("content %s cannot be read: %v (run `git lossless verify %s`)", gitobj.Short(it.Blob), r.err, it.Writer)
			probs = append(probs, pp)
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
		if it.Encrypted || it.Path == "" || it.Kind == ContentVault || it.Kind == ContentUnnamed {
			continue
		}
		wt, rel, kind, why := res.resolve(it.Repo, it.Path, o.s.loc.WorkTree)
		if kind != "" {
			pp := base
			pp.Kind, pp.Reason, pp.Allowed = kind, why, p.AllowIgnored
			verdict[i] = &pp
			continue
		}
		byTree[wt] = append(byTree[wt], pending{i, rel})
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
			pp := PushProblem{Ref: RefPrefix + it.Writer, Writer: it.Writer, Seq: it.Seq, Op: it.Op, Content: it.Kind,
				Path: it.Path, Blob: it.Blob, Allowed: p.AllowIgnored}
			if err != nil {
				pp.Kind, pp.Reason = ProblemIgnoreUnknown, "ignore rules unknown: "+err.Error()+" in "+QuotePath(wt)
				verdict[q.item] = &pp
				continue
			}
			if rule, ok := ignored[q.rel]; ok {
				pp.Kind, pp.Rule = ProblemIgnored, rule.String()
				pp.Reason = "git ignores it (" + QuotePath(rule.Source) + ":" + strconv.Itoa(rule.Line) + ": " + QuotePath(rule.Pattern) + ")"
				verdict[q.item] = &pp
			}
		}
	}
	for _, v := range verdict {
		if v != nil {
			probs = append(probs, *v)
		}
	}
	sortProblems(probs)
	return probs, nil
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

// pathResolver finds, for a recorded path, the work tree whose ignore
// rules apply: the innermost work tree on disk that holds the file (with
// symlinks resolved), so a file in a submodule or nested repository is
// checked there, and one outside every work tree, or in another
// repository than the one it was recorded in, is outside.
type pathResolver struct {
	real  map[string]string // directory → its real path ("" when it does not resolve)
	home  map[string]string // real directory → innermost work tree holding it ("" for none)
	exist map[string]bool   // repository directories that exist
}

func newPathResolver() *pathResolver {
	return &pathResolver{real: map[string]string{}, home: map[string]string{}, exist: map[string]bool{}}
}

// resolve returns the work tree and the path relative to it to check, or a
// problem kind and its reason.
func (r *pathResolver) resolve(repo, p, storeWT string) (wt, rel string, kind ProblemKind, why string) {
	if repo == "" {
		repo = storeWT
	}
	abs := filepath.FromSlash(p)
	if !filepath.IsAbs(abs) {
		if repo == "" {
			return "", "", ProblemIgnoreUnknown, "ignore rules unknown: the event names no repository for this relative path"
		}
		abs = filepath.Join(repo, abs)
	}
	abs = filepath.Clean(abs)
	if repo != "" && !r.dirExists(repo) {
		return "", "", ProblemIgnoreUnknown, "ignore rules unknown: its repository " + QuotePath(repo) + " is not on this machine"
	}
	realRepo := ""
	if repo != "" {
		realRepo = r.realDir(repo)
		if r.homeOf(realRepo) != realRepo {
			return "", "", ProblemIgnoreUnknown, "ignore rules unknown: its repository " + QuotePath(repo) + " is not a work tree on this machine"
		}
	}
	realFile := filepath.Join(r.realDir(filepath.Dir(abs)), filepath.Base(abs))
	home := r.homeOf(filepath.Dir(realFile))
	switch {
	case home == "" && realRepo == "":
		return "", "", ProblemOutside, "outside any repository: git would never commit it"
	case home == "":
		return "", "", ProblemOutside, "outside the repository " + QuotePath(repo) + ": git would never commit it"
	case realRepo == "" || !within(realRepo, home):
		// In another repository than the one it was recorded in (or
		// recorded with none): not this repository's file.
		return "", "", ProblemOutside, "outside the repository it was recorded in (it is in " + QuotePath(home) + ")"
	}
	rp, err := filepath.Rel(home, realFile)
	if err != nil {
		return "", "", ProblemOutside, "outside the repository: " + err.Error()
	}
	rp = filepath.ToSlash(rp)
	if rp == "." || rp == ".." || strings.HasPrefix(rp, "../") || path.Clean(rp) != rp {
		return "", "", ProblemOutside, "outside the repository " + QuotePath(home) + ": git would never commit it"
	}
	for _, c := range strings.Split(rp, "/") {
		if strings.EqualFold(c, ".git") {
			return "", "", ProblemOutside, "inside the .git directory: git never commits it"
		}
	}
	return home, rp, "", ""
}

func (r *pathResolver) dirExists(d string) bool {
	v, ok := r.exist[d]
	if !ok {
		st, err := os.Stat(d)
		v = err == nil && st.IsDir()
		r.exist[d] = v
	}
	return v
}

// within reports whether dir is root or inside it.
func within(root, dir string) bool {
	if root == dir {
		return true
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// realDir returns d with symlinks resolved; a directory that does not
// exist (a file deleted since) resolves through its deepest existing
// ancestor, as no symlink can hide in what does not exist.
func (r *pathResolver) realDir(d string) string {
	if v, ok := r.real[d]; ok {
		return v
	}
	v, err := filepath.EvalSymlinks(d)
	if err != nil {
		parent := filepath.Dir(d)
		if parent == d {
			v = d
		} else {
			v = filepath.Join(r.realDir(parent), filepath.Base(d))
		}
	}
	r.real[d] = v
	return v
}

// homeOf returns the innermost directory at or above real dir d that is
// the top of a work tree (holds a .git entry), "" for none.
func (r *pathResolver) homeOf(d string) string {
	if v, ok := r.home[d]; ok {
		return v
	}
	v := ""
	if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
		v = d
	} else if parent := filepath.Dir(d); parent != d {
		v = r.homeOf(parent)
	}
	r.home[d] = v
	return v
}

// Remote is where a push goes.
type Remote struct {
	// URL is a remote name, URL or path, as git push takes it.
	URL string
	// Dir is where git runs: a relative path in URL resolves there.
	// Default: the work tree, else the git dir.
	Dir string
}

// ValidRemote refuses a remote that git could read as an option, or one
// holding control characters.
func ValidRemote(url string) error {
	switch {
	case url == "":
		return errors.New("the remote is empty")
	case strings.HasPrefix(url, "-"):
		return fmt.Errorf("remote %s starts with '-': refused (it would read as an option)", QuotePath(url))
	}
	for _, c := range url {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("remote %s holds a control character: refused", QuotePath(url))
		}
	}
	return nil
}

func (s *Store) git(ctx context.Context, r Remote, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + s.loc.CommonDir}, args...)...)
	cmd.Dir = r.Dir
	if cmd.Dir == "" {
		cmd.Dir = s.loc.WorkTree
	}
	if cmd.Dir == "" {
		cmd.Dir = s.loc.CommonDir
	}
	cmd.Env = gitEnv()
	cmd.Stdin = nil // never a prompt answered from our stdin
	gitobj.OwnProcessGroup(cmd)
	// A helper that outlives a killed git keeps its pipes open: stop
	// waiting for them soon after git itself is gone.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// LsRemote returns the remote's refs under the archive's prefixes, from
// the user's own `git ls-remote` (their SSH config and credential helpers
// apply), run in this archive's repository.
func (s *Store) LsRemote(ctx context.Context, r Remote) (map[string]string, error) {
	if err := ValidRemote(r.URL); err != nil {
		return nil, err
	}
	cmd := s.git(ctx, r, append([]string{"ls-remote", "--", r.URL}, PushRefPatterns...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("git ls-remote %s: %s", QuotePath(r.URL), gitMessage(errb.Bytes(), err))
	}
	return ParseLsRemote(out.Bytes())
}

// PushArgs returns the arguments of git (after "git") that push exactly
// o's refs to url: one refspec LOCAL:REF per ref — the planned commit, not
// the ref's name, so that batches a writer appends after the plan was
// checked are not sent unchecked — never '+', each with
// --force-with-lease=REF:OLD (OLD empty when the remote lacks the ref), so
// every update is a compare-and-swap against the remote value o was
// planned from: a remote that moved since is refused by git ("stale
// info"), and a non-fast-forward update goes through only with force and
// only over that value.
func (o *Outgoing) PushArgs(url string, force bool) ([]string, error) {
	if err := ValidRemote(url); err != nil {
		return nil, err
	}
	// --no-verify: the user's pre-push hooks are for their branches; the
	// archive's own gate (Check) has run, and our pre-push hook must not
	// anchor again from inside a push of ours.
	args := []string{"push", "--porcelain", "--no-recurse-submodules", "--no-verify"}
	var specs []string
	for _, u := range o.Refs() {
		if u.Err != "" {
			return nil, fmt.Errorf("%s cannot be pushed: %s", u.Ref, u.Err)
		}
		if u.NonFastForward && !force {
			return nil, fmt.Errorf("%s is a non-fast-forward update: it needs force", u.Ref)
		}
		if !gitobj.IsID(u.Local) {
			return nil, fmt.Errorf("%s: planned commit %q is not an object id", u.Ref, u.Local)
		}
		args = append(args, "--force-with-lease="+u.Ref+":"+u.Remote)
		specs = append(specs, u.Local+":"+u.Ref)
	}
	if len(specs) == 0 {
		return nil, errors.New("nothing to push")
	}
	args = append(args, "--", url)
	return append(args, specs...), nil
}

// PushedRef is one ref's outcome, as `git push --porcelain` reports it.
type PushedRef struct {
	Ref     string `json:"ref"`
	Flag    string `json:"flag"`    // git's: " " fast-forward, "+" forced, "*" new, "=" up to date, "!" rejected
	Summary string `json:"summary"` // git's: "abc..def", "[new reference]", "[rejected] (stale info)", ...
	OK      bool   `json:"ok"`
}

// Push runs `git push` with PushArgs and returns each ref's outcome. The
// error is set when git failed, with its message; the outcomes it
// reported are returned all the same.
func (s *Store) Push(ctx context.Context, r Remote, o *Outgoing, force bool) ([]PushedRef, error) {
	args, err := o.PushArgs(r.URL, force)
	if err != nil {
		return nil, err
	}
	return s.runPush(ctx, r, args)
}

// runPush runs `git push` with args (which must hold --porcelain) and
// returns each ref's outcome as git reports it; the error, when git
// failed, names the remote and the first rejected ref or git's message.
func (s *Store) runPush(ctx context.Context, r Remote, args []string) ([]PushedRef, error) {
	cmd := s.git(ctx, r, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var res []PushedRef
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 || len(f[0]) != 1 {
			continue
		}
		_, dst, _ := strings.Cut(f[1], ":")
		res = append(res, PushedRef{Ref: dst, Flag: f[0], Summary: f[2], OK: f[0] != "!"})
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		msg := gitMessage(errb.Bytes(), runErr)
		for _, p := range res {
			if !p.OK {
				msg = p.Ref + " " + p.Summary
				break
			}
		}
		return res, fmt.Errorf("git push %s: %s", QuotePath(r.URL), msg)
	}
	return res, nil
}
