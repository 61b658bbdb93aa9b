package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Signals (a Stela convention over Obelisk's stubs, docs/http-api.md
// "Signals"): the k-th signal named N of workflow W is the return value of
// the activity_stub child W.n:signal/N/k_1 of W's named join set
// n:signal/N/k. Both sides derive that id without discovery: the workflow
// creates the join set and the stub child when it waits for its k-th
// signal N (and the store then accepts a stub child that exists already,
// see IsSignalStub), a sender creates the same stub child if it does not
// exist yet and finishes it with the signal (upsert_stub_response, which
// answers the workflow's join set). A signal sent before the workflow waits
// is therefore kept as the finished stub and the response it wrote; the
// k-th wait takes the k-th signal, so signals of one name arrive in the
// order they were sent and each exactly once.

// SignalFFQN is the function of signal stub children.
var SignalFFQN = FunctionFqn{IfcFqn: "stela:sdk/signal", FunctionName: "receive"}

// SignalComponent is the component of signal stub children.
var SignalComponent = ComponentId{ComponentType: ComponentTypeActivityStub, Name: "stela-signal",
	ComponentDigest: ComponentDigest{Digest: SHA256Digest([]byte("stela-signal"))}}

// MaxSignalsPerName bounds the signals of one name one workflow execution
// receives (a send tries the sequence numbers in turn).
const MaxSignalsPerName = 10_000

// MaxSignalNameLen bounds a signal's name.
const MaxSignalNameLen = 64

// ValidateSignalName checks a signal name: 1…64 ASCII letters, digits and '-'.
func ValidateSignalName(name string) error {
	if name == "" || len(name) > MaxSignalNameLen {
		return invalid(fmt.Sprintf("invalid signal name %q: want 1…%d letters, digits or '-'", name, MaxSignalNameLen))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isASCIIAlnum(c) && c != '-' {
			return invalid(fmt.Sprintf("invalid signal name %q: want 1…%d letters, digits or '-'", name, MaxSignalNameLen))
		}
	}
	return nil
}

// SignalJoinSet returns the join set of the seq-th (1-based) signal name.
func SignalJoinSet(name string, seq uint64) (JoinSetId, error) {
	if err := ValidateSignalName(name); err != nil {
		return JoinSetId{}, err
	}
	return NamedJoinSetId("signal/" + name + "/" + strconv.FormatUint(seq, 10))
}

// SignalStubID returns the stub child holding workflow's seq-th signal name.
func SignalStubID(workflow ExecutionId, name string, seq uint64) (ExecutionId, JoinSetId, error) {
	js, err := SignalJoinSet(name, seq)
	if err != nil {
		return ExecutionId{}, JoinSetId{}, err
	}
	return NewChildExecutionId(workflow, js, 1), js, nil
}

// IsSignalStub reports whether req creates a signal stub child: its
// creation is idempotent (the workflow and a sender both create it).
func IsSignalStub(req CreateRequest) bool {
	return req.Parent != nil && req.FFQN == SignalFFQN && req.ComponentID.ComponentType == ComponentTypeActivityStub
}

// SignalStubRequest is the creation of the stub child of workflow's seq-th
// signal name, as both the workflow and a sender write it.
func SignalStubRequest(workflow ExecutionId, name string, seq uint64, now Timestamp, deployment DeploymentId) (CreateRequest, error) {
	id, js, err := SignalStubID(workflow, name, seq)
	if err != nil {
		return CreateRequest{}, err
	}
	return CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: SignalFFQN, Params: Params{},
		Parent: &Parent{ExecutionID: workflow, JoinSetID: js}, ScheduledAt: now,
		ComponentID: SignalComponent, DeploymentID: deployment, Metadata: ExecutionMetadata{}}, nil
}

// SignalPayload is a signal's stored value: the stub's Ok value of type
// SignalType, the sender's idempotency key and the JSON value sent.
type SignalPayload struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// SignalType is the WIT type recorded with a signal's value.
const SignalType = "record { key: string, value: string }"

// SignalReturnValue is the stub return value carrying p.
func SignalReturnValue(p SignalPayload) (ReturnValue, error) {
	if len(p.Value) == 0 {
		p.Value = json.RawMessage("null")
	}
	if !json.Valid(p.Value) {
		return ReturnValue{}, invalid("signal value is not JSON")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return ReturnValue{}, invalid("signal value: " + err.Error())
	}
	return RetOk(&WastValWithType{Type: SignalType, Value: b}), nil
}

// ParseSignal returns the payload of a signal stub's return value.
func ParseSignal(rv ReturnValue) (SignalPayload, error) {
	if rv.Kind != ReturnOk || rv.Value == nil {
		return SignalPayload{}, fmt.Errorf("signal stub finished without a value (%v)", rv.ResultKind())
	}
	var p SignalPayload
	if err := json.Unmarshal(rv.Value.Value, &p); err != nil {
		return SignalPayload{}, fmt.Errorf("signal value: %w", err)
	}
	return p, nil
}

// SendSignal delivers a signal to a workflow execution: the first sequence
// number whose stub is free (not finished, or not created yet) receives
// it. It returns the sequence number used. A send repeated with the same
// payload (same key) finds its own earlier delivery and returns its
// sequence number: retries are delivered once. Unknown execution:
// ErrNotFound; not a workflow: ErrValidation; finished: ErrAlreadyFinished.
func SendSignal(ctx context.Context, db DbConnection, workflow ExecutionId, name string, p SignalPayload, now Timestamp) (uint64, error) {
	if err := ValidateSignalName(name); err != nil {
		return 0, err
	}
	rv, err := SignalReturnValue(p)
	if err != nil {
		return 0, err
	}
	st, err := db.GetPendingState(ctx, workflow)
	if err != nil {
		return 0, err
	}
	if st.ComponentType != ComponentTypeWorkflow {
		return 0, invalid(fmt.Sprintf("execution %s is not a workflow", workflow))
	}
	if st.PendingState.State == StateFinished {
		return 0, fmt.Errorf("%w: execution %s", ErrAlreadyFinished, workflow)
	}
	for seq := uint64(1); seq <= MaxSignalsPerName; seq++ {
		req, err := SignalStubRequest(workflow, name, seq, now, st.DeploymentID)
		if err != nil {
			return 0, err
		}
		if _, err := db.GetPendingState(ctx, req.ExecutionID); errors.Is(err, ErrNotFound) {
			if _, err := db.Create(ctx, req); err != nil && !errors.Is(err, ErrConflict) {
				return 0, err
			}
		} else if err != nil {
			return 0, err
		}
		err = StubExecution(ctx, db, ExecutionIdDerived{ExecutionId: req.ExecutionID}, workflow, req.Parent.JoinSetID, now, rv)
		switch {
		case err == nil:
			return seq, nil
		case errors.Is(err, ErrConflict), errors.Is(err, ErrVersionConflict):
			// Taken by another signal, or cancelled (cancelling) by a
			// wait that timed out: the next wait takes the next one.
			continue
		default:
			return 0, err
		}
	}
	return 0, invalid(fmt.Sprintf("more than %d signals %q", MaxSignalsPerName, name))
}
