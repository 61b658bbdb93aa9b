package dynamo

import (
	"context"
	crand "crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Defaults of Options.
const (
	DefaultShards          = 8
	DefaultInlineThreshold = 64 << 10
	DefaultHeadBudget      = 1 << 10
	DefaultMaxAttempts     = 30
	DefaultSDKMaxAttempts  = 5
)

// DynamoDB limits the commit path respects.
const (
	maxTxActions  = 100
	maxTxBytes    = 3_800_000 // of the 4 MB aggregate, with a margin for the request envelope
	maxItemBytes  = 400 << 10
	outboxInline  = 300 << 10 // an outbox listing above this goes to the CAS
	maxResends    = 6         // re-sends of one ambiguous commit before giving up
	queryPageSize = 100
)

// Options configure a Backend.
type Options struct {
	// Table is the DynamoDB table (created with CreateTable or infra/).
	Table string
	// Shards is the number of partitions each sparse index key is spread
	// over (default 8). It must never decrease for an existing table.
	Shards int
	// InlineThreshold is the largest payload (event, response, backtrace
	// JSON) stored in an item; larger ones go to Cas (default 64 KiB).
	InlineThreshold int
	// HeadBudget is the head size above which the events kept inline in the
	// head move to event pages (default 1 KiB, DynamoDB's write unit). A
	// finished head is left alone up to 16 times the budget: it is rarely
	// written again. A Created event whose JSON is at most twice the budget
	// stays in the head.
	HeadBudget int
	// Cas stores offloaded payloads (give it the service's store.Options.Cas,
	// so that gc_orphan_files sees them). Without it, payloads above
	// InlineThreshold fail to commit.
	Cas core.Cas
	// Logger receives diagnostics (group "dynamo"); nil discards them.
	Logger *slog.Logger
	// Clock stamps blob reference items (their age decides, with the
	// grace period, whether gc may ignore a stale one); default the system
	// clock. Every other timestamp comes from the service.
	Clock core.Clock
	// MaxAttempts bounds how often Update re-runs fn after losing to a
	// concurrent commit (default 30).
	MaxAttempts int
	// SDKMaxAttempts is the SDK retryer's attempt limit per request
	// (default 5); throttling, 5xx and network errors are retried by it.
	SDKMaxAttempts int
	// DisableDigestIndex stops maintaining the pending-digest index, which
	// costs 2 of an activity's 14 write units (doc.go, "Cost");
	// PendingByDigest (and so lock_pending_by_component_digest) then fails
	// with core.ErrNotImplemented.
	// For deployments whose workers lock only by function name.
	DisableDigestIndex bool
	// RetentionLag is how old an entry of the retention index must be before
	// the retention pass reads its tree (default DefaultRetentionLag): a
	// commit planned earlier may still land and the index may lag. It
	// delays the marking, never an expiry (retention.go).
	RetentionLag time.Duration
	// DisableDeploymentCounts stops maintaining the deployments index, which
	// costs 3 of an activity's 14 write units; list_deployment_states then
	// fails with core.ErrNotImplemented unless its counts are skipped.
	DisableDeploymentCounts bool
}

// Backend implements store.Backend on one DynamoDB table.
type Backend struct {
	api         api
	table       string
	shards      int
	inline      int
	headBudget  int
	createdMax  int
	maxAttempts int
	cas         core.Cas
	log         *slog.Logger
	clock       core.Clock
	optFns      []func(*dynamodb.Options)
	closed      atomic.Bool
	// noDigestIndex: Options.DisableDigestIndex.
	noDigestIndex bool
	retentionLag  time.Duration
	deps          deploymentOptions // deployments_gc.go
	stats         stats
	// skipAfterCommit leaves deferred child creations to the next reader
	// (tests simulate a crash between the commit and the fan-out).
	skipAfterCommit bool
	// afterRegister, when set, runs after a response is registered in an
	// inbox, before its transaction commits (tests widen that window).
	afterRegister func(child core.ExecutionId)
	// afterExportRead, when set, runs between an export's read of
	// partitions and its second read of their heads (export.go); and
	// beforeImportHead before an import writes a head (import.go): tests
	// change the store in between, or fail as a killed process would.
	afterExportRead  func(ids []core.ExecutionId)
	beforeImportHead func(id core.ExecutionId) error
	undecodable      store.Undecodable
}

type stats struct {
	commits, retries, resends, ownCommits, spills, deferred, materialised, registered atomic.Int64
}

// Stats are counters since the backend was created.
type Stats struct {
	// Commits is the number of successful Update commits.
	Commits int64
	// Retries counts fn re-runs after losing to a concurrent commit (or a
	// definite, retriable rejection such as TransactionConflict).
	Retries int64
	// Resends counts re-sent commits whose earlier outcome was unknown.
	Resends int64
	// OwnCommits counts condition failures recognised, by request id, as
	// this commit's own earlier attempt (reported as success).
	OwnCommits int64
	// Spills counts head writes that moved inline events to event items.
	Spills int64
	// Deferred counts child creations deferred to an outbox; Materialised
	// counts outbox children written afterwards.
	Deferred, Materialised int64
	// Undecodable counts corrupt items left out of query results (each
	// logged at ERROR; see store.Undecodable).
	Undecodable int64
	// Registered counts responses registered in a parent's inbox (doc.go,
	// "Fan-in"), deferred or elected.
	Registered int64
}

// Stats returns the backend's counters.
func (b *Backend) Stats() Stats {
	s := &b.stats
	return Stats{Commits: s.commits.Load(), Retries: s.retries.Load(), Resends: s.resends.Load(),
		OwnCommits: s.ownCommits.Load(), Spills: s.spills.Load(), Deferred: s.deferred.Load(),
		Materialised: s.materialised.Load(), Undecodable: b.undecodable.Count(), Registered: s.registered.Load()}
}

var _ store.Backend = (*Backend)(nil)

// api is the subset of the DynamoDB client the backend calls.
type api interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// codeTransactionConflict is the error code of a single-item write refused
// because a transaction was writing its item.
const codeTransactionConflict = "TransactionConflictException"

// New returns a Backend on client. Every request it sends uses an explicit
// standard retryer (Options.SDKMaxAttempts attempts, 25 ms base delay, at
// most 1 s backoff, no client-side retry quota; it also re-sends a
// single-item write refused with TransactionConflictException), whatever
// the client's own retry settings are.
func New(client *dynamodb.Client, opts Options) (*Backend, error) {
	if client == nil {
		return nil, errors.New("dynamo: nil client")
	}
	return newBackend(client, opts)
}

func newBackend(client api, opts Options) (*Backend, error) {
	if opts.Table == "" {
		return nil, errors.New("dynamo: Options.Table is required")
	}
	if opts.Shards == 0 {
		opts.Shards = DefaultShards
	}
	if opts.Shards < 1 || opts.Shards > 1000 {
		return nil, fmt.Errorf("dynamo: Options.Shards %d out of range 1..1000", opts.Shards)
	}
	if opts.InlineThreshold == 0 {
		opts.InlineThreshold = DefaultInlineThreshold
	}
	if opts.InlineThreshold < 1024 || opts.InlineThreshold > 300<<10 {
		return nil, fmt.Errorf("dynamo: Options.InlineThreshold %d out of range 1 KiB..300 KiB", opts.InlineThreshold)
	}
	if opts.HeadBudget == 0 {
		opts.HeadBudget = DefaultHeadBudget
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.SDKMaxAttempts == 0 {
		opts.SDKMaxAttempts = DefaultSDKMaxAttempts
	}
	if opts.RetentionLag <= 0 {
		opts.RetentionLag = DefaultRetentionLag
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	retryer := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = opts.SDKMaxAttempts
		o.MaxBackoff = time.Second
		o.BaseDelay = 25 * time.Millisecond
		o.RateLimiter = ratelimit.None
		// A single-item write refused because a transaction holds its
		// item changed nothing: re-sending it is safe (doc.go,
		// "TransactionConflict"). The SDK does not retry it by default.
		o.Retryables = append(slices.Clone(o.Retryables), retry.RetryableErrorCode{
			Codes: map[string]struct{}{codeTransactionConflict: {}}})
	})
	b := &Backend{
		api: client, table: opts.Table, shards: opts.Shards, inline: opts.InlineThreshold,
		headBudget: opts.HeadBudget, createdMax: 2 * opts.HeadBudget, maxAttempts: opts.MaxAttempts,
		cas: opts.Cas, log: log.WithGroup("dynamo"), clock: opts.Clock, noDigestIndex: opts.DisableDigestIndex,
		retentionLag: opts.RetentionLag,
		deps:         deploymentOptions{noCounts: opts.DisableDeploymentCounts},
		optFns: []func(*dynamodb.Options){func(o *dynamodb.Options) {
			o.Retryer = retryer
			o.APIOptions = append(o.APIOptions, trackAttempts)
		}},
	}
	return b, nil
}

// Close marks the backend closed; later calls fail with core.ErrClosed.
func (b *Backend) Close() error {
	b.closed.Store(true)
	return nil
}

func (b *Backend) checkOpen() error {
	if b.closed.Load() {
		return fmt.Errorf("dynamo: %w", core.ErrClosed)
	}
	return nil
}

// errContention means a concurrent commit (or a definite, retriable
// rejection such as throttling) beat this one: fn must run again.
var errContention = errors.New("dynamo: lost to a concurrent commit")

// Update runs fn optimistically: its reads are strongly consistent and
// record the revision of every head they touch; its writes are buffered and
// committed as one conditional write (TransactWriteItems when more than one
// item changes) guarded by those revisions. When a guard fails because of a
// concurrent commit, fn runs again (bounded, with jittered backoff).
func (b *Backend) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	return store.Retry(ctx, "dynamo: update", b.maxAttempts, func(attempt int) error {
		if attempt > 1 {
			b.stats.retries.Add(1)
		}
		t := b.newTx(ctx, true)
		if err := fn(t); err != nil {
			return err
		}
		p, err := t.plan()
		if err != nil {
			return err
		}
		if p.empty() {
			if !b.skipAfterCommit {
				b.cleanInbox(context.WithoutCancel(ctx), p)
			}
			return nil
		}
		err = b.execute(ctx, p)
		if err == nil {
			b.stats.commits.Add(1)
			b.afterCommit(ctx, p)
			return nil
		}
		if errors.Is(err, errContention) {
			b.log.DebugContext(ctx, "update retry", core.LogKeyAttempt, attempt, core.LogKeyErr, err)
			return store.Again(err)
		}
		return err
	})
}

// View runs fn once against strongly consistent reads. Reads are anchored
// at each execution's head: events and responses beyond the head as read are
// not returned, so each execution is seen at one committed state.
func (b *Backend) View(ctx context.Context, fn func(tx store.ReadTx) error) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	return fn(b.newTx(ctx, false))
}

// newRequestID returns 16 characters of randomness identifying one commit.
func newRequestID() string {
	var buf [10]byte
	_, _ = crand.Read(buf[:])
	return base32.StdEncoding.EncodeToString(buf[:])
}

// tableName is the table as an SDK string.
func (b *Backend) tableName() *string { return aws.String(b.table) }
