package obs

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The metrics registry: counters, histograms and gauges read at collection,
// with labels, exposed as Prometheus text (exposition format 0.0.4) and
// read by the EMF writer. It is the few hundred lines of the Prometheus Go
// client Stela used, without its protobuf data model (package doc,
// "Metrics", says why).

// metricKind is a family's Prometheus type.
type metricKind uint8

const (
	kindCounter metricKind = iota
	kindGauge
	kindHistogram
)

func (k metricKind) String() string {
	return [...]string{"counter", "gauge", "histogram"}[k]
}

// registry holds the families; it is safe for concurrent use.
type registry struct {
	mu       sync.Mutex
	families map[string]*family
}

func newRegistry() *registry { return &registry{families: map[string]*family{}} }

// family is one metric name: its series by label values, or a function
// read at each collection.
type family struct {
	name, help string
	kind       metricKind
	labels     []string
	byName     []int     // indexes of labels in name order (the order they are written in)
	bounds     []float64 // histogram upper bounds, ascending, without +Inf

	mu     sync.RWMutex
	series map[string]*series
	// read, when set, is the family's only value, read at collection (ok
	// false: no sample this time).
	read func() (v float64, ok bool)
}

// series is one label set of a family.
type series struct {
	values []string
	v      atomicFloat     // counter value
	counts []atomic.Uint64 // histogram: observations per bound, then above the last
	sum    atomicFloat     // histogram: sum of the observations
	bounds []float64       // histogram: the family's bounds
}

// atomicFloat is a float64 updated without a lock.
type atomicFloat struct{ bits atomic.Uint64 }

func (a *atomicFloat) add(d float64) {
	for {
		old := a.bits.Load()
		if a.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

func (a *atomicFloat) load() float64 { return math.Float64frombits(a.bits.Load()) }

func (r *registry) register(f *family) *family {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.families[f.name]; dup {
		panic("obs: metric " + f.name + " registered twice")
	}
	f.series = map[string]*series{}
	for i := range f.labels {
		f.byName = append(f.byName, i)
	}
	slices.SortFunc(f.byName, func(a, b int) int { return strings.Compare(f.labels[a], f.labels[b]) })
	r.families[f.name] = f
	return f
}

// counter registers a counter family with labels.
func (r *registry) counter(name, help string, labels ...string) *family {
	return r.register(&family{name: name, help: help, kind: kindCounter, labels: labels})
}

// histogram registers a histogram family with bounds and labels.
func (r *registry) histogram(name, help string, bounds []float64, labels ...string) *family {
	return r.register(&family{name: name, help: help, kind: kindHistogram, labels: labels, bounds: bounds})
}

// counterFunc registers a counter without labels whose value read returns.
func (r *registry) counterFunc(name, help string, read func() float64) {
	r.register(&family{name: name, help: help, kind: kindCounter,
		read: func() (float64, bool) { return read(), true }})
}

// gaugeFunc registers a gauge without labels read at collection.
func (r *registry) gaugeFunc(name, help string, read func() (float64, bool)) {
	r.register(&family{name: name, help: help, kind: kindGauge, read: read})
}

// with returns the series of the label values (one per label), creating
// it at the first call. Callers on a hot path keep the result.
func (f *family) with(values ...string) *series {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("obs: metric %s has labels %v, got values %v", f.name, f.labels, values))
	}
	key := strings.Join(values, "\xff")
	f.mu.RLock()
	s := f.series[key]
	f.mu.RUnlock()
	if s != nil {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s = f.series[key]; s == nil {
		s = &series{values: slices.Clone(values)}
		if f.kind == kindHistogram {
			s.counts, s.bounds = make([]atomic.Uint64, len(f.bounds)+1), f.bounds
		}
		f.series[key] = s
	}
	return s
}

// inc adds 1 to a counter.
func (s *series) inc() { s.v.add(1) }

// add adds d ≥ 0 to a counter.
func (s *series) add(d float64) { s.v.add(d) }

// observe records v in a histogram (in the first bucket whose upper bound
// is ≥ v: Prometheus's `le`).
func (s *series) observe(v float64) {
	s.counts[sort.SearchFloat64s(s.bounds, v)].Add(1)
	s.sum.add(v)
}

// sample is one series at a collection.
type sample struct {
	labels []string // values, in the family's label order
	value  float64  // counter or gauge
	counts []uint64 // histogram: per bound, then above the last
	sum    float64
}

// count is a histogram sample's number of observations.
func (s sample) count() uint64 {
	var n uint64
	for _, c := range s.counts {
		n += c
	}
	return n
}

// snapshot is one family at a collection.
type snapshot struct {
	f       *family
	samples []sample
}

// gather reads every family, sorted by name, its samples by label values;
// families without a sample are left out.
func (r *registry) gather() []snapshot {
	r.mu.Lock()
	fams := make([]*family, 0, len(r.families))
	for _, f := range r.families {
		fams = append(fams, f)
	}
	r.mu.Unlock()
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	out := make([]snapshot, 0, len(fams))
	for _, f := range fams {
		snap := snapshot{f: f}
		if f.read != nil {
			if v, ok := f.read(); ok {
				snap.samples = append(snap.samples, sample{value: v})
			}
		} else {
			f.mu.RLock()
			for _, s := range f.series {
				smp := sample{labels: s.values, value: s.v.load(), sum: s.sum.load()}
				for i := range s.counts {
					smp.counts = append(smp.counts, s.counts[i].Load())
				}
				snap.samples = append(snap.samples, smp)
			}
			f.mu.RUnlock()
			slices.SortFunc(snap.samples, func(a, b sample) int { return slices.Compare(a.labels, b.labels) })
		}
		if len(snap.samples) > 0 {
			out = append(out, snap)
		}
	}
	return out
}

// writeText writes snaps in the Prometheus text exposition format 0.0.4.
func writeText(w io.Writer, snaps []snapshot) error {
	bw := bufio.NewWriter(w)
	for _, sn := range snaps {
		f := sn.f
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
		for _, s := range sn.samples {
			if f.kind != kindHistogram {
				writeSample(bw, f, f.name, s.labels, "", s.value)
				continue
			}
			var cum uint64
			for i, b := range f.bounds {
				cum += s.counts[i]
				writeSample(bw, f, f.name+"_bucket", s.labels, formatFloat(b), float64(cum))
			}
			writeSample(bw, f, f.name+"_bucket", s.labels, "+Inf", float64(s.count()))
			writeSample(bw, f, f.name+"_sum", s.labels, "", s.sum)
			writeSample(bw, f, f.name+"_count", s.labels, "", float64(s.count()))
		}
	}
	return bw.Flush()
}

// writeSample writes `name{l1="v1",…,le="le"} value`, the labels sorted by
// name (as the Prometheus client writes them), le last when not "".
func writeSample(w *bufio.Writer, f *family, name string, values []string, le string, v float64) {
	w.WriteString(name)
	if len(f.labels) > 0 || le != "" {
		w.WriteByte('{')
		sep := ""
		for _, i := range f.byName {
			fmt.Fprintf(w, "%s%s=\"%s\"", sep, f.labels[i], escapeLabel(values[i]))
			sep = ","
		}
		if le != "" {
			fmt.Fprintf(w, "%sle=\"%s\"", sep, le)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
