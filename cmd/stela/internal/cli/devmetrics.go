package cli

import (
	"bytes"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/stela-dev/stela/obs"
)

// devMetricsHandler serves `stela dev`'s /metrics: Stela's vocabulary
// (obs.Metrics, what the Lambda functions write as EMF) followed by the Go
// runtime and process metrics of the Prometheus Go client, which only the
// CLI links (the Lambda functions do without it: obs/doc.go, "Metrics").
func devMetricsHandler(m *obs.Metrics) http.Handler {
	reg := prometheus.NewRegistry()
	// The collectors /metrics served before Stela's registry had its own.
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		if err := m.WritePrometheus(&b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fams, err := reg.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		enc := expfmt.NewEncoder(&b, format)
		for _, f := range fams {
			if err := enc.Encode(f); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", string(format))
		_, _ = w.Write(b.Bytes())
	})
}
