// Package agenttracetest validates Agent Trace records against the
// specification's own JSON Schema (testdata/agent-trace, copied from
// github.com/cursor/agent-trace), for the tests of the exporter and of the
// command that runs it: the check is the specification's, not ours.
//
// The schema is applied by github.com/google/jsonschema-go (draft
// 2020-12), which ignores "format" (its package doc says so); the
// schema's formats (uuid, date-time, uri) are checked here, at every place
// the schema names one, so that an id that is no UUID fails as the
// specification means it to.
package agenttracetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Dir is the directory holding the schema and the specification's
// examples.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "agent-trace")
}

// Validator checks records against the schema.
type Validator struct {
	resolved *jsonschema.Resolved
	raw      map[string]any // the schema as JSON values, for the formats
}

// Load reads and resolves the schema; it fails the test if it cannot.
func Load(t testing.TB) *Validator {
	t.Helper()
	v, err := New(filepath.Join(Dir(), "trace-record.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// New reads and resolves the schema at path.
func New(path string) (*Validator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parse schema %s: %w", path, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve schema %s: %w", path, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parse schema %s: %w", path, err)
	}
	return &Validator{resolved: rs, raw: raw}, nil
}

// Validate checks one record (a JSON object) against the schema and its
// formats.
func (v *Validator) Validate(record []byte) error {
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	var inst any
	if err := dec.Decode(&inst); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	// jsonschema-go wants float64 numbers, as json.Unmarshal makes them.
	var plain any
	if err := json.Unmarshal(record, &plain); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := v.resolved.Validate(plain); err != nil {
		return err
	}
	return v.formats(v.raw, plain, "")
}

// ValidateLines checks every line of JSON Lines output and returns the
// records decoded; it fails the test on the first invalid one or on none.
func (v *Validator) ValidateLines(t testing.TB, out []byte) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for i, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if err := v.Validate(line); err != nil {
			t.Fatalf("record %d does not validate against the Agent Trace schema: %v\n%s", i+1, err, line)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, m)
	}
	if len(recs) == 0 || len(out) == 0 {
		t.Fatalf("no record in %q", out)
	}
	return recs
}

// formats walks the schema beside the instance (through $ref into $defs,
// properties and items, the keywords this schema uses) and checks each
// string the schema gives a format.
func (v *Validator) formats(schema map[string]any, inst any, at string) error {
	if ref, ok := schema["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		defs, _ := v.raw["$defs"].(map[string]any)
		sub, _ := defs[name].(map[string]any)
		if !ok || sub == nil {
			return fmt.Errorf("schema: $ref %q not followed by the format check", ref)
		}
		if err := v.formats(sub, inst, at); err != nil {
			return err
		}
	}
	if f, ok := schema["format"].(string); ok {
		if s, ok := inst.(string); ok {
			if err := checkFormat(f, s); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		if obj, ok := inst.(map[string]any); ok {
			for k, ps := range props {
				val, present := obj[k]
				sub, _ := ps.(map[string]any)
				if present && sub != nil {
					if err := v.formats(sub, val, at+"/"+k); err != nil {
						return err
					}
				}
			}
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		if arr, ok := inst.([]any); ok {
			for i, e := range arr {
				if err := v.formats(items, e, fmt.Sprintf("%s/%d", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var (
	uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// RFC 3339 §5.6 date-time (with the "T"/"Z" case freedom it allows).
	dateTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$`)
	// RFC 3986: a scheme, then only characters a URI may hold, percent
	// escapes well formed.
	uriRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*:([A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$`)
)

// checkFormat is the JSON Schema format assertion for the formats the
// Agent Trace schema uses.
func checkFormat(format, s string) error {
	switch format {
	case "uuid":
		if !uuidRE.MatchString(s) {
			return fmt.Errorf("%q is not a uuid", s)
		}
	case "date-time":
		if !dateTimeRE.MatchString(s) {
			return fmt.Errorf("%q is not an RFC 3339 date-time", s)
		}
		if _, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s)); err != nil {
			return fmt.Errorf("%q is not an RFC 3339 date-time: %v", s, err)
		}
	case "uri":
		if !uriRE.MatchString(s) {
			return fmt.Errorf("%q is not a URI", s)
		}
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Errorf("%q is not an absolute URI", s)
		}
	default:
		return fmt.Errorf("format %q unknown to the check", format)
	}
	return nil
}
