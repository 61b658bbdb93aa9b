package tracemeta_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/obs/tracemeta"
)

const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestRoundTrip(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/executions", nil)
	r.Header.Set("traceparent", tp)
	md := tracemeta.ForRequest(context.Background(), r)
	if md[tracemeta.KeyTraceparent] != tp || len(md) != 1 {
		t.Fatalf("metadata %v", md)
	}
	h := http.Header{}
	tracemeta.Header(h, md)
	if h.Get("traceparent") != tp {
		t.Fatalf("header %v", h)
	}
	sc := trace.SpanContextFromContext(tracemeta.Context(context.Background(), md))
	if !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("context span %v", sc)
	}
}

func TestLinkedMetadataIsNotAParent(t *testing.T) {
	md := core.ExecutionMetadata{tracemeta.KeyTraceparent: tp, tracemeta.KeyLinked: ""}
	sc, linked := tracemeta.SpanContext(md)
	if !sc.IsValid() || !linked {
		t.Fatalf("span context %v linked %v", sc, linked)
	}
	if trace.SpanContextFromContext(tracemeta.Context(context.Background(), md)).IsValid() {
		t.Fatal("a linked context became the parent")
	}
}

func TestNoOrInvalidTraceparentIsNoMetadata(t *testing.T) {
	for _, v := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		r := httptest.NewRequest("POST", "/v1/executions", nil)
		if v != "" {
			r.Header.Set("traceparent", v)
		}
		if md := tracemeta.ForRequest(context.Background(), r); md != nil {
			t.Errorf("traceparent %q: metadata %v, want none", v, md)
		}
	}
	if sc, _ := tracemeta.SpanContext(nil); sc.IsValid() {
		t.Error("nil metadata has a span context")
	}
}
