package gitstore

// Redaction at write, and the vault (FORMAT.md section 17).
//
// Every record passes the secret scanner (package secrets) on its way into
// an object, whoever writes it — hooks, sweeps, the proxy, the CLI:
//
//   - a conversation span (any content that is not a file version: op
//     "span" and ops a later version adds) has each secret replaced in the
//     stored text by a placeholder "[secret:KIND:ID]" before it is hashed,
//     encrypted or stored; the event carries "redacted": N;
//   - a file version (op read, edit, write, attach, restore) is stored as
//     it is — it is the exact bytes the model saw, and the guard and the
//     receipts hash them — and its event carries "secrets": N, so that a
//     push can hold it back (see Outgoing);
//   - the values taken out of an append's spans go into one vault event
//     appended after them on the same writer (op "vault"): an age
//     ciphertext, to the local identity (identity.go), of the values by
//     placeholder. The seal covers it like any content, so verify checks
//     it without the key, and `Reveal` with the identity puts every value
//     back byte for byte.
//
// The vault is built after dedupe, from the spans actually stored, so a
// sweep that meets spans already archived adds no vault either.
// `git config lossless.redact off` stores spans as they are: unsafe to
// push, and the push gate says so.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"filippo.io/age"

	"github.com/git-lossless/git-lossless/internal/gitobj"
	"github.com/git-lossless/git-lossless/secrets"
)

// VaultFormat is the first member of a vault document.
const VaultFormat = "git-lossless vault v1"

// vaultDoc is the plaintext of a vault blob.
type vaultDoc struct {
	Format  string        `json:"format"`
	Secrets []vaultSecret `json:"secrets"`
}

type vaultSecret struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Value []byte `json:"value"` // standard base64 in JSON
}

// redactor is the per-store state of redaction: the placeholder key and
// the vault recipient, loaded (or created) on the first secret.
type redactor struct {
	mu        sync.Mutex
	loaded    bool
	key       []byte
	recipient age.Recipient // nil: the identity could not be had
	err       error
}

// placeholderKeyAndRecipient returns the key of placeholder ids and the
// vault's recipient, creating the local identity on first use. When the
// identity cannot be had (no config dir, a read-only home), redaction
// still happens, with a key of this process only and no vault: the
// values are lost, the spans are safe, and a warning says why.
func (s *Store) placeholderKeyAndRecipient() ([]byte, age.Recipient) {
	r := &s.redact
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loaded {
		return r.key, r.recipient
	}
	r.loaded = true
	id, err := LocalIdentity(true)
	if err != nil || id == nil {
		if err == nil {
			err = errors.New("no local identity")
		}
		r.err = err
		r.key = make([]byte, 32)
		rand.Read(r.key)
		s.warn(fmt.Sprintf("redaction: %v; secrets are redacted without a vault (their values cannot be revealed later)", err))
		return r.key, nil
	}
	r.key = placeholderKey(id)
	r.recipient = id.Recipient()
	return r.key, r.recipient
}

// scanContent applies redaction to one record's content: it returns the
// bytes to store, and marks e ("secrets" on a file version, "redacted"
// and the vaulted values on anything else).
func (s *Store) scanContent(e *Event, content []byte, redactOn bool) []byte {
	if !redactOn {
		return content // lossless.redact off: the scanner does not run at write
	}
	if e.Op.IsFileVersion() {
		if n := secrets.Count(content); n > 0 {
			setExtra(e, "secrets", json.RawMessage(fmt.Sprint(n)))
		}
		return content
	}
	fs := secrets.Scan(content)
	if len(fs) == 0 {
		return content
	}
	key, _ := s.placeholderKeyAndRecipient()
	out, sec := secrets.Redact(content, fs, func(kind string, v []byte) string {
		return placeholderID(key, kind, v)
	})
	if len(sec) == 0 {
		return content
	}
	e.vault = sec
	setExtra(e, "redacted", json.RawMessage(fmt.Sprint(len(sec))))
	return out
}

// setExtra sets an extra field on e without touching a map e shares with
// its caller's Record.
func setExtra(e *Event, k string, v json.RawMessage) {
	m := make(map[string]json.RawMessage, len(e.Extra)+1)
	for k, v := range e.Extra {
		m[k] = v
	}
	m[k] = v
	e.Extra = m
}

// withVault returns evs followed by the vault event of the secrets their
// spans had redacted, its blob stored through sink; evs unchanged when
// none had any (or no vault can be written).
func (s *Store) withVault(evs []Event, sink gitobj.Sink) ([]Event, error) {
	var all []vaultSecret
	seen := map[string]bool{}
	first := -1
	for i := range evs {
		for _, sc := range evs[i].vault {
			if first < 0 {
				first = i
			}
			k := sc.Kind + ":" + sc.ID
			if !seen[k] {
				seen[k] = true
				all = append(all, vaultSecret{ID: sc.ID, Kind: sc.Kind, Value: sc.Value})
			}
		}
	}
	if len(all) == 0 {
		return evs, nil
	}
	_, rcpt := s.placeholderKeyAndRecipient()
	if rcpt == nil {
		return evs, nil
	}
	doc, err := json.Marshal(vaultDoc{Format: VaultFormat, Secrets: all})
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, rcpt)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	w.Write(doc)
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	ct := buf.Bytes()
	id, err := sink.Put("blob", ct)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(ct)
	src := evs[first]
	ev := Event{
		TS: s.now(), Session: src.Session, Agent: src.Agent, Sidechain: src.Sidechain,
		Source: src.Source, Op: OpVault,
		Blob: id, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(ct)),
		Extra: map[string]json.RawMessage{
			"enc":   json.RawMessage(`"` + EncAge + `"`),
			"count": json.RawMessage(fmt.Sprint(len(all))),
		},
	}
	out := make([]Event, 0, len(evs)+1)
	out = append(out, evs...)
	return append(out, ev), nil
}

// Vault holds the values vaulted on one writer, by kind and placeholder
// id, as far as the identities given unlock them.
type Vault struct {
	values map[string][]byte // "kind:id" → value
	// Entries is how many vault events the writer holds; Locked how many
	// of them no identity given unlocks.
	Entries, Locked int
}

// Lookup returns the value a placeholder stands for.
func (v *Vault) Lookup(kind, id string) ([]byte, bool) {
	if v == nil {
		return nil, false
	}
	b, ok := v.values[kind+":"+id]
	return b, ok
}

// Len is the number of distinct values the vault could open.
func (v *Vault) Len() int { return len(v.values) }

// OpenVault reads writer's vault events and decrypts them with ids and the
// local identity (when it exists). Entries none of them unlocks are
// counted as locked, not an error.
func (c Crypt) OpenVault(ctx context.Context, writer string, ids []age.Identity) (*Vault, error) {
	s := c.s
	evs, err := s.Events(ctx, Query{Writers: []string{writer}, Op: OpVault})
	if err != nil {
		return nil, err
	}
	ids = withLocalIdentity(ids)
	v := &Vault{values: map[string][]byte{}}
	for _, ev := range evs {
		if ev.Op != OpVault || ev.Blob == "" {
			continue
		}
		v.Entries++
		ct, err := s.Objects().Blob(ctx, ev.Blob)
		if err != nil {
			v.Locked++ // pruned or missing: nothing to open
			continue
		}
		if len(ids) == 0 {
			v.Locked++
			continue
		}
		r, err := age.Decrypt(bytes.NewReader(ct), ids...)
		if err != nil {
			v.Locked++
			continue
		}
		plain, err := io.ReadAll(r)
		if err != nil {
			v.Locked++
			continue
		}
		var doc vaultDoc
		if err := json.Unmarshal(plain, &doc); err != nil || doc.Format != VaultFormat {
			return nil, fmt.Errorf("vault at %s#%d: not a %s document", writer, ev.Seq, VaultFormat)
		}
		for _, sc := range doc.Secrets {
			v.values[sc.Kind+":"+sc.ID] = sc.Value
		}
	}
	return v, nil
}

// Reveal puts the vaulted values of writer back into text (placeholders
// the vault does not know stay), returning the text and how many
// placeholders were replaced and how many were left.
func (c Crypt) Reveal(ctx context.Context, writer string, text []byte, ids []age.Identity) ([]byte, int, int, error) {
	s := c.s
	refs := secrets.Placeholders(text)
	if len(refs) == 0 {
		return text, 0, 0, nil
	}
	v, err := s.Crypt().OpenVault(ctx, writer, ids)
	if err != nil {
		return nil, 0, 0, err
	}
	out, n := secrets.Reveal(text, v.Lookup)
	return out, n, len(refs) - n, nil
}

// RedactResult says what RedactWriter did (or, dry, would do) to one
// writer's archived history.
type RedactResult struct {
	Writer string
	// Scanned is how many conversation spans (content that is not a file
	// version) were read; Replaced how many held secrets and were (or
	// would be) replaced by a redacted copy; Secrets how many values
	// those held.
	Scanned, Replaced, Secrets int
	// Kinds counts the values by kind.
	Kinds map[string]int
	// Locked is how many encrypted spans no identity given could open:
	// they were not checked.
	Locked int
	// FileVersions is how many file versions hold secrets: they are kept
	// as the model saw them (the push gate holds them back; prune removes
	// them).
	FileVersions int
	// Prune is the prune of the originals' content.
	Prune PruneResult
}

// RedactWriter applies today's redaction rules to writer's archived
// spans, for archives written before redaction existed (or with
// lossless.redact off, or by an older scanner). Sealed lines are never
// edited; instead, like a prune:
//
//  1. every span in which the scanner finds a secret is appended again
//     through the normal write path — so it is redacted, its values
//     vaulted, and encrypted when the original was — as an event that
//     copies the original's fields and adds "replaces": <seq of the
//     original> (dedupe key "redact:" + the original's key, so a second
//     run adds nothing);
//  2. the originals' content is then pruned, with a prune record whose
//     reason says so: verify reports those entries as pruned (expected)
//     and every seal stays valid.
//
// The append comes first, so a crash in between loses nothing (the next
// run finds the copies stored and only prunes). Encrypted spans are
// decrypted with ids to be scanned; those no identity opens are counted as
// Locked and left alone. An encrypted original is only replaced while
// lossless.encrypt is on, so that redaction never leaves a clear copy.
func (s *Store) RedactWriter(ctx context.Context, writer string, ids []age.Identity, dry bool) (RedactResult, error) {
	res := RedactResult{Writer: writer, Kinds: map[string]int{}}
	if s.readOnly && !dry {
		// Refused before anything is read, as Append is: whether there
		// would be anything to rewrite is not the caller's question.
		return res, fmt.Errorf("redact %s: %w", writer, ErrReadOnly)
	}
	evs, err := s.Events(ctx, Query{Writers: []string{writer}})
	if err != nil {
		return res, err
	}
	replaced := map[int64]bool{}
	for _, e := range evs {
		var seq int64
		if json.Unmarshal(e.Extra["replaces"], &seq) == nil && seq > 0 {
			replaced[seq] = true
		}
	}
	encOn, _, encErr := s.Crypt().Encryption(ctx)
	var recs []Record
	orig := map[int64]bool{}
	for _, e := range evs {
		if e.Blob == "" || e.Excluded || e.Op == OpVault || e.Op == OpPrune {
			continue
		}
		content, err := s.Crypt().OpenContent(ctx, e, ids)
		if errors.Is(err, ErrContentLocked) {
			res.Locked++
			continue
		}
		if err != nil {
			continue // pruned or missing content: nothing left to redact
		}
		fs := secrets.Scan(content)
		if e.Op.IsFileVersion() {
			if len(fs) > 0 {
				res.FileVersions++
			}
			continue
		}
		res.Scanned++
		if len(fs) == 0 {
			continue
		}
		if replaced[e.Seq] {
			orig[e.Seq] = true // copied by an earlier run that did not get to prune
			continue
		}
		enc := IsEncrypted(&e)
		if enc && !encOn {
			if encErr != nil {
				return res, fmt.Errorf("%s#%d is encrypted and %w", writer, e.Seq, encErr)
			}
			return res, fmt.Errorf("%s#%d is encrypted but lossless.encrypt is off now: turn it on (with its recipients) so the redacted copy is encrypted too", writer, e.Seq)
		}
		res.Replaced++
		res.Secrets += len(fs)
		for _, f := range fs {
			res.Kinds[f.Kind]++
		}
		orig[e.Seq] = true
		r := Record{Event: e, Content: content, HasContent: true, Encrypt: enc}
		r.Seq, r.Prev, r.Raw, r.Commit, r.Writer = 0, "", nil, "", ""
		r.Blob, r.SHA256, r.Bytes = "", "", 0
		r.Extra = map[string]json.RawMessage{}
		for k, v := range e.Extra {
			if k != "enc" && k != "redacted" {
				r.Extra[k] = v
			}
		}
		r.Extra["replaces"] = json.RawMessage(fmt.Sprint(e.Seq))
		if e.Key != "" {
			r.Key = "redact:" + e.Key
		} else {
			r.Key = fmt.Sprintf("redact:%s#%d", writer, e.Seq)
		}
		recs = append(recs, r)
	}
	if len(orig) == 0 {
		return res, nil
	}
	if !dry && len(recs) > 0 {
		if _, err := s.Append(ctx, writer, recs); err != nil {
			return res, fmt.Errorf("append the redacted copies: %w", err)
		}
	}
	reason := fmt.Sprintf("redact: %d conversation span(s) held secrets; redacted copies were appended (\"replaces\" names each original)", len(orig))
	pr, err := s.Prune(ctx, writer, func(e *Event) bool { return orig[e.Seq] && !e.Op.IsFileVersion() }, reason, dry)
	res.Prune = pr
	if err != nil {
		return res, fmt.Errorf("prune the originals: %w", err)
	}
	return res, nil
}
