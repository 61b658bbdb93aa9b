// Package sigv4 signs the Go client's requests with AWS Signature Version
// 4, for a deployment whose API Gateway (service execute-api) and Lambda
// function URLs (service lambda) authorise with IAM (docs/deploy.md). It
// plugs into package client through client.WithSigner:
//
//	c, err := client.New(apiURL, sigv4.WithDefaultCredentials(region),
//		client.WithFunctionURLs(lockURL, appendURL))
//
// It is a package of its own because it links the AWS SDK (and, for the
// default credential chain, its config package): programs that do not use
// IAM import only client, and link none of it.
package sigv4

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

	"github.com/stela-dev/stela/client"
)

// Signer signs requests with AWS Signature Version 4 with its credentials,
// in its region; it implements client.Signer.
type Signer struct {
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
	now    func() time.Time
}

var _ client.Signer = (*Signer)(nil)

// New returns a signer with creds (wrapped in an aws.CredentialsCache
// unless it is one) in region.
func New(creds aws.CredentialsProvider, region string) (*Signer, error) {
	if creds == nil {
		return nil, errors.New("client: SigV4 needs credentials")
	}
	if region == "" {
		return nil, errors.New("client: SigV4 needs a region")
	}
	if _, cached := creds.(*aws.CredentialsCache); !cached {
		creds = aws.NewCredentialsCache(creds)
	}
	return &Signer{creds: creds, region: region, signer: v4.NewSigner(), now: time.Now}, nil
}

// With signs every request with cfg's credentials, in region (default
// cfg.Region). Load cfg with config.LoadDefaultConfig for the SDK's default
// credential chain (environment, shared config, SSO, IMDS, …).
func With(cfg aws.Config, region string) client.Option {
	if region == "" {
		region = cfg.Region
	}
	return WithCredentials(cfg.Credentials, region)
}

// WithDefaultCredentials is With with the AWS SDK's default credential
// chain (environment, shared config and credentials files, SSO, web
// identity, container and instance roles), loaded by client.New.
func WithDefaultCredentials(region string) client.Option {
	return func(c *client.Client) error {
		cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(region))
		if err != nil {
			return fmt.Errorf("client: load AWS configuration: %w", err)
		}
		return With(cfg, region)(c)
	}
}

// WithCredentials is With with a credentials provider.
func WithCredentials(creds aws.CredentialsProvider, region string) client.Option {
	return func(c *client.Client) error {
		s, err := New(creds, region)
		if err != nil {
			return err
		}
		return client.WithSigner(s)(c)
	}
}

// Sign adds X-Amz-Date, X-Amz-Security-Token (temporary credentials) and
// Authorization to req, whose body is body (nil = none), for service.
func (s *Signer) Sign(ctx context.Context, req *http.Request, body []byte, service string) error {
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
