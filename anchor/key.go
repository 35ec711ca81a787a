package anchor

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// KeyFileName is the anchor key's file name under
// os.UserConfigDir()/git-lossless/, beside the receipt signing key and the
// local identity.
const KeyFileName = "anchor-key"

// Key is this machine's checkpoint signing key: an Ed25519 key in the
// signed-note encoding of golang.org/x/mod/sumdb/note, whose name is the
// machine's name in every checkpoint.
//
// It is a key of its own, not the receipt key's Ed25519 material, on
// purpose. Anchors are pushed often, automatically (a pre-push hook), and
// to remotes that may be public; receipts are signed rarely and their key
// may move into gpg or a hardware token. Separate keys let one be rotated
// or lost without touching the other, and keep one Ed25519 key from
// signing two protocols' messages (OpenPGP digests and raw note texts).
// The public half travels with every checkpoint (key.pub in the checkpoint
// commit), and verifiers pin it on first sight.
type Key struct {
	Signer   note.Signer
	Verifier note.Verifier
	VKey     string // the public verifier key, "<name>+<hash>+<base64>"
	Path     string // where it was loaded from
}

// Name is the machine name the key signs as.
func (k *Key) Name() string { return k.Signer.Name() }

// KeyPath returns where the anchor key lives: $LOSSLESS_ANCHOR_KEY_FILE
// when set, else os.UserConfigDir()/git-lossless/anchor-key.
func KeyPath() (string, error) {
	if p := os.Getenv("LOSSLESS_ANCHOR_KEY_FILE"); p != "" {
		return p, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate the user config dir: %w (set XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(d, "git-lossless", KeyFileName), nil
}

// LoadKey reads the anchor key at path; with create, a missing one is
// generated first, named machine (or, when machine is "", after the host
// name with four random bytes, so two machines that share a host name —
// containers, cloned VMs — are still two). Concurrent first uses agree on
// one key: it is written to a temporary file and linked into place.
func LoadKey(path, machine string, create bool) (*Key, error) {
	k, err := readKey(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !create {
		return k, err
	}
	if machine == "" {
		machine = DefaultMachineName()
	}
	if err := validName("machine", machine); err != nil {
		return nil, err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, machine)
	if err != nil {
		return nil, fmt.Errorf("generate the anchor key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	body := "# git-lossless anchor key: signs this machine's seal checkpoints (git lossless anchor push).\n" +
		"# Keep the PRIVATE line private; the public key is on the line after it.\n" +
		skey + "\n" + vkey + "\n"
	f, err := os.CreateTemp(dir, ".anchor-key~"+strconv.Itoa(os.Getpid())+"-*.tmp") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("create the anchor key: %w", err)
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
		return nil, fmt.Errorf("write the anchor key: %w", werr)
	}
	lerr := os.Link(tmp, path)
	os.Remove(tmp)
	if lerr != nil && !errors.Is(lerr, os.ErrExist) {
		return nil, fmt.Errorf("install the anchor key %s: %w", path, lerr)
	}
	return readKey(path)
}

func readKey(path string) (*Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var skey, vkey string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "PRIVATE+KEY+"):
			skey = l
		default:
			vkey = l
		}
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("anchor key %s: %v", path, err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("anchor key %s: public key: %v", path, err)
	}
	if verifier.Name() != signer.Name() || verifier.KeyHash() != signer.KeyHash() {
		return nil, fmt.Errorf("anchor key %s: the public key is not the private key's", path)
	}
	return &Key{Signer: signer, Verifier: verifier, VKey: vkey, Path: path}, nil
}

// DefaultMachineName is the host name, cut to letters, digits, '.', '_'
// and '-', with eight random hex digits after it.
func DefaultMachineName() string {
	h, _ := os.Hostname()
	var b strings.Builder
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteRune(c)
		case c == '.':
			// the domain part adds length, not identity
			goto done
		}
		if b.Len() >= 40 {
			break
		}
	}
done:
	name := strings.Trim(b.String(), "-_")
	if name == "" {
		name = "machine"
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	return name + "-" + hex.EncodeToString(r[:])
}

// ParseVerifierKey reads a public verifier key and checks its name.
func ParseVerifierKey(vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("anchor public key: %v", err)
	}
	if err := validName("machine", v.Name()); err != nil {
		return nil, err
	}
	return v, nil
}
