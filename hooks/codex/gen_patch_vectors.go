//go:build ignore

// gen_patch_vectors writes testdata/patch-vectors.jsonl: apply_patch cases
// (named ones, then generated ones) and what Codex's own apply_patch did
// with each. TestPatchVectors replays them through ParsePatch and Apply.
//
//	go run gen_patch_vectors.go -codex /path/to/codex [-n 400] [-seed 1]
//
// -codex is the codex binary of @openai/codex-linux-x64 0.169.0 (run as
// "apply_patch" through a symlink, which makes it the standalone applier
// the apply_patch tool runs). The vectors are committed: the tests need
// no Codex, and a new Codex release is checked by regenerating them.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// vector is one case: files before, the patch, and what Codex left.
type vector struct {
	Name  string             `json:"name"`
	Patch string             `json:"patch"`
	Files map[string]string  `json:"files"`
	OK    bool               `json:"ok"`
	After map[string]*string `json:"after,omitempty"` // every path of Files and of the patch: content, or null when absent
	Out   string             `json:"out"`
}

func main() {
	codex := flag.String("codex", "", "the codex 0.169.0 binary")
	n := flag.Int("n", 400, "generated cases")
	seed := flag.Uint64("seed", 1, "generator seed")
	out := flag.String("o", "testdata/patch-vectors.jsonl", "output")
	flag.Parse()
	if *codex == "" {
		log.Fatal("-codex is required")
	}
	tmp, err := os.MkdirTemp("", "codex-vectors-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ap := filepath.Join(tmp, "apply_patch")
	abs, err := filepath.Abs(*codex)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink(abs, ap); err != nil {
		log.Fatal(err)
	}
	cases := named()
	r := rand.New(rand.NewPCG(*seed, 20))
	for i := range *n {
		c := generate(r)
		c.Name = fmt.Sprintf("gen-%03d", i)
		cases = append(cases, c)
	}
	var buf bytes.Buffer
	okN := 0
	for i := range cases {
		run(ap, filepath.Join(tmp, fmt.Sprintf("w%d", i)), &cases[i])
		if cases[i].OK {
			okN++
		}
		b, err := json.Marshal(cases[i])
		if err != nil {
			log.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o600); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d vectors (%d applied, %d failed) in %s", len(cases), okN, len(cases)-okN, *out)
}

// run applies the case's patch with Codex in a fresh directory.
func run(ap, dir string, v *vector) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Fatal(err)
	}
	for p, c := range v.Files {
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	cmd := exec.Command(ap, v.Patch)
	cmd.Dir = dir
	outb, err := cmd.CombinedOutput()
	v.Out = strings.ReplaceAll(string(outb), dir+"/", "")
	v.OK = err == nil
	if !v.OK {
		return
	}
	v.After = map[string]*string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			log.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		s := string(b)
		v.After[rel] = &s
		return nil
	})
	for p := range v.Files {
		if _, ok := v.After[p]; !ok {
			v.After[p] = nil
		}
	}
}

func patch(body ...string) string {
	return "*** Begin Patch\n" + strings.Join(body, "\n") + "\n*** End Patch\n"
}

// named are the cases the tests name: the shapes a model writes, and the
// corners of the format.
func named() []vector {
	return []vector{
		{Name: "sample-run1", Files: map[string]string{"hello.txt": "hello world\n"},
			Patch: "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+hello codex\n*** End Patch\n"},
		{Name: "multi-file", Files: map[string]string{"a.go": "package a\n\nfunc A() int {\n\treturn 1\n}\n", "b.go": "package b\n\nvar B = 2\n", "old.txt": "bye\n"},
			Patch: patch("*** Update File: a.go", "@@ func A() int {", "-\treturn 1", "+\treturn 10", "*** Update File: b.go", "@@", "-var B = 2", "+var B = 20", "*** Delete File: old.txt", "*** Add File: c/new.go", "+package c", "+", "+// C is new.", "+const C = 3")},
		{Name: "move-and-update", Files: map[string]string{"src/old.rs": "fn run() {\n    let args = Args::parse();\n    dispatch(args)\n}\n"},
			Patch: patch("*** Update File: src/old.rs", "*** Move to: src/bin/new.rs", "@@ fn run() {", "-    let args = Args::parse();", "-    dispatch(args)", "+    let cli = Cli::parse();", "+    dispatch(cli)")},
		{Name: "delete", Files: map[string]string{"gone.txt": "x\n", "keep.txt": "y\n"}, Patch: patch("*** Delete File: gone.txt")},
		{Name: "delete-missing", Files: map[string]string{"keep.txt": "y\n"}, Patch: patch("*** Delete File: gone.txt")},
		{Name: "add-blank-lines", Patch: patch("*** Add File: notes.md", "+# Notes", "+", "+first", "+", "+", "+last")},
		{Name: "add-unprefixed-blank-line", Patch: patch("*** Add File: notes.md", "+a", "", "+b")},
		{Name: "add-empty", Patch: patch("*** Add File: empty.txt")},
		{Name: "add-overwrites", Files: map[string]string{"dup.txt": "old\n"}, Patch: patch("*** Add File: dup.txt", "+new")},
		{Name: "crlf-file", Files: map[string]string{"w.txt": "one\r\ntwo\r\nthree\r\n"}, Patch: patch("*** Update File: w.txt", "@@", " one", "-two", "+TWO", "+two and a half")},
		{Name: "crlf-no-final-newline", Files: map[string]string{"w.txt": "one\r\ntwo"}, Patch: patch("*** Update File: w.txt", "@@", " two", "+three")},
		{Name: "mixed-endings", Files: map[string]string{"m.txt": "a\nb\r\nc\r\n"}, Patch: patch("*** Update File: m.txt", "@@", "-b", "+B")},
		{Name: "crlf-patch-text", Files: map[string]string{"f.txt": "a\nb\n"}, Patch: "*** Begin Patch\r\n*** Update File: f.txt\r\n@@\r\n-a\r\n+A\r\n*** End Patch\r\n"},
		{Name: "hunk-does-not-apply", Files: map[string]string{"f.txt": "alpha\nbeta\n"}, Patch: patch("*** Update File: f.txt", "@@", "-gamma", "+delta")},
		{Name: "context-not-found", Files: map[string]string{"f.txt": "alpha\nbeta\n"}, Patch: patch("*** Update File: f.txt", "@@ nowhere", "-beta", "+BETA")},
		{Name: "update-missing", Patch: patch("*** Update File: none.txt", "@@", "-a", "+b")},
		{Name: "partial-failure", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Add File: made.txt", "+x", "*** Update File: f.txt", "@@", "-zzz", "+A")},
		{Name: "no-final-newline", Files: map[string]string{"n.txt": "a\nb"}, Patch: patch("*** Update File: n.txt", "@@", "-a", "+A")},
		{Name: "pure-addition-goes-last", Files: map[string]string{"f.txt": "a\nb\nc\n"}, Patch: patch("*** Update File: f.txt", "@@ a", "+X")},
		{Name: "eof-marker", Files: map[string]string{"f.txt": "end\nmiddle\nend\n"}, Patch: patch("*** Update File: f.txt", "@@", "-end", "+END", "*** End of File")},
		{Name: "eof-marker-not-at-end", Files: map[string]string{"f.txt": "target\nmiddle\nother\n"}, Patch: patch("*** Update File: f.txt", "@@", "-target", "+T", "*** End of File")},
		{Name: "fuzzy-trailing-space-context-kept", Files: map[string]string{"f.txt": "a  \nb\nc\n"}, Patch: patch("*** Update File: f.txt", "@@", " a", "-b", "+B")},
		{Name: "fuzzy-removed-and-readded", Files: map[string]string{"f.txt": "a  \nb\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a", "+a", " b")},
		{Name: "fuzzy-indent", Files: map[string]string{"f.txt": "    x\ny\n"}, Patch: patch("*** Update File: f.txt", "@@", " x", "-y", "+Y")},
		{Name: "fuzzy-unicode-dash", Files: map[string]string{"f.txt": "a\u2013b\nc\n"}, Patch: patch("*** Update File: f.txt", "@@", " a-b", "-c", "+C")},
		{Name: "trim-before-unicode", Files: map[string]string{"f.txt": "a\u2013b\n  a-b\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a-b", "+Z")},
		{Name: "final-empty-old-line", Files: map[string]string{"f.txt": "a\nb\n"}, Patch: patch("*** Update File: f.txt", "@@", " a", "-b", "-", "+B", "+")},
		{Name: "blank-line-between-chunks", Files: map[string]string{"f.txt": "a\nb\nc\nd\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a", "+A", "", "@@", "-d", "+D")},
		{Name: "blank-lines-before-first-chunk", Files: map[string]string{"f.txt": "a\nb\n"}, Patch: patch("*** Update File: f.txt", "", "", "@@", "-a", "+A")},
		{Name: "space-line-between-chunks", Files: map[string]string{"f.txt": "a\nb\nc\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a", "+A", "   ", "@@", "-c", "+C")},
		{Name: "chunks-out-of-order", Files: map[string]string{"f.txt": "a\nb\nc\n"}, Patch: patch("*** Update File: f.txt", "@@", "-c", "+C", "@@", "-a", "+A")},
		{Name: "eof-chunk-before-cursor", Files: map[string]string{"f.txt": "a\nb\n"}, Patch: patch("*** Update File: f.txt", "@@", "-b", "+B", "@@", "-b", "+C", "*** End of File")},
		{Name: "two-updates-same-file", Files: map[string]string{"f.txt": "a\nb\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a", "+A", "*** Update File: f.txt", "@@", "-b", "+B")},
		{Name: "add-then-update", Patch: patch("*** Add File: n.txt", "+one", "+two", "*** Update File: n.txt", "@@", "-two", "+TWO")},
		{Name: "move-onto-existing", Files: map[string]string{"a.txt": "a\n", "b.txt": "b\n"}, Patch: patch("*** Update File: a.txt", "*** Move to: b.txt", "@@", "-a", "+A")},
		{Name: "move-onto-itself", Files: map[string]string{"a.txt": "a\n"}, Patch: patch("*** Update File: a.txt", "*** Move to: a.txt", "@@", "-a", "+A")},
		{Name: "move-trailing-space", Files: map[string]string{"a.txt": "a\n"}, Patch: patch("*** Update File: a.txt", "*** Move to: b.txt  ", "@@", "-a", "+A")},
		{Name: "move-indented-is-context", Files: map[string]string{"a.txt": "a\n"}, Patch: patch("*** Update File: a.txt", "  *** Move to: b.txt", "@@", "-a", "+A")},
		{Name: "context-header-trailing-space", Files: map[string]string{"f.txt": "foo\nx\nfoo  \nx\n"}, Patch: patch("*** Update File: f.txt", "@@ foo  ", "-x", "+Y")},
		{Name: "context-header-leading-space", Files: map[string]string{"f.txt": "  foo\nx\nfoo\nx\n"}, Patch: patch("*** Update File: f.txt", "@@   foo", "-x", "+Y")},
		{Name: "bare-header-trailing-space", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File: f.txt", "@@   ", "-a", "+b")},
		{Name: "indented-header-is-context", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File: f.txt", "  @@", "-a", "+b")},
		{Name: "padded-eof-marker-is-context", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a", "+b", " *** End of File")},
		{Name: "lines-after-eof-marker", Files: map[string]string{"f.txt": "a\nb\n"}, Patch: patch("*** Update File: f.txt", "@@", "-b", "+B", "*** End of File", "-a", "+A")},
		{Name: "tab-prefixed-line", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File: f.txt", "@@", "\t-a", "+b")},
		{Name: "missing-first-header", Files: map[string]string{"f.txt": "import foo\n"}, Patch: patch("*** Update File: f.txt", " import foo", "+bar")},
		{Name: "empty-update-hunk", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File: f.txt")},
		{Name: "header-only-chunk", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File: f.txt", "@@")},
		{Name: "invalid-hunk-header", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Frobnicate File: f.txt")},
		{Name: "no-hunks", Files: map[string]string{"f.txt": "a\n"}, Patch: patch()},
		{Name: "no-begin", Files: map[string]string{"f.txt": "a\n"}, Patch: "*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch\n"},
		{Name: "no-end", Files: map[string]string{"f.txt": "a\n"}, Patch: "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n"},
		{Name: "padded-markers", Files: map[string]string{"f.txt": "a\n"}, Patch: "  *** Begin Patch  \n  *** Update File: f.txt  \n@@\n-a\n+b\n *** End Patch \n\n\n"},
		{Name: "heredoc", Files: map[string]string{"f.txt": "a\n"}, Patch: "<<'EOF'\n*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch\nEOF\n"},
		{Name: "heredoc-mismatched-quotes", Files: map[string]string{"f.txt": "a\n"}, Patch: "<<\"EOF'\n*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch\nEOF\n"},
		{Name: "update-path-two-spaces", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File:  f.txt", "@@", "-a", "+b")},
		{Name: "empty-file-addition", Files: map[string]string{"e.txt": ""}, Patch: patch("*** Update File: e.txt", "@@", "+x")},
		{Name: "delete-everything", Files: map[string]string{"f.txt": "a\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a")},
		{Name: "lone-cr", Files: map[string]string{"f.txt": "a\rb\nc\n"}, Patch: patch("*** Update File: f.txt", "@@", " a\rb", "-c", "+C")},
		{Name: "lone-cr-ends-lines", Files: map[string]string{"f.txt": "a\rb\nc\n"}, Patch: patch("*** Update File: f.txt", "@@", " a", " b", "-c", "+C")},
		{Name: "lone-cr-preferred", Files: map[string]string{"f.txt": "a\rb\nc\n"}, Patch: patch("*** Update File: f.txt", "@@", "-a", "+A", "+N")},
		{Name: "cr-crlf", Files: map[string]string{"f.txt": "a\r\r\nb\n"}, Patch: patch("*** Update File: f.txt", "@@", "-b", "+B")},
		{Name: "unicode-text", Files: map[string]string{"u.txt": "héllo wörld\n日本語\n"}, Patch: patch("*** Update File: u.txt", "@@", "-日本語", "+中文")},
	}
}

// vocabulary for generated files: lines that repeat, so that a search can
// match in several places.
var words = []string{"alpha", "beta", "gamma", "delta", "func main() {", "}", "", "return x", "// note", "x := 1"}

func genLine(r *rand.Rand) string {
	w := words[r.IntN(len(words))]
	switch r.IntN(12) {
	case 0:
		w = "  " + w
	case 1:
		w += "  "
	case 2:
		w = "\t" + w
	case 3:
		w = strings.ReplaceAll(w, "-", "\u2013") + " \u2014"
	case 4:
		w += "\t"
	}
	return w
}

// variant is how a patch line may differ from the file line it stands for.
func variant(r *rand.Rand, l string) string {
	switch r.IntN(10) {
	case 0:
		return strings.TrimSpace(l)
	case 1:
		return l + " "
	case 2:
		return strings.ReplaceAll(strings.ReplaceAll(l, "\u2013", "-"), "\u2014", "-")
	case 3:
		return l + "x" // does not match
	}
	return l
}

func genFile(r *rand.Rand) string {
	n := r.IntN(9)
	eol := "\n"
	switch r.IntN(12) {
	case 0, 1, 2:
		eol = "\r\n"
	case 3:
		eol = "\r"
	}
	var b strings.Builder
	for i := range n {
		b.WriteString(genLine(r))
		e := eol
		if r.IntN(10) == 0 {
			e = map[string]string{"\n": "\r\n", "\r\n": "\n", "\r": "\n"}[eol]
		}
		if i < n-1 || r.IntN(4) != 0 {
			b.WriteString(e)
		}
	}
	return b.String()
}

// generate makes a case: one to three files, and a patch built mostly
// from their lines.
func generate(r *rand.Rand) vector {
	v := vector{Files: map[string]string{}}
	names := []string{"a.txt", "b.txt", "d/c.txt"}
	nf := 1 + r.IntN(3)
	for i := range nf {
		v.Files[names[i]] = genFile(r)
	}
	var body []string
	nh := 1 + r.IntN(3)
	for range nh {
		name := names[r.IntN(nf)]
		switch r.IntN(10) {
		case 0:
			body = append(body, "*** Add File: "+names[r.IntN(len(names))])
			for range r.IntN(4) {
				body = append(body, "+"+genLine(r))
			}
		case 1:
			body = append(body, "*** Delete File: "+names[r.IntN(len(names))])
		default:
			body = append(body, "*** Update File: "+name)
			if r.IntN(8) == 0 {
				body = append(body, "*** Move to: moved/"+name)
			}
			body = append(body, genChunks(r, v.Files[name])...)
		}
	}
	v.Patch = patch(body...)
	return v
}

func genChunks(r *rand.Rand, content string) []string {
	lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out []string
	at := 0
	nc := 1 + r.IntN(3)
	for c := range nc {
		header := "@@"
		if r.IntN(4) == 0 && at < len(lines) {
			header = "@@ " + variant(r, lines[at+r.IntN(len(lines)-at)])
		}
		if c > 0 || r.IntN(6) != 0 {
			out = append(out, header)
		}
		if at >= len(lines) || r.IntN(8) == 0 {
			out = append(out, "+"+genLine(r))
			continue
		}
		start := at + r.IntN(len(lines)-at)
		end := min(len(lines), start+1+r.IntN(3))
		nl := 0
		for i := start; i < end; i++ {
			l := variant(r, lines[i])
			switch r.IntN(4) {
			case 0:
				out = append(out, " "+l)
			case 1:
				out = append(out, "-"+l)
			default:
				out = append(out, "-"+l, "+"+genLine(r))
			}
			nl++
		}
		if r.IntN(6) == 0 {
			out = append(out, "+"+genLine(r))
		}
		if r.IntN(10) == 0 {
			out = append(out, "-")
		}
		if end == len(lines) && r.IntN(3) == 0 {
			out = append(out, "*** End of File")
		}
		at = end
	}
	return out
}
