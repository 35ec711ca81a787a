// Package version holds git-lossless's version, shared by its two
// programs (git-lossless and git-lossless-hook) so that the doctor, which
// compares the version of every program the settings name with its own,
// sees one number. Release builds set it with
//
//	-ldflags "-X github.com/git-lossless/git-lossless/internal/version.Version=v1.2.3"
//
// It imports nothing.
package version

// Version is the version both programs print ("git-lossless version X").
// It is a variable only so that the linker can set it.
var Version = "0.1.0-dev"
