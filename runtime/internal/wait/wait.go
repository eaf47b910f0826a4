package wait

import (
	"context"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
)

// Sleep waits d on clock, or until ctx ends, and then returns ctx.Err().
// It returns nil once d has passed; with d ≤ 0 it only reports ctx.Err().
func Sleep(ctx context.Context, clock clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	woke := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(woke) })
	select {
	case <-woke:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// Do runs f in a goroutine of its own and waits until it returns, or until
// ctx ends and then returns ctx.Err(). In that case f goes on running: it
// must end by itself (the caller usually cancels what f waits for).
func Do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Group waits for wg, or until ctx ends and then returns ctx.Err(), as Do
// does with wg.Wait.
func Group(ctx context.Context, wg *sync.WaitGroup) error {
	return Do(ctx, wg.Wait)
}
