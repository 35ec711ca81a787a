package gitstore

// Encryption of archived content with age (https://age-encryption.org).
//
// With `git config lossless.encrypt true` and at least one
// `lossless.recipient` (multi-valued: an age X25519 public key "age1...",
// or an SSH public key "ssh-ed25519 AAAA..." / "ssh-rsa AAAA..."), every
// Record marked Encrypt is stored as age ciphertext (the binary format,
// one file key per record, wrapped for every recipient):
//
//   - the blob is the ciphertext, and the event's "blob", "sha256" and
//     "bytes" describe the ciphertext, so the seal, `git lossless verify`
//     and the plain-git recipes of FORMAT.md work without any key;
//   - the event carries the extra field "enc":"age";
//   - `git cat-file -p <blob> | age -d -i KEY` decrypts it with the age
//     CLI as well.
//
// The plaintext reaches no object: not the blob, not the events line (the
// recorder puts only counts and names there), not the commit. Losing every
// identity loses the content; the metadata and the seal stay readable.
//
// Records not marked Encrypt (file versions from hooks) are stored in the
// clear whatever the setting. When encryption is on but no recipient is
// configured, or one does not parse, Append fails rather than write
// plaintext.
//
// OpenContent reads a record's content back: the plaintext of an
// encrypted one when an identity unlocks it, otherwise an error wrapping
// ErrContentLocked. Identities come from an age identity file
// (AGE-SECRET-KEY-1... lines) or an unencrypted SSH private key;
// LoadIdentities looks for one in a flag, then LOSSLESS_AGE_IDENTITY, then
// `git config lossless.identity`.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"
)

// EncAge is the value of the "enc" extra field on an event whose content
// is age ciphertext.
const EncAge = "age"

// ErrContentLocked is wrapped by OpenContent's error when content is encrypted
// and no identity given unlocks it.
var ErrContentLocked = errors.New("content locked")

// LockedError says why encrypted content could not be read.
type LockedError struct {
	Blob       string // the ciphertext blob
	Identities int    // how many identities were tried
}

func (e *LockedError) Error() string {
	if e.Identities == 0 {
		return fmt.Sprintf("content %.12s is locked: it is age-encrypted and no identity was given", e.Blob)
	}
	return fmt.Sprintf("content %.12s is locked: it is age-encrypted and none of the %d identities given unlocks it", e.Blob, e.Identities)
}

// Unwrap returns ErrContentLocked.
func (e *LockedError) Unwrap() error { return ErrContentLocked }

// IdentityHint is the one line the CLI prints under a locked error.
const IdentityHint = "pass --identity FILE, set LOSSLESS_AGE_IDENTITY=FILE, or `git config lossless.identity FILE` (an age identity file or an unencrypted SSH private key)"

// IsEncrypted reports whether ev's content is stored as age ciphertext.
func IsEncrypted(ev *Event) bool {
	raw, ok := ev.Extra["enc"]
	return ok && string(raw) == `"`+EncAge+`"`
}

// Encryption reports whether lossless.encrypt is on and returns the
// configured recipients. It fails when encryption is on and the recipients
// are missing or malformed.
func (c Crypt) Encryption(ctx context.Context) (on bool, recipients []age.Recipient, err error) {
	s := c.s
	v := s.cfg.Get("lossless.encrypt")
	if v == "" {
		return false, nil, nil
	}
	on, err = parseBool(v)
	if err != nil {
		return false, nil, fmt.Errorf("git config lossless.encrypt: %w", err)
	}
	if !on {
		return false, nil, nil
	}
	for _, r := range s.cfg.GetAll("lossless.recipient") {
		rc, err := ParseRecipient(r)
		if err != nil {
			return true, nil, fmt.Errorf("git config lossless.recipient: %w", err)
		}
		recipients = append(recipients, rc)
	}
	if len(recipients) == 0 {
		return true, nil, errors.New("git config lossless.encrypt is true but no lossless.recipient is set; refusing to archive in the clear")
	}
	return true, recipients, nil
}

// ParseRecipient parses one recipient: an age X25519 public key (age1...),
// an age hybrid post-quantum key (age1pq1...), or an SSH public key in
// authorized_keys form (ssh-ed25519 or ssh-rsa).
func ParseRecipient(s string) (age.Recipient, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "age1pq1"):
		return age.ParseHybridRecipient(s)
	case strings.HasPrefix(s, "age1"):
		return age.ParseX25519Recipient(s)
	case strings.HasPrefix(s, "ssh-"):
		k := registeredSSH()
		if k == nil {
			return nil, ErrNoSSH
		}
		return k.ParseRecipient(s)
	case s == "":
		return nil, errors.New("empty recipient")
	}
	return nil, fmt.Errorf("recipient %.20q...: not an age (age1...) or SSH (ssh-ed25519, ssh-rsa) public key", s)
}

// ParseIdentities parses identity file contents: age identities
// (AGE-SECRET-KEY-1... lines, comments allowed) or one unencrypted SSH
// private key (PEM). Errors never quote key material.
func ParseIdentities(data []byte) ([]age.Identity, error) {
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(trimmed, []byte("-----BEGIN")) {
		k := registeredSSH()
		if k == nil {
			return nil, ErrNoSSH
		}
		id, err := k.ParseIdentity(trimmed)
		if err != nil {
			if strings.Contains(err.Error(), "passphrase") {
				return nil, errors.New("the SSH key is passphrase-protected; use an age identity or an unencrypted key")
			}
			return nil, fmt.Errorf("SSH private key: %v", err)
		}
		return []age.Identity{id}, nil
	}
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("age identities: %v", err)
	}
	return ids, nil
}

// LoadIdentities finds the identities to decrypt with: the file at path
// when it is set (a command's --identity flag), else LOSSLESS_AGE_IDENTITY
// (a file path, or the AGE-SECRET-KEY-1... string itself), else git config
// lossless.identity (a file path; ~/ expands to the home directory). No
// source set returns no identities and no error: encrypted content then
// reads as locked.
func (c Crypt) LoadIdentities(ctx context.Context, path string, getenv func(string) string) ([]age.Identity, error) {
	s := c.s
	if getenv == nil {
		getenv = os.Getenv
	}
	what := "--identity"
	if path == "" {
		if v := strings.TrimSpace(getenv("LOSSLESS_AGE_IDENTITY")); v != "" {
			if strings.HasPrefix(v, "AGE-SECRET-KEY-") {
				ids, err := ParseIdentities([]byte(v))
				if err != nil {
					return nil, fmt.Errorf("LOSSLESS_AGE_IDENTITY: %w", err)
				}
				return ids, nil
			}
			path, what = v, "LOSSLESS_AGE_IDENTITY"
		}
	}
	if path == "" {
		if v := s.cfg.Get("lossless.identity"); v != "" {
			path, what = v, "git config lossless.identity"
		}
	}
	if path == "" {
		return nil, nil
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, rest)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	ids, err := ParseIdentities(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return ids, nil
}

// storedContent returns the bytes to store for r: its content, or the
// content encrypted to the configured recipients when r asks for
// encryption and lossless.encrypt is on, in which case it marks e with
// "enc":"age".
func (s *Store) storedContent(ctx context.Context, r *Record, e *Event, content []byte) ([]byte, error) {
	if !r.Encrypt {
		return content, nil
	}
	on, rcpts, err := s.Crypt().Encryption(ctx)
	if err != nil {
		return nil, err
	}
	if !on {
		return content, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(content) + 256 + 120*len(rcpts))
	w, err := age.Encrypt(&buf, rcpts...)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	if _, err := w.Write(content); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	setExtra(e, "enc", json.RawMessage(`"`+EncAge+`"`))
	return buf.Bytes(), nil
}

// OpenContent returns the content an event archived: the blob's bytes, or
// for an encrypted event ("enc":"age") the plaintext, decrypted with ids.
// Without an identity that unlocks it the error wraps ErrContentLocked (a
// *LockedError). An event without content is an error.
func (c Crypt) OpenContent(ctx context.Context, ev Event, ids []age.Identity) ([]byte, error) {
	s := c.s
	if ev.Blob == "" {
		if ev.Excluded {
			return nil, errors.New("the event's content was withheld by the deny list")
		}
		return nil, errors.New("the event archived no content")
	}
	body, err := s.Objects().Blob(ctx, ev.Blob)
	if err != nil {
		return nil, err
	}
	if !IsEncrypted(&ev) {
		return body, nil
	}
	if len(ids) == 0 {
		return nil, &LockedError{Blob: ev.Blob}
	}
	r, err := age.Decrypt(bytes.NewReader(body), ids...)
	if err != nil {
		var nomatch *age.NoIdentityMatchError
		if errors.As(err, &nomatch) {
			return nil, &LockedError{Blob: ev.Blob, Identities: len(ids)}
		}
		return nil, fmt.Errorf("decrypt %.12s: %w", ev.Blob, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decrypt %.12s: %w", ev.Blob, err)
	}
	return out, nil
}
