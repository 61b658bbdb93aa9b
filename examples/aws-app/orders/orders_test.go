package orders_test

import (
	"strings"
	"testing"

	"example.com/aws-app/orders"
	"github.com/stela-dev/stela/worker"
	"github.com/stela-dev/stela/worker/workertest"
)

func TestCheckoutPricesAndInvoices(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	orders.Register(env.Worker)
	id := env.Submit(orders.CheckoutFFQN, orders.Order{ID: "o1", Item: "book", Quantity: 3})
	env.Run()
	got, err := workertest.Result[orders.Invoice](env, id)
	if err != nil || got != (orders.Invoice{OrderID: "o1", Total: 36, Number: "INV-o1"}) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestUnknownItemFailsTheCheckout(t *testing.T) {
	env := workertest.New(t, worker.Options{})
	orders.Register(env.Worker)
	id := env.Submit(orders.CheckoutFFQN, orders.Order{ID: "o2", Item: "car", Quantity: 1})
	env.Run()
	if _, err := workertest.Result[orders.Invoice](env, id); err == nil || !strings.Contains(err.Error(), `no price for "car"`) {
		t.Fatalf("want the pricing error, got %v", err)
	}
}
