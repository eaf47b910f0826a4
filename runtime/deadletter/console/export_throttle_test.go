package console

import "time"

// SetClock makes c's sign-in throttle read the time from now.
func SetClock(c *Console, now func() time.Time) { c.throttle.now = now }

// SetThrottleClients sets how many clients c's sign-in throttle keeps
// apart.
func SetThrottleClients(c *Console, n int) { c.throttle.maxClients = n }

// ThrottleClients is the number of clients c's sign-in throttle keeps.
func ThrottleClients(c *Console) int { return c.throttle.size() }
