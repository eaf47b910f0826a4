// Command stale calls the generated Mount and publisher, and its generated
// file is stale: it was written for an older handler and no longer
// compiles, by a streamgen that wrote no build constraint, so the file is
// set aside with an overlay. Regenerating works all the same.
package main

import (
	"context"
	"log"

	"github.com/streamgen/streamgen/runtime"
)

// Ticket is the message type; it used to be called Issue.
type Ticket struct{ Title string }

//stream:subscriber "tickets" broker=zeromq
func Open(ctx context.Context, t Ticket, md runtime.Metadata) error { return nil }

func main() {
	app := runtime.NewApp("stale")
	var b runtime.Broker
	Mount(app, b)
	if p, ok := b.(runtime.Publisher); ok {
		if err := PublishTicket(context.Background(), p, Ticket{Title: "x"}); err != nil {
			log.Fatal(err)
		}
	}
}
