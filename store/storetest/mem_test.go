package storetest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/mem"
	"github.com/stela-dev/stela/store/storetest"
)

func newMem(*testing.T, core.Clock, core.Cas) store.Backend { return mem.New() }

// TestMem runs the contract suite on the in-memory backend, with its blobs
// in a directory CAS (the suite's default).
func TestMem(t *testing.T) {
	storetest.RunWith(t, newMem, storetest.RunOptions{PollInterval: 5 * time.Millisecond})
}

// TestMemWithS3Cas runs the deployment scenarios on the in-memory backend
// with its blobs in an S3 CAS (gofakes3 in-process): sizes from HeadObject,
// gc over ListObjectsV2 modification times and DeleteObject.
func TestMemWithS3Cas(t *testing.T) {
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server())
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "test"}, nil
		}),
		BaseEndpoint: aws.String(srv.URL),
	}
	n := 0
	storetest.RunDeployments(t, newMem, storetest.RunOptions{NewCas: func(*testing.T) core.Cas {
		n++
		return cas.NewS3FromConfig(cfg, "storetest", fmt.Sprintf("t%d/", n))
	}})
}
