package gitstore

// The local identity: one age X25519 key per user, the key the vault of
// redacted secrets is encrypted to (see redact.go).
//
// It lives beside the receipt signing key, os.UserConfigDir()/git-lossless/
// identity.age ($XDG_CONFIG_HOME/git-lossless/identity.age on Linux), mode
// 0600 in a 0700 directory, in age's own identity file format, so `age -d -i
// identity.age` reads what it encrypted. It is created the first time a
// secret has to be vaulted, not before: an archive that never met a secret
// needs no key. Two processes that create it at once agree on one: the new
// key is written completely to a temporary file and then hard-linked to the
// final name, which fails when the name exists; the loser reads the
// winner's file.
//
// Losing the file loses the redacted values, nothing else: the archive is
// complete and verifies without it (placeholders stand where the values
// were). Back it up like an SSH key.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"filippo.io/age"
)

// IdentityFileName is the local identity's file name under
// os.UserConfigDir()/git-lossless/.
const IdentityFileName = "identity.age"

// LocalIdentityPath returns where the local identity lives:
// $LOSSLESS_IDENTITY_FILE when set (tests, and users who keep keys
// elsewhere), else os.UserConfigDir()/git-lossless/identity.age.
func LocalIdentityPath() (string, error) {
	if p := os.Getenv("LOSSLESS_IDENTITY_FILE"); p != "" {
		return p, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate the user config dir: %w (set XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(d, "git-lossless", IdentityFileName), nil
}

// LocalIdentity loads the local identity; with create, a missing one is
// generated first. Without create a missing file returns (nil, nil).
func LocalIdentity(create bool) (*age.X25519Identity, error) {
	path, err := LocalIdentityPath()
	if err != nil {
		return nil, err
	}
	id, err := readLocalIdentity(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return id, err
	}
	if !create {
		return nil, nil
	}
	return createLocalIdentity(path)
}

func readLocalIdentity(path string) (*age.X25519Identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("local identity %s: %v", path, err)
	}
	for _, id := range ids {
		if x, ok := id.(*age.X25519Identity); ok {
			return x, nil
		}
	}
	return nil, fmt.Errorf("local identity %s: no age X25519 identity (AGE-SECRET-KEY-1...) in it", path)
}

func createLocalIdentity(path string) (*age.X25519Identity, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, fmt.Errorf("generate the local identity: %w", err)
	}
	body := "# git-lossless local identity: the vault of redacted secrets is encrypted to it.\n" +
		"# Losing it loses those values (nothing else). Keep it private; back it up.\n" +
		"# public key: " + id.Recipient().String() + "\n" +
		id.String() + "\n"
	f, err := os.CreateTemp(dir, ".identity~"+strconv.Itoa(os.Getpid())+"-*.tmp") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("create the local identity: %w", err)
	}
	tmp := f.Name()
	_, werr := f.WriteString(body)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("write the local identity: %w", werr)
	}
	lerr := os.Link(tmp, path)
	os.Remove(tmp)
	if lerr != nil && !errors.Is(lerr, os.ErrExist) {
		return nil, fmt.Errorf("install the local identity %s: %w", path, lerr)
	}
	// Whoever won, the file is complete now: read it.
	return readLocalIdentity(path)
}

// placeholderKey derives the key of the placeholder ids from the local
// identity, so that an id says nothing about the value to anyone without
// the identity (a bare hash of a short password could be brute-forced)
// and the same value gets the same id throughout one user's archive.
func placeholderKey(id *age.X25519Identity) []byte { return placeholderKeyOf(id.String()) }

// placeholderKeyOf is sha256("git-lossless placeholder id v1\n" ||
// identity), the identity as its AGE-SECRET-KEY-1... string.
func placeholderKeyOf(identity string) []byte {
	sum := sha256.Sum256([]byte("git-lossless placeholder id v1\n" + identity))
	return sum[:]
}

// PlaceholderIDLen is the number of hex digits of a placeholder id.
const PlaceholderIDLen = 12

// placeholderID is hex(HMAC-SHA256(key, kind || 0x00 || value)) cut to
// PlaceholderIDLen digits.
func placeholderID(key []byte, kind string, value []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write(value)
	return hex.EncodeToString(m.Sum(nil))[:PlaceholderIDLen]
}

// withLocalIdentity returns ids plus the local identity when it exists
// and is not among them already.
func withLocalIdentity(ids []age.Identity) []age.Identity {
	local, err := LocalIdentity(false)
	if err != nil || local == nil {
		return ids
	}
	for _, id := range ids {
		if x, ok := id.(*age.X25519Identity); ok && x.String() == local.String() {
			return ids
		}
	}
	return append(append([]age.Identity(nil), ids...), local)
}

// redactMode reads git config lossless.redact: on (the default) or off.
func (s *Store) redactMode() (bool, error) {
	v := strings.TrimSpace(s.cfg.Get("lossless.redact"))
	if v == "" {
		return true, nil
	}
	switch strings.ToLower(v) {
	case "off", "false", "no", "0":
		return false, nil
	case "on", "true", "yes", "1":
		return true, nil
	}
	return false, fmt.Errorf("git config lossless.redact: %q is not on or off", v)
}
