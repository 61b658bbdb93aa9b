// Package sdksize holds two programs that do the same job — run one
// activity, greet(name), for a Stela server over HTTP — so the cost of the
// worker SDK in a user's binary can be measured: sdkworker with the SDK
// (client.New + worker.New), handworker by hand (net/http, encoding/json
// and a long-poll loop on the same worker routes). The dependency test
// beside it holds what sdkworker links; ARCHITECTURE.md and the issue 25
// note give their sizes.
package sdksize
