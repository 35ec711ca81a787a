package layoutcheck

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// platforms are the GOOS values the module's build-constrained files are
// written for (_unix, _other): a rule broken in a file only one of them
// builds is still broken.
var platforms = []string{"linux", "darwin", "windows"}

// goList runs the real `go list -json ./...` over the module for goos.
func goList(ctx context.Context, t *testing.T, goos string) []Package {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module's packages: %v", err)
	}
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		t.Fatalf("go env GOMOD = %q: not inside the module", gomod)
	}
	cmd := exec.CommandContext(ctx, goBin, "list", "-json", "./...")
	cmd.Dir = filepath.Dir(gomod)
	cmd.Env = append(cmd.Environ(), "GOOS="+goos)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list -json ./...: %v\n%s", goos, err, stderr.Bytes())
	}
	pkgs, err := Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func find(pkgs []Package, importPath string) (Package, bool) {
	i := slices.IndexFunc(pkgs, func(p Package) bool { return p.ImportPath == importPath })
	if i < 0 {
		return Package{}, false
	}
	return pkgs[i], true
}

// fileImports parses the imports of the given files of dir.
func fileImports(t *testing.T, dir string, names []string) map[string][]string {
	t.Helper()
	files := map[string][]string{}
	fset := token.NewFileSet()
	for _, name := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", name, spec.Path.Value, err)
			}
			files[name] = append(files[name], p)
		}
	}
	return files
}

func TestProductionDoesNotImportTestkit(t *testing.T) {
	for _, goos := range platforms {
		t.Run(goos, func(t *testing.T) {
			pkgs := goList(t.Context(), t, goos)
			// The listing must be one the rule can fail on: it holds the
			// production packages, and it shows the imports of fixtures
			// that are allowed (the bench commands').
			for _, p := range []string{Module + "/hooks", Module + "/gitstore", Module + "/proxy", Module + "/receipt"} {
				if _, ok := find(pkgs, p); !ok {
					t.Fatalf("go list did not list %s", p)
				}
			}
			cmd, ok := find(pkgs, BenchProgram)
			if !ok {
				t.Fatalf("go list did not list %s", BenchProgram)
			}
			if !slices.ContainsFunc(cmd.Imports, func(p string) bool { return under(p, Testkit) }) {
				t.Fatalf("%s imports nothing under %s: the listing shows no fixture imports, so the check would test nothing", BenchProgram, Testkit)
			}

			for _, msg := range ProductionImportsTestkit(pkgs) {
				t.Error(msg)
			}
		})
	}
}

// countLines counts the newlines of a file.
func countLines(name string) (int, error) {
	b, err := os.ReadFile(name)
	return bytes.Count(b, []byte("\n")), err
}

// TestNoLongFiles: every production file is at most MaxLines lines; the
// check fails on a made-up listing whose file is one line too long.
func TestNoLongFiles(t *testing.T) {
	pkgs := goList(t.Context(), t, "linux")
	if _, ok := find(pkgs, Module+"/gitstore"); !ok {
		t.Fatalf("go list did not list %s/gitstore", Module)
	}
	for _, msg := range LongFiles(pkgs, countLines) {
		t.Error(msg)
	}
	fake := []Package{{ImportPath: Module + "/x", Dir: "/d", GoFiles: []string{"a.go", "b.go"}}, {ImportPath: Testkit + "/gen", Dir: "/t", GoFiles: []string{"big.go"}}}
	got := LongFiles(fake, func(name string) (int, error) {
		switch name {
		case "/d/a.go":
			return MaxLines, nil
		case "/d/b.go":
			return MaxLines + 1, nil
		}
		return 5 * MaxLines, nil
	})
	if want := "/d/b.go is 801 lines; split it by concept below 800"; len(got) != 1 || got[0] != want {
		t.Errorf("LongFiles on a fake listing: %q, want [%q]", got, want)
	}
}

// TestOnlyGitobjImportsGoGit: no package but internal/gitobj imports
// go-git, in its code or its tests.
func TestOnlyGitobjImportsGoGit(t *testing.T) {
	for _, goos := range platforms {
		t.Run(goos, func(t *testing.T) {
			pkgs := goList(t.Context(), t, goos)
			if _, ok := find(pkgs, Module+"/gitstore"); !ok {
				t.Fatalf("go list did not list %s/gitstore", Module)
			}
			for _, msg := range OnlyGitobjImportsGoGit(pkgs) {
				t.Error(msg)
			}
		})
	}
}

// fakeList is a `go list -json` stream as the go command prints it
// (indented objects one after the other), with every kind of import the
// rules tell apart.
const fakeList = `{
	"ImportPath": "github.com/git-lossless/git-lossless/hooks",
	"Dir": "/m/hooks",
	"Imports": ["context", "github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"],
	"TestImports": ["github.com/git-lossless/git-lossless/internal/testkit/claudetest"]
}
{
	"ImportPath": "github.com/git-lossless/git-lossless/proxy",
	"Imports": ["net/http", "github.com/git-lossless/git-lossless/internal/testkit"],
	"XTestImports": ["github.com/git-lossless/git-lossless/internal/testkit/stubbackend"]
}
{
	"ImportPath": "github.com/git-lossless/git-lossless/recall",
	"Imports": ["github.com/git-lossless/git-lossless/internal/testkitten"],
	"XTestImports": ["github.com/go-git/go-billy/v5/osfs"]
}
{
	"ImportPath": "github.com/git-lossless/git-lossless/internal/testkit/transcriptgen",
	"Imports": ["github.com/git-lossless/git-lossless/internal/testkit/benchdata"]
}
{
	"ImportPath": "github.com/git-lossless/git-lossless/cmd/git-lossless",
	"Imports": ["github.com/git-lossless/git-lossless/internal/testkit/stubbackend"]
}
{
	"ImportPath": "github.com/git-lossless/git-lossless/gitstore",
	"Imports": ["github.com/go-git/go-git/v5/plumbing"]
}
{
	"ImportPath": "github.com/git-lossless/git-lossless/internal/gitobj",
	"Imports": ["github.com/go-git/go-git/v5/plumbing/format/idxfile"],
	"TestImports": ["github.com/go-git/go-git/v5/plumbing/format/packfile"]
}
{
	"ImportPath": "github.com/git-lossless/git-lossless/internal/gitobj/pack",
	"TestImports": ["github.com/go-git/go-git/v5/plumbing/format/packfile"]
}
`

// TestRuntimeImportsNoAdapter: on every platform, no package but the
// registry, the adapters' own, the doctor, the commands and fixtures
// imports an adapter, and the listing shows the imports that are allowed
// (so the rule can fail).
func TestRuntimeImportsNoAdapter(t *testing.T) {
	for _, goos := range platforms {
		t.Run(goos, func(t *testing.T) {
			pkgs := goList(t.Context(), t, goos)
			reg, ok := find(pkgs, Registry)
			if !ok {
				t.Fatalf("go list did not list %s", Registry)
			}
			if !slices.ContainsFunc(reg.Imports, func(p string) bool { return adapterOf(p) != "" }) {
				t.Fatalf("%s imports no adapter: the listing shows no adapter imports, so the check would test nothing", Registry)
			}
			for _, msg := range AdapterImports(pkgs) {
				t.Error(msg)
			}
		})
	}
}

// TestHookProgramStaysSmall lists what the hook program links, on every
// platform, and fails on anything HookProgramBanned names.
func TestHookProgramStaysSmall(t *testing.T) {
	for _, goos := range platforms {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", HookProgram)
			cmd.Env = append(cmd.Environ(), "GOOS="+goos)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", HookProgram, err)
			}
			deps := strings.Fields(string(out))
			if !slices.Contains(deps, Module+"/hooks") || !slices.Contains(deps, Module+"/gitstore") {
				t.Fatalf("the hook program does not link hooks and gitstore: %q", deps)
			}
			for _, msg := range HookProgramLinks(deps) {
				t.Error(msg)
			}
		})
	}
}

// TestShippingProgramHoldsOnlyTheProduct: git-lossless links no fixture,
// no peer scanner and no MCP server or SDK, while git-lossless-bench and
// git-lossless-mcp (listed the same way) link them, so the listing is one
// the rule can fail on.
func TestShippingProgramHoldsOnlyTheProduct(t *testing.T) {
	for _, goos := range platforms {
		t.Run(goos, func(t *testing.T) {
			deps := func(pkg string) []string {
				cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg)
				cmd.Env = append(cmd.Environ(), "GOOS="+goos)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("go list -deps %s: %v", pkg, err)
				}
				return strings.Fields(string(out))
			}
			shipping := deps(Command)
			if !slices.Contains(shipping, Module+"/proxy") || !slices.Contains(shipping, Module+"/gitstore") {
				t.Fatalf("git-lossless does not link proxy and gitstore: %q", shipping)
			}
			for _, msg := range ShippingLinks(shipping) {
				t.Error(msg)
			}
			if len(ShippingLinks(deps(BenchProgram))) == 0 {
				t.Errorf("git-lossless-bench links nothing the rule bans: the check would test nothing")
			}
			server := deps(MCPProgram)
			for _, p := range []string{Module + "/mcp", "github.com/modelcontextprotocol/go-sdk/mcp", "encoding/gob"} {
				if !slices.Contains(server, p) {
					t.Errorf("git-lossless-mcp does not link %s: the MCP rule would test nothing", p)
				}
			}
		})
	}
}

func TestChecksCanFail(t *testing.T) {
	pkgs, err := Decode(strings.NewReader(fakeList))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 8 {
		t.Fatalf("decoded %d packages, want 8", len(pkgs))
	}

	// Non-test imports of fixtures by production packages (the shipping
	// command among them) are caught; tests' and fixtures' own are not, nor a path that
	// only starts with the same letters.
	got := ProductionImportsTestkit(pkgs)
	want := []string{
		"production package github.com/git-lossless/git-lossless/cmd/git-lossless imports fixture github.com/git-lossless/git-lossless/internal/testkit/stubbackend",
		"production package github.com/git-lossless/git-lossless/hooks imports fixture github.com/git-lossless/git-lossless/internal/testkit/transcriptgen",
		"production package github.com/git-lossless/git-lossless/proxy imports fixture github.com/git-lossless/git-lossless/internal/testkit",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ProductionImportsTestkit:\ngot  %q\nwant %q", got, want)
	}

	// The hook program's banned links are caught, a package and its
	// subtree, and not a path that only shares a prefix.
	got = HookProgramLinks([]string{"fmt", "net/http", "net/http/httptrace", "net/netip", Module + "/recall",
		Module + "/recaller", "github.com/ProtonMail/go-crypto/openpgp", Module + "/hooks", Module + "/hooks/doctor"})
	want = []string{
		"the hook program links net/http (banned: net)",
		"the hook program links net/http/httptrace (banned: net)",
		"the hook program links net/netip (banned: net)",
		"the hook program links " + Module + "/recall (banned: " + Module + "/recall)",
		"the hook program links github.com/ProtonMail/go-crypto/openpgp (banned: github.com/ProtonMail/go-crypto/)",
		"the hook program links " + Module + "/hooks/doctor (banned: " + Module + "/hooks/doctor)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("HookProgramLinks:\ngot  %q\nwant %q", got, want)
	}

	// An adapter imported by the runtime or a neutral package is caught;
	// by the registry, its own sub-packages, the doctor, the commands, a
	// fixture or a test it is not, nor are the neutral packages under
	// hooks/ adapters.
	got = AdapterImports([]Package{
		{ImportPath: Hooks, Imports: []string{Hooks + "/claudecode", Hooks + "/transcript"}},
		{ImportPath: Module + "/mcp", Imports: []string{Hooks + "/codex/rollout", Hooks + "/settings", Hooks + "/shellread"}},
		{ImportPath: Hooks + "/claudecode", Imports: []string{Hooks + "/gemini"}},
		{ImportPath: Registry, Imports: []string{Hooks + "/claudecode", Hooks + "/codex"}},
		{ImportPath: Hooks + "/claudecode/replay", Imports: []string{Hooks + "/claudecode", Hooks + "/claudecode/cctranscript"}},
		{ImportPath: Hooks + "/doctor", Imports: []string{Hooks + "/claudecode"}},
		{ImportPath: Command, Imports: []string{Hooks + "/claudecode"}},
		{ImportPath: Testkit + "/receiptfixture", Imports: []string{Hooks + "/claudecode"}},
		{ImportPath: Module + "/recall", TestImports: []string{Hooks + "/claudecode"}},
	})
	want = []string{
		Hooks + " imports the adapter " + Hooks + "/claudecode; only " + Registry + ", the adapter's own packages, the doctor, the commands and fixtures may",
		Hooks + "/claudecode imports the adapter " + Hooks + "/gemini; only " + Registry + ", the adapter's own packages, the doctor, the commands and fixtures may",
		Module + "/mcp imports the adapter " + Hooks + "/codex/rollout; only " + Registry + ", the adapter's own packages, the doctor, the commands and fixtures may",
	}
	if !slices.Equal(got, want) {
		t.Errorf("AdapterImports:\ngot  %q\nwant %q", got, want)
	}

	// go-git anywhere but internal/gitobj, tests included, is caught;
	// the allow-list is that one package, not its subtree.
	got = OnlyGitobjImportsGoGit(pkgs)
	want = []string{
		"github.com/git-lossless/git-lossless/gitstore imports github.com/go-git/go-git/v5/plumbing; only github.com/git-lossless/git-lossless/internal/gitobj may import go-git",
		"github.com/git-lossless/git-lossless/internal/gitobj/pack (tests) imports github.com/go-git/go-git/v5/plumbing/format/packfile; only github.com/git-lossless/git-lossless/internal/gitobj may import go-git",
		"github.com/git-lossless/git-lossless/recall (external tests) imports github.com/go-git/go-billy/v5/osfs; only github.com/git-lossless/git-lossless/internal/gitobj may import go-git",
	}
	if !slices.Equal(got, want) {
		t.Errorf("OnlyGitobjImportsGoGit:\ngot  %q\nwant %q", got, want)
	}

	// The shipping program's banned links are caught, with their
	// subtrees, and not a path that only shares a prefix.
	got = ShippingLinks([]string{"fmt", Testkit + "/stubbackend", Module + "/internal/rescan", Module + "/internal/rescanner", Module + "/proxy",
		Module + "/mcp", Module + "/mcpx", "github.com/modelcontextprotocol/go-sdk/jsonrpc", "encoding/gob", "encoding/json",
		"modernc.org/sqlite/lib", "modernc.org.example/x"})
	want = []string{
		"git-lossless links " + Testkit + "/stubbackend (banned: " + Testkit + "; the demo and benchmarks live in git-lossless-bench)",
		"git-lossless links " + Module + "/internal/rescan (banned: " + Module + "/internal/rescan; the demo and benchmarks live in git-lossless-bench)",
		"git-lossless links " + Module + "/mcp (banned: " + Module + "/mcp; the MCP server lives in git-lossless-mcp)",
		"git-lossless links github.com/modelcontextprotocol/go-sdk/jsonrpc (banned: github.com/modelcontextprotocol/go-sdk; the MCP server lives in git-lossless-mcp)",
		"git-lossless links encoding/gob (banned: encoding/gob; the MCP server lives in git-lossless-mcp)",
		"git-lossless links modernc.org/sqlite/lib (banned: modernc.org; the demo and benchmarks live in git-lossless-bench)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ShippingLinks:\ngot  %q\nwant %q", got, want)
	}

	// A clean tree passes.
	clean := []Package{
		{ImportPath: Module + "/hooks", Imports: []string{"context"}, TestImports: []string{Testkit}},
		{ImportPath: GoGitAllowed, Imports: []string{"github.com/go-git/go-git/v5/plumbing"}},
		{ImportPath: BenchProgram, Imports: []string{Testkit + "/benchdata"}},
	}
	if got := ProductionImportsTestkit(clean); len(got) != 0 {
		t.Errorf("clean tree: %q", got)
	}
	if got := OnlyGitobjImportsGoGit(clean); len(got) != 0 {
		t.Errorf("clean tree: %q", got)
	}

	// A listing the checks could pass vacuously is refused.
	for _, in := range []string{"", "  \n", `{"ImportPath": "x"} {`, `{"Dir": "/m"}`} {
		if _, err := Decode(strings.NewReader(in)); err == nil {
			t.Errorf("Decode(%q) succeeded", in)
		}
	}
}

// TestLayoutTableImportOrder: docs/architecture.md's table lists every
// package, and no package imports one listed above its own row; a
// listing with an upward import and an unlisted package is caught.
func TestLayoutTableImportOrder(t *testing.T) {
	md, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := TableRows(string(md))
	if len(rows) < 20 {
		t.Fatalf("found %d rows in docs/architecture.md's table", len(rows))
	}
	for _, goos := range platforms {
		t.Run(goos, func(t *testing.T) {
			for _, msg := range ImportOrder(rows, goList(t.Context(), t, goos)) {
				t.Error(msg)
			}
		})
	}
	got := ImportOrder([]string{"a", "b", "b/c"}, []Package{
		{ImportPath: Module + "/a", Imports: []string{Module + "/b/c", "fmt"}},
		{ImportPath: Module + "/b", Imports: []string{Module + "/a"}},
		{ImportPath: Module + "/b/d", Imports: []string{Module + "/b"}},
		{ImportPath: Module + "/z"},
	})
	want := []string{
		Module + "/b (row b) imports " + Module + "/a (row a, above it)",
		Module + "/z is in no row of the layout table",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ImportOrder:\ngot  %q\nwant %q", got, want)
	}
}
