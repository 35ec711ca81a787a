//go:build !unix

package npmcli

// lockFile is a no-op where flock is missing; concurrent installs there
// still end in one rename winning.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
