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
		"./timers": server, "../examples/lambda-worker": banned, "../lambdaworker": banned} {
		out, err := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", main).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", main, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if dep == b {
					t.Errorf("%s depends on %s", main, dep)
				}
			}
		}
	}
}

// TestNoProductionPackageImportsExamples fails if a package outside
// examples/ imports one inside it: the examples (their functions, their
// mains, the demo worker Lambda examples/lambda-worker) are samples, never
// part of a production binary (issue 27). Tests may use them.
func TestNoProductionPackageImportsExamples(t *testing.T) {
	const mod = "github.com/stela-dev/stela"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	n := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], mod+"/examples/") {
			continue
		}
		n++
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, mod+"/examples/") {
				t.Errorf("%s imports %s: only examples may import examples", fields[0], imp)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list saw only %d packages outside examples/:\n%s", n, out)
	}
}
