// Package harnesses is the list of agent harnesses git-lossless knows:
// the one place an adapter is registered. cmd/git-lossless and
// cmd/git-lossless-hook import it; nothing else does, so the runtime
// (package hooks) and the adapters never depend on the list. The list is
// built by a function, not filled by init() side effects: there is no
// global mutable state, and the order is the code's.
//
// Adding a harness is one new package beside hooks/claudecode that
// implements hooks.Harness, and one line in All.
package harnesses

import (
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/codex"
	"github.com/git-lossless/git-lossless/hooks/gemini"
	"github.com/git-lossless/git-lossless/hooks/opencode"

	"fmt"

	"strings"
)

// All returns every harness, the default first: the harness of a hook
// command line that names none (`git lossless hook EVENT`, as Claude Code
// settings written by every version say), of `git lossless mcp` and of
// `import` and `restore` when nothing says otherwise.
func All() []hooks.Harness {
	return []hooks.Harness{
		claudecode.New(),
		codex.New(),
		gemini.New(),
		opencode.New(),
	}
}

// Default is the default harness: All()[0].
func Default() hooks.Harness { return All()[0] }

// ByName returns the harness named name.
func ByName(name string) (hooks.Harness, bool) { return hooks.Find(All(), name) }

// Flag is the harness a --harness flag names, "" meaning Default; an
// unknown name is an error that lists the harnesses (every program's
// --harness flag says the same).
func Flag(name string) (hooks.Harness, error) {
	if name == "" {
		return Default(), nil
	}
	h, ok := ByName(name)
	if !ok {
		return nil, fmt.Errorf("--harness %q: the harnesses are %s", name, strings.Join(Names(), ", "))
	}
	return h, nil
}

// Names lists the harnesses' names, in All's order.
func Names() []string {
	hs := All()
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name()
	}
	return out
}

// OfWriter returns the harness whose sessions' writers carry the prefix
// writer starts with (cc-<session>: Claude Code); false for writers of no
// harness (proxy-, cli-, mcp-).
func OfWriter(writer string) (hooks.Harness, bool) { return hooks.OfWriter(All(), writer) }

// WriterHarness returns the mapping from a writer's name to its harness's
// name ("" for writers of no harness: proxy-, cli-, mcp-) that
// gitstore.HarnessOf takes: what log, recall, the MCP server, meter, pack
// and receipts are handed, since none of them may import the adapters.
// The list is built once, for every call of the mapping.
func WriterHarness() func(writer string) string {
	hs := All()
	return func(writer string) string {
		if h, ok := hooks.OfWriter(hs, writer); ok {
			return h.Name()
		}
		return ""
	}
}
