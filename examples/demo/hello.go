package demo

import (
	"context"
	"fmt"

	"github.com/stela-dev/stela/worker"
)

// GreetFFQN is the hello activity: greet(name) → "Hello, <name>!".
const GreetFFQN = "demo:hello/greeter.greet"

// Greet is the hello activity.
func Greet(_ context.Context, name string) (string, error) {
	if name == "" {
		return "", worker.Permanent(fmt.Errorf("empty name"))
	}
	return "Hello, " + name + "!", nil
}

// RegisterHello registers the hello activity.
func RegisterHello(w *worker.Worker) { worker.Activity(w, GreetFFQN, Greet) }

// Hello submits greet(name) and waits for its result.
func Hello(ctx context.Context, w *worker.Worker, name string) (string, error) {
	id, err := w.Submit(ctx, GreetFFQN, name)
	if err != nil {
		return "", err
	}
	return worker.Await[string](ctx, w, id)
}
