package gitstore

// Accepting a fetch held in a quarantine (quarantine.go): the objects the
// accepted refs reach move into the archive, then the tracking refs.

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

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// Accept moves into the archive exactly the objects reachable from the
// ids of refs that it lacks, then moves each of these tracking refs (which
// must be under the fetched destinations) to its id by compare-and-swap
// from its value when the fetch began (Before): ErrRefChanged when another
// process moved it since. A ref already at its id is left alone. The ids
// need not be the fetched ones (an older checkpoint of a fetched chain
// will do), but every object they reach must be in the quarantine or the
// archive. Errors of single refs are joined; the others are still set.
func (q *Quarantine) Accept(ctx context.Context, refs map[string]string) error {
	return q.accept(ctx, refs, nil)
}

// AcceptAll accepts every fetched ref and deletes the tracking refs the
// remote no longer has (Gone): the archive ends as `git fetch --prune`
// would have left it (Fetch), only bounded.
func (q *Quarantine) AcceptAll(ctx context.Context) error {
	return q.accept(ctx, q.refs, q.Gone())
}

// accept sets refs and deletes gone (name -> expected value).
func (q *Quarantine) accept(ctx context.Context, refs, gone map[string]string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.disposed {
		return errors.New("accept: the quarantine was discarded")
	}
	names := make([]string, 0, len(refs))
	for name, id := range refs {
		if !coversAny(q.specs, name) {
			return fmt.Errorf("accept: %s is not under the fetched destinations", name)
		}
		if !gitobj.IsID(id) {
			return fmt.Errorf("accept %s: %q is not an object id", name, id)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	cur, err := q.tracking()
	if err != nil {
		return err
	}
	// Only refs that move need objects (the others' are the archive's).
	var moving []string
	for _, n := range names {
		if cur[n] != refs[n] {
			moving = append(moving, n)
		}
	}
	if q.dir != "" {
		ids := make([]string, 0, len(moving))
		for _, n := range moving {
			ids = append(ids, refs[n])
		}
		moved, err := q.moveObjects(ctx, ids)
		if err != nil {
			return err
		}
		if moved {
			defer q.s.autoMaintenance(ctx, q.remote)
		}
	} else {
		for _, n := range moving {
			if !q.s.odb.Has(refs[n]) {
				return fmt.Errorf("accept %s: %s is not in the archive: %w", n, gitobj.Short(refs[n]), ErrObjectMissing)
			}
		}
	}
	var ups []gitobj.RefUpdate
	for _, n := range moving {
		ups = append(ups, gitobj.RefUpdate{Name: n, Old: q.before[n], New: refs[n]})
	}
	for n, old := range gone {
		if !coversAny(q.specs, n) || !gitobj.IsID(old) {
			return fmt.Errorf("accept: cannot delete %s (expected %q)", n, old)
		}
		if cur[n] != "" {
			ups = append(ups, gitobj.RefUpdate{Name: n, Old: old})
		}
	}
	return q.s.updateTrackingRefs(ctx, ups)
}

// packedUpdates is how many ref updates go into one packed-refs rewrite
// rather than a loose file each: a few refs are cheaper loose (git's way),
// thousands are cheaper as one file.
const packedUpdates = 64

// updateTrackingRefs applies compare-and-swap updates of tracking refs,
// joining the errors of single refs.
func (s *Store) updateTrackingRefs(ctx context.Context, ups []gitobj.RefUpdate) error {
	if len(ups) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	var errs []error
	if len(ups) > packedUpdates {
		res, err := s.refs.UpdatePacked(ctx, ups, func(id string) string { return s.peelTag(ctx, id) })
		if err != nil {
			return err
		}
		errs = res
	} else {
		// One loose file each, fsynced concurrently (the disk commits
		// them together) rather than one after the other.
		errs = make([]error, len(ups))
		var wg sync.WaitGroup
		for i, u := range ups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lk, err := s.refs.Acquire(ctx, u.Name)
				if err == nil {
					if u.New == "" {
						err = lk.Delete(ctx, u.Old)
					} else {
						err = lk.Commit(u.Old, u.New)
					}
				}
				errs[i] = err
			}()
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

// peelTag returns what an annotated tag id finally points at, "" when id
// is not a tag.
func (s *Store) peelTag(ctx context.Context, id string) string {
	out := ""
	for i := 0; i < 16; i++ {
		typ, _, err := s.odb.Info(id)
		if err != nil || typ != "tag" {
			return out
		}
		t, err := s.Objects().ReadTag(ctx, id)
		if err != nil || !gitobj.IsID(t.Object) {
			return ""
		}
		id, out = t.Object, t.Object
	}
	return ""
}

// moveObjects moves the objects reachable from ids that the archive
// lacks: the quarantine's packs and loose objects as they are when that
// is all they hold, else a new pack of just those.
func (q *Quarantine) moveObjects(ctx context.Context, ids []string) (bool, error) {
	arch := q.s.odb
	type item struct {
		id   string
		blob bool // named by a tree as a blob: never read to walk it
	}
	newObjs := map[string]string{} // id -> type
	var order []string
	seen := map[string]bool{}
	stack := make([]item, 0, len(ids))
	for _, id := range ids {
		stack = append(stack, item{id: id})
	}
	for n := 0; len(stack) > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[it.id] {
			continue
		}
		seen[it.id] = true
		if !q.holds(it.id) {
			if arch.Has(it.id) {
				continue // in the archive, with its history (as git assumes of what it has)
			}
			return false, fmt.Errorf("accept: %s is neither fetched nor in the archive: %w", gitobj.Short(it.id), ErrObjectMissing)
		}
		if it.blob {
			newObjs[it.id] = "blob"
			order = append(order, it.id)
			continue
		}
		typ, body, err := q.db.Read(it.id)
		if err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		newObjs[it.id] = typ
		order = append(order, it.id)
		switch typ {
		case "commit":
			c, err := gitobj.ParseCommit(body)
			if err != nil {
				return false, fmt.Errorf("accept: commit %s: %w", gitobj.Short(it.id), err)
			}
			stack = append(stack, item{id: c.Tree})
			for _, p := range c.Parents {
				stack = append(stack, item{id: p})
			}
		case "tree":
			ents, err := gitobj.ParseTree(body)
			if err != nil {
				return false, fmt.Errorf("accept: tree %s: %w", gitobj.Short(it.id), err)
			}
			for _, e := range ents {
				switch {
				case e.Mode == "160000": // a submodule's commit: not ours to hold
				case e.IsTree():
					stack = append(stack, item{id: e.ID})
				default:
					stack = append(stack, item{id: e.ID, blob: true})
				}
			}
		case "tag":
			t, err := gitobj.ParseTag(body)
			if err != nil {
				return false, fmt.Errorf("accept: tag %s: %w", gitobj.Short(it.id), err)
			}
			stack = append(stack, item{id: t.Object})
		}
	}
	if len(newObjs) == 0 {
		return false, nil
	}
	// Everything the quarantine holds is wanted (or in the archive
	// already): move its files as they are.
	whole := true
	if err := q.db.ForEachOwn(func(id string) error {
		if _, ok := newObjs[id]; !ok && !arch.Has(id) {
			whole = false
			return errStopWalk
		}
		return nil
	}); err != nil && !errors.Is(err, errStopWalk) {
		return false, fmt.Errorf("accept: %w", err)
	}
	if whole {
		if err := q.db.MoveOwnTo(arch); err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		return true, nil
	}
	// Only part of it: a pack of exactly the reachable objects, cut every
	// 32 MiB of content so that memory stays bounded.
	sink := gitobj.NewPackSink(nil)
	defer sink.Close()
	held := 0
	for i, id := range order {
		typ, body, err := q.db.Read(id)
		if err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		if typ != newObjs[id] && newObjs[id] == "blob" {
			return false, fmt.Errorf("accept: %s is named as a blob but is a %s", gitobj.Short(id), typ)
		}
		if _, err := sink.Put(typ, body); err != nil {
			return false, fmt.Errorf("accept: %w", err)
		}
		held += len(body)
		if held >= 32<<20 || i == len(order)-1 {
			if _, err := arch.WritePack(sink); err != nil {
				return false, fmt.Errorf("accept: %w", err)
			}
			sink.Reset()
			held = 0
		}
	}
	return true, nil
}

var errStopWalk = errors.New("stop")

// autoMaintenance runs `git maintenance run --auto` in the archive after
// a fetch brought objects, as `git fetch` into the archive did (with
// maintenance.auto false, not at all): the quarantine's own fetch runs
// without it, and an embedded archive sees no other git command that
// would pack its loose objects. git is started only when gc --auto's own
// thresholds are passed (gc.auto loose objects, estimated from objects/17
// as git does, or gc.autoPackLimit packs): the usual sync pays a directory
// read, not a process. A gc it starts detaches itself.
func (s *Store) autoMaintenance(ctx context.Context, r Remote) {
	cfgInt := func(key string, def int) int {
		if v := s.cfg.Get(key); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
		return def
	}
	if v := s.cfg.Get("maintenance.auto"); v != "" {
		if on, err := parseBool(v); err == nil && !on {
			return
		}
	}
	loose, packs := cfgInt("gc.auto", 6700), cfgInt("gc.autoPackLimit", 50)
	if loose <= 0 {
		return
	}
	objs := filepath.Join(s.loc.CommonDir, "objects")
	need := false
	if ents, err := os.ReadDir(filepath.Join(objs, "17")); err == nil {
		n := 0
		for _, e := range ents {
			if len(e.Name()) == 38 {
				n++
			}
		}
		need = n > (loose+255)/256
	}
	if !need && packs > 0 {
		if idx, err := filepath.Glob(filepath.Join(objs, "pack", "pack-*.idx")); err == nil {
			need = len(idx) > packs
		}
	}
	if !need {
		return
	}
	cmd := s.git(ctx, r, "maintenance", "run", "--auto", "--quiet")
	var errb strings.Builder
	cmd.Stderr = &limitedWriter{w: &errb, n: 4 << 10}
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		s.warn("git maintenance run --auto: " + gitMessage([]byte(errb.String()), err))
	}
}
