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
// whole word (a run of [A-Za-z0-9_-] not inside a longer one):
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
// flag every digest). A secret with no prefix and no name beside it is
// therefore not found; that is the price of not flagging every hash.
//
// # JSON
//
// Text is often a JSON document (a transcript line, a request body). A
// backslash escape (\", \n, \uXXXX, …) is a word boundary and never part
// of a value, so a finding never starts or ends inside an escape and
// replacing it with a placeholder keeps a JSON document valid. The only
// finding that may contain escapes is a PEM block, whose lines are
// joined by \n in JSON.
//
// # Speed
//
// One pass over the bytes with a byte-class table; work beyond a table
// lookup happens only at a word whose first bytes are a provider prefix,
// at a word ending in one of a few letter triples (…ord, …ken, …key,
// …ret, …), at "://" and at "-----BEGIN". BenchmarkScan and `git
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

// Count returns len(Scan(text)).
func Count(text []byte) int { return len(Scan(text)) }
