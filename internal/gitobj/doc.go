// Package gitobj is git-lossless's git object layer, and the only package
// of the module that imports go-git: loose objects (written with fsync,
// read without go-git), packs (read natively with mmap, written as one
// pack and index per import), inflate and deflate, deltas, the commit,
// tag and tree codec, refs under C git's own lock protocol, git config
// files, revisions (through `git rev-parse`), and the file I/O and
// subprocess helpers those need.
//
// It knows nothing of events, writers or seals: package gitstore builds
// the event log on it, and package receipt reads the commits it names
// through it. It may import the standard library and go-git only.
package gitobj
