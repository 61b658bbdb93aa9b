package isolation_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runRunner runs localstack/run-tests.sh in dry-run mode (it prints the go
// test command instead of running it) with env added.
func runRunner(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", "../run-tests.sh")
	cmd.Env = append(os.Environ(), append([]string{"STELA_RUN_TESTS_DRY_RUN=1", "AWS_ENDPOINT_URL="}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run-tests.sh: %v\n%s", err, out)
	}
	return string(out)
}

// A moto_server endpoint (recognised by its /moto-api/ dashboard) gets the
// contract race tests reported as not applicable, with the reason, and
// skipped.
func TestRunnerReportsRaceTestsNotApplicableOnMoto(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moto-api/" {
			_, _ = w.Write([]byte("<title>Moto</title>"))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer fake.Close()
	out := runRunner(t, "AWS_ENDPOINT_URL_DYNAMODB="+fake.URL, "AWS_ENDPOINT_URL_S3="+fake.URL)
	for _, want := range []string{"NOT APPLICABLE to this emulator: TestContract/Races", "reason: moto_server",
		"go test -count=1 -skip TestContract/Races "} {
		if !strings.Contains(out, want) {
			t.Errorf("runner output lacks %q:\n%s", want, out)
		}
	}
}

// On an endpoint that isolates transactions (DynamoDB Local in CI) every
// test runs.
func TestRunnerRunsRaceTestsWhereTransactionsAreIsolated(t *testing.T) {
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" || os.Getenv("AWS_ENDPOINT_URL_S3") == "" {
		const how = `needs AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_S3: eval "$(scripts/ci/start-dynamodb-local.sh)"; eval "$(scripts/ci/start-s3.sh)"`
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " (CI=true: never skipped)")
		}
		t.Skip(how)
	}
	out := runRunner(t)
	if !strings.Contains(out, "isolated: ok") || strings.Contains(out, "-skip") || strings.Contains(out, "NOT APPLICABLE") {
		t.Errorf("runner output:\n%s", out)
	}
}
