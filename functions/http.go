package functions

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/wire"
)

// headerRequestID is the request-id header httpapi honours and echoes.
const headerRequestID = "X-Request-Id"

// Route subsets served by the worker-facing functions.
var (
	// LockRoutes are the path prefixes the `lock` function serves.
	LockRoutes = wire.WorkerLockRoutes
	// AppendRoutes are the path prefixes the `append` function serves: every
	// worker write.
	AppendRoutes = wire.WorkerWriteRoutes
)

// HTTP serves an http.Handler to API Gateway HTTP API (payload format 2.0)
// events through aws-lambda-go-api-proxy's httpadapter.
type HTTP struct {
	adapter *httpadapter.HandlerAdapterV2
}

// NewHTTP adapts h.
func NewHTTP(h http.Handler) *HTTP {
	return &HTTP{adapter: httpadapter.NewV2(h)}
}

// NewAPI returns the `api` function's handler: the whole HTTP API over db
// and cas (cas may be nil).
func NewAPI(db core.DbExternalApi, cas core.Cas, opts httpapi.Options) *HTTP {
	return NewHTTP(httpapi.New(db, cas, opts))
}

// NewWorker returns a handler serving only the routes whose path starts
// with one of prefixes (LockRoutes, AppendRoutes); every other path
// answers 404 {"err":"not found"} without touching the store.
func NewWorker(db core.DbExternalApi, cas core.Cas, opts httpapi.Options, prefixes []string) *HTTP {
	return NewHTTP(Only(httpapi.New(db, cas, opts), prefixes...))
}

// Handle serves one request. When the client sent no X-Request-Id, API
// Gateway's request id is used, so the access log line, the response header
// and API Gateway's own logs share one id.
func (h *HTTP) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if id := ev.RequestContext.RequestID; id != "" && !hasHeader(ev.Headers, headerRequestID) {
		hs := make(map[string]string, len(ev.Headers)+1)
		for k, v := range ev.Headers {
			hs[k] = v
		}
		hs[strings.ToLower(headerRequestID)] = id
		ev.Headers = hs
	}
	if resp, bad := malformedPath(ev); bad {
		return resp, nil
	}
	return h.adapter.ProxyWithContext(ctx, ev)
}

// malformedPath answers a path that is not a valid request URI (e.g. a
// malformed %-escape) with a JSON 400 like every other error: the adapter
// cannot build an http.Request from it and would fail the invocation.
func malformedPath(ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, bool) {
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	_, err := url.ParseRequestURI("/" + strings.TrimPrefix(path, "/"))
	if err == nil {
		return events.APIGatewayV2HTTPResponse{}, false
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	hs := map[string]string{"Content-Type": "application/json"}
	for k, v := range ev.Headers {
		if strings.EqualFold(k, headerRequestID) {
			hs[headerRequestID] = v
		}
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Headers: hs,
		Body: string(httpapi.ErrorBody("malformed request: " + err.Error()))}, true
}

func hasHeader(hs map[string]string, name string) bool {
	for k := range hs {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// Only returns a handler passing to h the requests whose path starts with
// one of prefixes; the others get 404 {"err":"not found"} (JSON, like
// httpapi's own unknown routes).
func Only(h http.Handler, prefixes ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range prefixes {
			if strings.HasPrefix(r.URL.Path, p) {
				h.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("{\n  \"err\": \"not found\"\n}"))
	})
}
