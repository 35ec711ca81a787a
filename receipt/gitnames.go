package receipt

import (
	"encoding/hex"
	"strings"

	"github.com/git-lossless/git-lossless/receipt/note"
)

// The names git.go's tree diff and commit reader use unqualified. The
// changed path is part of the membership rule (package note); these
// aliases let git.go, which the git object layer is replacing, compile
// unchanged until then. They add no second definition: Change is
// note.Change and the kinds are note's constants.
type Change = note.Change

// The kinds of change, as git.go's diff reports them (see note.Added).
const (
	Added    = note.Added
	Modified = note.Modified
	Deleted  = note.Deleted
)

// isHex40 reports whether s is an object id as git prints it: 40
// lower-case hex digits.
func isHex40(s string) bool { return len(s) == 40 && isLowerHex(s) }

// isLowerHex reports whether s is non-empty lower-case hex.
func isLowerHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && s != "" && s == strings.ToLower(s)
}
