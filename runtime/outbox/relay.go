package outbox

import "github.com/streamgen/streamgen/runtime"

// relayOption runs the relay in the App, publishing through broker.
func (o *Outbox) relayOption(broker runtime.Publisher) runtime.Option {
	return func(*runtime.App) {}
}
