package dynamo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stela-dev/stela/core"
)

// The deployments index counts executions per deployment and bucket for
// list_deployment_states without reading the heads: every head carries
//
//	dk = "<current deployment>#<T|D>#<bucket>#<shard>"   (T top-level, D derived)
//	ds = "<pending time, fixed width>#<id>" in bucket P, else "<id>"
//
// with the buckets of docs/spec/semantics.md §4.8.1 (core.StateFilter), each execution in
// exactly one: L locked, P pending_at (pending or scheduled, told apart by a
// range condition on ds), B blocked, Z paused, C cancelling, O finished ok,
// E finished error, X finished with an execution failure. A deployment's
// counts are Select=COUNT queries, one per bucket, kind and shard (two for
// P), run in parallel.
const (
	// AttrDeployPK and AttrDeploySK key IndexDeployments (every head).
	AttrDeployPK = "dk"
	AttrDeploySK = "ds"
	// IndexDeployments is the per-deployment bucket index.
	IndexDeployments = "deployments"
)

const depBuckets = "LPBZCOEX"

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
	it[AttrDeployPK] = avS(s.DeploymentID.String() + "#" + kind + "#" + string(bucket) + "#" + shard)
	sk := id
	if bucket == 'P' {
		sk = s.At.SortableText() + "#" + id
	}
	it[AttrDeploySK] = avS(sk)
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
	for i := range tasks {
		g.Go(func() (err error) {
			counts[i], err = b.countQuery(gctx, tasks[i], bound)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("dynamo: count executions per deployment: %w", err)
	}
	for i, t := range tasks {
		n := uint32(counts[i])
		s := t.state
		switch t.bucket {
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
	return nil
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
