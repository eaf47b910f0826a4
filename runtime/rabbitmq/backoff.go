package rabbitmq

import (
	"math/rand/v2"
	"time"
)

// backoff spaces out reconnect attempts: min after the first failure,
// doubling up to max, with the fraction jitter of each delay randomised.
type backoff struct {
	min, max time.Duration
	jitter   float64
}

// normalized returns b with usable values: positive bounds, max ≥ min,
// jitter within [0, 1].
func (b backoff) normalized() backoff {
	if b.min <= 0 {
		b.min = DefaultReconnectMin
	}
	if b.max < b.min {
		b.max = b.min
	}
	b.jitter = min(max(b.jitter, 0), 1)
	return b
}

// delay returns the wait before reconnect attempt n (1 for the first). It
// lies in [d·(1-jitter), d] where d = min(min·2^(n-1), max).
func (b backoff) delay(n int) time.Duration {
	d := b.min
	for i := 1; i < n && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	if b.jitter > 0 {
		d -= time.Duration(rand.Float64() * b.jitter * float64(d))
	}
	return d
}
