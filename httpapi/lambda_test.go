package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/stela-dev/stela/core"
)

// TestThroughTheLambdaAdapter drives the handler with API Gateway HTTP API
// (payload 2.0) events through aws-lambda-go-api-proxy, as the Lambda does.
func TestThroughTheLambdaAdapter(t *testing.T) {
	db := newMemDB(t)
	adapter := httpadapter.NewV2(New(db, nil, Options{Clock: &testClock{now: t0}, Authorizer: BearerToken("tok")}))
	call := func(t *testing.T, method, rawPath, query, body string, headers map[string]string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: rawPath, RawQueryString: query, Body: body, Headers: headers,
			RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "api.example.com",
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath}}}
		res, err := adapter.ProxyWithContext(context.Background(), ev)
		if err != nil {
			t.Fatalf("proxy: %v", err)
		}
		return res
	}
	auth := map[string]string{"authorization": "Bearer tok"}
	t.Run("UnauthenticatedIs401", func(t *testing.T) {
		res := call(t, "GET", "/v1/execution-id", "", "", nil)
		if res.StatusCode != http.StatusUnauthorized || res.Body != unauthorizedBody {
			t.Fatalf("status %d body %q", res.StatusCode, res.Body)
		}
	})
	var id string
	t.Run("SubmitAndReadStatus", func(t *testing.T) {
		res := call(t, "POST", "/v1/executions", "", `{"ffqn":"testing:integration/activity.add","params":[1]}`,
			map[string]string{"authorization": "Bearer tok", "content-type": "application/json",
				"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
				"tracestate":  "a=1,b=2", "x-request-id": "lambda-req"})
		if res.StatusCode != http.StatusCreated || res.Headers[headerRequestID] != "lambda-req" {
			t.Fatalf("status %d headers %v body %s", res.StatusCode, res.Headers, res.Body)
		}
		var ok map[string]string
		_ = json.Unmarshal([]byte(res.Body), &ok)
		id = ok["ok"]
		eid, _ := core.ParseExecutionId(id)
		cr, err := db.GetCreateRequest(context.Background(), eid)
		// The adapter splits headers on commas; tracestate is re-joined.
		if err != nil || cr.Metadata["tracing:tracestate"] != "a=1,b=2" {
			t.Fatalf("create request %+v, %v", cr, err)
		}
		res = call(t, "GET", "/v1/executions/"+id+"/status", "", "", map[string]string{"authorization": "Bearer tok", "accept": "text/html, application/json"})
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Body, `"status": "pending_at"`) {
			t.Fatalf("status %d body %s", res.StatusCode, res.Body)
		}
	})
	t.Run("DerivedIDsWithColonsRoute", func(t *testing.T) {
		// HTTP APIs deliver rawPath decoded; ':' and '.' need no escaping.
		res := call(t, "GET", "/v1/executions/"+id+".g:1_1/status", "", "", auth)
		if res.StatusCode != http.StatusNotFound || !strings.Contains(res.Body, `"err": "not found"`) {
			t.Fatalf("status %d body %s", res.StatusCode, res.Body)
		}
	})
	t.Run("QueryStringsPassThrough", func(t *testing.T) {
		res := call(t, "GET", "/v1/executions", "length=0", "", auth)
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d body %s", res.StatusCode, res.Body)
		}
	})
}
