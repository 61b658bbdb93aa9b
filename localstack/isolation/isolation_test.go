package isolation_test

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
)

// goroutines race in each of rounds rounds, tries requests each.
const (
	goroutines = 16
	rounds     = 4
	tries      = 4
)

// goAll runs fn(g) for g in [0, goroutines), released together, and waits.
func goAll(fn func(g int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(g)
		}()
	}
	close(start)
	wg.Wait()
}

type item = map[string]types.AttributeValue

func key(pk string) item {
	return item{dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk}, dynamo.AttrSK: &types.AttributeValueMemberS{Value: "X"}}
}

func client(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		const how = `no DynamoDB endpoint: run eval "$(scripts/ci/start-dynamodb-local.sh)" first`
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " (CI=true: never skipped)")
		}
		t.Skip(how)
	}
	ctx := context.Background()
	// Generous SDK retries without a retry quota: an emulator that answers
	// 5xx under concurrency (moto does, from the same missing lock) must not
	// end the test before the properties are checked.
	c, err := dynamoenv.NewClient(ctx, func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 20
			so.RateLimiter = ratelimit.None
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf [4]byte
	_, _ = crand.Read(buf[:])
	table := "stela-isolation-" + hex.EncodeToString(buf[:])
	if err := dynamo.CreateTable(ctx, c, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return c, table
}

// reasons returns the cancellation reason codes of err ("" if it is not a
// cancelled transaction).
func reasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	var out []string
	for _, r := range tce.CancellationReasons {
		out = append(out, aws.ToString(r.Code))
	}
	return out
}

func has(codes []string, code string) bool {
	for _, c := range codes {
		if c == code {
			return true
		}
	}
	return false
}

// TestConcurrentTransactionsAreIsolated: two properties AWS guarantees and
// Stela's response guards, head revisions and uniqueness checks rely on.
func TestConcurrentTransactionsAreIsolated(t *testing.T) {
	c, table := client(t)
	ctx := context.Background()
	put := func(pk string, cond string) types.TransactWriteItem {
		p := &types.Put{TableName: aws.String(table), Item: key(pk)}
		if cond != "" {
			p.ConditionExpression, p.ExpressionAttributeNames = aws.String(cond), map[string]string{"#pk": dynamo.AttrPK}
		}
		return types.TransactWriteItem{Put: p}
	}
	exists := func(pk string) bool {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item != nil
	}

	// A few hundred unrelated items: an emulator that copies the table per
	// transaction (moto) then takes long enough for requests to overlap.
	fill(t, c, table, 500)

	// 1. Stela's commit pattern: read a head's revision, then one
	// transaction puts the head at revision+1 (condition: revision
	// unchanged), a uniqueness guard (attribute_not_exists) and an item of
	// its own. Writers that lose on the revision re-read and try again; one
	// that finds the guard taken stops. Two writers per guard, eight guards
	// on one head: each guard is won exactly once, and every win survives.
	t.Run("OneWinnerPerGuard", func(t *testing.T) {
		revision := func(pk string) (string, bool) {
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Error(err)
				return "", false
			}
			if n, ok := out.Item["rv"].(*types.AttributeValueMemberN); ok {
				return n.Value, true
			}
			return "0", out.Item != nil
		}
		for round := range rounds {
			head := fmt.Sprintf("H#%d", round)
			var mu sync.Mutex
			wins := map[string][]string{}
			var errs []error
			goAll(func(g int) {
				guard := fmt.Sprintf("G#%d#%d", round, g/2)
				for try := 0; ; try++ {
					rv, found := revision(head)
					var next int
					_, _ = fmt.Sscan(rv, &next)
					it := key(head)
					it["rv"] = &types.AttributeValueMemberN{Value: fmt.Sprint(next + 1)}
					hp := &types.Put{TableName: aws.String(table), Item: it, ExpressionAttributeNames: map[string]string{"#pk": dynamo.AttrPK}}
					if found {
						hp.ConditionExpression = aws.String("#rv = :rv")
						hp.ExpressionAttributeNames["#rv"] = "rv"
						hp.ExpressionAttributeValues = item{":rv": &types.AttributeValueMemberN{Value: rv}}
						delete(hp.ExpressionAttributeNames, "#pk")
					} else {
						hp.ConditionExpression = aws.String("attribute_not_exists(#pk)")
					}
					w := fmt.Sprintf("W#%d#%d#%d", round, g, try)
					_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
						{Put: hp}, put(guard, "attribute_not_exists(#pk)"), put(w, "")}})
					codes := reasons(err)
					switch {
					case err == nil:
						mu.Lock()
						wins[guard] = append(wins[guard], w)
						mu.Unlock()
						return
					case len(codes) > 1 && codes[1] == "ConditionalCheckFailed":
						return // the guard is taken
					case codes != nil && try < 200:
						continue // lost on the revision or a conflict: re-read
					default:
						mu.Lock()
						errs = append(errs, fmt.Errorf("writer %d: %w", g, err))
						mu.Unlock()
						return
					}
				}
			})
			if len(errs) > 0 {
				t.Fatalf("round %d: %v", round, errs[0])
			}
			for i := range goroutines / 2 {
				guard := fmt.Sprintf("G#%d#%d", round, i)
				if w := wins[guard]; len(w) != 1 {
					t.Errorf("round %d: guard %s was created by %d committed transactions %v, want exactly 1: concurrent conditional transactions are not isolated",
						round, guard, len(w), w)
				}
				for _, w := range wins[guard] {
					if !exists(w) {
						t.Errorf("round %d: the committed write %s is gone", round, w)
					}
				}
			}
		}
	})

	// 2. A cancelled transaction changes nothing, and in particular does not
	// undo writes that other requests committed while it ran.
	t.Run("CancelledTransactionsKeepOthersWrites", func(t *testing.T) {
		for round := range rounds {
			var mu sync.Mutex
			var acked []string
			var errs []error
			goAll(func(g int) {
				for i := range tries {
					var err error
					if g%2 == 0 {
						// Always cancelled: the condition check names a missing item.
						_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
							put(fmt.Sprintf("C#%d#%d#%d", round, g, i), ""),
							{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key("missing"),
								ConditionExpression: aws.String("attribute_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": dynamo.AttrPK}}}}})
						if reasons(err) != nil {
							err = nil
						} else if err == nil {
							err = errors.New("a transaction whose condition check fails committed")
						}
					} else {
						pk := fmt.Sprintf("P#%d#%d#%d", round, g, i)
						if _, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key(pk)}); err == nil {
							mu.Lock()
							acked = append(acked, pk)
							mu.Unlock()
						}
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			})
			if len(errs) > 0 {
				t.Fatal(errs[0])
			}
			var lost, visible []string
			for _, pk := range acked {
				if !exists(pk) {
					lost = append(lost, pk)
				}
			}
			for g := 0; g < goroutines; g += 2 {
				for i := range tries {
					if pk := fmt.Sprintf("C#%d#%d#%d", round, g, i); exists(pk) {
						visible = append(visible, pk)
					}
				}
			}
			if len(lost) > 0 {
				t.Errorf("round %d: %d of %d acknowledged PutItems vanished while concurrent transactions were cancelled: %v",
					round, len(lost), len(acked), lost)
			}
			if len(visible) > 0 {
				t.Errorf("round %d: writes of %d cancelled transactions are visible: %v", round, len(visible), visible)
			}
		}
	})
}

// fill writes n unrelated items.
func fill(t *testing.T, c *dynamodb.Client, table string, n int) {
	t.Helper()
	for start := 0; start < n; start += 25 {
		var reqs []types.WriteRequest
		for i := start; i < min(start+25, n); i++ {
			it := key(fmt.Sprintf("F#%d", i))
			it["pad"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("%0200d", i)}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		pending := map[string][]types.WriteRequest{table: reqs}
		for len(pending) > 0 {
			out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				t.Fatal(err)
			}
			pending = out.UnprocessedItems
		}
	}
}
