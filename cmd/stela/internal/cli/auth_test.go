package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// authServer answers every request with an empty list and records the
// Authorization header of the last one.
func authServer(t *testing.T) (url string, auth func() string) {
	t.Helper()
	var mu sync.Mutex
	var last string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() string { mu.Lock(); defer mu.Unlock(); return last }
}

// isolateAWS points the AWS SDK's configuration chain at files of the test
// only (no developer profile, no instance metadata).
func isolateAWS(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestAuthSigV4SignsWithTheCredentialChain(t *testing.T) {
	t.Run("EnvironmentCredentialsAndRegionFlag", func(t *testing.T) {
		isolateAWS(t)
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
		url, auth := authServer(t)
		if code, _, errOut := run("execution", "list", "--json", "--url", url, "--auth", "sigv4", "--aws-region", "eu-west-1"); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got := auth(); !strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential=AKIDENV/") || !strings.Contains(got, "/eu-west-1/execute-api/aws4_request") {
			t.Errorf("Authorization %q, want SigV4 for execute-api in eu-west-1 with the environment's key", got)
		}
	})
	t.Run("ProfileFromTheSharedFiles", func(t *testing.T) {
		isolateAWS(t)
		if err := os.WriteFile(os.Getenv("AWS_SHARED_CREDENTIALS_FILE"), []byte("[ops]\naws_access_key_id = AKIDOPS\naws_secret_access_key = s\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(os.Getenv("AWS_CONFIG_FILE"), []byte("[profile ops]\nregion = ap-south-1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		url, auth := authServer(t)
		if code, _, errOut := run("execution", "list", "--json", "--url", url, "--auth", "sigv4", "--aws-profile", "ops"); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got := auth(); !strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential=AKIDOPS/") || !strings.Contains(got, "/ap-south-1/execute-api/") {
			t.Errorf("Authorization %q, want the ops profile's key and region", got)
		}
	})
	t.Run("TokenIsABearer", func(t *testing.T) {
		url, auth := authServer(t)
		if code, _, errOut := run("execution", "list", "--json", "--url", url, "--token", "eyJ.jwt.x"); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got := auth(); got != "Bearer eyJ.jwt.x" {
			t.Errorf("Authorization %q", got)
		}
	})
	for name, args := range map[string][]string{
		"UnknownAuth":       {"--auth", "kerberos"},
		"TokenWithoutToken": {"--auth", "token"},
		"SigV4AndToken":     {"--auth", "sigv4", "--token", "x", "--aws-region", "eu-west-1"},
	} {
		t.Run(name+"IsAUsageError", func(t *testing.T) {
			url, auth := authServer(t)
			code, _, errOut := run(append([]string{"execution", "list", "--url", url}, args...)...)
			if code != ExitUsage || !strings.Contains(errOut, "--auth") || auth() != "" {
				t.Errorf("exit %d, stderr %q, request sent: %q", code, errOut, auth())
			}
		})
	}
}

func TestExecuteAPIRegion(t *testing.T) {
	for url, want := range map[string]string{
		"https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/": "eu-west-1",
		"https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com":  "us-east-1",
		"https://stela.example.com/":                              "",
		"http://127.0.0.1:8080":                                   "",
	} {
		if got := executeAPIRegion(url); got != want {
			t.Errorf("%s: %q, want %q", url, got, want)
		}
	}
}
