package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stela-dev/stela/functions/app"
)

// awsVars are the variables the cases set (each case clears the others).
var awsVars = []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY",
	"AWS_SECRET_KEY", "AWS_SESSION_TOKEN", "AWS_ACCOUNT_ID", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB",
	"AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT",
	"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE", "AWS_SDK_UA_APP_ID", "AWS_ACCOUNT_ID_ENDPOINT_MODE",
	"AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"}

// setAWSEnv makes env the whole AWS environment of the test (no shared
// files, no instance metadata).
func setAWSEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range awsVars {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// resolved is what a configuration makes of the clients Stela builds.
type resolved struct {
	Region, AccessKey, Secret, Token, AccountID, AppID string
	BaseEndpoint, DynamoEndpoint, S3Endpoint           string
	DynamoURL, S3URL                                   string
	FIPS                                               aws.FIPSEndpointState
	DualStack                                          aws.DualStackEndpointState
	MaxAttempts                                        int
	RetryMode                                          aws.RetryMode
	AccountMode                                        aws.AccountIDEndpointMode
	ReqChecksum                                        aws.RequestChecksumCalculation
	RespChecksum                                       aws.ResponseChecksumValidation
}

func resolve(t *testing.T, cfg aws.Config) resolved {
	t.Helper()
	ctx := context.Background()
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := resolved{Region: cfg.Region, AccessKey: creds.AccessKeyID, Secret: creds.SecretAccessKey, Token: creds.SessionToken,
		AccountID: creds.AccountID, AppID: cfg.AppID, BaseEndpoint: aws.ToString(cfg.BaseEndpoint),
		MaxAttempts: cfg.RetryMaxAttempts, RetryMode: cfg.RetryMode, AccountMode: cfg.AccountIDEndpointMode,
		ReqChecksum: cfg.RequestChecksumCalculation, RespChecksum: cfg.ResponseChecksumValidation}
	d := dynamodb.NewFromConfig(cfg).Options()
	r.DynamoEndpoint, r.FIPS, r.DualStack = aws.ToString(d.BaseEndpoint), d.EndpointOptions.UseFIPSEndpoint, d.EndpointOptions.UseDualStackEndpoint
	ep, err := d.EndpointResolverV2.ResolveEndpoint(ctx, dynamodb.EndpointParameters{Region: aws.String(d.Region),
		UseFIPS:      aws.Bool(d.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack: aws.Bool(d.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
		Endpoint:     d.BaseEndpoint})
	if err != nil {
		t.Fatal(err)
	}
	r.DynamoURL = ep.URI.String()
	s := s3.NewFromConfig(cfg).Options()
	r.S3Endpoint = aws.ToString(s.BaseEndpoint)
	sep, err := s.EndpointResolverV2.ResolveEndpoint(ctx, s3.EndpointParameters{Region: aws.String(s.Region), Bucket: aws.String("blobs"),
		UseFIPS:      aws.Bool(s.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack: aws.Bool(s.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
		Endpoint:     s.BaseEndpoint, ForcePathStyle: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	r.S3URL = sep.URI.String()
	return r
}

// On the Lambda environment the lean configuration is what the SDK's
// default chain makes of it: credentials, region, endpoints (global and
// per service, ignored on request), FIPS, dual stack, retries, account id.
func TestAWSConfigFromEnvMatchesTheDefaultChain(t *testing.T) {
	lambda := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "ASIAEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range lambda {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for name, env := range map[string]map[string]string{
		"Lambda":           lambda,
		"ServiceEndpoints": with(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8100", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9100"}),
		"GlobalEndpoint":   with(map[string]string{"AWS_ENDPOINT_URL": "http://localstack:4566"}),
		"BothEndpoints":    with(map[string]string{"AWS_ENDPOINT_URL": "http://localstack:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:8000"}),
		"IgnoredEndpoints": with(map[string]string{"AWS_ENDPOINT_URL": "http://localstack:4566", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}),
		"FIPSDualStack":    with(map[string]string{"AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "true", "AWS_REGION": "us-east-1"}),
		"NoFIPS":           with(map[string]string{"AWS_USE_FIPS_ENDPOINT": "false"}),
		"LegacyNames": {"AWS_DEFAULT_REGION": "us-west-2", "AWS_ACCESS_KEY": "AKIDEXAMPLE", "AWS_SECRET_KEY": "s",
			"AWS_ACCOUNT_ID": "123456789012", "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"},
		"RetriesAndChecksums": with(map[string]string{"AWS_MAX_ATTEMPTS": "7", "AWS_RETRY_MODE": "adaptive",
			"AWS_SDK_UA_APP_ID": "stela", "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
			"AWS_RESPONSE_CHECKSUM_VALIDATION": "WHEN_REQUIRED"}),
	} {
		t.Run(name, func(t *testing.T) {
			setAWSEnv(t, env)
			want, err := config.LoadDefaultConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, err := app.AWSConfigFromEnv(os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := resolve(t, got), resolve(t, want); g != w {
				t.Fatalf("lean configuration resolves to\n%+v\nthe default chain to\n%+v", g, w)
			}
		})
	}
}

func TestAWSConfigFromEnvNamesWhatIsMissingOrWrong(t *testing.T) {
	for name, c := range map[string]struct {
		env  map[string]string
		want []string
	}{
		"Nothing": {map[string]string{}, []string{"AWS_REGION", "AWS_ACCESS_KEY_ID"}},
		"NoSecret": {map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a"},
			[]string{"AWS_SECRET_ACCESS_KEY"}},
		"BadValues": {map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s",
			"AWS_MAX_ATTEMPTS": "many", "AWS_RETRY_MODE": "eager", "AWS_USE_FIPS_ENDPOINT": "yes",
			"AWS_ACCOUNT_ID_ENDPOINT_MODE": "sometimes", "AWS_REQUEST_CHECKSUM_CALCULATION": "never"},
			[]string{"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE", "AWS_USE_FIPS_ENDPOINT", "AWS_ACCOUNT_ID_ENDPOINT_MODE",
				"AWS_REQUEST_CHECKSUM_CALCULATION"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := app.AWSConfigFromEnv(func(k string) string { return c.env[k] })
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}
