package dynamo

import (
	"strconv"

	"github.com/stela-dev/stela/core"
)

// Timer row attributes.
const (
	aExpires = "x"
	aPaused  = "p"
)

// encodeDelay returns the timer item; unpaused timers carry the IndexTimers
// attributes ("D#<shard>", expiry).
func (b *Backend) encodeDelay(d core.DelayTimer, rq string) item {
	it := item{
		AttrPK: avS(pkExec(d.ExecutionID)), AttrSK: avS(skDelay(d.JoinSetID, d.DelayID)),
		aExpires: avS(d.ExpiresAt.String()), aPaused: avBool(d.Paused), aReq: avS(rq),
	}
	if !d.Paused {
		it[AttrTimerPK] = avS(timerDelay + strconv.Itoa(shardOf(d.ExecutionID.String(), b.shards)))
		it[AttrTimerSK] = avS(d.ExpiresAt.SortableText())
	}
	return it
}

func decodeDelay(it item) (core.DelayTimer, error) {
	pk, _ := getS(it, AttrPK)
	id, err := parseExecPK(pk)
	if err != nil {
		return core.DelayTimer{}, err
	}
	sk, _ := getS(it, AttrSK)
	js, d, err := parseDelaySK(sk)
	if err != nil {
		return core.DelayTimer{}, err
	}
	exp, err := getTS(it, aExpires)
	if err != nil {
		return core.DelayTimer{}, err
	}
	return core.DelayTimer{ExecutionID: id, JoinSetID: js, DelayID: d, ExpiresAt: exp, Paused: getBool(it, aPaused)}, nil
}
