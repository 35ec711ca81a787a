package gitobj

// FastDeflaterForTest exposes the pack encoder to the external test
// package, whose benchmarks use internal/benchdata (which imports
// gitstore).
type FastDeflaterForTest struct{ e fastDeflater }

func NewFastDeflaterForTest() *FastDeflaterForTest { return new(FastDeflaterForTest) }

func (f *FastDeflaterForTest) AppendZlib(dst, src []byte) []byte { return f.e.appendZlib(dst, src) }
