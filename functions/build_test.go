package functions_test

import (
	"os/exec"
	"testing"
)

// The Lambda mains are deployed as provided.al2023 `bootstrap` binaries
// built with -tags lambda.norpc (no net/rpc runtime shim).
func TestMainsBuildWithLambdaNoRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Lambda binaries")
	}
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "./api", "./lock", "./append", "./timers", "../examples/lambda-worker")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags lambda.norpc: %v\n%s", err, out)
	}
}
