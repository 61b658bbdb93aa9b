package core

import (
	"encoding/json"
	"errors"
	"fmt"
)

// UpgradeCheckFFQN is the built-in function of a replay-checked upgrade
// (PUT /v1/executions/{id}/upgrade without skip_determinism_check): the
// server, which runs no user code, records the request as an ordinary
// activity execution of this function created for the NEW component
// digest; a worker of that digest (and only such a worker: it locks it by
// digest) replays the target's history against its code and moves the
// execution only when it replays cleanly. Its params are UpgradeCheckParams,
// its result UpgradeCheckResult (docs/worker.md "Upgrades").
const UpgradeCheckFFQN = "stela:upgrade/replay.check"

// UpgradeCheckFunction is UpgradeCheckFFQN parsed.
func UpgradeCheckFunction() FunctionFqn {
	return FunctionFqn{IfcFqn: "stela:upgrade/replay", FunctionName: "check"}
}

// IsUpgradeCheck reports whether f is the built-in UpgradeCheckFFQN.
func IsUpgradeCheck(f FunctionFqn) bool { return f == UpgradeCheckFunction() }

// UpgradeCheckComponentName is the component name of a check execution.
const UpgradeCheckComponentName = "stela-upgrade-check"

// UpgradeCheckParams are the parameters of a check execution: the
// execution to move and the digest it must still have (the
// expected-old-digest guard, docs/spec/semantics.md §6.4). The digest to
// move it to is the check execution's own component digest.
type UpgradeCheckParams struct {
	ExecutionID ExecutionId     `json:"execution_id"`
	Old         ComponentDigest `json:"old"`
}

// Params encodes p as a check execution's params array: one record.
func (p UpgradeCheckParams) Params() (Params, error) {
	b, err := MarshalJSON(p)
	if err != nil {
		return nil, err
	}
	return Params{b}, nil
}

// ParseUpgradeCheckParams decodes a check execution's params.
func ParseUpgradeCheckParams(ps Params) (UpgradeCheckParams, error) {
	var p UpgradeCheckParams
	if len(ps) != 1 {
		return p, fmt.Errorf("upgrade check: want 1 parameter, got %d", len(ps))
	}
	if err := json.Unmarshal(ps[0], &p); err != nil {
		return p, fmt.Errorf("upgrade check: params: %w", err)
	}
	if p.ExecutionID.IsZero() {
		return p, errors.New("upgrade check: params: missing execution_id")
	}
	return p, nil
}

// UpgradeCheckOutcome is what a replay check did.
type UpgradeCheckOutcome string

// Outcomes of a replay check.
const (
	// UpgradeMoved: the history replayed cleanly and the execution was
	// moved to the new digest.
	UpgradeMoved UpgradeCheckOutcome = "upgraded"
	// UpgradeDiverged: the new code does not replay the history; the
	// execution keeps its digest. Reason is the first divergence.
	UpgradeDiverged UpgradeCheckOutcome = "diverged"
	// UpgradeStale: the execution's digest is not the expected old one
	// (moved meanwhile); nothing was done.
	UpgradeStale UpgradeCheckOutcome = "digest_mismatch"
	// UpgradeFinishedAlready: the execution is finished; nothing was done.
	UpgradeFinishedAlready UpgradeCheckOutcome = "finished"
	// UpgradeNotServed: the component of the new digest does not serve
	// the execution's function; nothing was done.
	UpgradeNotServed UpgradeCheckOutcome = "not_served"
)

// UpgradeCheckResult is a check execution's result value (the value of
// its Ok return value, WIT type UpgradeCheckResultType).
type UpgradeCheckResult struct {
	Outcome UpgradeCheckOutcome `json:"outcome"`
	// Reason explains the outcome; for UpgradeDiverged it is the first
	// divergence ("version N: <stored vs asked-for event>").
	Reason string `json:"reason,omitempty"`
	// Version is the diverging version (UpgradeDiverged only).
	Version Version `json:"version,omitempty"`
}

// UpgradeCheckResultType is the WIT type recorded with the result value.
const UpgradeCheckResultType = "record { outcome: string, reason: string, version: u32 }"

// ReturnValue encodes r as the check execution's Ok return value.
func (r UpgradeCheckResult) ReturnValue() (ReturnValue, error) {
	b, err := MarshalJSON(r)
	if err != nil {
		return ReturnValue{}, err
	}
	return RetOk(&WastValWithType{Type: UpgradeCheckResultType, Value: b}), nil
}

// ParseUpgradeCheckResult decodes a finished check execution's return
// value; an error when it is not an Ok UpgradeCheckResult (a failed or
// cancelled check).
func ParseUpgradeCheckResult(rv ReturnValue) (UpgradeCheckResult, error) {
	var r UpgradeCheckResult
	if rv.Kind != ReturnOk || rv.Value == nil {
		return r, errors.New("upgrade check: did not finish with a result")
	}
	if err := json.Unmarshal(rv.Value.Value, &r); err != nil {
		return r, fmt.Errorf("upgrade check: result: %w", err)
	}
	if r.Outcome == "" {
		return r, errors.New("upgrade check: result: missing outcome")
	}
	return r, nil
}
