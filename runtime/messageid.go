package runtime

import (
	"crypto/rand"
	"encoding/hex"
)

// NewMessageID returns a fresh random message id: 32 hexadecimal digits
// (128 random bits).
func NewMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b[:])
}
