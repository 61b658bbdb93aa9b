// Command stela runs and operates Stela.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "stela: not yet — the embedded store and `stela dev` arrive with the embedded-store issue")
	os.Exit(2)
}
