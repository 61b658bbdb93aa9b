package obs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
)

// CloudWatch Embedded Metric Format (EMF): the Lambda functions print the
// vocabulary as JSON log lines that CloudWatch Logs turns into metrics —
// no API call, no added latency
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
// No maintained Go EMF library exists (AWS publishes none for Go; the
// community ones are stale or need a newer Go), and the format is small,
// so this is a writer over the metrics registry: one vocabulary, two
// exporters.

// DefaultNamespace is the CloudWatch namespace of the EMF metrics.
const DefaultNamespace = "Stela"

// emfMaxValues is EMF's limit of values per metric in one document.
const emfMaxValues = 100

// emfMetric maps one Prometheus family to its CloudWatch metric.
type emfMetric struct {
	name string
	unit string
	// scale multiplies values (seconds → milliseconds).
	scale float64
	// dims are the dimension sets, as label names (CamelCased on the
	// wire); labels outside every set are written as properties (searchable
	// with Logs Insights, no metric cost).
	dims [][]string
}

var noDims = [][]string{{}}

// vocabulary maps the Prometheus names to the EMF names, units and
// dimension sets. Dimensions are few on purpose: every combination of
// dimension values is a billed CloudWatch metric; the route, the
// operation and the like are properties of the log line instead.
var vocabulary = map[string]emfMetric{
	MetricExecutionsCreated:  {"ExecutionsCreated", "Count", 1, noDims},
	MetricExecutionsFinished: {"ExecutionsFinished", "Count", 1, [][]string{{}, {"outcome"}}},
	MetricLockGrants:         {"LockGrants", "Count", 1, noDims},
	MetricLockBatchSize:      {"LockBatchSize", "Count", 1, noDims},
	MetricCommitDuration:     {"StoreCommitLatency", "Milliseconds", 1000, [][]string{{"op"}}},
	MetricCommits:            {"StoreCommits", "Count", 1, [][]string{{"result"}}},
	MetricBackendCommits:     {"BackendCommits", "Count", 1, noDims},
	MetricStoreRetries:       {"StoreRetries", "Count", 1, noDims},
	MetricStoreResends:       {"StoreResends", "Count", 1, noDims},
	MetricWriteTransactions:  {"WriteTransactions", "Count", 1, noDims},
	MetricDynamoThrottles:    {"DynamoDBThrottles", "Count", 1, noDims},
	MetricDynamoErrors:       {"DynamoDBErrors", "Count", 1, [][]string{{"code"}}},
	MetricSweepPasses:        {"SweepPasses", "Count", 1, [][]string{{"result"}}},
	MetricSweepDuration:      {"SweepPassLatency", "Milliseconds", 1000, noDims},
	MetricDelaysFired:        {"DelaysFired", "Count", 1, noDims},
	MetricLocksExpired:       {"LocksExpired", "Count", 1, noDims},
	MetricSweepSkipped:       {"SweepSkipped", "Count", 1, noDims},
	MetricCancellations:      {"CancellationsFinished", "Count", 1, noDims},
	MetricSweepLag:           {"SweepLag", "Seconds", 1, noDims},
	MetricRetentionPasses:    {"RetentionPasses", "Count", 1, [][]string{{"result"}}},
	MetricRetentionExpired:   {"RetentionTreesExpired", "Count", 1, noDims},
	MetricRetentionItems:     {"RetentionItems", "Count", 1, noDims},
	MetricHTTPRequests:       {"HTTPRequests", "Count", 1, [][]string{{}, {"status_class"}}},
	MetricHTTPDuration:       {"HTTPLatency", "Milliseconds", 1000, noDims},
}

// EMFName returns the CloudWatch metric name of a Prometheus family ("" if
// it is not exported as EMF).
func EMFName(promName string) string { return vocabulary[promName].name }

// EMFNames lists every CloudWatch metric name the functions write, sorted
// (the CDK stack's alarms and dashboard may only use these).
func EMFNames() []string {
	out := make([]string, 0, len(vocabulary))
	for _, m := range vocabulary {
		out = append(out, m.name)
	}
	sort.Strings(out)
	return out
}

// EMFOptions configure WriteEMF.
type EMFOptions struct {
	// Namespace of the metrics; default DefaultNamespace.
	Namespace string
	// Timestamp of the data points; default now.
	Timestamp time.Time
	// Properties are added to every line (not dimensions): e.g. the
	// function name and the invocation's request id.
	Properties map[string]string
}

// emfState remembers what the previous flush wrote, so that each flush
// writes the increments since (counters, histogram counts).
type emfState struct {
	mu   sync.Mutex
	last map[string]float64
}

// WriteEMF writes what changed since the previous call as EMF lines to w:
// counters as their increment (nothing when zero), histograms as the
// values of the new observations at bucket resolution (each observation
// counted at its bucket's upper bound; beyond the last bound, at the last
// bound), gauges as their value. Each line holds the series of one label
// set (several lines when a histogram has more than 100 new values). It is
// meant to be called once per Lambda invocation; concurrent calls are
// serialized.
func (m *Metrics) WriteEMF(w io.Writer, opts EMFOptions) error {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Timestamp.IsZero() {
		opts.Timestamp = time.Now()
	}
	m.emf.mu.Lock()
	defer m.emf.mu.Unlock()
	if m.emf.last == nil {
		m.emf.last = map[string]float64{}
	}
	snaps := m.reg.gather()
	m.lag.reset()
	groups := map[string]*emfGroup{}
	var order []string
	for _, sn := range snaps {
		def, ok := vocabulary[sn.f.name]
		if !ok {
			continue
		}
		for _, smp := range sn.samples {
			labels := make(map[string]string, len(sn.f.labels)+1)
			for i, l := range sn.f.labels {
				labels[l] = smp.labels[i]
			}
			values := m.emf.values(sn.f, labels, smp, def.scale)
			if len(values) == 0 {
				continue
			}
			if c, ok := labels["code"]; ok && c != "" {
				labels["status_class"] = c[:1] + "xx"
			}
			key := labelKey(labels)
			g := groups[key]
			if g == nil {
				g = &emfGroup{labels: labels}
				groups[key] = g
				order = append(order, key)
			}
			g.metrics = append(g.metrics, emfSeries{def: def, values: values})
		}
	}
	sort.Strings(order)
	var buf bytes.Buffer
	for _, key := range order {
		for _, doc := range groups[key].docs(opts) {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(doc); err != nil {
				return fmt.Errorf("obs: encode EMF: %w", err)
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return fmt.Errorf("obs: write EMF: %w", err)
			}
		}
	}
	return nil
}

// values returns the EMF values of one series since the last flush and
// remembers its current state.
func (s *emfState) values(f *family, labels map[string]string, smp sample, scale float64) []float64 {
	key := f.name + "{" + labelKey(labels) + "}"
	switch f.kind {
	case kindCounter:
		d := smp.value - s.last[key]
		s.last[key] = smp.value
		if d <= 0 {
			return nil
		}
		return []float64{d * scale}
	case kindGauge:
		return []float64{smp.value * scale}
	case kindHistogram:
		// Each new observation at its bucket's upper bound; those above
		// the last bound at the last bound.
		var out []float64
		for i, c := range smp.counts {
			bound := f.bounds[min(i, len(f.bounds)-1)]
			bk := fmt.Sprintf("%s#%d", key, i)
			n := c - uint64(s.last[bk])
			s.last[bk] = float64(c)
			for range n {
				out = append(out, bound*scale)
			}
		}
		return out
	}
	return nil
}

func labelKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, labels[k])
	}
	return b.String()
}

// emfKey is a label's key on the wire: CamelCase ("status_class" →
// "StatusClass").
func emfKey(label string) string {
	var b strings.Builder
	up := true
	for _, r := range label {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

type emfSeries struct {
	def    emfMetric
	values []float64
}

// emfGroup is the series of one label set.
type emfGroup struct {
	labels  map[string]string
	metrics []emfSeries
}

// docs renders the group as EMF documents (more than one when a series
// has more than emfMaxValues values).
func (g *emfGroup) docs(opts EMFOptions) []map[string]any {
	var out []map[string]any
	for chunk := 0; ; chunk++ {
		doc := map[string]any{}
		for k, v := range opts.Properties {
			doc[k] = v
		}
		for k, v := range g.labels {
			doc[emfKey(k)] = v
		}
		// One directive per distinct dimension-set spec.
		directives := map[string]map[string]any{}
		var dirOrder []string
		wrote := false
		for _, s := range g.metrics {
			lo := chunk * emfMaxValues
			if lo >= len(s.values) {
				continue
			}
			vals := s.values[lo:min(lo+emfMaxValues, len(s.values))]
			wrote = true
			if len(vals) == 1 {
				doc[s.def.name] = vals[0]
			} else {
				doc[s.def.name] = vals
			}
			var sets [][]string
			for _, set := range s.def.dims {
				ds := []string{}
				ok := true
				for _, l := range set {
					if _, has := g.labels[l]; !has {
						ok = false
						break
					}
					ds = append(ds, emfKey(l))
				}
				if ok {
					sets = append(sets, ds)
				}
			}
			if len(sets) == 0 {
				sets = [][]string{{}}
			}
			dk := fmt.Sprint(sets)
			d := directives[dk]
			if d == nil {
				d = map[string]any{"Namespace": opts.Namespace, "Dimensions": sets, "Metrics": []map[string]string{}}
				directives[dk] = d
				dirOrder = append(dirOrder, dk)
			}
			d["Metrics"] = append(d["Metrics"].([]map[string]string), map[string]string{"Name": s.def.name, "Unit": s.def.unit})
		}
		if !wrote {
			return out
		}
		var cwm []map[string]any
		for _, k := range dirOrder {
			cwm = append(cwm, directives[k])
		}
		doc["_aws"] = map[string]any{"Timestamp": opts.Timestamp.UnixMilli(), "CloudWatchMetrics": cwm}
		out = append(out, doc)
	}
}
