// Package seal defines the hash chain that makes each writer's event log
// tamper-evident, and verifies a chain against the objects it references.
//
// The chain is over the exact bytes of the stored event lines: entry i is
// sealed by Hash(line_i) = hex(sha256(line_i)); line i names the seal of
// line i-1 in its "prev" field and its own position in "seq"; the first
// line's prev is Genesis(writer). Every line that references content names
// the content's sha256, so the chain commits to the content too. Each batch
// commit carries the seal and seq of its last line in its message.
//
// Hashing stored bytes, not a re-encoding, means a verifier needs no JSON
// canonicalisation: `sha256sum` over a line is the whole rule (FORMAT.md in
// gitstore shows the shell recipe).
//
// Tamper-evident, not tamper-proof: someone who can rewrite the refs can
// recompute a whole chain. The witness (the last heads this machine saw) and
// the anchor (heads pushed to a remote) catch that; see Checkpoint.
package seal

import (
	"crypto/sha256"
	"encoding/hex"
)

// GenesisPrefix is hashed with the writer name to give the first prev, so a
// chain cannot be moved to another writer's ref unnoticed.
const GenesisPrefix = "git-lossless seal v1 "

// Genesis returns the prev value of a writer's first entry:
// hex(sha256("git-lossless seal v1 " + writer)).
func Genesis(writer string) string {
	sum := sha256.Sum256([]byte(GenesisPrefix + writer))
	return hex.EncodeToString(sum[:])
}

// Hash returns the seal of one stored line (without its newline).
func Hash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// Checkpoint is a (seq, seal) pair some observer saw as a writer's head. A
// chain is consistent with a checkpoint when its entry at Seq has exactly
// that seal; a chain shorter than Seq, or with another seal there, has been
// forked or rolled back since.
type Checkpoint struct {
	Seq  int64
	Seal string
	// Anchor says where an anchored checkpoint comes from (a remote and
	// the signed checkpoint, for the report); "" for the local witness.
	// A chain that disagrees with an anchor is an anchor-mismatch, with
	// the witness a chain-forked.
	Anchor string
}
