package secrets

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// decodeFinding decodes the encoded bytes a base64 finding covers (line
// breaks and JSON-escaped line breaks dropped) with the alphabet given.
func decodeFinding(t *testing.T, text string, f Finding, enc *base64.Encoding) string {
	t.Helper()
	s := text[f.Start:f.End]
	for _, br := range []string{`\r\n`, `\n`, "\r\n", "\n"} {
		s = strings.ReplaceAll(s, br, "")
	}
	s = strings.TrimRight(s, "=")
	if len(s)%4 == 1 {
		s = s[:len(s)-1]
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		t.Fatalf("finding %q does not decode: %v", s, err)
	}
	return string(b)
}

// A key in base64 (standard or URL-safe, padded or not) is found as
// base64-KIND, and the finding covers the encoded key: what it covers
// decodes to text holding the key. Every provider kind, in prose, JSON
// and YAML, at each offset modulo 3 of the decoded text.
func TestScanBase64(t *testing.T) {
	g := newGen(11)
	for kind, key := range keys(g) {
		for pad, plain := range []string{key, "my key: " + key, "x=" + key + "\n", "\n" + key + " trailing words"} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				b64 := enc.EncodeToString([]byte(plain))
				for _, form := range []string{"%s", "echo %s | base64 -d", `{"data":"%s"}`, "secret:\n  value: %s\n"} {
					text := fmt.Sprintf(form, b64)
					fs := Scan([]byte(text))
					if len(fs) != 1 || fs[0].Kind != "base64-"+kind {
						t.Errorf("%s (%d) in %q: %v", kind, pad, form, show(text, fs))
						continue
					}
					dec := base64.RawStdEncoding
					if enc == base64.URLEncoding || enc == base64.RawURLEncoding {
						dec = base64.RawURLEncoding
					}
					if got := decodeFinding(t, text, fs[0], dec); !strings.Contains(got, key) {
						t.Errorf("%s: the finding decodes to %q, not the key", kind, got)
					}
				}
			}
		}
	}
}

// `base64` wraps at 76 columns, PEM and openssl at 64: a key that falls
// across a line break is still found, raw and inside a JSON string; the
// finding starts and ends outside any escape, so redacting it keeps JSON
// valid. A run glued to text before it ("…/api/" + encoding) is decoded
// at every alignment.
func TestScanBase64Wrapped(t *testing.T) {
	g := newGen(12)
	k := keys(g)
	env := "# production\nHOME=/home/deploy\nSTRIPE=" + k["stripe-key"] + "\nAWS_ACCESS_KEY_ID=" + k["aws-access-key-id"] + "\n" +
		"TOKEN=" + k["github-token"] + "\n"
	b64 := base64.StdEncoding.EncodeToString([]byte(env))
	wrap := func(s string, n int, br string) string {
		var lines []string
		for len(s) > n {
			lines = append(lines, s[:n])
			s = s[n:]
		}
		return strings.Join(append(lines, s), br)
	}
	for _, c := range []struct {
		name string
		text string
	}{
		{"76 \\n", wrap(b64, 76, "\n")},
		{"64 \\r\\n", wrap(b64, 64, "\r\n")},
		{"json", mustJSON(map[string]string{"content": wrap(b64, 76, "\n")})},
		{"glued", "GET https://api.example.com/v1/blob/" + b64 + " 200"},
	} {
		fs := Scan([]byte(c.text))
		if len(fs) == 0 {
			t.Errorf("%s: nothing found in %q", c.name, c.text)
			continue
		}
		for _, f := range fs {
			if !strings.HasPrefix(f.Kind, "base64-") {
				t.Errorf("%s: %v", c.name, show(c.text, fs))
			}
		}
		if red := redactAll(c.text, fs); strings.HasPrefix(c.text, "{") && !json.Valid(red) {
			t.Errorf("%s: redaction broke JSON: %s", c.name, red)
		}
		if again := Scan(redactAll(c.text, fs)); len(again) != 0 {
			t.Errorf("%s: findings left after redaction: %v", c.name, show(string(redactAll(c.text, fs)), again))
		}
	}
}

// Percent-encoding: a query value or form field that decodes to a key,
// and a URL's userinfo whose ':' is encoded too. A finding covers the
// encoded bytes; a key with no escape in it keeps its own kind (the text
// shows it as it is).
func TestScanPercentEncoded(t *testing.T) {
	g := newGen(13)
	k := keys(g)
	cases := []struct{ text, kind, value string }{
		{"https://api.example.com/v1?q=" + strings.ReplaceAll(k["anthropic-key"], "-", "%2D") + "&x=1", "urlencoded-anthropic-key", ""},
		{"GET /search?id=" + strings.ReplaceAll(k["github-token"], "_", "%5F") + " HTTP/1.1", "urlencoded-github-token", ""},
		{"curl -d 'grant=" + strings.ReplaceAll(k["slack-token"], "-", "%2D") + "&scope=all'", "urlencoded-slack-token", ""},
		{"https://deploy%3Ahunter2%21secret@git.example.com/r.git", "url-password", "hunter2%21secret"},
		{"https://user:p%40ssw0rd@host/x", "url-password", "p%40ssw0rd"},
		{"https://api.example.com/v1?key=" + k["github-token"] + "&n=%20", "github-token", k["github-token"]},
	}
	for _, c := range cases {
		fs := Scan([]byte(c.text))
		if len(fs) != 1 || fs[0].Kind != c.kind {
			t.Errorf("%q: %v, want one %s", c.text, show(c.text, fs), c.kind)
			continue
		}
		got := c.text[fs[0].Start:fs[0].End]
		if c.value != "" && got != c.value {
			t.Errorf("%q: found %q, want %q", c.text, got, c.value)
		}
		if c.value == "" {
			if dec, err := url.QueryUnescape(got); err != nil || !strings.Contains(k[strings.TrimPrefix(c.kind, "urlencoded-")], strings.TrimSpace(dec)) && dec != k[strings.TrimPrefix(c.kind, "urlencoded-")] {
				t.Errorf("%q: the finding %q decodes to %q", c.text, got, dec)
			}
		}
	}
	// Printf formats and escaped paths hold no secret.
	for _, text := range []string{"printf(\"%5d %s\\n\", n, s)", "https://h/a%20b/c%2Fd?q=hello%20world", "100%ab done", "%E2%9C%93 ok"} {
		if fs := Scan([]byte(text)); len(fs) != 0 {
			t.Errorf("%q: %v", text, show(text, fs))
		}
	}
}

// In a name (ScanName), a key after a '-' or '_' inside a word (a
// session id, a writer name built from one) is found; one glued to
// letters is not (a prefix starts a part of a word).
func TestScanNameEmbeddedKey(t *testing.T) {
	g := newGen(14)
	k := keys(g)
	for _, c := range []struct{ text, kind, value string }{
		{"sess-" + k["github-token"], "github-token", k["github-token"]},
		{"cli-sess-" + k["github-token"], "github-token", k["github-token"]},
		{"MY_" + k["aws-access-key-id"], "aws-access-key-id", k["aws-access-key-id"]},
		{`{"session":"run-` + k["openai-key"] + `"}`, "openai-key", k["openai-key"]},
	} {
		fs := ScanName([]byte(c.text))
		if len(fs) != 1 || fs[0].Kind != c.kind || c.text[fs[0].Start:fs[0].End] != c.value {
			t.Errorf("%q: %v", c.text, show(c.text, fs))
		}
	}
	for _, text := range []string{"sessghp" + k["github-token"][3:], "fewer-permission-prompts", "run_in_background", "9e33e208-2b1c-4064-b54f-efdf0f79781b"} {
		if fs := ScanName([]byte(text)); len(fs) != 0 {
			t.Errorf("%q: %v", text, show(text, fs))
		}
	}
}

// MaskString masks each secret in a name and leaves the rest readable.
func TestMaskString(t *testing.T) {
	k := keys(newGen(15))["github-token"]
	if got, want := MaskString("cli-sess-"+k), "cli-sess-"+Mask([]byte(k)); got != want {
		t.Errorf("MaskString: %q, want %q", got, want)
	}
	if got := MaskString("plain/path.go"); got != "plain/path.go" {
		t.Errorf("MaskString changed a clean string: %q", got)
	}
}

// TestScanDocumentedLimits: what the scanner does not find, as the
// package doc's "What is not found" and README's Limits say. Each case
// asserts that Scan finds nothing: a documented limit, held to its
// documentation. A change that starts finding one should move it to the
// tests above and update both documents.
func TestScanDocumentedLimits(t *testing.T) {
	g := newGen(16)
	k := keys(g)
	gh := k["github-token"]
	cases := map[string][]string{
		// A key split across two messages (two spans, two texts): neither
		// half has the whole shape.
		"split across messages": {"my token starts " + gh[:20], "and ends " + gh[20:]},
		// Hex-encoded: hex is every digest's alphabet; decoding it would
		// cost on every hash for a form nobody pastes.
		"hex": {hex.EncodeToString([]byte("token " + gh))},
		// Encodings other than base64 and percent-encoding: base32, a
		// double base64, a reversed key, rot13.
		"base32":        {base32.StdEncoding.EncodeToString([]byte(gh))},
		"base64 twice":  {base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte("key " + gh))))},
		"reversed":      {reverse(gh)},
		"rot13":         {rot13(gh)},
		"glued to word": {"mytoken" + gh},
		// In text (not a name: see ScanName), a key glued after a '-' or
		// '_' inside a longer word.
		"glued after a separator in text": {"export-" + gh + " done", "MY_" + k["aws-access-key-id"]},
		// A random string with no known prefix and no secret name beside
		// it: without a free-floating entropy rule (which flags every
		// digest) nothing tells it from an id.
		"no prefix, no name": {"use " + g.pick(alnum, 40) + " to log in"},
		// A base64 run longer than the decoding bound (an archive or an
		// image with a key inside) is not decoded.
		"huge base64": {base64.StdEncoding.EncodeToString([]byte(strings.Repeat("The quick brown fox. ", 60000) + gh))},
	}
	for name, texts := range cases {
		for _, text := range texts {
			if fs := Scan([]byte(text)); len(fs) != 0 {
				t.Errorf("%s (a documented limit) is now found: %v", name, show(text[:min(len(text), 200)], fs))
			}
		}
	}
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func rot13(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, s)
}
