package core

import "fmt"

// ComponentUpgradeOutcome is {"type":"success","reason":…} or {"type":"failed","reason":"…"}.
type ComponentUpgradeOutcome struct {
	// Success is true for "success".
	Success bool
	// Reason is set for success.
	Reason ComponentUpgradeReason
	// FailedReason is set for "failed".
	FailedReason string
}

type upgradeSuccessJSON struct {
	Reason ComponentUpgradeReason `json:"reason"`
}

type upgradeFailedJSON struct {
	Reason string `json:"reason"`
}

// MarshalJSON encodes the outcome.
func (o ComponentUpgradeOutcome) MarshalJSON() ([]byte, error) {
	if o.Success {
		return marshalInternallyTagged("type", "success", upgradeSuccessJSON{o.Reason})
	}
	return marshalInternallyTagged("type", "failed", upgradeFailedJSON{o.FailedReason})
}

// UnmarshalJSON decodes the outcome.
func (o *ComponentUpgradeOutcome) UnmarshalJSON(b []byte) error {
	tag, err := readTag(b, "type", "upgrade outcome")
	if err != nil {
		return err
	}
	switch tag {
	case "success":
		var j upgradeSuccessJSON
		if err := decodeStrictTag(b, &j, "type"); err != nil {
			return err
		}
		*o = ComponentUpgradeOutcome{Success: true, Reason: j.Reason}
	case "failed":
		var j upgradeFailedJSON
		if err := decodeStrictTag(b, &j, "type"); err != nil {
			return err
		}
		*o = ComponentUpgradeOutcome{FailedReason: j.Reason}
	default:
		return invalid(fmt.Sprintf("unknown upgrade outcome %q", tag))
	}
	return nil
}

// ComponentUpgradeReason is {"type":"auto"} or {"type":"manual","force":bool}.
type ComponentUpgradeReason struct {
	Manual bool
	Force  bool
}

type upgradeManualJSON struct {
	Force bool `json:"force"`
}

// MarshalJSON encodes the reason.
func (r ComponentUpgradeReason) MarshalJSON() ([]byte, error) {
	if r.Manual {
		return marshalInternallyTagged("type", "manual", upgradeManualJSON{r.Force})
	}
	return marshalInternallyTagged("type", "auto", nil)
}

// UnmarshalJSON decodes the reason.
func (r *ComponentUpgradeReason) UnmarshalJSON(b []byte) error {
	tag, err := readTag(b, "type", "upgrade reason")
	if err != nil {
		return err
	}
	switch tag {
	case "auto":
		*r = ComponentUpgradeReason{}
	case "manual":
		var j upgradeManualJSON
		if err := decodeStrictTag(b, &j, "type"); err != nil {
			return err
		}
		*r = ComponentUpgradeReason{Manual: true, Force: j.Force}
	default:
		return invalid(fmt.Sprintf("unknown upgrade reason %q", tag))
	}
	return nil
}
