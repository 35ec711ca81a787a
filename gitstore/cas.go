package gitstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-lossless/git-lossless/internal/gitobj"
)

// casRef is the one compare-and-swap loop of the store: Append, Import and
// WriteNote move their refs through it. build makes the new value of ref
// from its current one (cur, "" when the ref does not exist) and returns
// it, or "" to leave the ref as it is; casRef then moves ref from cur to
// that value under <ref>.lock.
//
// The first attempt is optimistic: it builds on the value as read and
// takes the lock only to move the ref. When another process moved the ref
// meanwhile, the second attempt takes the lock first and builds under it
// (attempt is 1), so it cannot lose the race again however busy the ref
// is; other writers wait meanwhile. A second loss (a writer that ignores
// the lock protocol) is returned as ErrRefChanged.
func (s *Store) casRef(ctx context.Context, ref string, build func(attempt int, cur string) (string, error)) error {
	var held *gitobj.Lock
	defer func() {
		if held != nil {
			held.Release()
		}
	}()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("update %s: %w", ref, err)
		}
		var err error
		if attempt > 0 {
			if held, err = s.lockRef(ctx, ref); err != nil {
				return err
			}
		}
		cur, err := s.refs.Read(ref)
		if err != nil {
			return err
		}
		next, err := build(attempt, cur)
		if err != nil || next == "" {
			return err
		}
		lk := held
		held = nil // Commit releases it either way
		if lk == nil {
			if lk, err = s.lockRef(ctx, ref); err != nil {
				return err
			}
		}
		err = lk.Commit(cur, next)
		if errors.Is(err, ErrRefChanged) && attempt == 0 {
			continue
		}
		return err
	}
}

// lockRef takes ref's lock, waiting at most the store's lock timeout.
func (s *Store) lockRef(ctx context.Context, ref string) (*gitobj.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, s.lockT)
	defer cancel()
	return s.refs.Acquire(ctx, ref)
}
