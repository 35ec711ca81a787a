package gitstore

import (
	"fmt"

	"github.com/git-lossless/git-lossless/secrets"
)

// A writer's name is a ref name (refs/lossless/<writer>): it leaves with
// every push and every fetch, `git log` and `git ls-remote` print it, and
// no redaction reaches it. So no writer name holds a credential:
//
//   - where the name is made by us from a label (WriterName: a session id,
//     a listen address), a label that holds one, or that makes a name
//     holding one, gives the hashed form instead (prefix + 16 hex digits
//     of its sha256), as an over-long label does. Hashing, not refusing:
//     the name stays deterministic, so the same session finds its writer
//     again (restore, recall), and a hook never loses a session's events
//     because its id looks like a key. The label itself still goes into
//     the events (the session field), where the push gate holds it back.
//   - where a caller names the writer itself (Append, WriteNote, Import
//     with a given name), a name that holds one is refused with an error
//     that shows it masked (checkWriterName); the CLI refuses such flags
//     before anything is written (cmd/git-lossless).

// labelHoldsSecret reports whether a label, or the writer name made from
// it, holds a secret the scanner finds.
func labelHoldsSecret(label, name string) bool {
	return len(secrets.ScanName([]byte(label))) > 0 || len(secrets.ScanName([]byte(name))) > 0
}

// checkWriterName refuses a writer name that holds a secret.
func checkWriterName(w string) error {
	fs := secrets.ScanName([]byte(w))
	if len(fs) == 0 {
		return nil
	}
	return fmt.Errorf("writer name %s holds a secret (%s): a writer's name is a ref name, pushed and fetched with the archive; choose a name without it",
		QuotePath(secrets.MaskString(w)), fs[0].Kind)
}
