package recall

// Reading documents out of the archive on every core (blob, decryption
// when an identity opens it, the secret scan) and handing them to the
// builders, one per worker.

import (
	"context"
	"encoding/hex"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/secrets"
)

// docInput is one event to index: a stored line to parse, or an event
// already parsed (the decrypting pass).
type docInput struct {
	line    []byte
	meta    *docMeta // a document already indexed by metadata, to decrypt
	writer  string
	epoch   uint32
	decrypt bool // index the plaintext of an encrypted span (in-memory segment only)
	// pruned holds the blobs prune records of the writer removed.
	pruned map[string]bool
}

// buildStats counts what a build did.
type buildStats struct {
	events     int   // events parsed
	docs       int   // documents indexed
	unreadable int   // spans whose content could not be read (pruned)
	locked     int   // encrypted spans indexed by metadata only
	pruned     int   // documents whose content a prune record removed
	bytes      int64 // span content bytes read
	badLines   int
}

func (s *buildStats) add(o buildStats) {
	s.events += o.events
	s.docs += o.docs
	s.unreadable += o.unreadable
	s.locked += o.locked
	s.pruned += o.pruned
	s.bytes += o.bytes
	s.badLines += o.badLines
}

// build indexes inputs on the index's workers and returns the segment
// data. Document order is by worker, not by input: nothing depends on it.
func (ix *Index) build(ctx context.Context, inputs []docInput) (*segData, buildStats, error) {
	workers := ix.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, (len(inputs)+63)/64))
	const chunk = 32
	var next atomic.Int64
	bs := make([]*builder, workers)
	stats := make([]buildStats, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		bs[w] = newBuilder(len(inputs) / workers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := processor{ix: ix, b: bs[w], st: &stats[w]}
			for ctx.Err() == nil {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(inputs) {
					errs[w] = bs[w].finalize()
					return
				}
				for i := lo; i < min(lo+chunk, len(inputs)); i++ {
					p.process(ctx, &inputs[i])
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, buildStats{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, buildStats{}, err
	}
	var total buildStats
	for _, s := range stats {
		total.add(s)
	}
	return finish(bs), total, nil
}

// processor turns inputs into documents of one builder.
type processor struct {
	ix   *Index
	b    *builder
	st   *buildStats
	text []byte
}

func (p *processor) process(ctx context.Context, in *docInput) {
	var m docMeta
	if in.meta != nil {
		m = *in.meta
		m.Flags |= flagEncrypted
	} else {
		f, ok := readLine(in.line)
		if !ok {
			p.st.badLines++
			return
		}
		p.st.events++
		if m, ok = docMetaOf(&f, in.writer); !ok {
			return
		}
		if in.pruned[f.blob] {
			p.st.pruned++
			return
		}
	}
	m.Epoch = in.epoch
	if m.Kind == KindFile {
		p.b.addDoc(m, nil, false, m.Path)
		p.st.docs++
		return
	}
	enc := m.Flags&flagEncrypted != 0
	if enc && !in.decrypt {
		p.b.addDoc(m, nil, false, m.Tool, m.Path)
		p.st.docs++
		p.st.locked++
		return
	}
	var data []byte
	var err error
	if enc {
		data, err = p.ix.st.Crypt().OpenContent(ctx, eventOf(&m), p.ix.opt.Identities)
	} else {
		data, err = p.ix.st.Objects().Blob(ctx, blobHex(&m))
	}
	if err != nil {
		if !errors.Is(err, gitstore.ErrContentLocked) {
			p.st.unreadable++
		}
		return
	}
	if enc {
		m.Flags |= flagDecrypted
	}
	p.st.bytes += int64(len(data))
	switch m.Kind {
	case KindUserPrompt, KindCompactSummary, KindProxy:
		// The first words, for digests: these few kinds are unescaped
		// whole (the rest are tokenized straight from the JSON).
		text, sumFrom, _ := extractText(p.text[:0], data)
		p.text = text
		m.Head = head(text, max(0, sumFrom), secrets.Scan(text))
	}
	p.b.addDoc(m, data, true, m.Tool, m.Path)
	p.st.docs++
}

// docMetaOf returns the document an event is, if it is one: a span with
// content, or a file version.
func docMetaOf(f *eventFields, writer string) (docMeta, bool) {
	m := docMeta{
		Writer: writer, Session: f.session, Agent: f.agent, Source: f.source, Tool: f.tool,
		Path: f.path, Op: f.op, View: f.view, Seq: f.seq, TS: f.ts.UnixNano(), Bytes: f.bytes, Harness: f.harness,
	}
	if f.sidechain {
		m.Flags |= flagSidechain
	}
	if f.enc == gitstore.EncAge {
		m.Flags |= flagEncrypted
	}
	if len(f.blob) == 40 {
		if _, err := hex.Decode(m.Blob[:], []byte(f.blob)); err == nil {
			m.Flags |= flagBlob
		}
	}
	switch {
	case f.op == gitstore.OpSpan:
		if m.Flags&flagBlob == 0 {
			return m, false // withheld or without content: nothing to search or read
		}
		if f.source == "proxy" {
			m.Kind = KindProxy
			m.SpanID = f.span
			if f.kind == "journal" {
				m.Flags |= flagJournal
			}
		} else {
			m.Kind = canonicalKind(f.kind)
		}
	case f.op.IsFileVersion():
		m.Kind = KindFile
	default:
		return m, false
	}
	return m, true
}

// mergeData merges segment data, older first: the documents in order, the
// dictionaries joined.
func mergeData(parts []*segData) *segData {
	out := &segData{}
	base := make([]uint32, len(parts))
	for i, p := range parts {
		base[i] = uint32(len(out.docs))
		out.docs = append(out.docs, p.docs...)
	}
	pos := make([]int, len(parts))
	for {
		min := ""
		found := false
		for i, p := range parts {
			if pos[i] < len(p.terms) && (!found || p.terms[pos[i]] < min) {
				min, found = p.terms[pos[i]], true
			}
		}
		if !found {
			return out
		}
		var post []uint32
		for i, p := range parts {
			if pos[i] < len(p.terms) && p.terms[pos[i]] == min {
				src := p.post[pos[i]]
				if post == nil && base[i] == 0 {
					post = slices.Clip(src)
				} else {
					for k := 0; k+1 < len(src); k += 2 {
						post = append(post, src[k]+base[i], src[k+1])
					}
				}
				pos[i]++
			}
		}
		out.terms = append(out.terms, min)
		out.post = append(out.post, post)
	}
}
