package benchdata

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
)

// Base is the timestamp of the first generated event; event i of a writer
// is i milliseconds later.
var Base = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// WriterName and SessionName name fixture writer w and its session: one
// session per writer, as a Claude Code session writes through its own ref.
func WriterName(w int) string  { return fmt.Sprintf("bench-%03d", w) }
func SessionName(w int) string { return fmt.Sprintf("session-%03d", w) }

// Records returns n read events of writer w, each with a new file version
// (Source(seed, first+i)) as content.
func Records(seed uint64, w, first, n int) []gitstore.Record {
	recs := make([]gitstore.Record, n)
	sess := SessionName(w)
	for i := range recs {
		k := first + i
		recs[i] = gitstore.Record{
			Event: gitstore.Event{
				TS: Base.Add(time.Duration(k) * time.Millisecond), Op: gitstore.OpRead, Source: "hook",
				Session: sess, Path: Path(seed, k), Repo: "/src/bench", View: "full", Tool: "Read",
				Key: "toolu_" + strconv.FormatUint(seed, 36) + "_" + strconv.Itoa(k),
			},
			Content: Source(seed, k), HasContent: true,
		}
	}
	return recs
}

// Fixture describes an archive of Events events spread evenly over Writers
// writers, stored by Import in batches of Batch.
type Fixture struct {
	Events  int
	Writers int
	Batch   int
	Seed    uint64
}

// Name is a directory name that identifies the fixture's contents.
func (f Fixture) Name() string {
	return fmt.Sprintf("lossless-fixture-v2-e%d-w%d-b%d-s%d", f.Events, f.Writers, f.Batch, f.Seed)
}

// GitInit creates an empty repository (with a work tree) at dir.
func GitInit(dir string) error {
	out, err := exec.Command("git", "init", "-q", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git init %s: %v: %s", dir, err, out)
	}
	return nil
}

// Fanout creates the 256 loose-object fan-out directories of the
// repository at dir, as any repository with some history has them. A new
// repository creates them one mkdir at a time during its first thousand
// or so loose objects; benchmarks of the steady state (an agent's session
// in a repository it has worked in before) start without that cost, for
// us and for the C git peer alike.
func Fanout(dir string) error {
	objects := filepath.Join(dir, ".git", "objects")
	if _, err := os.Stat(objects); err != nil {
		objects = filepath.Join(dir, "objects") // bare
	}
	for i := range 256 {
		if err := os.MkdirAll(filepath.Join(objects, fmt.Sprintf("%02x", i)), 0o755); err != nil {
			return fmt.Errorf("fan-out: %w", err)
		}
	}
	return nil
}

// Build creates the fixture as a new repository at dir. Writers' events
// are numbered globally, so every event has its own content. fsync is
// turned off: the fixture is rebuilt, never recovered.
func (f Fixture) Build(ctx context.Context, dir string) error {
	if f.Writers < 1 || f.Events < f.Writers {
		return errors.New("fixture needs at least one event per writer")
	}
	if err := GitInit(dir); err != nil {
		return err
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		return err
	}
	per := f.Events / f.Writers
	next := 0
	for w := range f.Writers {
		n := per
		if w == f.Writers-1 {
			n = f.Events - next
		}
		if _, err := st.Import(ctx, WriterName(w), Records(f.Seed, w, next, n), f.Batch); err != nil {
			return fmt.Errorf("import writer %d: %w", w, err)
		}
		next += n
	}
	return nil
}

// Cached returns the fixture's repository under root, building it on first
// use. A complete fixture carries a marker file; an incomplete one (an
// interrupted build) is rebuilt.
func (f Fixture) Cached(ctx context.Context, root string) (string, error) {
	dir := filepath.Join(root, f.Name())
	marker := filepath.Join(dir, ".git", "lossless-fixture-complete")
	if _, err := os.Stat(marker); err == nil {
		return dir, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := f.Build(ctx, dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}
