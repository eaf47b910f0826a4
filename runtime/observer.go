package runtime

import "github.com/streamgen/streamgen/runtime/observe"

// WithObserver sets the App's Observer (see Observer); the default has
// none.
func WithObserver(o observe.Observer) Option { return func(a *App) { a.observer = o } }

// Observing reports whether the App that started the broker has an
// Observer: an adapter measures what it would Report only then.
func (e Env) Observing() bool { return e.Observer != nil }

// Report tells the App's Observer, if it has one, what the broker did.
func (e Env) Report(ev observe.Event) {
	if e.Observer != nil {
		e.Observer.BrokerEvent(ev)
	}
}
