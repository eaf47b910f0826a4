package rabbitmq

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

func TestBackoffDoublesUpToMax(t *testing.T) {
	testkit.NoLeaks(t)
	b := backoff{min: 100 * time.Millisecond, max: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := b.delay(i + 1); got != w*time.Millisecond {
			t.Errorf("delay(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
}

func TestBackoffJitterStaysWithinFraction(t *testing.T) {
	testkit.NoLeaks(t)
	b := backoff{min: time.Second, max: time.Second, jitter: 0.5}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := b.delay(3)
		if d < 500*time.Millisecond || d > time.Second {
			t.Fatalf("delay with jitter 0.5 of 1s = %v, want within [500ms, 1s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Errorf("200 jittered delays took %d distinct values; jitter is not applied", len(seen))
	}
}

func TestBackoffNormalized(t *testing.T) {
	testkit.NoLeaks(t)
	b := backoff{min: 0, max: -1, jitter: 7}.normalized()
	if b.min != DefaultReconnectMin || b.max != DefaultReconnectMin || b.jitter != 1 {
		t.Errorf("normalized = %+v, want min=max=%v jitter=1", b, DefaultReconnectMin)
	}
	opts := defaultOptions()
	WithReconnectBackoff(time.Second, time.Millisecond, -2)(&opts)
	if opts.backoff.max != time.Second || opts.backoff.jitter != 0 {
		t.Errorf("WithReconnectBackoff(1s, 1ms, -2) = %+v, want max raised to 1s and jitter 0", opts.backoff)
	}
}
