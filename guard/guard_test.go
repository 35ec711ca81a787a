package guard

import (
	"strings"
	"testing"
	"time"
)

func TestDecideTable(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	bnd := &Boundary{Key: "compact:b1", TS: at(5)}
	const A, B, C = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccccccccccccccccccccccccc"
	cases := []struct {
		name string
		in   Input
		want Kind
	}{
		{"missing file may be created", Input{Exists: false}, AllowCreate},
		{"missing file even with stale evidence", Input{Exists: false, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}}}, AllowCreate},
		{"never seen", Input{Exists: true, DiskBlob: A}, DenyNeverSeen},
		{"read current", Input{Exists: true, DiskBlob: A, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}}}, AllowCurrent},
		{"read then drift", Input{Exists: true, DiskBlob: B, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}}}, DenyDrift},
		{"disk blob vouches (line endings)", Input{Exists: true, DiskBlob: B, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A, DiskBlob: B}}}, AllowCurrent},
		{"own write is current", Input{Exists: true, DiskBlob: B, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}, {TS: at(2), Op: "write", Blob: B}}}, AllowCurrent},
		{"latest wins over older match", Input{Exists: true, DiskBlob: A, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}, {TS: at(2), Op: "edit", Blob: B}}}, DenyDrift},
		{"order of evidence slice does not matter", Input{Exists: true, DiskBlob: B, Evidence: []Evidence{{TS: at(2), Op: "edit", Blob: B}, {TS: at(1), Op: "read", Blob: A}}}, AllowCurrent},
		{"partial read fails open", Input{Exists: true, DiskBlob: C, Evidence: []Evidence{{TS: at(1), Op: "read", Partial: true}}}, AllowPartial},
		{"partial after full still fails open", Input{Exists: true, DiskBlob: C, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}, {TS: at(2), Op: "read", Partial: true}}}, AllowPartial},
		{"full after partial checks hash", Input{Exists: true, DiskBlob: C, Evidence: []Evidence{{TS: at(1), Op: "read", Partial: true}, {TS: at(2), Op: "read", Blob: A}}}, DenyDrift},
		{"no-content evidence fails open", Input{Exists: true, DiskBlob: C, Evidence: []Evidence{{TS: at(1), Op: "edit"}}}, AllowPartial},
		{"seen only before compaction", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}}}, DenyCompacted},
		{"evidence at the boundary instant is before it", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(5), Op: "read", Blob: A}}}, DenyCompacted},
		{"re-attached after compaction", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}, {TS: at(6), Op: "attach", Blob: A}}}, AllowCurrent},
		{"re-attached then changed behind the agent", Input{Exists: true, DiskBlob: B, Boundary: bnd, Evidence: []Evidence{{TS: at(6), Op: "attach", Blob: A}}}, DenyDrift},
		// Transcript evidence is placed by transcript order, not by time:
		// Claude Code writes the re-attached files in the same millisecond
		// as the boundary line.
		{"attachment in the boundary's millisecond, after it in the transcript", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(5), Op: "attach", Blob: A, Transcript: true, Epoch: "compact:b1"}}}, AllowCurrent},
		{"transcript read above the boundary, however late its timestamp", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(9), Op: "read", Blob: A, Transcript: true, Epoch: ""}}}, DenyCompacted},
		{"transcript read after an earlier boundary only", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(9), Op: "read", Blob: A, Transcript: true, Epoch: "compact:b0"}}}, DenyCompacted},
		{"hook read after the boundary line's time", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(5).Add(time.Microsecond), Op: "read", Blob: A}}}, AllowCurrent},
		{"transcript evidence without a boundary counts", Input{Exists: true, DiskBlob: A, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A, Transcript: true, Epoch: "compact:b0"}}}, AllowCurrent},
		{"equal timestamps: the later in the slice decides", Input{Exists: true, DiskBlob: B, Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A, Transcript: true}, {TS: at(1), Op: "edit", Blob: B, Transcript: true}}}, AllowCurrent},
		{"restore output counts", Input{Exists: true, DiskBlob: A, Boundary: bnd, Evidence: []Evidence{{TS: at(7), Op: "restore", Blob: A}}}, AllowCurrent},
		{"unknown disk hash never matches", Input{Exists: true, DiskBlob: "", Evidence: []Evidence{{TS: at(1), Op: "read", Blob: A}}}, DenyDrift},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Path = "src/x.go"
			d := Decide(c.in)
			if d.Kind != c.want {
				t.Fatalf("kind = %s, want %s (reason %q)", d.Kind, c.want, d.Reason)
			}
			allow := (c.want == AllowCreate || c.want == AllowCurrent || c.want == AllowPartial)
			if d.Allow != allow {
				t.Fatalf("allow = %v, want %v", d.Allow, allow)
			}
			if !d.Allow {
				if !strings.Contains(d.Reason, "src/x.go") || !strings.Contains(d.Reason, "Read") || !strings.Contains(d.Reason, "git lossless restore") {
					t.Fatalf("deny reason does not say what and what to do: %q", d.Reason)
				}
			}
		})
	}
}

func TestDenyReasonNamesSubagentContext(t *testing.T) {
	d := Decide(Input{Path: "a.txt", Exists: true, DiskBlob: "x", Agent: "ab12"})
	if d.Allow || !strings.Contains(d.Reason, "subagent") || !strings.Contains(d.Reason, "ab12") {
		t.Fatalf("%+v", d)
	}
}

// TestDenyReasonReadWith: the reason names the harness's way of reading a
// file when the adapter supplies one, and no tool at all when it does not
// (the guard knows no harness).
func TestDenyReasonReadWith(t *testing.T) {
	in := Input{Path: "a.txt", Exists: true, DiskBlob: "x", RestoreHint: "git lossless restore --files a.txt"}
	d := Decide(in)
	if want := "Read a.txt again (or run `git lossless restore --files a.txt`), then retry the edit."; d.Allow || !strings.HasSuffix(d.Reason, want) {
		t.Fatalf("neutral reason %q, want it to end in %q", d.Reason, want)
	}
	in.ReadWith = "the Read tool"
	d = Decide(in)
	if want := "Read a.txt again with the Read tool (or run `git lossless restore --files a.txt`), then retry the edit."; d.Allow || !strings.HasSuffix(d.Reason, want) {
		t.Fatalf("reason %q, want it to end in %q", d.Reason, want)
	}
	in.ReadWith = "cat\x1b[2J\n"
	if d = Decide(in); !allPrintable(d.Reason) {
		t.Fatalf("ReadWith reached the reason raw: %q", d.Reason)
	}
}

// BenchmarkDecide is the decision alone, over a context's evidence for one
// file: a few dozen results, a compaction in the middle.
func BenchmarkDecide(b *testing.B) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	in := Input{Path: "src/x.go", Exists: true, DiskBlob: "b", Boundary: &Boundary{Key: "compact:1", TS: t0.Add(20 * time.Second)}}
	for i := range 40 {
		e := Evidence{TS: t0.Add(time.Duration(i) * time.Second), Op: "read", Blob: "a"}
		if i%3 == 0 {
			e.Transcript, e.Epoch = true, map[bool]string{true: "compact:1", false: ""}[i > 20]
		}
		in.Evidence = append(in.Evidence, e)
	}
	in.Evidence[39].Blob = "b"
	for b.Loop() {
		if d := Decide(in); !d.Allow {
			b.Fatal(d.Reason)
		}
	}
}

// TestDriftNamesTheChanger: on a drift denial only, the guard asks who
// changed the file and names them; without an answer the reason keeps
// its wording.
func TestDriftNamesTheChanger(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const A, B = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	asked := 0
	var seenTS time.Time
	changer := func(seen Evidence) *Change {
		asked++
		seenTS = seen.TS
		return &Change{Who: "codex session s2 (subagent y)", TS: t0.Add(42*time.Minute + 7*time.Second)}
	}
	in := Input{Path: "x.go", Exists: true, DiskBlob: B, Agent: "y1", Evidence: []Evidence{{TS: t0, Op: "read", Blob: A}}, ChangedBy: changer}
	d := Decide(in)
	want := "it was changed by codex session s2 (subagent y) at 2026-12-02T10:42:07Z, after this subagent's context (y1) read it. Read x.go again"
	if d.Kind != DenyDrift || !strings.Contains(d.Reason, want) || asked != 1 || !seenTS.Equal(t0) {
		t.Fatalf("reason %q (asked %d) lacks %q", d.Reason, asked, want)
	}
	for _, allow := range []Input{
		{Path: "x.go", Exists: true, DiskBlob: A, Evidence: []Evidence{{TS: t0, Op: "read", Blob: A}}, ChangedBy: changer},
		{Path: "x.go", Exists: false, ChangedBy: changer},
		{Path: "x.go", Exists: true, DiskBlob: B, ChangedBy: changer}, // never seen: nothing to be after
	} {
		asked = 0
		if Decide(allow); asked != 0 {
			t.Errorf("asked who changed it for %+v", allow)
		}
	}
	in.ChangedBy = func(Evidence) *Change { return nil }
	if d := Decide(in); !strings.Contains(d.Reason, "disk now has bbbbbbbbbbbb): someone or something else edited it. Read x.go again") {
		t.Errorf("unknown changer: %q", d.Reason)
	}
}
