package gitstore

// The bounds of a fetch (FetchLimits, with their defaults and git config
// keys), what passing one reports (LimitError), and the refspecs a fetch
// takes. The fetch itself is in quarantine.go.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Default caps of a fetch (FetchLimits' zero values, unless git config
// says otherwise: lossless.fetchMaxRefs, lossless.fetchMaxNewRefs,
// lossless.fetchMaxBytes and lossless.fetchMaxObject, the byte counts with
// git's k, m and g suffixes; FORMAT.md section 22). Each is chosen so that
// a hostile remote at or past it costs well under the target of
// 2 s and 100 MB on the 2-vCPU development VM, fresh process, git daemon
// remote (BenchmarkQuarantineHostile, medians of 3), while a real fleet's
// refs and a real day's objects pass.
const (
	// DefaultFetchMaxRefs bounds the refs a remote may list under one
	// fetch's patterns. A real fleet has tens of thousands of writer refs
	// (one per agent session) and, in tags mode, one anchor tag per
	// checkpoint; a ref the archive already holds at the listed value
	// costs an ls-remote line, so this cap is generous and bounds only
	// the listing: 100,000 refs listed and refused cost 0.8 s and 36 MB.
	DefaultFetchMaxRefs = 100_000
	// DefaultFetchMaxNewRefs bounds the refs of the listing that are new
	// or moved: what a fetch costs is per such ref (the objects of its
	// history, and at Accept a ref lock and a packed-refs line each).
	// 2,000 junk refs fetched and refused cost 0.51 s and 16 MB (accepted:
	// 1.3 s, 17 MB); the hostile run's 8,001 are refused after the
	// listing, 0.22 s and 13 MB. A first sync of a larger fleet needs the
	// cap raised (git config lossless.fetchMaxNewRefs).
	DefaultFetchMaxNewRefs = 2_000
	// DefaultFetchMaxBytes bounds what one fetch may download (its pack):
	// a remote sending more is stopped at it, 1.4 s and 9.5 MB for 96 MB
	// offered. A day of agent work is a few MB to tens; a first sync of a
	// larger archive needs the cap raised (lossless.fetchMaxBytes).
	DefaultFetchMaxBytes = 64 << 20
	// DefaultFetchMaxObject bounds one object's size. Archived file
	// versions are whatever an agent read, so it must admit large source
	// files and logs; a checkpoint is a few KB to a few MB. A 60 MB blob
	// of zeros (60 KB on the wire) is refused in 0.75 s and 9.9 MB.
	DefaultFetchMaxObject = 32 << 20
)

// Suggested caps for a fetch of checkpoints alone (anchor's CheckRemote:
// AnchorPrefix and AnchorTagPrefix), tighter than a sync's, whose writers
// carry whatever files agents read. A checkpoint holds a line of about
// 150-250 bytes per writer: 16 MiB is a checkpoint of some 70,000
// writers; the refs are one per clone, plus one tag per checkpoint in tags
// mode, so the ref caps stay the defaults.
const (
	CheckpointFetchMaxBytes  = 32 << 20
	CheckpointFetchMaxObject = 16 << 20
)

// StaleQuarantineAge is how old an unlocked quarantine directory must be
// before FetchQuarantine removes it as left by a killed process.
const StaleQuarantineAge = 5 * time.Minute

// FetchLimits bounds what one fetch may bring. A zero field takes the
// value git config gives it (see the defaults above), else its default; a
// negative one is no limit.
type FetchLimits struct {
	// MaxRefs: refs the remote may list under the fetched patterns,
	// counted with ls-remote before fetching (over it nothing is
	// fetched). The listing is all a fetch brings of refs: what the remote
	// serves to the fetch itself writes none.
	MaxRefs int
	// MaxNewRefs: refs of that listing whose destination the archive does
	// not hold at the listed value (new or moved), counted before
	// fetching.
	MaxNewRefs int
	// MaxBytes: bytes the fetch may write into the quarantine's objects (a
	// watchdog kills git's process group past it).
	MaxBytes int64
	// MaxObject: the largest single object accepted (checked after the
	// fetch, before anything is accepted, from object headers).
	MaxObject int64
}

// fetchLimits fills lim's zero fields from git config, then defaults.
func (s *Store) fetchLimits(lim FetchLimits) (FetchLimits, error) {
	get := func(key string, def int64, bytes bool) (int64, error) {
		v := strings.TrimSpace(s.cfg.Get(key))
		if v == "" {
			return def, nil
		}
		mult := int64(1)
		if bytes && len(v) > 1 {
			switch strings.ToLower(v[len(v)-1:]) {
			case "k":
				mult, v = 1<<10, v[:len(v)-1]
			case "m":
				mult, v = 1<<20, v[:len(v)-1]
			case "g":
				mult, v = 1<<30, v[:len(v)-1]
			}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > (1<<62)/mult {
			return 0, fmt.Errorf("git config %s: %q is not a number", key, s.cfg.Get(key))
		}
		return n * mult, nil
	}
	var err error
	var n int64
	if lim.MaxRefs == 0 {
		if n, err = get("lossless.fetchMaxRefs", DefaultFetchMaxRefs, false); err != nil {
			return lim, err
		}
		lim.MaxRefs = int(n)
	}
	if lim.MaxNewRefs == 0 {
		if n, err = get("lossless.fetchMaxNewRefs", DefaultFetchMaxNewRefs, false); err != nil {
			return lim, err
		}
		lim.MaxNewRefs = int(n)
	}
	if lim.MaxBytes == 0 {
		if lim.MaxBytes, err = get("lossless.fetchMaxBytes", DefaultFetchMaxBytes, true); err != nil {
			return lim, err
		}
	}
	if lim.MaxObject == 0 {
		if lim.MaxObject, err = get("lossless.fetchMaxObject", DefaultFetchMaxObject, true); err != nil {
			return lim, err
		}
	}
	return lim, nil
}

// ErrRemoteChanged: a remote moved a ref to another history between
// listing its refs and the fetch; nothing was kept, and a new fetch will
// see the new state.
var ErrRemoteChanged = errors.New("the remote changed during the fetch")

// ErrOverLimit is what a *LimitError matches (errors.Is).
var ErrOverLimit = errors.New("over the fetch limit")

// LimitError says which limit of a fetch was passed, the limit and what
// was seen. Nothing of the refused fetch is left in the archive.
type LimitError struct {
	Remote string
	Limit  string // "refs", "new-refs", "bytes" or "object"
	Max    int64
	// Seen is what was seen when the fetch stopped: for "refs" the count
	// so far (the listing stops at the first ref past the cap), for
	// "new-refs" the count, for "bytes" the bytes written when git was
	// stopped, for "object" the object's size.
	Seen int64
	// For "object": the object, and the fetched tracking refs whose
	// history holds it (sorted).
	Object string
	Refs   []string
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "refs":
		return fmt.Sprintf("remote %s lists more than %d refs under the fetched patterns (counting stopped at %d): refused, nothing fetched", QuotePath(e.Remote), e.Max, e.Seen)
	case "new-refs":
		return fmt.Sprintf("remote %s lists %d new or moved refs, over the limit of %d (git config lossless.fetchMaxNewRefs raises it): refused, nothing fetched", QuotePath(e.Remote), e.Seen, e.Max)
	case "bytes":
		return fmt.Sprintf("fetch from %s passed %d bytes (%d written when stopped; git config lossless.fetchMaxBytes raises the limit): refused, nothing kept", QuotePath(e.Remote), e.Max, e.Seen)
	case "object":
		where := ""
		if len(e.Refs) > 0 {
			where = " (in " + strings.Join(e.Refs, ", ") + ")"
		}
		return fmt.Sprintf("remote %s serves object %s of %d bytes%s, over the limit of %d (git config lossless.fetchMaxObject raises it): refused, nothing kept", QuotePath(e.Remote), e.Object, e.Seen, where, e.Max)
	}
	return fmt.Sprintf("fetch from %s: over the %s limit %d (seen %d)", QuotePath(e.Remote), e.Limit, e.Max, e.Seen)
}

// Unwrap makes errors.Is(err, ErrOverLimit) true.
func (e *LimitError) Unwrap() error { return ErrOverLimit }

// fetchSpec is one parsed refspec "[+]SRC:DST": SRC under refs/, DST under
// TrackingPrefix, each with at most one '*' (both or neither).
type fetchSpec struct {
	raw                            string
	srcPre, srcSuf, dstPre, dstSuf string
	glob                           bool
}

func parseFetchSpecs(specs []string) ([]fetchSpec, error) {
	if len(specs) == 0 {
		return nil, errors.New("fetch: no refspec")
	}
	out := make([]fetchSpec, 0, len(specs))
	for _, rs := range specs {
		src, dst, ok := strings.Cut(strings.TrimPrefix(rs, "+"), ":")
		if !ok || !strings.HasPrefix(dst, TrackingPrefix) || len(dst) == len(TrackingPrefix) || !strings.HasPrefix(src, "refs/") {
			return nil, fmt.Errorf("fetch: refspec %q must fetch refs/... into %s", rs, TrackingPrefix)
		}
		ns, nd := strings.Count(src, "*"), strings.Count(dst, "*")
		if ns > 1 || ns != nd {
			return nil, fmt.Errorf("fetch: refspec %q: one '*' on both sides or none", rs)
		}
		for _, side := range []string{src, dst} {
			if err := validRefName(strings.Replace(side, "*", "x", 1)); err != nil {
				return nil, fmt.Errorf("fetch: refspec %q: %w", rs, err)
			}
		}
		fs := fetchSpec{raw: rs, glob: ns == 1}
		fs.srcPre, fs.srcSuf, _ = strings.Cut(src, "*")
		fs.dstPre, fs.dstSuf, _ = strings.Cut(dst, "*")
		out = append(out, fs)
	}
	return out, nil
}

// dst maps a remote ref name to its tracking ref ("" when it does not
// match the source).
func (f fetchSpec) dst(ref string) string {
	if !f.glob {
		if ref == f.srcPre {
			return f.dstPre
		}
		return ""
	}
	if len(ref) < len(f.srcPre)+len(f.srcSuf)+1 || !strings.HasPrefix(ref, f.srcPre) || !strings.HasSuffix(ref, f.srcSuf) {
		return ""
	}
	return f.dstPre + ref[len(f.srcPre):len(ref)-len(f.srcSuf)] + f.dstSuf
}

// covers reports whether a tracking ref name is one of the destinations.
func (f fetchSpec) covers(name string) bool {
	if !f.glob {
		return name == f.dstPre
	}
	return len(name) > len(f.dstPre)+len(f.dstSuf) && strings.HasPrefix(name, f.dstPre) && strings.HasSuffix(name, f.dstSuf)
}

// dstPrefix is the ref directory the destinations are listed from.
func (f fetchSpec) dstPrefix() string {
	return f.dstPre[:strings.LastIndexByte(f.dstPre, '/')+1]
}

func coversAny(specs []fetchSpec, name string) bool {
	for _, f := range specs {
		if f.covers(name) {
			return true
		}
	}
	return false
}
