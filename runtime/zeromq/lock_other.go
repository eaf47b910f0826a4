//go:build !unix

package zeromq

import (
	"context"
	"errors"
)

func lockFile(context.Context, string, bool) (func(), error) {
	return nil, errors.New("a keeper's directory needs file locks (flock), which this system lacks")
}
