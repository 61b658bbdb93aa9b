package obs

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The registry's text is what the Prometheus parser reads back: escaped
// label values and help, cumulative buckets with `le` semantics (an
// observation on a bound counts in that bucket), +Inf and _count equal,
// exact counts under concurrent updates.
func TestRegistryWritesPrometheusText(t *testing.T) {
	reg := newRegistry()
	c := reg.counter("t_requests_total", "Requests, by \"route\".\nSecond line \\ backslash.", "route")
	h := reg.histogram("t_latency_seconds", "Latency.", []float64{0.1, 1, 10}, "route")
	reg.counterFunc("t_read_total", "Read at collection.", func() float64 { return 7 })
	reg.gaugeFunc("t_absent", "Nothing to say.", func() (float64, bool) { return 0, false })
	reg.counter("t_unused_total", "A vector without series.", "x")
	weird := "GET /a\"b\\c\nd"

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.with(weird).inc()
				h.with("r").observe(1) // on the bound: the le="1" bucket
			}
		})
	}
	wg.Wait()
	h.with("r").observe(0.05)
	h.with("r").observe(100)

	var b bytes.Buffer
	if err := writeText(&b, reg.gather()); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("the Prometheus parser refuses the text: %v\n%s", err, b.String())
	}
	if _, ok := fams["t_absent"]; ok {
		t.Error("a gauge without a value was written")
	}
	if _, ok := fams["t_unused_total"]; ok {
		t.Error("a vector without series was written")
	}
	req := fams["t_requests_total"]
	if req.GetHelp() != "Requests, by \"route\".\nSecond line \\ backslash." || len(req.GetMetric()) != 1 {
		t.Fatalf("counter family %v", req)
	}
	if m := req.GetMetric()[0]; m.GetLabel()[0].GetValue() != weird || m.GetCounter().GetValue() != 8000 {
		t.Errorf("counter %v, want 8000 with label %q", m, weird)
	}
	if v := fams["t_read_total"].GetMetric()[0].GetCounter().GetValue(); v != 7 {
		t.Errorf("counter func = %v, want 7", v)
	}
	hist := fams["t_latency_seconds"].GetMetric()[0].GetHistogram()
	var cum []uint64
	for _, bk := range hist.GetBucket() {
		cum = append(cum, bk.GetCumulativeCount())
	}
	if want := []uint64{1, 8001, 8001, 8002}; !slices.Equal(cum, want) {
		t.Errorf("cumulative buckets %v, want %v (0.1, 1, 10, +Inf)", cum, want)
	}
	if hist.GetSampleCount() != 8002 || hist.GetSampleSum() != 8000+0.05+100 {
		t.Errorf("count %d sum %v, want 8002 and %v", hist.GetSampleCount(), hist.GetSampleSum(), 8000+0.05+100)
	}
	if !strings.Contains(b.String(), `t_latency_seconds_bucket{route="r",le="+Inf"} 8002`) {
		t.Errorf("no +Inf bucket equal to the count:\n%s", b.String())
	}
}

func TestRegistryRefusesADuplicateName(t *testing.T) {
	reg := newRegistry()
	reg.counter("t_total", "x")
	defer func() {
		if recover() == nil {
			t.Fatal("a second family of the same name was registered")
		}
	}()
	reg.counter("t_total", "y")
}
