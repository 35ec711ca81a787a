package recall

import (
	"math"
	"slices"
	"testing"
)

// The ranking rule (see search.go, resolve and Search), held on
// competing candidates of equal length:
//
//   - a query word is looked up as a term (its stem); only when no span
//     holds that term is it looked for as a fragment inside longer terms
//     (trigrams, weight fragWeight), and only when it is a fragment of
//     nothing as a word one edit away (weight typoWeight). So an exact or
//     stem match always outranks a fragment, and a fragment a typo: the
//     looser kinds are not even candidates while a tighter one matches;
//   - among the spans holding the stem, those holding the query word
//     itself come first: a span with only other forms of its stem scores
//     stemWeight of what it would with the word ("migrate" before
//     "migrating" for the query "migrate", the other way round for
//     "migrating"), also for a word that is its own stem ("compact"
//     before "compacted": the stem occurs there beyond its other forms);
//   - equal scores are ordered newest first.
func TestRankingOrder(t *testing.T) {
	a := newArchive(t)
	pad := " the nightly job ran on the build host and finished cleanly."
	docs := []struct{ name, text string }{
		{"typo", "we will mirgate the ledger tables" + pad},
		{"fragment", "we will premigrates the ledger tables" + pad},
		{"stem", "we will migrating the ledger tables" + pad},
		{"exact-old", "we will migrate the ledger tables" + pad},
		{"exact-new", "we will migrate the ledger tables" + pad},
		{"unrelated", "we will refactor the ledger tables" + pad},
		{"frag-only", "the kubernetesoperator restarted the pods" + pad},
		{"typo-only", "the kubrnetes node restarted the pods" + pad},
		{"typo-alone", "the zeppelin landed on the roof" + pad},
		// A word that is its own stem ("compact"), archived before the
		// spans holding only its other forms, so that time alone would
		// put them first.
		{"self-and-other", "compact the ledger, then compacted again" + pad},
		{"self", "we compact the ledger tables nightly now" + pad},
		{"other", "we compacted the ledger tables nightly now" + pad},
		{"others-twice", "compacting the ledger, then compacted again" + pad},
	}
	ids := map[string]string{}
	for _, d := range docs {
		res := a.add("cc-rank", a.span("s-rank", "assistant", d.text))
		ids[res.Events[0].Writer+"#"+itoa(res.Events[0].Seq)] = d.name
	}
	ix := a.open()
	rank := func(q string) ([]string, Results) {
		res := search(t, ix, Query{Text: q, Limit: 10})
		var got []string
		for _, h := range res.Hits {
			got = append(got, ids[h.ID])
		}
		for i := 1; i < len(res.Hits); i++ {
			if res.Hits[i].Score > res.Hits[i-1].Score {
				t.Errorf("%q: hit %d scores %g over hit %d's %g", q, i, res.Hits[i].Score, i-1, res.Hits[i-1].Score)
			}
		}
		return got, res
	}

	got, res := rank("migrate")
	if want := []string{"exact-new", "exact-old", "stem"}; !slices.Equal(got, want) {
		// exact-new was archived last: newest first among equals. stem
		// is older than both, so this order alone does not show that the
		// exact word outranks it: the scores below do.
		t.Fatalf("migrate: ranking %v, want %v (scores %v)", got, want, scores(res))
	}
	if res.Hits[0].Score != res.Hits[1].Score {
		t.Errorf("the two exact matches score %g and %g: time is not what ordered them", res.Hits[0].Score, res.Hits[1].Score)
	}
	if !(res.Hits[1].Score > res.Hits[2].Score) {
		t.Errorf("the exact word scores %g, another word of its stem %g: want exact > stem", res.Hits[1].Score, res.Hits[2].Score)
	}
	if r := float64(res.Hits[2].Score / res.Hits[1].Score); math.Abs(r-stemWeight) > 1e-6 {
		t.Errorf("stem / exact = %g, want stemWeight %g (equal length, equal tf)", r, stemWeight)
	}
	// The other way round: the span saying "migrating" first, though
	// older than both.
	if got, res := rank("migrating"); !slices.Equal(got, []string{"stem", "exact-new", "exact-old"}) {
		t.Errorf("migrating: ranking %v, want the span saying migrating first (scores %v)", got, scores(res))
	}
	// A word that is its own stem: the spans holding it, by itself or
	// beside another form, before those with other forms only (at equal
	// occurrences of the stem).
	got, res = rank("compact")
	if want := []string{"self", "other", "self-and-other", "others-twice"}; !(slices.Index(got, "self") < slices.Index(got, "other") &&
		slices.Index(got, "self-and-other") < slices.Index(got, "others-twice") && len(got) == len(want)) {
		t.Errorf("compact: ranking %v, want self before other and self-and-other before others-twice (scores %v)", got, scores(res))
	}

	// Every span with the stem "tabl" says "tables": asked for "tables"
	// they score in full, asked for "table" (which none says) stemWeight
	// of that.
	full, part := search(t, ix, Query{Text: "tables"}).Hits[0].Score, search(t, ix, Query{Text: "table"}).Hits[0].Score
	if r := part / full; math.Abs(r-stemWeight) > 1e-6 {
		t.Errorf("table / tables = %g / %g = %g, want stemWeight %g", part, full, r, stemWeight)
	}

	// No span holds the term "kubern": fragments are the candidates, and
	// the typo-only span is not one of them.
	if got, res := rank("kubern"); !slices.Equal(got, []string{"frag-only"}) {
		t.Errorf("kubern: ranking %v, want the fragment only (scores %v)", got, scores(res))
	}
	// A word that is no term and no fragment: one edit away is found.
	if got, res := rank("zepelin"); !slices.Equal(got, []string{"typo-alone"}) {
		t.Errorf("zepelin: ranking %v, want the typo (scores %v)", got, scores(res))
	}
	// A fragment scores fragWeight of the exact term's score, a typo
	// typoWeight: the same span found three ways.
	exact := search(t, ix, Query{Text: "zeppelin"}).Hits[0].Score
	frag := search(t, ix, Query{Text: "zeppeli"}).Hits[0].Score
	typo := search(t, ix, Query{Text: "zepelin"}).Hits[0].Score
	if !(exact > frag && frag > typo) {
		t.Errorf("zeppelin scores: exact %g, fragment %g, typo %g; want exact > fragment > typo", exact, frag, typo)
	}
}

func scores(r Results) []float64 {
	var s []float64
	for _, h := range r.Hits {
		s = append(s, h.Score)
	}
	return s
}
