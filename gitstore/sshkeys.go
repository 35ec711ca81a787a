package gitstore

import (
	"errors"
	"strings"
	"sync/atomic"

	"filippo.io/age"
)

// SSHKeys turns SSH keys into age recipients and identities (age's
// ssh-ed25519 and ssh-rsa stanzas). gitstore does not implement it
// itself: the implementation, package gitstore/sshkeys over
// filippo.io/age/agessh, links golang.org/x/crypto/ssh and through it
// net, crypto/x509 and, in a default build, cgo and the dynamic loader.
// git-lossless links it; git-lossless-hook, started afresh on every tool
// call Claude Code hooks, does not, and hands an event to git-lossless
// when the archive it records into needs SSH keys (Crypt.NeedsSSH).
type SSHKeys interface {
	// ParseRecipient parses an authorized_keys line.
	ParseRecipient(s string) (age.Recipient, error)
	// ParseIdentity parses an unencrypted PEM private key.
	ParseIdentity(pem []byte) (age.Identity, error)
}

// ErrNoSSH is returned for an SSH recipient or identity by a program
// built without SSH support (no SSHKeys registered).
var ErrNoSSH = errors.New("SSH keys are handled by git-lossless; this program was built without them (gitstore/sshkeys is not linked)")

// sshKeys is the registered implementation. It is package state on the
// pattern of database/sql's drivers: set once, by the init of the package
// that implements it, and only read afterwards; a program that does not
// link that package has none.
var sshKeys atomic.Pointer[SSHKeys]

// RegisterSSH installs the SSH key implementation. Package
// gitstore/sshkeys calls it from its init; a second registration panics,
// as a second sql.Register of one name does.
func RegisterSSH(k SSHKeys) {
	if !sshKeys.CompareAndSwap(nil, &k) {
		panic("gitstore: RegisterSSH called twice")
	}
}

func registeredSSH() SSHKeys {
	if p := sshKeys.Load(); p != nil {
		return *p
	}
	return nil
}

// NeedsSSH reports whether writing to this archive needs SSH keys:
// lossless.encrypt is on and some lossless.recipient is an SSH public key.
// The hook program, which does not link them, asks before it records, so
// that an event it could not encrypt is handed on instead of lost.
func (c Crypt) NeedsSSH() bool {
	s := c.s
	on, err := parseBool(s.cfg.Get("lossless.encrypt"))
	if err != nil || !on {
		return false
	}
	for _, r := range s.cfg.GetAll("lossless.recipient") {
		if strings.HasPrefix(strings.TrimSpace(r), "ssh-") {
			return true
		}
	}
	return false
}
