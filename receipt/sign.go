package receipt

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/git-lossless/git-lossless/receipt/note"
)

// WriterPrefix starts the notes writer of every receipt signing key:
// receipts are stored on refs/notes/lossless/receipts-<key id>, one notes
// ref per signing key, so two machines (two keys) never overwrite each
// other's notes when they push and fetch refs/notes/lossless/*.
const WriterPrefix = "receipts-"

// KeyFileName is the default signing key's file name under
// os.UserConfigDir()/git-lossless/.
const KeyFileName = "signing-key.asc"

// DefaultKeyPath returns os.UserConfigDir()/git-lossless/signing-key.asc
// ($XDG_CONFIG_HOME/git-lossless/... on Linux).
func DefaultKeyPath() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate the user config dir: %w (set XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(d, "git-lossless", KeyFileName), nil
}

// pgpConfig is used for every key generation and signature: v4 keys
// (gpg 2.2 rejects v6), Ed25519 (legacy EdDSA, which gpg 2.2 reads),
// SHA-256.
func pgpConfig(now func() time.Time) *packet.Config {
	return &packet.Config{
		Algorithm:   packet.PubKeyAlgoEdDSA,
		Curve:       packet.Curve25519,
		DefaultHash: crypto.SHA256,
		V6Keys:      false,
		Time:        now,
	}
}

// Key is a secret signing key.
type Key struct {
	Entity *openpgp.Entity
	Path   string // where it was loaded from ("" for a fresh key)
}

// GenerateKey creates an Ed25519 v4 OpenPGP key for signing receipts, with
// one user id "name <email>" (either may be empty).
func GenerateKey(name, email string) (*Key, error) {
	cfg := pgpConfig(time.Now)
	e, err := openpgp.NewEntity(name, "git-lossless receipts", email, cfg)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return &Key{Entity: e}, nil
}

// WriteFile writes the armored secret key to path, mode 0600. An existing
// file is kept unless force is set. A missing directory is created 0700.
// When path is the default key path, its directory is git-lossless's own
// (os.UserConfigDir()/git-lossless) and is made 0700 even if it existed
// with looser permissions, so that only its owner can list or replace
// the key; any other directory, and every parent, is left as it is: it is
// not ours to change.
func (k *Key) WriteFile(path string, force bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if def, err := DefaultKeyPath(); err == nil && filepath.Clean(def) == filepath.Clean(path) {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restrict %s to its owner: %w", dir, err)
		}
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		return fmt.Errorf("armor key: %w", err)
	}
	if err := k.Entity.SerializePrivate(w, pgpConfig(time.Now)); err != nil {
		return fmt.Errorf("serialize key: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("armor key: %w", err)
	}
	buf.WriteByte('\n')
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists already", path)
	}
	if err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	k.Path = path
	return nil
}

// LoadKey reads an armored (or binary) OpenPGP secret key file. The key
// must be able to sign and must not be passphrase-protected.
func LoadKey(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	el, err := readKeyring(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(el) == 0 {
		return nil, fmt.Errorf("%s holds no key", path)
	}
	e := el[0]
	if e.PrivateKey == nil {
		return nil, fmt.Errorf("%s holds a public key only; a signing key needs its secret part", path)
	}
	sk, ok := e.SigningKey(time.Now())
	if !ok || sk.PrivateKey == nil {
		return nil, fmt.Errorf("%s has no usable signing key (expired, revoked or secret part missing)", path)
	}
	if sk.PrivateKey.Encrypted {
		return nil, fmt.Errorf("%s is protected by a passphrase, which git-lossless cannot ask for; use `git lossless key generate` or an unprotected signing key", path)
	}
	if sk.PrivateKey.Version != 4 {
		return nil, fmt.Errorf("%s is a v%d key; gpg 2.2 verifies v4 keys only", path, sk.PrivateKey.Version)
	}
	return &Key{Entity: e, Path: path}, nil
}

func readKeyring(b []byte) (openpgp.EntityList, error) {
	if bytes.Contains(b, []byte("-----BEGIN PGP")) {
		var all openpgp.EntityList
		// A file may hold several armored blocks (an exported keyring).
		rest := b
		for {
			i := bytes.Index(rest, []byte("-----BEGIN PGP"))
			if i < 0 {
				break
			}
			rest = rest[i:]
			blk, err := armor.Decode(bytes.NewReader(rest))
			if err != nil {
				return nil, fmt.Errorf("not an armored OpenPGP key: %w", err)
			}
			if blk.Type != openpgp.PublicKeyType && blk.Type != openpgp.PrivateKeyType {
				return nil, fmt.Errorf("armored block %q is not a key", blk.Type)
			}
			el, err := openpgp.ReadKeyRing(blk.Body)
			if err != nil {
				return nil, err
			}
			all = append(all, el...)
			end := bytes.Index(rest, []byte("-----END PGP"))
			if end < 0 {
				break
			}
			rest = rest[end+len("-----END PGP"):]
		}
		return all, nil
	}
	return openpgp.ReadKeyRing(bytes.NewReader(b))
}

// KeyID returns an entity's primary key id as 16 lower-case hex digits.
func KeyID(e *openpgp.Entity) string { return fmt.Sprintf("%016x", e.PrimaryKey.KeyId) }

// Fingerprint returns the primary key's fingerprint, upper-case hex.
func Fingerprint(e *openpgp.Entity) string { return fmt.Sprintf("%X", e.PrimaryKey.Fingerprint) }

// UserID returns the entity's primary user id ("" if none).
func UserID(e *openpgp.Entity) string {
	if id := e.PrimaryIdentity(); id != nil {
		return id.Name
	}
	return ""
}

// ID is the key's id (16 hex digits).
func (k *Key) ID() string { return KeyID(k.Entity) }

// note.Writer is the notes writer receipts signed by this key are stored
// under: receipts-<key id>.
func (k *Key) Writer() string { return WriterPrefix + k.ID() }

// ArmoredPublic returns the armored public key (what `key export`
// prints and `gpg --import` reads).
func (k *Key) ArmoredPublic() (string, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return "", err
	}
	if err := k.Entity.Serialize(w); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	buf.WriteByte('\n')
	return buf.String(), nil
}

// Public returns the key's public part as a one-entity keyring.
func (k *Key) Public() (openpgp.EntityList, error) {
	s, err := k.ArmoredPublic()
	if err != nil {
		return nil, err
	}
	return openpgp.ReadArmoredKeyRing(strings.NewReader(s))
}

// ClearSign returns body clear-signed (RFC 4880 section 7): the note text.
// body must end with a newline; that last newline is not part of the
// signed text, as with `gpg --clearsign` of a file.
func (k *Key) ClearSign(body []byte) ([]byte, error) {
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, errors.New("clear-sign: body must end with a newline")
	}
	sk, ok := k.Entity.SigningKey(time.Now())
	if !ok {
		return nil, errors.New("clear-sign: no usable signing key")
	}
	var out bytes.Buffer
	w, err := clearsign.Encode(&out, sk.PrivateKey, pgpConfig(time.Now))
	if err != nil {
		return nil, fmt.Errorf("clear-sign: %w", err)
	}
	if _, err := w.Write(body[:len(body)-1]); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("clear-sign: %w", err)
	}
	if out.Len() > 0 && out.Bytes()[out.Len()-1] != '\n' {
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// SignCommit returns an armored detached signature of a commit payload,
// as `git commit -S` puts it in the gpgsig header.
func (k *Key) SignCommit(payload []byte) (string, error) {
	var out bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&out, k.Entity, bytes.NewReader(payload), pgpConfig(time.Now)); err != nil {
		return "", err
	}
	return out.String(), nil
}

// Keyring is the set of public keys whose signatures verify.
type Keyring struct {
	List openpgp.EntityList
}

// Add adds every key of an armored or binary key file.
func (kr *Keyring) AddFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	el, err := readKeyring(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(el) == 0 {
		return fmt.Errorf("%s holds no key", path)
	}
	kr.List = append(kr.List, el...)
	return nil
}

// Add adds a key's public part.
func (kr *Keyring) Add(k *Key) error {
	pub, err := k.Public()
	if err != nil {
		return err
	}
	kr.List = append(kr.List, pub...)
	return nil
}

// SignatureError says why a signature did not verify.
type SignatureError struct {
	What  string // "note" or "notes commit"
	KeyID string // the issuer, when the signature names one
	Err   error
}

func (e *SignatureError) Error() string {
	if errors.Is(e.Err, pgperrors.ErrUnknownIssuer) {
		return fmt.Sprintf("%s signature by unknown key %s: it is not in the trusted keyring (add its public key with `git config --add lossless.trustedKeys FILE` or --keyring FILE)", e.What, strings.ToUpper(e.KeyID))
	}
	return fmt.Sprintf("%s signature does not verify: %v", e.What, e.Err)
}

func (e *SignatureError) Unwrap() error { return e.Err }

// issuer returns the issuer key id of the first signature packet.
func issuer(sig []byte) string {
	p, err := packet.NewReader(bytes.NewReader(sig)).Next()
	if err != nil {
		return ""
	}
	if s, ok := p.(*packet.Signature); ok && s.IssuerKeyId != nil {
		return fmt.Sprintf("%016x", *s.IssuerKeyId)
	}
	return ""
}

// SplitNote checks the clear-signed framing of a note strictly and returns
// the receipt body (with its final newline) and the armored signature.
// The accepted form is exactly what ClearSign writes:
//
//	-----BEGIN PGP SIGNED MESSAGE-----
//	Hash: SHA256 (or SHA512)
//	<empty line>
//	<body lines, none starting with '-', none with trailing white space>
//	-----BEGIN PGP SIGNATURE-----
//	<armor>
//	-----END PGP SIGNATURE-----
//	<nothing more>
func SplitNote(signed []byte) (body []byte, sig []byte, err error) {
	const (
		begin = "-----BEGIN PGP SIGNED MESSAGE-----\n"
		mark  = "\n-----BEGIN PGP SIGNATURE-----\n"
		end   = "-----END PGP SIGNATURE-----\n"
	)
	if len(signed) > note.MaxSize+64<<10 {
		return nil, nil, errors.New("note too large")
	}
	s := string(signed)
	if !strings.HasPrefix(s, begin) {
		return nil, nil, errors.New("note is not a clear-signed message (no BEGIN PGP SIGNED MESSAGE line first)")
	}
	s = s[len(begin):]
	hdr, rest, ok := strings.Cut(s, "\n")
	if !ok || (hdr != "Hash: SHA256" && hdr != "Hash: SHA512") {
		return nil, nil, errors.New("note has no single Hash header")
	}
	if !strings.HasPrefix(rest, "\n") {
		return nil, nil, errors.New("note has no empty line after its header")
	}
	rest = rest[1:]
	i := strings.Index(rest, mark)
	if i < 0 {
		return nil, nil, errors.New("note has no signature block")
	}
	text, armored := rest[:i+1], rest[i+1:]
	if !strings.HasSuffix(armored, end) || strings.Count(armored, "-----END PGP SIGNATURE-----") != 1 {
		return nil, nil, errors.New("note must end with its signature block")
	}
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if strings.HasPrefix(l, "-") || strings.HasSuffix(l, " ") || strings.HasSuffix(l, "\t") || strings.Contains(l, "\r") {
			return nil, nil, errors.New("note body has a dash-escaped line or trailing white space")
		}
	}
	blk, err := armor.Decode(strings.NewReader(armored))
	if err != nil || blk.Type != "PGP SIGNATURE" {
		return nil, nil, fmt.Errorf("note signature block does not decode: %v", err)
	}
	sigBytes, err := io.ReadAll(blk.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("note signature block does not decode: %w", err)
	}
	// The armor must be the canonical one for these bytes, as ClearSign
	// writes it (base64 decoders ignore some bit flips in the last
	// character; a note has one text).
	var canon bytes.Buffer
	w, err := armor.EncodeWithChecksumOption(&canon, "PGP SIGNATURE", nil, false)
	if err == nil {
		_, err = w.Write(sigBytes)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil || strings.TrimSuffix(canon.String(), "\n")+"\n" != armored {
		return nil, nil, errors.New("note signature block is not in canonical armor")
	}
	return []byte(text), sigBytes, nil
}

// VerifyNote checks a clear-signed note against the keyring and returns
// the receipt body and the signer.
func VerifyNote(signed []byte, kr *Keyring) (body []byte, signer *openpgp.Entity, err error) {
	body, sig, err := SplitNote(signed)
	if err != nil {
		return nil, nil, err
	}
	blk, _ := clearsign.Decode(signed)
	if blk == nil {
		return nil, nil, errors.New("note is not a clear-signed message")
	}
	// What the signature covers: the body with CRLF line endings, its
	// final line ending excluded (RFC 4880 section 7.1).
	want := strings.ReplaceAll(strings.TrimSuffix(string(body), "\n"), "\n", "\r\n")
	if string(blk.Bytes) != want {
		return nil, nil, errors.New("note body and signed text differ")
	}
	if err := strictSignature(sig, blk.Bytes); err != nil {
		return nil, nil, &SignatureError{What: "note", KeyID: issuer(sig), Err: err}
	}
	_, signer, err = openpgp.VerifyDetachedSignature(kr.List, bytes.NewReader(blk.Bytes), bytes.NewReader(sig), nil)
	if err != nil {
		return nil, nil, &SignatureError{What: "note", KeyID: issuer(sig), Err: err}
	}
	return body, signer, nil
}

// VerifyCommitSignature checks an armored detached signature over a commit
// payload, as `git verify-commit` does.
func VerifyCommitSignature(payload []byte, armored string, kr *Keyring) (*openpgp.Entity, error) {
	if armored == "" {
		return nil, &SignatureError{What: "notes commit", Err: errors.New("the notes commit is not signed")}
	}
	blk, err := armor.Decode(strings.NewReader(armored))
	if err != nil || blk.Type != "PGP SIGNATURE" {
		return nil, &SignatureError{What: "notes commit", Err: fmt.Errorf("gpgsig does not decode: %v", err)}
	}
	sig, err := io.ReadAll(blk.Body)
	if err != nil {
		return nil, &SignatureError{What: "notes commit", Err: err}
	}
	if err := strictSignature(sig, payload); err != nil {
		return nil, &SignatureError{What: "notes commit", KeyID: issuer(sig), Err: err}
	}
	_, signer, err := openpgp.VerifyDetachedSignature(kr.List, bytes.NewReader(payload), bytes.NewReader(sig), nil)
	if err != nil {
		return nil, &SignatureError{What: "notes commit", KeyID: issuer(sig), Err: err}
	}
	return signer, nil
}

type mpi interface {
	Bytes() []byte
	BitLength() uint16
}

// strictSignature holds a detached signature to what gpg also checks and
// go-crypto lets pass: exactly one signature packet, encoded canonically
// (a re-encoding gives the same bytes), whose quick-check hash prefix
// matches the data (go-crypto checks it for v5+ signatures only; gpg
// reports a mismatch as a BAD signature). data is what is hashed:
// for a text signature, already with CRLF line endings.
func strictSignature(sig, data []byte) error {
	pr := packet.NewReader(bytes.NewReader(sig))
	p, err := pr.Next()
	if err != nil {
		return fmt.Errorf("signature packet: %w", err)
	}
	s, ok := p.(*packet.Signature)
	if !ok {
		return errors.New("not a signature packet")
	}
	if _, err := pr.Next(); err != io.EOF {
		return errors.New("more than one packet where one signature was expected")
	}
	var again bytes.Buffer
	if err := s.Serialize(&again); err != nil || !bytes.Equal(again.Bytes(), sig) {
		return errors.New("signature packet is not encoded canonically")
	}
	if s.Version != 4 {
		return fmt.Errorf("a v%d signature; receipts use v4", s.Version)
	}
	// MPIs carry their length in bits; go-crypto reads the bytes and keeps
	// whatever bit count was written, so a bit count that is not the
	// value's own would verify as well. Require the minimal one.
	for _, f := range []mpi{s.RSASignature, s.DSASigR, s.DSASigS, s.ECDSASigR, s.ECDSASigS, s.EdDSASigR, s.EdDSASigS} {
		if f == nil || reflect.ValueOf(f).IsNil() {
			continue
		}
		b := f.Bytes()
		if len(b) == 0 || b[0] == 0 || int(f.BitLength()) != 8*(len(b)-1)+bits.Len8(b[0]) {
			return errors.New("signature has a non-minimal MPI")
		}
	}
	if !s.Hash.Available() {
		return fmt.Errorf("signature hash %v unavailable", s.Hash)
	}
	h := s.Hash.New()
	h.Write(data)
	if err := packet.VerifyHashTag(h, s); err != nil {
		return err
	}
	return nil
}
