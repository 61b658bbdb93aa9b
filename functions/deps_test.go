package functions_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The Lambda binaries must not link test kits or the in-memory store
// (production mains never import testing), nor what made them twice their
// size (docs/deploy.md, "What a function links"): gRPC and protobuf (the
// official OTLP exporter), the Prometheus client (its protobuf data model),
// and — but for the worker function, whose SDK client offers the default
// credential chain — the AWS SDK's configuration chain and the worker SDK.
func TestMainsLinkNeitherTestCodeNorHeavyDependencies(t *testing.T) {
	banned := []string{"testing", "github.com/stela-dev/stela/store/storetest", "github.com/stela-dev/stela/store/mem",
		"github.com/stela-dev/stela/functions/lambdatest", "google.golang.org/grpc", "google.golang.org/protobuf/proto",
		"github.com/prometheus/client_golang/prometheus", "github.com/prometheus/client_model/go",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"}
	server := append(banned, "github.com/aws/aws-sdk-go-v2/config", "github.com/stela-dev/stela/worker",
		"github.com/stela-dev/stela/client")
	for main, banned := range map[string][]string{"./api": server, "./lock": server, "./append": server,
		"./timers": server, "./worker": banned} {
		out, err := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", main).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", main, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if dep == b {
					t.Errorf("functions/%s depends on %s", strings.TrimPrefix(main, "./"), dep)
				}
			}
		}
	}
}
