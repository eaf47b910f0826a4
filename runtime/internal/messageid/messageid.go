// Package messageid mints the ids of messages the runtime publishes
// without one, and of the copies it makes.
package messageid

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a fresh random message id: 32 hexadecimal digits (128 random
// bits).
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b[:])
}
