// Command stale calls the generated Mount and publisher, and its generated
// file was written, for an older handler, by a streamgen that wrote no
// build constraint: the load streamgen makes compiles it into the package,
// so streamgen says to delete it, and nothing else.
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
