package main

import (
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/cli"
	"github.com/git-lossless/git-lossless/secrets"
)

// refuseSecretFlags refuses a value the user passed (flag, value pairs)
// that holds a secret the scanner finds, before anything is written: it
// would be stored in every event (a session id, an agent, a key, a
// reason) or as a ref name (a writer), and leave with the next push. The
// error names the flag and shows the secret only masked. Values that
// come from outside (a hook payload, an agent's path) are recorded as
// they are and held back by the push gate instead.
func refuseSecretFlags(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		flag, v := pairs[i], pairs[i+1]
		if fs := secrets.ScanName([]byte(v)); len(fs) > 0 {
			return cli.Usagef("%s %s holds a secret (%s): it would be stored in the archive and pushed with it; pass a value without it",
				flag, gitstore.QuotePath(secrets.MaskString(v)), fs[0].Kind)
		}
	}
	return nil
}
