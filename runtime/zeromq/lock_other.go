//go:build !unix

package zeromq

import (
	"context"
	"errors"
	"math"
)

func lockFile(context.Context, string, bool) (func(), error) {
	return nil, errors.New("a keeper's directory needs file locks (flock), which this system lacks")
}

// freeBytes cannot tell the free space here: it says there is plenty.
func freeBytes(string) (uint64, error) { return math.MaxUint64, nil }

func isNoSpace(error) bool { return false }
