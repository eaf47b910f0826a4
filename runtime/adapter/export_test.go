package adapter

import "github.com/streamgen/streamgen/runtime/internal/counters"

// Metrics returns the subscription's counters.
func (c *Consumer) Metrics() *counters.Subscription { return c.metrics }

// Settle lets this package's tests settle a delivery with a verdict of
// their own, as the Consumer does once it decided one.
func (c *Consumer) Settle(d *Delivery, v Verdict, err error) { c.settle(d, v, err, false) }

// BatchFilling returns how many deliveries the batch filling holds, 0
// when none is.
func (c *Consumer) BatchFilling() int {
	c.batches.mu.Lock()
	defer c.batches.mu.Unlock()
	if c.batches.open == nil {
		return 0
	}
	return len(c.batches.open.items)
}
