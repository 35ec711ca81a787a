// Package receipt builds, signs, stores and verifies receipts: for one
// commit, what the model contexts that touched its files saw — which
// versions, whether they edited from a current or a stale view, who changed
// things after them — as a signed git note that plain git and plain gpg can
// read and check. What a receipt says, the rule that decides it and its
// text are package note (receipt/note), which this package imports: here
// are reading the commit and the events out of the archive (Build), the
// token counts (tokens.Counter), the signing keys (Key, Keyring), the notes
// refs (Save, Load, Find, All) and verification against the archive
// (Verify).
//
// It may import note, gitstore, seal and the OpenPGP and tokenizer
// modules; it must not import hooks or cmd.
//
// # Storage
//
// A receipt is a git note on the commit it describes, under
// refs/notes/lossless/receipts-<key id>: one notes ref per signing key
// (the key id is the signing key's primary key id, 16 lower-case hex
// digits). Two machines with two keys therefore never overwrite each
// other's receipts when both push and fetch
//
//	+refs/notes/lossless/*:refs/notes/lossless/*
//
// (plus refs/lossless/* for the events the receipts rest on). The ref
// refs/notes/lossless itself is never created. Notes are written flat (the
// tree entry is the commit's 40-hex id), read flat or fanned out; each new
// note is a new notes commit whose parent is the previous one, written
// without touching the work tree or the index, and the ref moves by the
// same lock protocol as every ref the store writes (package gitstore). The
// note is the clear-signed receipt text; the notes commit carries a gpgsig
// header by the same key. With plain tools:
//
//	git notes --ref=lossless/receipts-<key id> show HEAD | gpg --verify
//	git verify-commit refs/notes/lossless/receipts-<key id>
//	git log --notes='lossless/*'
//
// (gpg needs the public key: `git lossless key export | gpg --import`.)
// Running `git lossless receipt` again for a commit shows the stored
// receipt; --refresh builds it anew (the old note stays in the notes ref's
// history).
//
// # Rewrites
//
// Carry and CarryAll give a rewritten commit a receipt of its own, rebuilt
// and signed for it, naming the commits it replaces (note's "carried"
// lines); ParseRewritten reads git's post-rewrite input and MatchRange
// matches a rewrite git ran no hook for, by patch id and by squashed
// change. Copying the old note (git's notes.rewriteRef) would not do: a
// receipt names its commit and is signed, so a copy never verifies for
// the new commit.
//
// # Signing
//
// The note is the body clear-signed (RFC 4880 section 7) with an OpenPGP
// v4 key through github.com/ProtonMail/go-crypto, exactly as `gpg
// --clearsign` would write it for the body as a file: the line
// "-----BEGIN PGP SIGNED MESSAGE-----", "Hash: SHA256", an empty line, the
// body lines, then the signature block; the body's last newline is not
// signed. SplitNote accepts that framing and nothing else. The notes
// commit is signed as `git commit -S` signs: an armored detached signature
// of the commit without its gpgsig header.
//
// `git lossless key generate` creates an Ed25519 (legacy EdDSA, which gpg
// 2.2 reads) v4 key and writes its unprotected secret part, armored, to
// os.UserConfigDir()/git-lossless/signing-key.asc (mode 0600, directory
// 0700); `git config lossless.signingKey PATH` names another armored
// secret key file instead (a passphrase-protected key cannot be used).
// `git lossless key export` prints the armored public key.
//
// # Verifying
//
// Verify trusts the public part of the configured signing key, the files
// named by `git config lossless.trustedKeys` (multi-valued) and the files
// passed with --keyring. It checks, and reports each failure with its kind:
// the note's signature and signer (unknown-key, bad-signature), that the
// signer is the key the notes ref is named after and also signed the notes
// commit (key-mismatch), that the body is canonical (malformed), that it
// names the annotated commit's id, tree, parents and committer time, its
// first parent's time and exactly its changed paths, modes and blobs
// (commit-mismatch), that every writer still verifies as a sealed chain
// holding the recorded seal at the recorded head seq (chain), that every
// referenced event is in that chain and says what the receipt says of it
// (event-missing, event-mismatch), and that every named blob exists and
// hashes to its id and to its event's sha256 (blob-missing,
// blob-mismatch; a blob a prune record removed is reported as pruned,
// which is expected). Token counts and note sentences are signed claims:
// they are not recounted.
package receipt
