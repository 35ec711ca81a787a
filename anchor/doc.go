// Package anchor keeps the memory outside a writer's chain that makes the
// chain tamper-evident (gitstore/FORMAT.md, anchor/FORMAT.md):
//
//   - the witness: every head this machine's store moved a writer to
//     (Witness, wired into every store by StoreOptions, OpenDir, Open);
//   - checkpoints: every writer's head and every notes ref's head, signed
//     with this machine's anchor key as a C2SP signed note (Checkpoint,
//     Key, MakeCheckpoint), pushed to git remotes as a fast-forward-only
//     ref or as immutable tags, or written to a directory (Send);
//   - the remote check: a remote's checkpoints fetched into tracking refs
//     and compared with what was accepted before (CheckRemote), and the
//     local chains and notes refs compared with every anchored head
//     (Witness.Checkpoints, which verify uses; CheckNotes);
//   - sync: other machines' writers and notes refs adopted, ours pushed
//     through the push gate (Sync);
//   - the server side: a pre-receive hook that refuses rewrites of the
//     archive's refs, installed where the repository's git runs hooks and
//     proved by a push it must refuse (Protect, CheckProtect), and a
//     pre-push hook that anchors on every push (InstallPrePush).
//
// Every ref and object goes through package gitstore; the transports are
// the user's git (fetch, push, ls-remote), so their SSH configuration,
// credential helpers, insteadOf and proxies apply.
package anchor
