package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// AWSConfigFromEnv builds the AWS SDK configuration of a Lambda function
// from its environment alone, as config.LoadDefaultConfig would there —
// without linking package config, whose credential providers (SSO, STS,
// sign-in, IMDS) cost every function 1.5 MB and are never used on Lambda,
// which passes the role's credentials in the environment
// (docs/deploy.md, "What a function links"). It reads:
//
//   - AWS_REGION (or AWS_DEFAULT_REGION), required;
//   - AWS_ACCESS_KEY_ID (or AWS_ACCESS_KEY), AWS_SECRET_ACCESS_KEY (or
//     AWS_SECRET_KEY), AWS_SESSION_TOKEN and AWS_ACCOUNT_ID, required but the
//     last two;
//   - AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> (e.g. _DYNAMODB, _S3),
//     unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true;
//   - AWS_USE_FIPS_ENDPOINT, AWS_USE_DUALSTACK_ENDPOINT, AWS_MAX_ATTEMPTS,
//     AWS_RETRY_MODE, AWS_SDK_UA_APP_ID, AWS_ACCOUNT_ID_ENDPOINT_MODE,
//     AWS_REQUEST_CHECKSUM_CALCULATION and AWS_RESPONSE_CHECKSUM_VALIDATION.
//
// Shared config and credentials files, profiles, SSO, web identity and
// container or instance credentials are not read: outside Lambda, pass
// config.LoadDefaultConfig's result with WithAWS (as `stela dev --backend
// dynamo` does).
func AWSConfigFromEnv(getenv func(string) string) (aws.Config, error) {
	get := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	var errs []error
	env := awsEnv{getenv: getenv}
	cfg := aws.Config{Region: get("AWS_REGION", "AWS_DEFAULT_REGION"), AppID: get("AWS_SDK_UA_APP_ID"),
		ConfigSources: []any{env}}
	if cfg.Region == "" {
		errs = append(errs, errors.New("AWS_REGION is not set"))
	}
	creds := aws.Credentials{AccessKeyID: get("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"),
		SecretAccessKey: get("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"), SessionToken: get("AWS_SESSION_TOKEN"),
		AccountID: get("AWS_ACCOUNT_ID"), Source: "EnvConfigCredentials"}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		errs = append(errs, errors.New("no AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; Lambda sets them)"))
	}
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
	if ep := get("AWS_ENDPOINT_URL"); ep != "" && !env.ignoreEndpoints() {
		cfg.BaseEndpoint = aws.String(ep)
	}
	if v := get("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("AWS_MAX_ATTEMPTS must be a positive integer, got %q", v))
		}
		cfg.RetryMaxAttempts = n
	}
	if v := get("AWS_RETRY_MODE"); v != "" {
		m, err := aws.ParseRetryMode(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("AWS_RETRY_MODE: %w", err))
		}
		cfg.RetryMode = m
	}
	switch v := strings.ToLower(get("AWS_ACCOUNT_ID_ENDPOINT_MODE")); v {
	case "":
		cfg.AccountIDEndpointMode = aws.AccountIDEndpointModePreferred
	case string(aws.AccountIDEndpointModePreferred), string(aws.AccountIDEndpointModeRequired), string(aws.AccountIDEndpointModeDisabled):
		cfg.AccountIDEndpointMode = aws.AccountIDEndpointMode(v)
	default:
		errs = append(errs, fmt.Errorf("AWS_ACCOUNT_ID_ENDPOINT_MODE must be preferred, required or disabled, got %q", v))
	}
	switch v := strings.ToLower(get("AWS_REQUEST_CHECKSUM_CALCULATION")); v {
	case "", "when_supported":
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenSupported
	case "when_required":
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	default:
		errs = append(errs, fmt.Errorf("AWS_REQUEST_CHECKSUM_CALCULATION must be when_supported or when_required, got %q", v))
	}
	switch v := strings.ToLower(get("AWS_RESPONSE_CHECKSUM_VALIDATION")); v {
	case "", "when_supported":
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenSupported
	case "when_required":
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	default:
		errs = append(errs, fmt.Errorf("AWS_RESPONSE_CHECKSUM_VALIDATION must be when_supported or when_required, got %q", v))
	}
	for _, name := range []string{"AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		if _, _, err := env.boolean(name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return aws.Config{}, fmt.Errorf("app: AWS configuration from the environment: %w", err)
	}
	return cfg, nil
}

// awsEnv answers the service clients' questions about the environment
// (they look for these methods among aws.Config.ConfigSources, as they
// do on config.EnvConfig).
type awsEnv struct{ getenv func(string) string }

func (e awsEnv) boolean(name string) (value, found bool, err error) {
	switch v := strings.ToLower(strings.TrimSpace(e.getenv(name))); v {
	case "":
		return false, false, nil
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	default:
		return false, false, fmt.Errorf("%s must be true or false, got %q", name, v)
	}
}

func (e awsEnv) ignoreEndpoints() bool {
	v, _, _ := e.boolean("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	return v
}

// GetServiceBaseEndpoint returns AWS_ENDPOINT_URL_<SDK ID> (upper case,
// spaces as underscores).
func (e awsEnv) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := strings.TrimSpace(e.getenv("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_")))
	return v, v != "", nil
}

// GetIgnoreConfiguredEndpoints returns AWS_IGNORE_CONFIGURED_ENDPOINT_URLS.
func (e awsEnv) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return e.boolean("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
}

// GetUseFIPSEndpoint returns AWS_USE_FIPS_ENDPOINT.
func (e awsEnv) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	v, found, err := e.boolean("AWS_USE_FIPS_ENDPOINT")
	if !found || err != nil {
		return aws.FIPSEndpointStateUnset, false, err
	}
	if v {
		return aws.FIPSEndpointStateEnabled, true, nil
	}
	return aws.FIPSEndpointStateDisabled, true, nil
}

// GetUseDualStackEndpoint returns AWS_USE_DUALSTACK_ENDPOINT.
func (e awsEnv) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	v, found, err := e.boolean("AWS_USE_DUALSTACK_ENDPOINT")
	if !found || err != nil {
		return aws.DualStackEndpointStateUnset, false, err
	}
	if v {
		return aws.DualStackEndpointStateEnabled, true, nil
	}
	return aws.DualStackEndpointStateDisabled, true, nil
}
