package anchor

// Anchor directories (path mode): checked as CheckRemote checks a remote.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// pathSeen is what was accepted from an anchor directory: the digest of
// every checkpoint file by <machine>/<clone>/<n>, and the newest signed
// checkpoint of each clone.
type pathSeen struct {
	Digests map[string]string `json:"digests"`
	Newest  map[string]string `json:"newest"`
}

func pathSeenFile(st *gitstore.Store, rid string) string {
	return stateDir(st, "paths", rid+".json")
}

// checkPath checks an anchor directory the way CheckRemote checks a
// remote: files never removed or changed, new ones signed and chained.
func checkPath(ctx context.Context, st *gitstore.Store, rc *RemoteCheck, rid string, own *Key, rec RemoteRecord, hasRec bool, now time.Time) error {
	tips, err := acceptedTips(ctx, st)
	if err != nil {
		return err
	}
	ownClone, err := CloneID(ctx, st)
	if err != nil {
		return err
	}
	ck := &checker{st: st, w: st, rc: rc, rid: rid, own: own, now: now, tips: tips, ownClone: ownClone}
	var ps pathSeen
	if b, err := os.ReadFile(pathSeenFile(st, rid)); err == nil {
		if err := json.Unmarshal(b, &ps); err != nil {
			return fmt.Errorf("anchor state %s: %w", pathSeenFile(st, rid), err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if ps.Digests == nil {
		ps.Digests, ps.Newest = map[string]string{}, map[string]string{}
	}
	root := filepath.Join(rc.URL, "lossless-anchor")
	files := map[string][]byte{}
	vkeys := map[string]string{}
	machines, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("anchor directory %s: %w", rc.URL, err)
	}
	for _, m := range machines {
		if !m.IsDir() || validName("machine", m.Name()) != nil {
			continue
		}
		clones, err := os.ReadDir(filepath.Join(root, m.Name()))
		if err != nil {
			return err
		}
		for _, c := range clones {
			if !c.IsDir() || validName("clone", c.Name()) != nil {
				continue
			}
			key := m.Name() + "/" + c.Name()
			d := filepath.Join(root, m.Name(), c.Name())
			ents, err := os.ReadDir(d)
			if err != nil {
				return err
			}
			for _, e := range ents {
				if e.Name() == keyFile {
					b, err := os.ReadFile(filepath.Join(d, e.Name()))
					if err != nil {
						return err
					}
					vkeys[key] = string(b)
					continue
				}
				n, ok := strings.CutSuffix(e.Name(), ".checkpoint")
				if !ok {
					continue
				}
				if _, err := strconv.ParseInt(n, 10, 64); err != nil {
					continue
				}
				b, err := os.ReadFile(filepath.Join(d, e.Name()))
				if err != nil {
					return err
				}
				files[key+"/"+n] = b
			}
		}
	}
	clones := map[string]bool{}
	var keys []string
	for k := range ps.Digests {
		keys = append(keys, k)
	}
	for k := range files {
		if _, ok := ps.Digests[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return lessTagKey(keys[i], keys[j]) })
	changed := false
	for _, k := range keys {
		i := strings.LastIndexByte(k, '/')
		clone, nstr := k[:i], k[i+1:]
		clones[clone] = true
		b, have := files[k]
		d, was := ps.Digests[k]
		switch {
		case was && !have:
			ck.alarm(Finding{Kind: KindRollback, Clone: clone, Detail: fmt.Sprintf("checkpoint file %s.checkpoint was removed", k), Seen: []byte(ps.Newest[clone])})
		case was && Digest(b) != d:
			ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("checkpoint file %s.checkpoint changed", k), Now: b})
		case !was:
			machine, _, _ := strings.Cut(clone, "/")
			v, ok := ck.verifier(machine, vkeys[clone], clone)
			if !ok {
				continue
			}
			c, err := OpenSigned(b, v)
			if err != nil {
				ck.alarm(Finding{Kind: KindBadSignature, Clone: clone, Detail: fmt.Sprintf("%s.checkpoint: %v", k, err), Now: b})
				continue
			}
			ck.keyChecked(machine)
			if c.Machine+"/"+c.Clone != clone || strconv.FormatInt(c.N, 10) != nstr {
				ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("%s.checkpoint holds checkpoint %d of %s/%s", k, c.N, c.Machine, c.Clone), Now: b})
				continue
			}
			if prev, ok := files[clone+"/"+strconv.FormatInt(c.N-1, 10)]; ok && c.Prev != Digest(prev) {
				ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("checkpoint %d does not follow checkpoint %d", c.N, c.N-1), Seen: prev, Now: b})
				continue
			}
			if tip, ok := ck.tips[clone]; ok && c.N == tip.N && Digest(b) != tip.Digest && !ck.ownChain(clone) {
				ck.alarm(Finding{Kind: KindFork, Clone: clone, Detail: fmt.Sprintf("%s.checkpoint is not the checkpoint %d accepted from %s", k, c.N, tip.Remote), Seen: tip.Signed, Now: b})
				continue
			}
			ps.Digests[k] = Digest(b)
			if cur, err := ParseText(noteText([]byte(ps.Newest[clone]))); err != nil || cur.N < c.N {
				ps.Newest[clone] = string(b)
			}
			changed = true
			ck.accepted(ctx, clone, c, b)
		}
	}
	// The newest file of each chain here, against what was accepted of
	// the chain anywhere.
	newest := map[string]int64{}
	for k := range files {
		i := strings.LastIndexByte(k, '/')
		if n, err := strconv.ParseInt(k[i+1:], 10, 64); err == nil && n > newest[k[:i]] {
			newest[k[:i]] = n
		}
	}
	ck.behindTips(newest, "checkpoint file")
	if own != nil && hasRec && rec.Mode == ModePath {
		clone, _ := CloneID(ctx, st)
		k := own.Name() + "/" + clone + "/" + strconv.FormatInt(rec.N, 10)
		if _, ok := files[k]; !ok {
			ck.alarm(Finding{Kind: KindRollback, Clone: own.Name() + "/" + clone, Detail: fmt.Sprintf("checkpoint %d of this clone was anchored here on %s; its file is gone", rec.N, rec.Time.Format(time.RFC3339)), Seen: []byte(rec.Checkpoint)})
		}
	}
	rc.Clones = len(clones)
	if changed {
		b, err := json.MarshalIndent(ps, "", "  ")
		if err != nil {
			return err
		}
		return writeState(pathSeenFile(st, rid), append(b, '\n'))
	}
	return ctx.Err()
}

// lessTagKey orders <machine>/<clone>/<n> keys by clone, then number.
func lessTagKey(a, b string) bool {
	i, j := strings.LastIndexByte(a, '/'), strings.LastIndexByte(b, '/')
	if a[:i] != b[:j] {
		return a[:i] < b[:j]
	}
	x, _ := strconv.ParseInt(a[i+1:], 10, 64)
	y, _ := strconv.ParseInt(b[j+1:], 10, 64)
	return x < y
}
