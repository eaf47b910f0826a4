// Package clock is the time source of the runtime, for tests and broker
// adapters: every delay the runtime waits out itself (a ZeroMQ retry copy
// held in memory, a reconnect backoff) waits on a Clock, so that a test
// can let thirty seconds pass at once.
//
// An App runs on System unless it is given another clock with
// runtime.WithClock; runtime/streamtest has a fake one:
//
//	fake := streamtest.NewClock(time.Time{})
//	app := runtime.NewApp("billing", runtime.WithClock(fake))
//	...
//	fake.Advance(30 * time.Second) // the retry copies waiting 30s are sent
//
// A broker adapter reads the App's clock in runtime.Env.Clock.
package clock
