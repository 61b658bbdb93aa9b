package demo_test

import (
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

// The saga's unit tests, as a user would write them: no server, no
// sleeping — the cooling-off period passes with a clock advance.

func TestSagaShipsAfterTheCoolingOffPeriod(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	demo.RegisterSaga(env.Worker)
	id := env.Submit(demo.PlaceOrderFFQN, demo.Order{ID: "o1", Item: "book", Amount: 30, CoolingOff: time.Hour})
	env.Run()
	if st := env.Status(id); st.State != core.StateBlockedByJoinSet {
		t.Fatalf("the order must wait out the cooling-off period, got %s", st)
	}
	env.Advance(time.Hour)
	got, err := workertest.Result[demo.Receipt](env, id)
	if err != nil || got != (demo.Receipt{OrderID: "o1", Reservation: "res-o1-book", Payment: "pay-o1", Tracking: "track-o1"}) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestSagaReleasesTheReservationWhenPaymentFails(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	demo.RegisterSaga(env.Worker)
	id := env.Submit(demo.PlaceOrderFFQN, demo.Order{ID: "o2", Item: "car", Amount: demo.PaymentLimit + 1})
	env.Run()
	_, err := workertest.Result[demo.Receipt](env, id)
	// The child's message is passed on without the child's id (ResultError.ID has it).
	if err == nil || err.Error() != "order o2 rolled back: payment of 1001 declined" {
		t.Fatalf("want the order rolled back, got %v", err)
	}
	release := id.NextLevel(core.JoinSetId{Kind: core.JoinSetKindOneOff, Name: "3-release"})
	if rv := env.ReturnValue(release); rv.Kind != core.ReturnOk {
		t.Fatalf("the release must have run: %+v", rv)
	}
}
