package adapter

// Settle lets this package's tests settle a delivery with a verdict of
// their own, as the Consumer does once it decided one.
func (c *Consumer) Settle(d *Delivery, v Verdict, err error) { c.settle(d, v, err, false) }
