package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// SigV4Service is the signing name of API Gateway's IAM authorization.
const SigV4Service = "execute-api"

// FunctionURLService is the signing name of a Lambda function URL's IAM
// authorization (WithFunctionURLs).
const FunctionURLService = "lambda"

// sigV4 signs requests for an IAM-authorised API Gateway.
type sigV4 struct {
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
	now    func() time.Time
}

// WithSigV4 signs every request with AWS Signature Version 4 for API Gateway
// (service execute-api) with cfg's credentials, in region (default
// cfg.Region). Load cfg with config.LoadDefaultConfig for the SDK's default
// credential chain (environment, shared config, SSO, IMDS, …).
func WithSigV4(cfg aws.Config, region string) Option {
	if region == "" {
		region = cfg.Region
	}
	return WithSigV4Credentials(cfg.Credentials, region)
}

// WithSigV4DefaultCredentials is WithSigV4 with the AWS SDK's default
// credential chain (environment, shared config and credentials files, SSO,
// web identity, container and instance roles), loaded by New.
func WithSigV4DefaultCredentials(region string) Option {
	return func(c *Client) error {
		cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(region))
		if err != nil {
			return fmt.Errorf("client: load AWS configuration: %w", err)
		}
		return WithSigV4(cfg, region)(c)
	}
}

// WithSigV4Credentials is WithSigV4 with a credentials provider; it is
// wrapped in an aws.CredentialsCache unless it already is one.
func WithSigV4Credentials(creds aws.CredentialsProvider, region string) Option {
	return func(c *Client) error {
		if creds == nil {
			return errors.New("client: SigV4 needs credentials")
		}
		if region == "" {
			return errors.New("client: SigV4 needs a region")
		}
		if _, cached := creds.(*aws.CredentialsCache); !cached {
			creds = aws.NewCredentialsCache(creds)
		}
		c.signer = &sigV4{creds: creds, region: region, signer: v4.NewSigner(), now: time.Now}
		return nil
	}
}

// sign adds X-Amz-Date, X-Amz-Security-Token (temporary credentials) and
// Authorization to req, whose body is body (nil = none), for service.
func (s *sigV4) sign(ctx context.Context, req *http.Request, body []byte, service string) error {
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("client: SigV4 credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := s.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), service, s.region, s.now()); err != nil {
		return fmt.Errorf("client: SigV4 sign: %w", err)
	}
	return nil
}
