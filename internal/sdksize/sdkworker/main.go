// Command sdkworker is a plain HTTP worker written with the SDK: one
// activity, greet(name), served for the server at -url until interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/worker"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "Stela server URL")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.New(*url)
	if err != nil {
		log.Fatal(err)
	}
	w := worker.New(c, worker.Options{})
	worker.Activity(w, "demo:hello/greeter.greet", func(_ context.Context, name string) (string, error) {
		return fmt.Sprintf("Hello, %s!", name), nil
	})
	if err := w.Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
