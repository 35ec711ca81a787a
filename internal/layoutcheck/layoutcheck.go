// Package layoutcheck holds the import rules of the module's layout and
// the functions that check them against what `go list -json` reports; its
// test runs the real go command over the module, on the platforms the
// code is built for, so a change that breaks a rule fails the suite.
//
// The rules:
//
//   - No production package imports a fixture: nothing under
//     internal/testkit is imported by a package outside it, except by
//     _test.go files and by cmd/git-lossless-bench (the demo and the
//     benchmarks, a program of their own).
//   - The shipping program (cmd/git-lossless) is the product, and starts
//     as fast as what its commands need allows: it links nothing of
//     ShippingBanned, directly or through any package: not the fixtures
//     or the peer scanner the secrets benchmark measures against (`git
//     lossless bench` and `git lossless demo` run cmd/git-lossless-bench
//     instead), not the MCP server, the MCP SDK or the packages only the
//     SDK brings (JSON schema, encoding/gob: their initialisation cost
//     every process about 2 ms; `git lossless mcp` runs
//     cmd/git-lossless-mcp instead).
//   - internal/gitobj is the only package that imports go-git (anything
//     under github.com/go-git/), in its code or its tests: the git object
//     layer has one door.
//   - The hook program (cmd/git-lossless-hook), started afresh on every
//     tool call a harness hooks, links none of HookProgramBanned: what
//     the other commands need (the proxy, the MCP server, receipts,
//     recall, the doctor, SSH keys, and the libraries under them, net and
//     cgo among them) costs every process its package initialisation,
//     page faults and, with cgo, the dynamic loader. It links every
//     harness's adapter (through hooks/harnesses), so this holds for each
//     adapter too.
//   - The runtime knows no harness: an adapter (a package under hooks/
//     that is not one of NeutralHooks, such as hooks/claudecode, and the
//     packages under it) is imported, outside tests, only by the list of
//     harnesses (Registry), by its own sub-packages, by hooks/doctor, by
//     the commands and by fixtures. Package hooks, the neutral packages
//     beside it, and gitstore, guard, recall, mcp and the rest never are.
//   - No production file is longer than MaxLines lines (fixtures under
//     internal/testkit and tests excepted): a file that grows past it
//     holds more than one concept and is split by concept.
//
// It imports the standard library only, and nothing imports it.
package layoutcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// Module is the module path the rules are written for.
const Module = "github.com/git-lossless/git-lossless"

// Testkit is the import path under which the fixtures live.
const Testkit = Module + "/internal/testkit"

// Command is the package of the git-lossless program, the product.
const Command = Module + "/cmd/git-lossless"

// BenchProgram is the package of git-lossless-bench, the demo and the
// benchmarks: the one program that links fixtures.
const BenchProgram = Module + "/cmd/git-lossless-bench"

// MCPProgram is the package of git-lossless-mcp, the MCP server: the one
// program that links the MCP SDK.
const MCPProgram = Module + "/cmd/git-lossless-mcp"

// Banned is an import path the shipping program must not link (with its
// subtree), and the program that links it instead.
type Banned struct {
	Path    string
	Instead string // "the demo and benchmarks live in git-lossless-bench"
}

const (
	inBench = "the demo and benchmarks live in git-lossless-bench"
	inMCP   = "the MCP server lives in git-lossless-mcp"
)

// ShippingBanned are the import paths (each with its subtree) the
// shipping program must not link: the fixtures, the peer scanner,
// modernc.org (SQLite compiled to Go, the recall bench's FTS5 peer), and
// the MCP server with what only its SDK brings.
var ShippingBanned = []Banned{
	{Testkit, inBench}, {Module + "/internal/rescan", inBench}, {"modernc.org", inBench},
	{Module + "/mcp", inMCP}, {"github.com/modelcontextprotocol/go-sdk", inMCP},
	{"github.com/google/jsonschema-go", inMCP}, {"encoding/gob", inMCP},
}

// ShippingLinks reports each package of deps (what `go list -deps` of the
// shipping program prints) that ShippingBanned forbids.
func ShippingLinks(deps []string) []string {
	var bad []string
	for _, d := range deps {
		for _, b := range ShippingBanned {
			if under(d, b.Path) {
				bad = append(bad, fmt.Sprintf("git-lossless links %s (banned: %s; %s)", d, b.Path, b.Instead))
				break
			}
		}
	}
	return bad
}

// GoGitAllowed is the only package that may import go-git.
const GoGitAllowed = Module + "/internal/gitobj"

// HookProgram is the package of the hook-only program.
const HookProgram = Module + "/cmd/git-lossless-hook"

// HookProgramBanned are the import paths (a path and everything under it)
// the hook program must not link: its initialisation cost is the floor of
// every hook. Without net (and so without runtime/cgo, which net and
// os/user pull in when cgo is enabled) a default `go build` of it is
// statically linked, which spares every hook the dynamic loader; SSH keys
// (x/crypto/ssh, the one route to net it had) are left to git-lossless
// (see gitstore.SSHKeys).
var HookProgramBanned = []string{
	Module + "/proxy", Module + "/recall", Module + "/receipt", Module + "/mcp",
	Module + "/hooks/doctor", Module + "/internal/tokens", Testkit,
	"github.com/modelcontextprotocol/", "github.com/google/jsonschema-go/",
	"github.com/ProtonMail/go-crypto/", "github.com/tiktoken-go/", "github.com/dlclark/regexp2/",
	"net", "encoding/gob", "crypto/x509", "runtime/cgo", "golang.org/x/crypto/ssh",
}

// HookProgramLinks reports each package of deps (what `go list -deps` of
// the hook program prints) that HookProgramBanned forbids.
func HookProgramLinks(deps []string) []string {
	var bad []string
	for _, d := range deps {
		for _, b := range HookProgramBanned {
			if d == strings.TrimSuffix(b, "/") || strings.HasPrefix(d, strings.TrimSuffix(b, "/")+"/") {
				bad = append(bad, fmt.Sprintf("the hook program links %s (banned: %s)", d, b))
				break
			}
		}
	}
	return bad
}

// Hooks is the tree of the hook runtime and the harnesses' adapters.
const Hooks = Module + "/hooks"

// Registry is the one list of harnesses, which may import every adapter.
const Registry = Hooks + "/harnesses"

// NeutralHooks are the packages under hooks/ that belong to no harness:
// the runtime's item model, the settings editor, the recogniser of shell
// reads, the registry and the doctor (which checks what each harness
// installed). Every other package under hooks/ is (part of) an adapter.
var NeutralHooks = []string{Hooks + "/transcript", Hooks + "/settings", Hooks + "/shellread", Registry, Hooks + "/doctor"}

// adapterOf returns the adapter package p is (or is under), "" when p is
// no adapter: hooks/<name> for any hooks/<name>/... not in NeutralHooks.
func adapterOf(p string) string {
	rest, ok := strings.CutPrefix(p, Hooks+"/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	a := Hooks + "/" + name
	if slices.Contains(NeutralHooks, a) {
		return ""
	}
	return a
}

// mayImportAdapters reports whether package p may import adapter a: the
// registry, a's own tree, the doctor, the commands and fixtures.
func mayImportAdapters(p, a string) bool {
	return p == Registry || under(p, a) || p == Hooks+"/doctor" || under(p, Module+"/cmd") || under(p, Testkit)
}

// AdapterImports returns one message per non-test import of an adapter
// by a package that may not import it (see the rules), sorted.
func AdapterImports(pkgs []Package) []string {
	var bad []string
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if a := adapterOf(imp); a != "" && !mayImportAdapters(p.ImportPath, a) {
				bad = append(bad, fmt.Sprintf("%s imports the adapter %s; only %s, the adapter's own packages, the doctor, the commands and fixtures may", p.ImportPath, imp, Registry))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// goGit is the prefix of go-git's modules (go-git, go-billy, ...).
const goGit = "github.com/go-git/"

// Package is the part of one `go list -json` record the rules read.
type Package struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	CgoFiles     []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// Decode reads the stream of JSON objects `go list -json` prints, one per
// package. An empty stream is an error: a check over no packages would
// pass whatever the tree holds.
func Decode(r io.Reader) ([]Package, error) {
	dec := json.NewDecoder(r)
	var pkgs []Package
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("layoutcheck: decoding go list output after %d packages: %w", len(pkgs), err)
		}
		if p.ImportPath == "" {
			return nil, fmt.Errorf("layoutcheck: go list record %d has no ImportPath", len(pkgs)+1)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, errors.New("layoutcheck: go list printed no packages")
	}
	return pkgs, nil
}

// under reports whether import path p is root or below it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

// Production reports whether the package at import path p is production
// code for the testkit rule: in the module, not a fixture itself, and not
// the bench program.
func Production(p string) bool {
	return under(p, Module) && !under(p, Testkit) && p != BenchProgram
}

// ProductionImportsTestkit returns one message per import of a package
// under internal/testkit by a production package's non-test code, sorted.
func ProductionImportsTestkit(pkgs []Package) []string {
	var bad []string
	for _, p := range pkgs {
		if !Production(p.ImportPath) {
			continue
		}
		for _, imp := range p.Imports {
			if under(imp, Testkit) {
				bad = append(bad, fmt.Sprintf("production package %s imports fixture %s", p.ImportPath, imp))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// OnlyGitobjImportsGoGit returns one message per import of go-git by a
// package other than internal/gitobj, counting its tests' imports too,
// sorted.
func OnlyGitobjImportsGoGit(pkgs []Package) []string {
	var bad []string
	for _, p := range pkgs {
		if p.ImportPath == GoGitAllowed {
			continue
		}
		for kind, imports := range map[string][]string{"": p.Imports, " (tests)": p.TestImports, " (external tests)": p.XTestImports} {
			for _, imp := range imports {
				if strings.HasPrefix(imp, goGit) {
					bad = append(bad, fmt.Sprintf("%s%s imports %s; only %s may import go-git", p.ImportPath, kind, imp, GoGitAllowed))
				}
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// MaxLines is the longest a production Go file may be.
const MaxLines = 800

// LongFiles returns one message per production file of pkgs (GoFiles and
// CgoFiles outside internal/testkit) longer than MaxLines; lines says how
// long a file is (by its path).
func LongFiles(pkgs []Package, lines func(path string) (int, error)) []string {
	var out []string
	for _, p := range pkgs {
		if under(p.ImportPath, Testkit) {
			continue
		}
		for _, f := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
			name := path.Join(p.Dir, f)
			n, err := lines(name)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			if n > MaxLines {
				out = append(out, fmt.Sprintf("%s is %d lines; split it by concept below %d", name, n, MaxLines))
			}
		}
	}
	return out
}

// TableRows returns the package paths (relative to the module) that a
// Markdown layout table lists, in order: the first cell of each row, when
// it is a path in backquotes naming a directory of Go packages (files
// and data directories are kept too; ImportOrder skips what no package
// lives in).
func TableRows(md string) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "| Path | What |"):
			in = true
			continue
		case in && !strings.HasPrefix(l, "|"):
			in = false
		}
		if !in || strings.HasPrefix(l, "|---") {
			continue
		}
		cell := strings.TrimSpace(strings.SplitN(strings.TrimPrefix(l, "|"), "|", 2)[0])
		if strings.HasPrefix(cell, "`") && strings.HasSuffix(cell, "`") {
			rows = append(rows, strings.Trim(cell, "`"))
		}
	}
	return rows
}

// ImportOrder holds the layout table's claim, "top to bottom is the
// direction of imports": every package belongs to the row of the longest
// listed path it is under, and its non-test imports within the module
// belong to its own row or a row below it. It returns one message per
// import that goes up the table, and one per package no row covers.
func ImportOrder(rows []string, pkgs []Package) []string {
	rowOf := func(p string) int {
		best, bestLen := -1, -1
		for i, r := range rows {
			full := Module + "/" + r
			if under(p, full) && len(full) > bestLen {
				best, bestLen = i, len(full)
			}
		}
		return best
	}
	var bad []string
	for _, p := range pkgs {
		if !under(p.ImportPath, Module) {
			continue
		}
		pr := rowOf(p.ImportPath)
		if pr < 0 {
			bad = append(bad, fmt.Sprintf("%s is in no row of the layout table", p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			if !under(imp, Module) {
				continue
			}
			if ir := rowOf(imp); ir >= 0 && ir < pr {
				bad = append(bad, fmt.Sprintf("%s (row %s) imports %s (row %s, above it)", p.ImportPath, rows[pr], imp, rows[ir]))
			}
		}
	}
	slices.Sort(bad)
	return bad
}
