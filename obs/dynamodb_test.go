package obs_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/stela-dev/stela/obs"
)

// cannedDynamo answers every request with the next of its answers (the
// last one repeats): status and JSON body.
type cannedDynamo struct {
	answers [][2]string
	n       atomic.Int64
}

func (c *cannedDynamo) Do(r *http.Request) (*http.Response, error) {
	i := min(int(c.n.Add(1))-1, len(c.answers)-1)
	status := http.StatusOK
	if c.answers[i][0] != "200" {
		status = http.StatusBadRequest
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(c.answers[i][1])), Request: r}, nil
}

func dynamoClient(m *obs.Metrics, c *cannedDynamo) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://dynamodb.test"), HTTPClient: c,
		Credentials:                     aws.AnonymousCredentials{},
		DisableValidateResponseChecksum: true,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
		APIOptions: []func(*middleware.Stack) error{m.DynamoDBMiddleware},
	})
}

func TestDynamoDBMiddlewareCountsThrottledAttempts(t *testing.T) {
	m := obs.NewMetrics()
	throttled := [2]string{"400", `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}`}
	ok := [2]string{"200", `{}`}
	// Two throttled attempts the SDK retries, then success: the caller sees
	// nothing, the metrics see both.
	c := &cannedDynamo{answers: [][2]string{throttled, throttled, ok}}
	if _, err := dynamoClient(m, c).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}}); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	// A transaction cancelled by a throttled part and a condition failure.
	cancelled := [2]string{"400", `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"cancelled",
		"CancellationReasons":[{"Code":"None"},{"Code":"ThrottlingError"}]}`}
	c2 := &cannedDynamo{answers: [][2]string{cancelled}}
	_, err := dynamoClient(m, c2).TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}, ConditionExpression: aws.String("x")}}}})
	if err == nil {
		t.Fatal("TransactWriteItems succeeded")
	}
	f := scrape(t, m)
	if got := value(f, obs.MetricDynamoThrottles); got != 3 {
		t.Errorf("throttles = %v, want 3 (two retried GetItem attempts, one cancelled transaction)", got)
	}
	if got := value(f, obs.MetricDynamoErrors, "operation", "GetItem", "code", "ThrottlingException"); got != 2 {
		t.Errorf("GetItem ThrottlingException = %v, want 2", got)
	}
	if got := value(f, obs.MetricDynamoErrors, "operation", "TransactWriteItems", "code", "TransactionCanceledException"); got != 1 {
		t.Errorf("TransactWriteItems TransactionCanceledException = %v, want 1", got)
	}
}
