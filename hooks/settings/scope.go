package settings

import "path/filepath"

// Scope names which of a harness's settings an install targets.
type Scope string

const (
	// ScopeUser is the user's own settings: every project on the machine.
	ScopeUser Scope = "user"
	// ScopeProject is the project's shared settings, in the repository.
	ScopeProject Scope = "project"
)

func absFrom(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}
