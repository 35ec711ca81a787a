// Package version holds git-lossless's version, shared by its programs
// (git-lossless, git-lossless-hook, git-lossless-mcp, git-lossless-bench)
// so that the doctor and install, which compare the version of every
// program the settings name with their own, see one number. Release builds set it with
//
//	-ldflags "-X github.com/git-lossless/git-lossless/internal/version.Version=v1.2.3"
//
// It imports nothing.
package version

// Version is the version every program prints ("git-lossless version X").
// It is a variable only so that the linker can set it.
var Version = "0.1.0-dev"
