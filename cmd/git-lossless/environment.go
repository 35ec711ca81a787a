package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/proxy"
)

// setting is one environment variable or git config key the programs
// read. This table (with proxy.Settings for the proxy's own) is the one
// place they are documented: `git lossless help environment` and the man
// page print it, and TestEveryVariableDocumented fails when code outside
// the tests reads a variable or key the table lacks.
type setting struct {
	name    string // LOSSLESS_GUARD, lossless.fsync
	def     string // the default, "" when unset means nothing
	desc    string
	bench   bool // read by the benchmarks only
	foreign bool // another program's (git, an agent CLI, the OS): read, never set
}

func (s setting) isConfig() bool { return strings.HasPrefix(s.name, "lossless.") }

var knownSettings = []setting{
	// Ours: environment.
	{name: "LOSSLESS_GUARD", def: "on", desc: "off: the edit guard allows every edit (the hooks still record)"},
	{name: "LOSSLESS_ARCHIVE_EXCLUDE", desc: "comma-separated globs added to the deny list (files never archived)"},
	{name: "LOSSLESS_IDENTITY_FILE", def: "$XDG_CONFIG_HOME/git-lossless/identity.age", desc: "this machine's age identity (encrypted spans, the vault)"},
	{name: "LOSSLESS_ANCHOR_KEY_FILE", def: "$XDG_CONFIG_HOME/git-lossless/anchor-key", desc: "the key checkpoints are signed with (anchor push)"},
	{name: "LOSSLESS_PRE_PUSH", desc: "set by the pre-push hook around its own push, so the hook does not run again inside it"},
	{name: "LOSSLESS_CARRY", desc: "set by the post-rewrite hook around its own commands, so rewriting notes does not recurse"},
	// Ours: git config.
	{name: "lossless.exclude", desc: "a deny glob (multi-valued)"},
	{name: "lossless.fsync", def: "true", desc: "fsync objects and refs before they count"},
	{name: "lossless.redact", def: "on", desc: "secrets in conversation spans are replaced by placeholders before they are stored; off stores them as they are (unsafe to push)"},
	{name: "lossless.encrypt", def: "false", desc: "true: age-encrypt conversation spans to lossless.recipient"},
	{name: "lossless.recipient", desc: "an age or ssh-ed25519 recipient spans are encrypted to (multi-valued)"},
	{name: "lossless.remote", def: "origin", desc: "the remote push, sync and anchor push use by default"},
	{name: "lossless.push.allowSecrets", def: "false", desc: "true: push content the scanner flags as holding secrets"},
	{name: "lossless.push.allowIgnored", def: "false", desc: "true: push versions of git-ignored files"},
	{name: "lossless.anchorOnPush", def: "false", desc: "true: the pre-push hook anchors on every git push"},
	{name: "lossless.anchorMode", def: "ref", desc: "tags: anchor push stores checkpoints as annotated tags"},
	{name: "lossless.machine", desc: "the machine name in checkpoints, set when the anchor key is made"},
	{name: "lossless.signingKey", desc: "the OpenPGP key file receipts are signed with"},
	{name: "lossless.trustedKeys", desc: "public key files whose receipts verify as trusted (multi-valued)"},
	{name: "lossless.fetchMaxRefs", def: fmt.Sprint(gitstore.DefaultFetchMaxRefs), desc: "refs a remote may list before sync refuses it (remote-over-limit)"},
	{name: "lossless.fetchMaxNewRefs", def: fmt.Sprint(gitstore.DefaultFetchMaxNewRefs), desc: "new refs one sync may fetch"},
	{name: "lossless.fetchMaxBytes", def: fmt.Sprint(gitstore.DefaultFetchMaxBytes), desc: "bytes one sync may download"},
	{name: "lossless.fetchMaxObject", def: fmt.Sprint(gitstore.DefaultFetchMaxObject), desc: "the largest object one sync may bring"},
	// Other programs' variables that change what git-lossless does.
	{name: "HOME", foreign: true, desc: "where the agents' settings and the default config dirs are"},
	{name: "XDG_CONFIG_HOME", foreign: true, def: "~/.config", desc: "keys and identities (git-lossless/), opencode's config"},
	{name: "XDG_DATA_HOME", foreign: true, def: "~/.local/share", desc: "the embedded archive (git-lossless/archive.git), the man page"},
	{name: "XDG_STATE_HOME", foreign: true, def: "~/.local/state", desc: "opencode's state"},
	{name: "CLAUDE_CONFIG_DIR", foreign: true, def: "~/.claude", desc: "Claude Code's settings and projects directory"},
	{name: "CODEX_HOME", foreign: true, def: "~/.codex", desc: "Codex CLI's config, hooks and sessions"},
	{name: "GEMINI_CLI_HOME", foreign: true, def: "~", desc: "where Gemini CLI keeps .gemini/"},
	{name: "SANDBOX", foreign: true, desc: "set by Gemini CLI inside its sandbox (sandbox-exec: paths are the sandbox's)"},
	{name: "GIT_DIR", foreign: true, desc: "the repository, as for git"},
	{name: "GIT_WORK_TREE", foreign: true, desc: "the work tree, as for git"},
	{name: "GIT_CONFIG_GLOBAL", foreign: true, desc: "git's global config file, as for git"},
	{name: "GIT_CONFIG_NOSYSTEM", foreign: true, desc: "skip git's system config, as for git"},
	{name: "PATH", foreign: true, desc: "where git, gpg and the agent CLIs are found"},
	{name: "MANPATH", foreign: true, desc: "checked by install man to say whether man finds the page"},
	// The benchmarks' (git-lossless bench).
	{name: "LOSSLESS_BENCH_CACHE", bench: true, desc: "a directory to keep generated bench fixtures in between runs"},
	{name: "LOSSLESS_DEFLATE_REPO", bench: true, desc: "a repository whose objects the deflate benchmark reads"},
	{name: "LOSSLESS_CARRY_BENCH_DIR", bench: true, desc: "where the receipt-carry benchmark builds its repository"},
}

// settingDefs are the settings kept by keep, as help's term/description
// pairs.
func settingDefs(keep func(setting) bool) []helpDef {
	var defs []helpDef
	for _, s := range knownSettings {
		if keep(s) {
			d := s.desc
			if s.def != "" {
				d += " (default " + s.def + ")"
			}
			defs = append(defs, helpDef{s.name, d})
		}
	}
	return defs
}

// proxyDefs are proxy.Settings as help's pairs: the git config key and
// the environment variable, then what it does.
func proxyDefs() []helpDef {
	var defs []helpDef
	for _, s := range proxy.Settings {
		term := s.Git
		if s.Env != "" {
			term += ", " + s.Env
		}
		d := s.Doc
		if s.Default != "" {
			d += " (default " + s.Default + ")"
		}
		defs = append(defs, helpDef{term, d})
	}
	return defs
}

func ours(s setting) bool       { return !s.isConfig() && !s.foreign && !s.bench }
func configKey(s setting) bool  { return s.isConfig() }
func foreignVar(s setting) bool { return s.foreign && !s.bench }
func benchVar(s setting) bool   { return s.bench }

// environmentSections are the sections of `help environment` and of the
// man page's ENVIRONMENT, in order.
func environmentSections() []struct {
	title string
	defs  []helpDef
} {
	return []struct {
		title string
		defs  []helpDef
	}{
		{"environment", settingDefs(ours)},
		{"git config (git config KEY VALUE; --global for every repository)", settingDefs(configKey)},
		{"proxy (git config key, environment variable; the flag of the same name wins)", proxyDefs()},
		{"other programs' variables it follows", settingDefs(foreignVar)},
		{"benchmarks (git lossless bench)", settingDefs(benchVar)},
	}
}

// printEnvironment is `git lossless help environment`.
func printEnvironment(w io.Writer) {
	fmt.Fprint(w, "Every environment variable and git config key git-lossless reads.\n")
	for _, sec := range environmentSections() {
		width := 0
		for _, d := range sec.defs {
			width = max(width, len(d.term))
		}
		fmt.Fprintf(w, "\n%s:\n", sec.title)
		printDefs(w, sec.defs, width)
	}
}
