package anchor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/seal"
)

// Witness is the one place the heads a writer's chain was seen at come
// from: this machine's own log of every head its store moved a writer to
// (the witness, FORMAT.md section 11 of gitstore), and the heads anchored
// in signed checkpoints — pushed from here, or fetched from remotes. It is
// the store's HeadObserver and CheckpointSource (StoreOptions wires it),
// so every append is witnessed and every verify compares the chain with
// all of them.
//
// The witness file of a writer is <common dir>/lossless/witness/<writer>,
// one "<seq> <seal>" line per head, appended with O_APPEND (lines this
// short are written atomically, so concurrent appenders need no lock).
type Witness struct {
	warn func(string)

	mu      sync.Mutex
	dir     string                       // the common dir the cache is of
	anchors map[string][]seal.Checkpoint // by writer, loaded on first use
	loadErr error
	loaded  bool
}

// StoreOptions returns o with the witness wired in: what every opener of
// a store that writes or verifies on this machine uses.
func StoreOptions(o gitstore.Options) gitstore.Options {
	w := &Witness{warn: o.Warn}
	o.Heads, o.Checkpoints = w, w
	return o
}

// OpenDir is gitstore.OpenDir with the witness wired in.
func OpenDir(dir string, o gitstore.Options) (*gitstore.Store, error) {
	return gitstore.OpenDir(dir, StoreOptions(o))
}

// Open is gitstore.Open with the witness wired in.
func Open(loc gitstore.Location, o gitstore.Options) (*gitstore.Store, error) {
	return gitstore.Open(loc, StoreOptions(o))
}

func witnessDir(st *gitstore.Store) string {
	return filepath.Join(st.Location().CommonDir, "lossless", "witness")
}

// SawHead appends the head to the writer's witness file. A failure is a
// warning: the append it follows has happened.
func (w *Witness) SawHead(st *gitstore.Store, writer string, seq int64, sealHex string) {
	if err := appendWitness(witnessDir(st), writer, seq, sealHex); err != nil && w.warn != nil {
		w.warn("witness: " + err.Error())
	}
}

func appendWitness(dir, writer string, seq int64, sealHex string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, writer), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d %s\n", seq, sealHex)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadWitness returns the heads this machine witnessed for writer, oldest
// first.
func ReadWitness(st *gitstore.Store, writer string) ([]seal.Checkpoint, error) {
	b, err := os.ReadFile(filepath.Join(witnessDir(st), writer))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []seal.Checkpoint
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || len(f[1]) != 64 {
			continue
		}
		out = append(out, seal.Checkpoint{Seq: n, Seal: f[1]})
	}
	return out, nil
}

// WitnessedWriters lists the writers this machine has seen a head of,
// whether or not their refs still exist, and the writers of the
// checkpoints this machine anchored or fetched: verify checks them too,
// so a deleted or emptied writer ref is reported, not skipped.
func WitnessedWriters(ctx context.Context, st *gitstore.Store) ([]string, error) {
	set := map[string]bool{}
	ents, err := os.ReadDir(witnessDir(st))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() && gitstore.ValidWriter(e.Name()) == nil {
			set[e.Name()] = true
		}
	}
	// Writers this machine anchored: a writer anchored here and gone now
	// is a break. (Other machines' writers are checked where they exist.)
	all, err := AnchoredCheckpoints(ctx, st)
	if err != nil {
		return nil, err
	}
	for _, a := range all {
		if a.Own {
			for _, w := range a.Checkpoint.Writers {
				set[w.Name] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Checkpoints returns the witnessed heads of writer and the heads anchored
// for it in every checkpoint this machine pushed or fetched (the newest of
// each machine's clone per remote), the anchored ones marked by where they
// come from.
func (w *Witness) Checkpoints(ctx context.Context, st *gitstore.Store, writer string) ([]seal.Checkpoint, error) {
	cps, err := ReadWitness(st, writer)
	if err != nil {
		return nil, err
	}
	anchors, err := w.anchored(ctx, st)
	if err != nil {
		return nil, err
	}
	return append(cps, anchors[writer]...), nil
}

// anchored loads, once, the anchored heads by writer.
func (w *Witness) anchored(ctx context.Context, st *gitstore.Store) (map[string][]seal.Checkpoint, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if dir := st.Location().CommonDir; !w.loaded || w.dir != dir {
		w.anchors, w.loadErr = loadAnchoredHeads(ctx, st, w.warn)
		w.loaded, w.dir = true, dir
	}
	return w.anchors, w.loadErr
}

// Forget drops what was loaded, so the next Checkpoints reads the anchors
// again (after a push or a fetch in the same process).
func (w *Witness) Forget() {
	w.mu.Lock()
	w.loaded, w.anchors, w.loadErr = false, nil, nil
	w.mu.Unlock()
}
