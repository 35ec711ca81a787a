package gitstore

// The store's memory of heads, kept outside the chains it judges
// (FORMAT.md sections 2 and 11):
//
//   - the witness, <common>/lossless/witness/<writer>: every head this
//     clone's store moved a writer's ref to (append, import, prune,
//     redact, a fast-forward to a remote's head);
//   - the anchored heads, <common>/lossless/anchored/<writer>: every head
//     of the writer named in a signed checkpoint this clone anchored or
//     accepted from a remote (package anchor records them, after checking
//     the signature, through RecordAnchored);
//   - ownership, <common>/lossless/own/<writer>: the writers this clone
//     has appended to. A writer is one appender's log; another clone that
//     extends it is forging under this clone's name, so sync reports such
//     an extension instead of adopting it, and Append refuses a writer
//     this clone does not own.
//
// Every Store has them: they are not options. A store that verified
// chains on their own would call a rolled-back or deleted writer fine, and
// one that did not witness its own appends would leave nothing to compare
// with later; the issue that made this the default found three callers
// that had opened such a store by accident.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/seal"
)

// ErrWitnessDamaged is returned (wrapped) when a witness or anchored-heads
// file holds a line that is not one this store writes: a damaged memory
// of heads is itself a failure, never read as "nothing seen".
var ErrWitnessDamaged = seal.ErrSeenDamaged

// ErrNotOwner is returned (wrapped) by Append and Import for a writer
// this clone does not own: it exists here and another clone wrote it, or
// its name carries another clone's id.
var ErrNotOwner = errors.New("writer owned by another clone")

const (
	witnessDir  = "witness"
	anchoredDir = "anchored"
	ownDir      = "own"
)

// sawHead appends the head to the writer's witness file. A failure is a
// warning: the ref update it follows has happened.
func (s *Store) sawHead(writer string, h head) {
	if h.Seq < 1 || s.readOnly {
		return
	}
	if err := appendLine(s.stateDir(witnessDir), writer, fmt.Sprintf("%d %s\n", h.Seq, h.Seal)); err != nil {
		s.warn("witness: " + err.Error())
	}
}

// appendLine appends one line to dir/name with O_APPEND: lines this
// short are written in one write, atomic among concurrent appenders, so
// no lock is needed. Not fsynced (FORMAT.md section 11).
func appendLine(dir, name, line string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readLines returns the newline-terminated lines of dir/name (nil when
// the file does not exist). A last line without its newline, or NUL bytes
// at the very end, are a torn append of a crash (the file is not fsynced)
// and are dropped: dropping them loses nothing a clean truncation would
// not, and anyone who can write the file can truncate it.
func readLines(dir, name string) ([]string, string, error) {
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, p, nil
	}
	if err != nil {
		return nil, p, fmt.Errorf("%w: %s: %v", ErrWitnessDamaged, p, err)
	}
	b = bytes.TrimRight(b, "\x00")
	if i := bytes.LastIndexByte(b, '\n'); i < len(b)-1 {
		b = b[:i+1]
	}
	if len(b) == 0 {
		return nil, p, nil
	}
	return strings.Split(string(b[:len(b)-1]), "\n"), p, nil
}

// parseHead parses "<seq> <seal>" (the first two fields of a line).
func parseHead(seqStr, sealStr string) (int64, bool) {
	n, err := strconv.ParseInt(seqStr, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != seqStr || !isLowerHex(sealStr, 64) {
		return 0, false
	}
	return n, true
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Witness returns the heads this clone witnessed for writer, oldest
// first. A line that does not parse is ErrWitnessDamaged, naming the file
// and the line; the lines before it are returned with the error.
func (s *Store) Witness(ctx context.Context, writer string) ([]seal.Checkpoint, error) {
	if err := ValidWriter(writer); err != nil {
		return nil, err
	}
	lines, p, err := readLines(s.stateDir(witnessDir), writer)
	if err != nil {
		return nil, err
	}
	out := make([]seal.Checkpoint, 0, len(lines))
	for i, l := range lines {
		seqStr, sealStr, ok := strings.Cut(l, " ")
		n, good := parseHead(seqStr, sealStr)
		if !ok || !good {
			return out, fmt.Errorf("%w: %s line %d is not \"<seq> <seal>\": %s", ErrWitnessDamaged, p, i+1, QuotePath(clip(l, 80)))
		}
		out = append(out, seal.Checkpoint{Seq: n, Seal: sealStr})
	}
	return out, nil
}

// Anchored kinds: a head anchored by this clone, or seen in another
// machine's (or clone's) checkpoint.
const (
	AnchoredOwn  = "own"
	AnchoredSeen = "seen"
)

// RecordAnchored remembers that writer's head (seq, seal) was anchored in
// a checkpoint whose signature the caller checked: kind AnchoredOwn for
// this clone's checkpoints, AnchoredSeen for others'; where says which
// (remote, machine, clone, number). Heads already recorded are not
// recorded again. Verify compares every chain with them.
func (s *Store) RecordAnchored(ctx context.Context, writer string, seq int64, sealHex, kind, where string) error {
	if s.readOnly {
		return fmt.Errorf("record anchored head of %s: %w", writer, ErrReadOnly)
	}
	if err := ValidWriter(writer); err != nil {
		return err
	}
	if seq < 1 || !isLowerHex(sealHex, 64) || kind != AnchoredOwn && kind != AnchoredSeen {
		return fmt.Errorf("record anchored head of %s: bad head %d %q (%s)", writer, seq, sealHex, kind)
	}
	have, err := s.anchoredLines(writer)
	if err != nil {
		return err
	}
	for _, h := range have {
		if h.Seq == seq && h.Seal == sealHex && h.kind == kind {
			return nil
		}
	}
	where = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, where)
	return appendLine(s.stateDir(anchoredDir), writer, fmt.Sprintf("%d %s %s %s\n", seq, sealHex, kind, where))
}

// checkpointsFile lists, one sha256 per line, the signed checkpoints
// whose heads were recorded in anchored/: a checkpoint seen again (every
// verify looks at all of them) is skipped without reading a writer's
// file or checking its signature again. It sits among the writers' files
// under a name no writer can have, so that deleting anchored/ forgets
// both, and the next verify rebuilds them together.
const checkpointsFile = ".checkpoints"

// CheckpointRecorded reports whether the heads of the checkpoint with
// this digest (sha256 hex of its signed bytes) were recorded.
func (s *Store) CheckpointRecorded(ctx context.Context, digest string) (bool, error) {
	lines, _, err := readLines(s.stateDir(anchoredDir), checkpointsFile)
	if err != nil {
		return false, err
	}
	for _, l := range lines {
		if l == digest {
			return true, nil
		}
	}
	return false, nil
}

// RecordedCheckpoints returns the digests CheckpointRecorded reports, read
// once, for a caller that looks at many checkpoints.
func (s *Store) RecordedCheckpoints(ctx context.Context) (map[string]bool, error) {
	lines, _, err := readLines(s.stateDir(anchoredDir), checkpointsFile)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(lines))
	for _, l := range lines {
		out[l] = true
	}
	return out, nil
}

// AnchoredHead is one writer's head named in a checkpoint.
type AnchoredHead struct {
	Writer string
	Seq    int64
	Seal   string
}

// RecordCheckpoint records heads (RecordAnchored) of the checkpoint with
// this digest, whose signature the caller checked, then the digest
// itself; a checkpoint recorded before is skipped. The caller may leave
// out heads an earlier recorded checkpoint of the same chain named
// already.
func (s *Store) RecordCheckpoint(ctx context.Context, digest string, heads []AnchoredHead, kind, where string) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if !isLowerHex(digest, 64) {
		return fmt.Errorf("record checkpoint: digest %q", digest)
	}
	if done, err := s.CheckpointRecorded(ctx, digest); err != nil || done {
		return err
	}
	for _, h := range heads {
		if err := s.RecordAnchored(ctx, h.Writer, h.Seq, h.Seal, kind, where); err != nil {
			return fmt.Errorf("record anchored head of %s: %w", h.Writer, err)
		}
	}
	return appendLine(s.stateDir(anchoredDir), checkpointsFile, digest+"\n")
}

type anchoredHead struct {
	seal.Checkpoint
	kind string
}

func (s *Store) anchoredLines(writer string) ([]anchoredHead, error) {
	lines, p, err := readLines(s.stateDir(anchoredDir), writer)
	if err != nil {
		return nil, err
	}
	out := make([]anchoredHead, 0, len(lines))
	for i, l := range lines {
		f := strings.SplitN(l, " ", 4)
		var n int64
		ok := len(f) == 4 && (f[2] == AnchoredOwn || f[2] == AnchoredSeen) && f[3] != ""
		if ok {
			n, ok = parseHead(f[0], f[1])
		}
		if !ok {
			return out, fmt.Errorf("%w: %s line %d is not \"<seq> <seal> own|seen <where>\": %s", ErrWitnessDamaged, p, i+1, QuotePath(clip(l, 80)))
		}
		out = append(out, anchoredHead{Checkpoint: seal.Checkpoint{Seq: n, Seal: f[1], Anchor: f[3]}, kind: f[2]})
	}
	return out, nil
}

// SeenHeads returns every head of writer this clone saw before: the
// witness, then the anchored heads (marked by where they were anchored).
// It is what Verify compares the chain with. A damaged file is
// ErrWitnessDamaged, returned with every head that could be read.
func (s *Store) SeenHeads(ctx context.Context, writer string) ([]seal.Checkpoint, error) {
	out, werr := s.Witness(ctx, writer)
	an, aerr := s.anchoredLines(writer)
	for _, a := range an {
		out = append(out, a.Checkpoint)
	}
	return out, errors.Join(werr, aerr)
}

// KnownWriters lists the writers this clone has a memory of, whether or
// not their refs still exist: those with a witness and those it anchored
// itself. A writer anchored only in another machine's
// checkpoint is checked where it exists, not required. Verify checks them
// all, so a deleted writer is a break, not an absence.
func (s *Store) KnownWriters(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	// (Ownership alone adds nothing: a writer is owned once claimed, and
	// witnessed once written.)
	wents, err := os.ReadDir(s.stateDir(witnessDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range wents {
		if !e.IsDir() && ValidWriter(e.Name()) == nil {
			set[e.Name()] = true
		}
	}
	ents, err := os.ReadDir(s.stateDir(anchoredDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() || ValidWriter(e.Name()) != nil || set[e.Name()] {
			continue
		}
		hs, err := s.anchoredLines(e.Name())
		if err != nil {
			set[e.Name()] = true // damaged: verify reports it
			continue
		}
		for _, h := range hs {
			if h.kind == AnchoredOwn {
				set[e.Name()] = true
				break
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// CloneID returns this clone's id, 8 lowercase hex digits, made at
// random on first use and kept in <common>/lossless/clone. It tells two
// clones of one repository apart — on one machine or many — and is part
// of every writer name a clone derives (OwnWriterName), so two clones
// never produce the same name. (Versions before it kept the id in
// <common>/lossless/anchor/clone; that file is read and moved.)
func (s *Store) CloneID(ctx context.Context) (string, error) {
	p := s.stateDir("clone")
	if id, err := readCloneID(p); err != nil || id != "" {
		return id, err
	}
	if s.readOnly {
		if id, err := readCloneID(s.stateDir("anchor", "clone")); err != nil || id != "" {
			return id, err
		}
		return "", fmt.Errorf("clone id: none yet, and a read-only view makes none: %w", ErrReadOnly)
	}
	if id, err := readCloneID(s.stateDir("anchor", "clone")); err != nil {
		return "", err
	} else if id != "" {
		return id, writeNewFile(p, id)
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(r[:])
	return id, writeNewFile(p, id)
}

// writeNewFile creates p (O_EXCL) holding id; when another process made
// it first, its id wins and is returned by the next read.
func writeNewFile(p, id string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		got, rerr := readCloneID(p)
		if rerr == nil && got != id {
			return fmt.Errorf("%w: another process made clone id %s at the same time; run again", ErrRefChanged, got)
		}
		return rerr
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(id + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readCloneID(p string) (string, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if !isLowerHex(id, 8) {
		return "", fmt.Errorf("%s holds %q, not a clone id; remove it to make a new one", p, clip(id, 40))
	}
	return id, nil
}

// Writer families whose names a clone derives: the CLI's `record`, the
// proxy, and the MCP server's reads outside a session. Their names carry the clone id right after the family
// ("cli-<clone>", "cli-<clone>-<session>", "proxy-<clone>-<addr>"), so two
// clones never derive the same name.
const (
	FamilyCLI   = "cli"
	FamilyProxy = "proxy"
	FamilyMCP   = "mcp"
)

// FamilyClone returns the clone id a name of a derived family carries
// ("cli-<8 hex>" or "proxy-<8 hex>", alone or followed by '-'), or "".
// (Written out rather than a regexp: the hook program starts for every
// tool call, and a regexp compiled at init is paid on every start.)
func FamilyClone(writer string) string {
	for _, f := range []string{FamilyCLI, FamilyProxy, FamilyMCP} {
		rest, ok := strings.CutPrefix(writer, f+"-")
		if !ok || len(rest) < 8 || !isLowerHex(rest[:8], 8) {
			continue
		}
		if len(rest) == 8 || rest[8] == '-' {
			return rest[:8]
		}
	}
	return ""
}

// OwnWriterName returns this clone's writer of family for label:
// "<family>-<clone>" for an empty label, else "<family>-<clone>-<label>"
// with the label mapped as WriterName maps it.
func (s *Store) OwnWriterName(ctx context.Context, family, label string) (string, error) {
	if family != FamilyCLI && family != FamilyProxy && family != FamilyMCP {
		return "", fmt.Errorf("unknown writer family %q", family)
	}
	id, err := s.CloneID(ctx)
	if err != nil {
		return "", fmt.Errorf("clone id: %w", err)
	}
	if label == "" {
		return family + "-" + id, nil
	}
	return WriterName(family+"-"+id+"-", label), nil
}

// Owns reports whether this clone owns writer: it appended to it (or
// imported into it). Archives made before ownership was recorded are
// migrated on first use (migrateOwnership).
func (s *Store) Owns(ctx context.Context, writer string) (bool, error) {
	if err := ValidWriter(writer); err != nil {
		return false, err
	}
	if s.readOnly {
		// A view writes no state: an archive not migrated yet is judged
		// as the migration would judge it.
		if _, err := os.Stat(s.stateDir(ownDir)); errors.Is(err, fs.ErrNotExist) {
			return s.madeHere(ctx, writer)
		}
	} else if err := s.migrateOwnership(ctx); err != nil {
		return false, err
	}
	_, err := os.Lstat(filepath.Join(s.stateDir(ownDir), writer))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// OwnedWriters lists the writers this clone owns.
func (s *Store) OwnedWriters(ctx context.Context) (map[string]bool, error) {
	if !s.readOnly {
		if err := s.migrateOwnership(ctx); err != nil {
			return nil, err
		}
	}
	ents, err := os.ReadDir(s.stateDir(ownDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range ents {
		if !e.IsDir() && ValidWriter(e.Name()) == nil {
			out[e.Name()] = true
		}
	}
	return out, nil
}

// markOwn records that this clone wrote writer. A failure is a warning:
// the append has happened; the next append marks it again.
func (s *Store) markOwn(writer string) {
	if s.readOnly {
		return
	}
	p := filepath.Join(s.stateDir(ownDir), writer)
	if _, err := os.Lstat(p); err == nil {
		return
	}
	if err := os.MkdirAll(s.stateDir(ownDir), 0o700); err != nil {
		s.warn("ownership: " + err.Error())
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		s.warn("ownership: " + err.Error())
		return
	}
	f.Close()
}

// CheckWritable says whether this clone may append to writer: a writer
// that exists here must be one this clone owns, and a name of a derived
// family (cli-<clone>..., proxy-<clone>...) must carry this clone's id.
// A new writer of any other name is this clone's once it is written.
func (s *Store) CheckWritable(ctx context.Context, writer string) error {
	if err := ValidWriter(writer); err != nil {
		return err
	}
	if c := FamilyClone(writer); c != "" {
		id, err := s.CloneID(ctx)
		if err != nil {
			return fmt.Errorf("clone id: %w", err)
		}
		if c != id {
			return fmt.Errorf("%w: %s carries clone id %s, and this clone is %s: write to %s instead", ErrNotOwner, writer, c, id, strings.Replace(writer, c, id, 1))
		}
	}
	cur, err := s.refs.Read(RefPrefix + writer)
	if err != nil {
		return err
	}
	if cur == "" {
		// A new writer is claimed before it is written: two processes of
		// this clone creating it at once (parallel hooks, imports) must
		// both find it theirs, not the loser find a ref it does not own.
		s.markOwn(writer)
		return nil
	}
	own, err := s.Owns(ctx, writer)
	if err != nil {
		return err
	}
	if !own {
		return fmt.Errorf("%w: %s was written by another clone (sync adopted it, or it was fetched); a clone appends only to its own writers", ErrNotOwner, writer)
	}
	return nil
}

// migrateOwnership runs once per archive made before ownership was
// recorded (there is no own/ directory yet): a witnessed writer is this
// clone's when the first head it witnessed is the head of the chain's
// first batch — it made the ref — and adopted otherwise (its first head
// here came from a fast-forward to a remote's). Import witnesses only its
// last batch, so writers imported by older versions count as adopted:
// the safe side, as an adopted writer is compared, not trusted.
func (s *Store) migrateOwnership(ctx context.Context) error {
	dir := s.stateDir(ownDir)
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	ents, err := os.ReadDir(s.stateDir(witnessDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := os.MkdirTemp(s.stateDir(), ".own-*")
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(s.stateDir(), 0o700); err != nil {
			return err
		}
		tmp, err = os.MkdirTemp(s.stateDir(), ".own-*")
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, e := range ents {
		w := e.Name()
		if e.IsDir() || ValidWriter(w) != nil {
			continue
		}
		if own, err := s.madeHere(ctx, w); err != nil || !own {
			continue
		}
		if err := os.WriteFile(filepath.Join(tmp, w), nil, 0o600); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return nil // another process migrated first
		}
		return err
	}
	return nil
}

// madeHere: the first witnessed head of writer is its chain's first
// batch (see migrateOwnership).
func (s *Store) madeHere(ctx context.Context, writer string) (bool, error) {
	ws, err := s.Witness(ctx, writer)
	if err != nil || len(ws) == 0 {
		return false, err
	}
	id, err := s.refs.Read(RefPrefix + writer)
	if err != nil || id == "" {
		return id == "" && err == nil, err // gone here: its witness says it was here; keep it
	}
	root, err := s.rootHead(id)
	if err != nil {
		return false, nil
	}
	return ws[0].Seq == root.Seq && ws[0].Seal == root.Seal, nil
}

// rootHead follows first parents from id to the chain's first batch.
func (s *Store) rootHead(id string) (head, error) {
	for {
		c, err := s.readCommit(id)
		if err != nil {
			return head{}, err
		}
		if len(c.Parents) == 0 {
			if c.Seq == 0 || c.Seal == "" {
				return head{}, fmt.Errorf("%s is not a sealed batch commit", id)
			}
			return head{Commit: id, Seq: c.Seq, Seal: c.Seal}, nil
		}
		id = c.Parents[0]
	}
}
