package gitobj

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ErrNoRevision is wrapped when a revision names no commit.
var ErrNoRevision = errors.New("unknown revision")

// ResolveRev turns a revision (HEAD, a branch, HEAD~2, a short id...) of
// the repository at dir into a commit id. A full 40-hex id is taken as it
// is without running git; anything else goes to `git rev-parse`, whose
// revision grammar (reflogs, :/text, @{upstream}) is not worth a second
// implementation here.
func ResolveRev(ctx context.Context, dir, rev string) (string, error) {
	if rev == "" {
		rev = "HEAD"
	}
	if low := strings.ToLower(rev); IsID(low) {
		return low, nil
	}
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%w %q", ErrNoRevision, rev)
	}
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%w %q: git rev-parse finds no commit by that name", ErrNoRevision, rev)
		}
		return "", fmt.Errorf("resolve %q: %w (is git on PATH?)", rev, err)
	}
	id := strings.TrimSpace(string(out))
	if !IsID(id) {
		return "", fmt.Errorf("resolve %q: git rev-parse printed %q", rev, id)
	}
	return id, nil
}
