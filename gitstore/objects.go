package gitstore

import "github.com/git-lossless/git-lossless/internal/gitobj"

// The object layer's errors, limits and ids, named here for the callers
// of the store (cmd, hooks, receipt), which do not import the object
// layer: the values are gitobj's, so errors.Is matches either name.
var (
	// ErrObjectMissing: an object is in neither the loose store nor any pack.
	ErrObjectMissing = gitobj.ErrObjectMissing
	// ErrObjectCorrupt: an object file exists but does not inflate to a
	// well-formed object.
	ErrObjectCorrupt = gitobj.ErrObjectCorrupt
	// ErrRefChanged: a compare-and-swap whose expected old value no
	// longer holds.
	ErrRefChanged = gitobj.ErrRefChanged
	// ErrLocked: a ref's lock could not be taken in time.
	ErrLocked = gitobj.ErrLocked
	// ErrReadOnly: a write through a read-only view (a fetch
	// quarantine's, Quarantine.Store).
	ErrReadOnly = gitobj.ErrReadOnly
)

// StaleLockAge is how old a foreign lock must be before it is removed.
const StaleLockAge = gitobj.StaleLockAge

// LockInfo describes a lock file found under refs/lossless.
type LockInfo = gitobj.LockInfo

// Prepack compresses blob contents ahead of the Import that will store
// them (see gitobj.Prepack).
type Prepack = gitobj.Prepack

// NewPrepack starts a Prepack's workers.
func NewPrepack() *Prepack { return gitobj.NewPrepack() }

// BlobID returns the git blob id of data, as `git hash-object` prints it.
func BlobID(data []byte) string { return gitobj.BlobID(data) }
