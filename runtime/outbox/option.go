package outbox

import "github.com/streamgen/streamgen/runtime"

// Option returns the App option that runs the outbox in an App:
//
//	app := runtime.NewApp("orders", ob.Option(broker))
//
// The App runs the relay, which publishes committed messages through
// broker, while it runs, and gives the subscriptions' *sql.Tx handlers
// their transactions on the outbox's database, recording each message
// they handled in the inbox table.
func (o *Outbox) Option(broker runtime.Publisher) runtime.Option {
	relay, inbox := o.relayOption(broker), o.inboxOption()
	return func(a *runtime.App) {
		relay(a)
		inbox(a)
	}
}
