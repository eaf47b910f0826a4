// Package tagged has a generated file with the build constraint that was
// written for an older handler and no longer compiles; the package calls
// what it declares. streamgen leaves it out with the build tag alone and
// regenerates it.
package tagged

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Ticket is the message type; it used to be called Issue.
type Ticket struct{ Title string }

//stream:subscriber "tickets" broker=zeromq
func Open(ctx context.Context, t Ticket) error { return nil }

// Wire mounts the package and sends a ticket.
func Wire(ctx context.Context, app *runtime.App, b runtime.Broker, p runtime.Publisher) error {
	Mount(app, b)
	return PublishTicket(ctx, p, Ticket{Title: "x"})
}
