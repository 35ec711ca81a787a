package gitstore

// A Store is the event log: writers' chains of batches (append, import,
// query, select, prune, redact, verify), the notes that hold receipts, the
// witness and the push plan. Three concerns beside it have types of their
// own, reached from the store, so that a caller names the concern it uses
// and the log's method set stays the log's:
//
//   - Objects: the object database and the refs beyond the writers'
//     chains (anchors, anchor tags, tracking refs): read any object,
//     write checkpoint commits and tags, compare-and-swap those refs,
//     ancestry. Package anchor and the receipts' verifier use it.
//   - Transport: everything that talks to a remote through git — fetch
//     into a quarantine, push a plan or refs, ls-remote, the remote's URL.
//   - Crypt: encryption of archived content — whether it is on and to
//     whom, the identities that open it, opening a content or a writer's
//     vault, revealing placeholders.
//
// They are views of one open archive, not separate stores: each shares the
// store's object database, ref lock protocol, configuration and read-only
// flag (a quarantine's view refuses writes through all of them), so there
// is still one place that writes refs and objects. The accessors return
// values, so a view costs nothing and a copy of the store (the quarantine's
// read-only view) never reaches the original through a stale pointer.

// Objects is the archive's object database and its refs beyond the
// writers' chains (refops.go).
type Objects struct{ s *Store }

// Objects returns the store's object and ref view.
func (s *Store) Objects() Objects { return Objects{s} }

// Transport talks to remotes through git (remote.go, quarantine.go).
type Transport struct{ s *Store }

// Transport returns the store's view of remotes.
func (s *Store) Transport() Transport { return Transport{s} }

// Crypt is the encryption of archived content (crypt.go, redact.go).
type Crypt struct{ s *Store }

// Crypt returns the store's encryption view.
func (s *Store) Crypt() Crypt { return Crypt{s} }
