package main

// `receipt carry`: receipts through history rewrites (see receipt.Carry).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks/harnesses"
	"github.com/git-lossless/git-lossless/receipt"
)

type carryOpts struct {
	force, fromHook, cherry, json, noTokens bool
	rewritten                               string
}

func runReceiptCarry(ctx context.Context, e *env, rng string, o carryOpts) error {
	err := carry(ctx, e, rng, o)
	if err != nil && o.fromHook {
		// A hook fails open: the rewrite is done, the receipt can be
		// carried later with `receipt carry OLD..NEW`.
		fmt.Fprintf(e.Stderr, "git-lossless: receipts not carried (run `git lossless receipt carry OLD..NEW`): %v\n", err)
		return nil
	}
	return err
}

func carry(ctx context.Context, e *env, rng string, o carryOpts) error {
	st, err := openRepoStore(e)
	if err != nil {
		return err
	}
	var rewrites []receipt.Rewrite
	var unmatched []string
	switch {
	case o.rewritten != "":
		if rewrites, err = receipt.ParseRewritten(e.Stdin); err != nil {
			return err
		}
	case o.cherry:
		gitDir := st.Location().GitDir
		if _, err := os.Stat(filepath.Join(gitDir, "rebase-merge")); err == nil {
			return nil // a rebase: post-rewrite carries its commits
		}
		b, err := os.ReadFile(filepath.Join(gitDir, "CHERRY_PICK_HEAD"))
		if errors.Is(err, os.ErrNotExist) {
			return nil // an ordinary commit
		}
		if err != nil {
			return err
		}
		head, err := receipt.ResolveRev(ctx, e.Dir, "HEAD")
		if err != nil {
			return err
		}
		rewrites = []receipt.Rewrite{{New: head, Olds: []string{strings.TrimSpace(string(b))}, How: "cherry-pick"}}
	default:
		oldRev, newRev, ok := strings.Cut(rng, "..")
		if !ok || oldRev == "" || newRev == "" || strings.HasPrefix(newRev, ".") {
			return cli.Usagef("receipt carry needs OLD..NEW")
		}
		if rewrites, unmatched, err = receipt.MatchRange(ctx, st, e.Dir, oldRev, newRev); err != nil {
			return err
		}
	}
	k, err := loadSigningKey(st)
	if err != nil {
		return err
	}
	opt := receipt.Options{NoTokens: o.noTokens, HarnessOf: harnesses.WriterHarness()}
	enc := json.NewEncoder(e.Stdout)
	done := 0
	results, err := receipt.CarryAll(ctx, st, rewrites, k, opt, o.force)
	if err != nil {
		return err
	}
	for i, rw := range rewrites {
		res := results[i]
		if res.Status == receipt.CarryDone {
			done++
		}
		if o.json {
			if err := enc.Encode(map[string]any{"commit": rw.New, "olds": rw.Olds, "match": rw.How, "status": res.Status, "carried_from": res.Sources}); err != nil {
				return err
			}
			continue
		}
		var from []string
		for _, s := range res.Sources {
			from = append(from, cli.Short12(s))
		}
		switch res.Status {
		case receipt.CarryDone:
			fmt.Fprintf(e.Stdout, "carried  %s from %s (%s)\n", cli.Short12(rw.New), strings.Join(from, ", "), rw.How)
		case receipt.CarryKept:
			fmt.Fprintf(e.Stdout, "kept     %s: it has a receipt already (--force rebuilds it)\n", cli.Short12(rw.New))
		case receipt.CarryNoSource:
			if !o.fromHook {
				fmt.Fprintf(e.Stdout, "skipped  %s: none of the commits it replaces has a receipt\n", cli.Short12(rw.New))
			}
		}
	}
	for _, u := range unmatched {
		if o.json {
			if err := enc.Encode(map[string]any{"unmatched": u}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(e.Stdout, "unmatched %s: no commit of the new side has its patch id or its change\n", cli.Short12(u))
	}
	if !o.json && !o.fromHook {
		fmt.Fprintf(e.Stdout, "%s carried, %d old receipts unmatched\n", cli.Plural(done, "receipt"), len(unmatched))
	}
	return nil
}
