package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The corpus's keys are assembled from pieces ("gh"+"p_"+...) so that
// this file holds no key-shaped string itself, and drawn from a seeded
// generator so that every run tests the same bytes.

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	letter = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b64url = alnum + "-_"
	hexd   = "0123456789abcdef"
)

type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) pick(set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[g.r.IntN(len(set))]
	}
	return string(b)
}

// keys returns one key of each provider kind, by kind.
func keys(g *gen) map[string]string {
	return map[string]string{
		"anthropic-key":     "sk-" + "ant-api03-" + g.pick(b64url, 93) + "AA",
		"openai-key":        "sk-" + "proj-" + g.pick(b64url, 64),
		"github-token":      "gh" + "p_" + g.pick(alnum, 36),
		"gitlab-token":      "gl" + "pat-" + g.pick(b64url, 20),
		"slack-token":       "xo" + "xb-" + g.pick("0123456789", 12) + "-" + g.pick("0123456789", 13) + "-" + g.pick(alnum, 24),
		"stripe-key":        "sk" + "_live_" + g.pick(alnum, 32),
		"aws-access-key-id": "AK" + "IA" + g.pick(upper, 16),
		"google-api-key":    "AI" + "za" + g.pick(b64url, 35),
		"npm-token":         "np" + "m_" + g.pick(alnum, 36),
		"huggingface-token": "h" + "f_" + g.pick(letter, 34),
		"age-secret-key":    "AGE-SECRET-" + "KEY-1" + g.pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
		"jwt":               "ey" + "J" + g.pick(b64url, 30) + "." + "ey" + "J" + g.pick(b64url, 60) + "." + g.pick(b64url, 43),
	}
}

func TestScanProviderKeys(t *testing.T) {
	g := newGen(1)
	for kind, key := range keys(g) {
		for _, form := range []string{"%s", "key: %s\n", "TOKEN = '%s'\n", `{"api_key":"%s"}`, "PASSWORD=%s\n", `{"content":"here %s there"}`, "see (%s).", "`%s`", "\n%s\n", `{"a":"x\n%s\ny"}`} {
			text := fmt.Sprintf(form, key)
			fs := Scan([]byte(text))
			if len(fs) != 1 || fs[0].Kind != kind || text[fs[0].Start:fs[0].End] != key {
				t.Errorf("%s in %q: found %v, want exactly the key", kind, form, show(text, fs))
			}
		}
		// Inside a longer word it is not a key (a prefix must start a word).
		for _, form := range []string{"x%s", "%sx_", "%s-more"} {
			text := fmt.Sprintf(form, key)
			for _, f := range Scan([]byte(text)) {
				if f.Kind == kind && f.Start == 1 {
					t.Errorf("%s inside %q was found: %v", kind, form, show(text, []Finding{f}))
				}
			}
		}
	}
}

func TestScanOtherProviderForms(t *testing.T) {
	g := newGen(2)
	cases := []struct{ text, kind, value string }{
		{"sk-" + "svcacct-" + g.pick(b64url, 40), "openai-key", ""},
		{"sk-" + g.pick(alnum, 48), "openai-key", ""},
		{"github_" + "pat_" + g.pick(alnum, 22) + "_" + g.pick(alnum, 59), "github-token", ""},
		{"gh" + "s_" + g.pick(alnum, 36), "github-token", ""},
		{"rk" + "_live_" + g.pick(alnum, 24), "stripe-key", ""},
		{"AS" + "IA" + g.pick(upper, 16), "aws-access-key-id", ""},
		{"xa" + "pp-1-" + g.pick(alnum, 30), "slack-token", ""},
		{"py" + "pi-AgEIcHlwaS5vcmc" + g.pick(b64url, 60), "pypi-token", ""},
	}
	for _, c := range cases {
		value := c.value
		if value == "" {
			value = c.text
		}
		fs := Scan([]byte(c.text))
		if len(fs) != 1 || fs[0].Kind != c.kind || c.text[fs[0].Start:fs[0].End] != value {
			t.Errorf("%q: %v, want %s %q", c.text, show(c.text, fs), c.kind, value)
		}
	}
}

func TestScanPrivateKey(t *testing.T) {
	g := newGen(3)
	body := ""
	for range 8 {
		body += g.pick(alnum+"+/", 64) + "\n"
	}
	pem := "-----BEGIN " + "OPENSSH PRIVATE KEY-----\n" + body + "-----END " + "OPENSSH PRIVATE KEY-----"
	for _, text := range []string{"before\n" + pem + "\nafter", mustJSON(map[string]string{"content": "x\n" + pem + "\ny"})} {
		fs := Scan([]byte(text))
		if len(fs) != 1 || fs[0].Kind != "private-key" {
			t.Fatalf("%v", show(text, fs))
		}
		got := text[fs[0].Start:fs[0].End]
		if !strings.HasPrefix(got, "-----BEGIN") || !strings.HasSuffix(got, "PRIVATE KEY-----") {
			t.Errorf("private key finding is %q", got)
		}
	}
	// Cut off by `head`: the body still goes.
	cut := "-----BEGIN " + "RSA PRIVATE KEY-----\n" + body[:150]
	text := mustJSON(map[string]string{"content": cut})
	fs := Scan([]byte(text))
	if len(fs) != 1 || !strings.Contains(text[fs[0].Start:fs[0].End], body[:40]) || !json.Valid(redactAll(text, fs)) {
		t.Errorf("cut key: %v", show(text, fs))
	}
	// A public key or certificate is not a secret.
	for _, label := range []string{"PUBLIC KEY", "CERTIFICATE", "OPENSSH PUBLIC KEY"} {
		text := "-----BEGIN " + label + "-----\n" + body + "-----END " + label + "-----\n"
		if fs := Scan([]byte(text)); len(fs) != 0 {
			t.Errorf("%s: %v", label, show(text, fs))
		}
	}
}

func TestScanAssignments(t *testing.T) {
	g := newGen(4)
	rnd := g.pick(alnum, 24)
	cases := []struct {
		text, kind, value string
	}{
		{"DB_PASSWORD=hunter2\n", "password", "hunter2"},
		{"PGPASSWORD=s3cr3tpw psql -h db", "password", "s3cr3tpw"},
		{"export FOO_SECRET=" + rnd + "\n", "secret", rnd},
		{"SESSION_SECRET=keyboardcat\n", "secret", "keyboardcat"},
		{`password = "correct-horse"`, "password", "correct-horse"},
		{`{"api_key": "` + rnd + `"}`, "api-key", rnd},
		{`{"content":"{\"api_key\": \"` + rnd + `\"}"}`, "api-key", rnd},
		{`{"content":"DB_PASS=abcd1234\nOTHER=1"}`, "password", "abcd1234"},
		{"token: " + rnd + "\n", "token", rnd},
		{"  client_secret: '" + rnd + "'\n", "secret", rnd},
		{"githubToken := \"" + rnd + "\"", "token", rnd},
		{"AWS_SECRET_ACCESS_KEY=" + rnd + "x/" + rnd[:14], "api-key", rnd + "x/" + rnd[:14]},
		{`"SecretAccessKey": "` + rnd + `",`, "api-key", rnd},
		{"mysql --password hunter22 -u root", "password", "hunter22"},
		{"gh auth --token=" + rnd, "token", rnd},
		{"curl https://x/?access_token=" + rnd + "&a=1", "token", rnd},
		{`curl -H "Authorization: Bearer ` + rnd + `" https://api`, "authorization", rnd},
		{`{"headers":{"authorization":"Basic dXNlcjpwYXNzd29yZDEyMw=="}}`, "authorization", "dXNlcjpwYXNzd29yZDEyMw=="},
		{"x-api-key: " + rnd + "\n", "api-key", rnd},
		{"postgres://app:pa55word@db.internal:5432/app", "url-password", "pa55word"},
		{"git clone https://oauth2:" + rnd + "@gitlab.com/x/y.git", "url-password", rnd},
		{"spring.datasource.password=tiger99\n", "password", "tiger99"},
		{"passphrase: open sesame\n", "password", "open sesame"},
		{"  password: correct horse battery # old\n", "password", "correct horse battery"},
	}
	for _, c := range cases {
		fs := Scan([]byte(c.text))
		if len(fs) != 1 || fs[0].Kind != c.kind || c.text[fs[0].Start:fs[0].End] != c.value {
			t.Errorf("%q: %v, want %s %q", c.text, show(c.text, fs), c.kind, c.value)
		}
	}
}

// TestScanAWSSecretBeside: a 40-byte secret access key with no name is
// found next to its access key id (a CSV from the console), and not
// elsewhere.
func TestScanAWSSecretBeside(t *testing.T) {
	g := newGen(5)
	id := "AK" + "IA" + g.pick(upper, 16)
	sk := g.pick(alnum, 20) + "/" + g.pick(alnum, 19)
	text := "User name,Access key ID,Secret access key\nci," + id + "," + sk + "\n"
	fs := Scan([]byte(text))
	if len(fs) != 2 || fs[0].Kind != "aws-access-key-id" || fs[1].Kind != "aws-secret-access-key" || text[fs[1].Start:fs[1].End] != sk {
		t.Fatalf("%v", show(text, fs))
	}
	// Without an id nearby the same word is just a word.
	if fs := Scan([]byte("value " + sk + "\n")); len(fs) != 0 {
		t.Errorf("lone 40-byte word: %v", fs)
	}
}

// TestScanNearMisses: text that looks random or secret-named but holds
// no secret stays as it is.
func TestScanNearMisses(t *testing.T) {
	g := newGen(6)
	sha1 := g.pick(hexd, 40)
	sha256 := g.pick(hexd, 64)
	uuid := g.pick(hexd, 8) + "-" + g.pick(hexd, 4) + "-4" + g.pick(hexd, 3) + "-a" + g.pick(hexd, 3) + "-" + g.pick(hexd, 12)
	img := make([]byte, 3000)
	for i := range img {
		img[i] = byte(g.r.IntN(256))
	}
	cases := map[string]string{
		"git sha1":        "commit " + sha1 + "\nAuthor: A <a@b>\n",
		"git log":         sha1[:7] + " fix: token refresh\n" + sha1 + " Merge\n",
		"sha256sum":       sha256 + "  go.sum\n",
		"uuid":            `{"uuid":"` + uuid + `","parentUuid":"` + uuid + `","sessionId":"` + uuid + `"}`,
		"integrity":       `"integrity": "sha512-` + base64.StdEncoding.EncodeToString(img[:64]) + `",`,
		"base64 text":     base64.StdEncoding.EncodeToString([]byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20))),
		"data url":        `<img src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `">`,
		"base64url":       base64.RawURLEncoding.EncodeToString(img),
		"minified js":     `!function(e,t){"object"==typeof exports?module.exports=t():e.token=t()}(this,function(){var n={apiKey:null,password:"",token:void 0};return function(e){return n.token=e.token||n.token,n}});`,
		"code":            "password := os.Getenv(\"DB_PASSWORD\")\ntoken = getToken()\nconst apiKey = process.env.API_KEY;\nif password == \"\" {}\n",
		"types":           "interface Creds { password: string; token?: string; apiKey: String }\nclass A: password: str\n",
		"references":      "DB_PASSWORD=${DB_PASSWORD}\nAPI_KEY=$API_KEY\ntoken: {{ .Values.token }}\npassword: <your-password>\nsecret: \"%s\"\n",
		"masks":           "password: ********\nAPI_KEY=xxxxxxxxxxxx\ntoken=redacted\nAPI_KEY=your_api_key_here\n",
		"placeholders":    "DB_PASSWORD=[secret:password:0123abcd]\n\"api_key\": \"[secret:api-key:89abcdef01]\"\n",
		"non-secret keys": "max_tokens: 4096\ntoken_type: Bearer\nPASSWORD_FILE=/run/secrets/db\nprimary_key: id\npublic_key: ssh-ed25519\nsort_key=created_at\ninput_tokens=128\nTOKENIZERS_PARALLELISM=false\n",
		"prose":           "Enter your password below. The token expires soon. \"password\": \"Enter your password\"\n",
		"paths":           "PWD=/work/main\nOLDPWD=/home\nSSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.12\n",
		"sk words":        "sk-learn sk-learn-compatible-estimator-wrapper-module ask-me-anything",
		"urls":            "https://github.com/a/b git@github.com:a/b.git http://localhost:8080/x?token= https://user@host/ mailto:a@b",
		"comparisons":     "if token == \"abc123def456ghi\" {}",
		"hex after key":   "sha1: " + sha1 + "\n",
		"go.sum":          "golang.org/x/crypto v0.56.0 h1:" + base64.StdEncoding.EncodeToString(img[:32]) + "\n",
		"english":         "monkey turkey hockey bypass compass passenger tokenize secretary",
	}
	for name, text := range cases {
		if fs := Scan([]byte(text)); len(fs) != 0 {
			t.Errorf("%s: %v", name, show(text, fs))
		}
	}
}

// TestScanRealTranscripts: the real Claude Code transcripts in testdata
// (ids, hashes, signatures, tool output) hold no secret, and the scanner
// finds none.
func TestScanRealTranscripts(t *testing.T) {
	files, err := filepath.Glob("../testdata/claude-code-2.1.328/transcripts/*/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample transcripts: %v", err)
	}
	sub, _ := filepath.Glob("../testdata/claude-code-2.1.328/transcripts/*/*/subagents/*.jsonl")
	for _, f := range append(files, sub...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if fs := Scan(b); len(fs) != 0 {
			t.Errorf("%s: %v", filepath.Base(f), show(string(b), fs))
		}
	}
}

// TestScanJSONStaysValid: keys and assignments inside JSON strings, next
// to every escape, redact to valid JSON that reveals back byte for byte.
func TestScanJSONStaysValid(t *testing.T) {
	g := newGen(7)
	var parts []string
	for _, k := range keys(g) {
		parts = append(parts, k)
	}
	pw := "p@ss\"w\\rd\n" // escapes inside a quoted value: not a finding, never a broken one
	parts = append(parts, "DB_PASSWORD=hunter2\n", `"password": "`+pw+`"`, "\t\u00e9"+parts[0]+"\u2028")
	// Encoded forms: the finding covers encoded bytes, across escaped line
	// breaks for wrapped base64.
	enc := base64.StdEncoding.EncodeToString([]byte("export TOKEN=" + parts[0] + "\n"))
	parts = append(parts, enc, enc[:8]+"\n"+enc[8:], enc[:48]+"\n"+enc[48:], "?q="+strings.ReplaceAll(parts[0], "-", "%2D"), "sess-"+parts[0])
	for i, p := range parts {
		doc := mustJSON(map[string]any{"content": "a\"\n" + p + "\\\n\"b", "n": i})
		fs := Scan([]byte(doc))
		red := redactAll(doc, fs)
		if !json.Valid(red) {
			t.Errorf("part %d: redacted JSON is invalid: %s", i, red)
		}
	}
}

func TestScanSortedAndIdempotent(t *testing.T) {
	g := newGen(8)
	var b strings.Builder
	k := keys(g)
	for _, kind := range []string{"github-token", "aws-access-key-id", "jwt", "slack-token"} {
		fmt.Fprintf(&b, "x %s y\n", k[kind])
	}
	fmt.Fprintf(&b, "%s\n", g.pick(alnum, 20)+"/"+g.pick(alnum, 19)) // the AWS secret after the id
	text := b.String()
	fs := Scan([]byte(text))
	if len(fs) != 5 {
		t.Fatalf("%v", show(text, fs))
	}
	for i := 1; i < len(fs); i++ {
		if fs[i].Start < fs[i-1].End {
			t.Fatalf("not sorted or overlapping: %v", fs)
		}
	}
	red := redactAll(text, fs)
	if again := Scan(red); len(again) != 0 {
		t.Errorf("a redacted text still has findings: %v", show(string(red), again))
	}
}

func show(text string, fs []Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s[%d:%d]=%q", f.Kind, f.Start, f.End, text[f.Start:f.End]))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func redactAll(text string, fs []Finding) []byte {
	n := 0
	out, _ := Redact([]byte(text), fs, func(string, []byte) string { n++; return fmt.Sprintf("%08x", n) })
	return out
}

// FuzzScan checks the properties every writer relies on, for any input
// and for the same input as a JSON string: findings are in range, sorted
// and apart; redaction keeps JSON valid; Reveal undoes Redact; a redacted
// text has no findings left inside its placeholders.
func FuzzScan(f *testing.F) {
	g := newGen(9)
	for _, k := range keys(g) {
		f.Add([]byte("x=" + k))
	}
	f.Add([]byte("DB_PASSWORD=hunter2\nexport API_TOKEN=abc123def456ghi789\n"))
	f.Add([]byte(`{"a":"Authorization: Bearer abcdef0123456789abcdef\n","b":"postgres://u:p4ss@h/db"}`))
	f.Add([]byte("-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow\\nIBAAK\n"))
	f.Add([]byte(`\"api_key\\\": \\\"abcd\"1234efgh5678\"`))
	// Encoded forms (encoded.go): base64, wrapped base64 in JSON, percent.
	k := keys(newGen(10))
	b64 := base64.StdEncoding.EncodeToString([]byte("TOKEN=" + k["github-token"] + "\nAWS=" + k["aws-access-key-id"] + "\n"))
	f.Add([]byte(b64))
	f.Add([]byte(mustJSON(b64[:64] + "\n" + b64[64:])))
	f.Add([]byte("https://u%3Ap%40ss@h/?q=" + strings.ReplaceAll(k["github-token"], "_", "%5F") + "&sess-" + k["github-token"]))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, text := range [][]byte{data, []byte(mustJSON(string(data)))} {
			// Names are scanned with one more rule: same properties.
			end := 0
			for _, f := range ScanName(text) {
				if f.Start < end || f.End <= f.Start || f.End > len(text) || f.Kind == "" {
					t.Fatalf("bad name finding %+v after %d in %q", f, end, text)
				}
				end = f.End
			}
			fs := Scan(text)
			end = 0
			for _, f := range fs {
				if f.Start < end || f.End <= f.Start || f.End > len(text) || f.Kind == "" {
					t.Fatalf("bad finding %+v after %d in %q", f, end, text)
				}
				end = f.End
			}
			n := 0
			red, sec := Redact(text, fs, func(string, []byte) string { n++; return fmt.Sprintf("f00dfeed%08x", n) })
			if len(sec) != len(fs) {
				t.Fatalf("%d secrets for %d findings", len(sec), len(fs))
			}
			if json.Valid(text) && !json.Valid(red) {
				t.Fatalf("redaction broke JSON:\n%s\n%s", text, red)
			}
			back, _ := Reveal(red, func(kind, id string) ([]byte, bool) {
				for _, s := range sec {
					if s.ID == id && s.Kind == kind {
						return s.Value, true
					}
				}
				return nil, false
			})
			if len(fs) > 0 && !bytes.Equal(back, text) {
				t.Fatalf("reveal(redact(x)) != x:\n%q\n%q", text, back)
			}
			refs := Placeholders(red)
			for _, f := range Scan(red) {
				for _, r := range refs {
					if strings.HasPrefix(r.ID, "f00dfeed") && f.Start < r.End && r.Start < f.End {
						t.Fatalf("finding %+v over placeholder %q in %q", f, red[r.Start:r.End], red)
					}
				}
			}
		}
	})
}
