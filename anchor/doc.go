// Package anchor keeps the memory outside this machine that makes a
// writer's chain tamper-evident (gitstore/FORMAT.md, anchor/FORMAT.md);
// the store keeps the local half itself (its witness, the anchored heads
// and writer ownership):
//
//   - checkpoints: every writer's head and every notes ref's head, signed
//     with this machine's anchor key as a C2SP signed note (Checkpoint,
//     Key, MakeCheckpoint), pushed to git remotes as a fast-forward-only
//     ref or as immutable tags, or written to a directory (Send);
//   - the remote check: a remote's checkpoints fetched into tracking refs
//     and compared with what was accepted of each chain before, from any
//     remote (CheckRemote); the heads of what checks are recorded in the
//     store (gitstore.Store.RecordAnchored), which every verify compares
//     the chains with;
//   - the one verify policy (Check): which writers a check covers, the
//     notes refs against their anchored heads (CheckNotes), and the alarms
//     each remote's last check left open (OpenAlarms) — used by verify,
//     doctor, the MCP server, receipt verify and anchor push alike;
//   - sync: other machines' writers and notes refs adopted, ours pushed
//     through the push gate, and never an extension of a writer this clone
//     owns (Sync; foreign-append);
//   - the server side: a pre-receive hook that refuses rewrites of the
//     archive's refs, installed where the repository's git runs hooks and
//     proved by a push it must refuse (Protect, CheckProtect), and a
//     pre-push hook that anchors on every push (InstallPrePush).
//
// Every ref and object goes through package gitstore; the transports are
// the user's git (fetch, push, ls-remote), so their SSH configuration,
// credential helpers, insteadOf and proxies apply.
package anchor
