// Package sshkeys lets the archive encrypt to SSH public keys and decrypt
// with SSH private keys, as age does (filippo.io/age/agessh: ssh-ed25519
// and ssh-rsa). Importing it, for its side effect, registers it with
// gitstore (gitstore.RegisterSSH); git-lossless imports it,
// git-lossless-hook does not (see gitstore.SSHKeys for why).
//
// It imports gitstore, age and agessh only.
package sshkeys

import (
	"filippo.io/age"
	"filippo.io/age/agessh"

	"github.com/git-lossless/git-lossless/gitstore"
)

func init() { gitstore.RegisterSSH(keys{}) }

type keys struct{}

func (keys) ParseRecipient(s string) (age.Recipient, error) { return agessh.ParseRecipient(s) }

func (keys) ParseIdentity(pem []byte) (age.Identity, error) { return agessh.ParseIdentity(pem) }
