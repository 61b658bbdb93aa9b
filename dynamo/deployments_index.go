package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
)

// The deployments index counts executions per deployment and bucket for
// list_deployment_states: every head carries
//
//	dk = "<current deployment>#<T|D>#<bucket>#<shard>"   (T top-level, D derived)
//	ds = "<id>"
//
// where bucket is A while the execution is live (not finished) and its
// finished bucket of docs/spec/semantics.md §4.8.1 once finished: O ok, E
// error, X an execution failure. The entry therefore moves only when the
// execution finishes (or its current deployment changes), not on every lock,
// block, unblock, pause or cancellation: an activity costs 3 index writes
// (create 1, finish 2) instead of the 5 of one entry per bucket. Finished
// counts are Select=COUNT queries, one per bucket, kind and shard; live
// executions are read (the A entries, then their heads, eventually
// consistent) and put in their live bucket at `now`: L locked, P pending,
// scheduled, B blocked, Z paused, C cancelling — so counting costs reads in
// proportion to the deployment's live executions.
//
// Heads written before this layout carry their live bucket letter
// (L, P — ds "<pending time>#<id>" —, B, Z, C) until their next write; those
// entries are still counted with Select=COUNT queries.
const (
	// AttrDeployPK and AttrDeploySK key IndexDeployments (every head).
	AttrDeployPK = "dk"
	AttrDeploySK = "ds"
	// IndexDeployments is the per-deployment bucket index.
	IndexDeployments = "deployments"
)

// depBuckets are the buckets counted with Select=COUNT: the finished ones
// and the live ones of heads written before the A bucket.
const depBuckets = "LPBZCOEX"

// liveBucket is the bucket of every live execution.
const liveBucket = 'A'

// bucketOf returns the bucket letter of a head, 0 if it is in none.
func bucketOf(s *core.ExecutionState) byte {
	active := s.Lifecycle == core.LifecycleActive
	switch {
	case s.State == core.StateLocked && active:
		return 'L'
	case s.State == core.StatePendingAt && active:
		return 'P'
	case s.State == core.StateBlockedByJoinSet && active:
		return 'B'
	case s.Lifecycle == core.LifecyclePaused:
		return 'Z'
	case s.Lifecycle == core.LifecycleCancelling:
		return 'C'
	case s.State == core.StateFinished && s.ResultKind != nil:
		switch {
		case s.ResultKind.Failure != "":
			return 'X'
		case s.ResultKind.IsErr:
			return 'E'
		}
		return 'O'
	}
	return 0
}

// encodeHead is headRec.encode plus the deployments-index keys (unless
// Options.DisableDeploymentCounts); the commit path encodes heads with it.
func (b *Backend) encodeHead(h *headRec) item {
	it := h.encode(b.shards, !b.noDigestIndex)
	if !b.deps.noCounts {
		id := h.st.ExecutionID.String()
		deploymentIndex(it, &h.st, id, strconv.Itoa(shardOf(id, b.shards)))
	}
	return it
}

// deploymentIndex sets the head's deployments-index keys.
func deploymentIndex(it item, s *core.ExecutionState, id, shard string) {
	bucket := bucketOf(s)
	if bucket == 0 {
		return
	}
	kind := "T"
	if !s.ExecutionID.IsTopLevel() {
		kind = "D"
	}
	if s.State != core.StateFinished {
		bucket = liveBucket
	}
	it[AttrDeployPK] = avS(s.DeploymentID.String() + "#" + kind + "#" + string(bucket) + "#" + shard)
	it[AttrDeploySK] = avS(id)
}

// countTask is one Select=COUNT query of the deployments index.
type countTask struct {
	state  *core.DeploymentState
	bucket byte
	pk     string
	// cond is "" (whole partition), "<=" (pending: ds <= now) or ">" (scheduled).
	cond string
}

// countParallelism bounds the concurrent count queries of one call.
const countParallelism = 32

// CountDeploymentExecutions implements store.Queries: Select=COUNT queries
// of IndexDeployments, one per deployment, bucket, kind and shard (two for
// P), run concurrently (eventually consistent, like every index read).
func (b *Backend) CountDeploymentExecutions(ctx context.Context, states []core.DeploymentState, now core.Timestamp, includeDerived bool) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if b.deps.noCounts {
		return fmt.Errorf("dynamo: deployment counts (Options.DisableDeploymentCounts): %w", core.ErrNotImplemented)
	}
	kinds := []string{"T"}
	if includeDerived {
		kinds = append(kinds, "D")
	}
	var tasks []countTask
	for i := range states {
		s := &states[i]
		for _, kind := range kinds {
			for shard := range b.shards {
				tasks = append(tasks, countTask{s, liveBucket, fmt.Sprintf("%s#%s#%c#%d", s.DeploymentID, kind, liveBucket, shard), ""})
			}
			for j := 0; j < len(depBuckets); j++ {
				bucket := depBuckets[j]
				for shard := range b.shards {
					pk := fmt.Sprintf("%s#%s#%c#%d", s.DeploymentID, kind, bucket, shard)
					if bucket == 'P' {
						tasks = append(tasks, countTask{s, 'p', pk, "<="}, countTask{s, 'P', pk, ">"})
					} else {
						tasks = append(tasks, countTask{s, bucket, pk, ""})
					}
				}
			}
		}
	}
	counts := make([]int64, len(tasks))
	bound := now.SortableText() + "#~" // above every ds of an execution pending at now
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(countParallelism)
	var mu sync.Mutex
	for i := range tasks {
		g.Go(func() (err error) {
			if tasks[i].bucket == liveBucket {
				return b.countLive(gctx, tasks[i], now, &mu)
			}
			counts[i], err = b.countQuery(gctx, tasks[i], bound)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("dynamo: count executions per deployment: %w", err)
	}
	for i, t := range tasks {
		addCount(t.state, t.bucket, uint32(counts[i]))
	}
	return nil
}

// addCount adds n executions of bucket (p: pending, P: scheduled, else a
// bucket letter) to s.
func addCount(s *core.DeploymentState, bucket byte, n uint32) {
	switch bucket {
	case 'L':
		s.Locked += n
	case 'p':
		s.Pending += n
	case 'P':
		s.Scheduled += n
	case 'B':
		s.Blocked += n
	case 'Z':
		s.Paused += n
	case 'C':
		s.Cancelling += n
	case 'O':
		s.FinishedOk += n
	case 'E':
		s.FinishedError += n
	case 'X':
		s.FinishedExecutionFailure += n
	}
}

func (b *Backend) countQuery(ctx context.Context, t countTask, bound string) (int64, error) {
	in := &dynamodb.QueryInput{TableName: b.tableName(), IndexName: aws.String(IndexDeployments),
		Select: types.SelectCount, ExpressionAttributeNames: map[string]string{"#pk": AttrDeployPK},
		ExpressionAttributeValues: item{":pk": avS(t.pk)}}
	cond := "#pk = :pk"
	if t.cond != "" {
		cond += " AND #sk " + t.cond + " :b"
		in.ExpressionAttributeNames["#sk"] = AttrDeploySK
		in.ExpressionAttributeValues[":b"] = avS(bound)
	}
	in.KeyConditionExpression = aws.String(cond)
	var n int64
	for {
		out, err := b.api.Query(ctx, in, b.optFns...)
		if err != nil {
			return 0, err
		}
		n += int64(out.Count)
		if out.LastEvaluatedKey == nil {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// countLive reads the live entries of t's partition and the heads they name
// (eventually consistent, like the index) and adds each live head to its
// bucket at now; mu guards t.state.
func (b *Backend) countLive(ctx context.Context, t countTask, now core.Timestamp, mu *sync.Mutex) error {
	in := &dynamodb.QueryInput{TableName: b.tableName(), IndexName: aws.String(IndexDeployments),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrDeployPK},
		ExpressionAttributeValues: item{":pk": avS(t.pk)}}
	var keys []item
	err := b.queryAll(ctx, in, func(it item) (bool, error) {
		keys = append(keys, item{AttrPK: it[AttrPK], AttrSK: it[AttrSK]})
		return true, nil
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	heads, err := b.batchGet(ctx, keys, false)
	if err != nil {
		return err
	}
	buckets := make([]byte, 0, len(heads))
	for _, it := range heads {
		h, err := decodeHead(it)
		if err != nil {
			pk, _ := getS(it, AttrPK)
			b.undecodable.Skip(ctx, b.log, "head", pk, err)
			continue
		}
		bucket := bucketOf(&h.st)
		if bucket == 'P' && !h.st.At.After(now) {
			bucket = 'p' // pending now; P stays for scheduled
		}
		buckets = append(buckets, bucket)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, bucket := range buckets {
		switch bucket {
		case 'L', 'p', 'P', 'B', 'Z', 'C':
			addCount(t.state, bucket, 1)
		}
	}
	return nil
}
