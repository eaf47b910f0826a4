package outbox

import "github.com/streamgen/streamgen/runtime"

// inboxOption gives the App's *sql.Tx handlers their transactions.
func (o *Outbox) inboxOption() runtime.Option {
	return func(*runtime.App) {}
}
