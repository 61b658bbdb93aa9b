package cli

import (
	"net/http"

	"github.com/stela-dev/stela/bench"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/obs"
)

// metricsPath is where `stela dev` serves its metrics as Prometheus text.
const metricsPath = "/metrics"

// withDevRoutes serves bench.StatsPath and metricsPath (GET, behind the API's
// Authorizer: with --token a scraper sends it as a bearer token; the web
// console never calls them) and passes every other request to next.
func withDevRoutes(next http.Handler, auth httpapi.Authorizer, st *devStack, mode string, metrics *obs.Metrics) http.Handler {
	prom := devMetricsHandler(metrics)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path != bench.StatsPath && r.URL.Path != metricsPath) || r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		if err := auth.Authorize(r); err != nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "missing or invalid API token", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == metricsPath {
			prom.ServeHTTP(w, r)
			return
		}
		bench.ServeStats(w, mode, st.sqlite, st.durability)
	})
}
