// Package secrets finds credentials in text so that the archive never
// stores them in the clear: gitstore redacts every conversation span
// before it is stored, marks file versions that hold one, and the push
// gate refuses to send an object that still holds one. It is the one
// scanner of the project: writers, the push gate, recall and the MCP
// server all call Scan (or Count, or Mask) from here.
//
// # What is found
//
// Provider keys, recognised by their documented prefix and shape, each a
// whole word (a run of [A-Za-z0-9_-] not inside a longer one) — and, in a
// name (ScanName: a session id, a path, a ref), also the end of a word
// after a '-' or '_' ("sess-ghp_…", "MY_AKIA…"):
//
//	anthropic-key          sk-ant-…                          (tail ≥ 32)
//	openai-key             sk-proj-…, sk-svcacct-…, sk-admin-…, and legacy
//	                       sk-… with a random-looking tail of ≥ 32
//	github-token           ghp_ gho_ ghu_ ghs_ ghr_ + 36 alphanumerics,
//	                       github_pat_ + ≥ 22
//	gitlab-token           glpat- + ≥ 20
//	slack-token            xoxa- xoxb- xoxp- xoxo- xoxs- xoxr-, xapp-
//	stripe-key             sk_live_ rk_live_ sk_test_ rk_test_ + ≥ 16
//	aws-access-key-id      AKIA ASIA ABIA ACCA + 16 of [A-Z0-9]
//	aws-secret-access-key  a 40-character mixed-case base64 word within
//	                       300 bytes of an access key id
//	google-api-key         AIza + 35
//	npm-token              npm_ + 36
//	huggingface-token      hf_ + ≥ 34 letters
//	pypi-token             pypi-AgEIcHlwaS5vcmc…
//	age-secret-key         AGE-SECRET-KEY-1… (this project's own identities)
//	jwt                    eyJ….….… (header, payload, signature)
//	private-key            a PEM block from -----BEGIN … PRIVATE KEY----- to
//	                       its END line (or to the end of its base64 body)
//	url-password           the password of scheme://user:password@host
//
// Secret-named assignments: a name whose last part is password, passwd,
// passphrase, pass, secret, token, credential(s), or key after api,
// access, secret, private, client, auth, app, master, signing or
// encryption (DB_PASSWORD, githubToken, "api_key", --password,
// aws_secret_access_key, PGPASSWORD), then "=", ":", ":=" or "=>" (a
// flag also takes a space), then a value. Only the value is a finding;
// the name stays readable. The kind is password, token, secret,
// credential or api-key; "Authorization: Bearer …" gives authorization.
//
// Encoded secrets (encoded.go), the cheap forms: a base64 run (standard
// or URL-safe alphabet, padded or not, wrapped at a line length that is a
// multiple of 4) whose decoded bytes hold any of the above gives
// base64-KIND ("base64-github-token"), and a percent-encoded run (a URL
// query, a form body) whose decoding shows one that the text does not
// gives urlencoded-KIND; a URL's userinfo whose ':' is encoded too
// ("://user%3Apass@") gives url-password. The finding covers the encoded
// bytes that hold the secret. A run is decoded only when it has the shape
// of its encoding (see encoded.go), so ordinary text pays nothing.
//
// # Why a value next to a name is or is not a secret
//
// Code is full of secret-named identifiers whose values are not secrets
// (password: string, token = getToken(), "token_type": "Bearer",
// apiKey: process.env.API_KEY). A value is taken when it is a literal:
// quoted, or an env-style NAME=value, or a YAML-style "name: value" at the
// start of a line. It is left when it is a reference ($VAR, ${…}, {{…}},
// <…>, %s, process.env…, a call), a type or keyword (string, null,
// true, …), a mask (****, xxxx), a placeholder of this package, or
// shorter than 4 bytes. Names other than the password family also ask
// for a random-looking value (8 bytes or more, letters and digits or a
// symbol, Shannon entropy ≥ 3 bits per byte) unless the value is an
// env-style or YAML-style literal at the start of a line (a .env file).
//
// # What is not found
//
// Hex digests (git sha1s, sha256), UUIDs, base64 of ordinary text,
// lockfile integrity hashes, data: URLs, minified code: none of them
// starts with a provider prefix at a word boundary or follows a secret
// name, and the scanner has no free-floating entropy rule (such rules
// flag every digest). The price, and the scanner's known limits, each
// held by a test (TestScanDocumentedLimits) so that this list and the
// behaviour stay together:
//
//   - a secret with no known prefix and no secret name beside it (a
//     random string pasted alone in a prompt);
//   - a key split across two texts (two messages, two spans, two tool
//     results): each is scanned on its own, and neither half has the
//     whole shape;
//   - a key glued to letters before it ("mytokenghp_…"): a prefix must
//     start a word (or, in a name, follow '-' or '_'); in text, a key
//     glued after a '-' or '_' ("export-ghp_…") is not found either;
//   - hex-encoded keys (hex is every digest's alphabet), and encodings
//     other than base64 and percent-encoding: base32, rot13, a reversed
//     key, compressed or encrypted text;
//   - a secret encoded twice (base64 of base64): decoded bytes are not
//     decoded again;
//   - a base64 run longer than 1 MiB (an archive, an image with a key
//     inside), and a wrapped encoding whose lines are not a multiple of 4
//     long or not separated by plain line breaks;
//   - in a base64 run of the standard alphabet, a key whose encoding has
//     no word of 10 or more characters between its '+' and '/' bytes (rare
//     for a key's length); a run glued to base64-alphabet text before it
//     other than through a separator ('/', '+', '-', '_') in its first 64
//     bytes, or glued and longer than 4 KiB.
//
// # JSON
//
// Text is often a JSON document (a transcript line, a request body). A
// backslash escape (\", \n, \uXXXX, …) is a word boundary and never part
// of a value, so a finding never starts or ends inside an escape and
// replacing it with a placeholder keeps a JSON document valid. The only
// findings that may contain escapes are a PEM block and a wrapped base64
// run, whose lines are joined by \n in JSON.
//
// # Speed
//
// One pass over the bytes with a byte-class table; work beyond a table
// lookup happens only at a word whose first bytes are a provider prefix,
// at a word ending in one of a few letter triples (…ord, …ken, …key,
// …ret, …), at "://", at "-----BEGIN", at a "%XX" escape, and at a word
// of 10 bytes or more (a key after a separator, a base64 run: most such
// words are rejected by their length, their neighbours or their letter
// case before any decoding). BenchmarkScan and `git
// lossless bench secrets` measure it against a regexp-only scanner of the
// same rules.
package secrets

// Finding is one secret found in a text: the byte range of the secret
// value itself (for a secret-named assignment, only the value: the name
// stays readable) and its kind.
type Finding struct {
	Start, End int    // text[Start:End] is the secret value
	Kind       string // stable, lower-case kind name: "github-token", "aws-access-key-id", "password", ...
}

// Scan returns the secrets in text, sorted by Start and not overlapping.
// text may be plain text, source code, or JSON (escaped strings: `\"`,
// `\n` and `\uXXXX` are boundaries, never part of a value). A finding
// never starts or ends inside a JSON escape sequence, so replacing it with
// a placeholder keeps a JSON document valid.
func Scan(text []byte) []Finding {
	s := scanner{text: text}
	s.run()
	return s.out
}

// ScanName is Scan of a name or a short field — a session id, an agent,
// a path, a writer or ref name, a commit message — with one more rule: a
// provider key may also end a word after a '-' or '_' ("sess-ghp_…",
// "MY_AKIA…"), as names are built by gluing parts with separators. Text
// is scanned with Scan, where every long word would pay for that search.
func ScanName(text []byte) []Finding {
	s := scanner{text: text, names: true}
	s.run()
	return s.out
}

// Count returns len(Scan(text)).
func Count(text []byte) int { return len(Scan(text)) }
