//go:build unix

package zeromq

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// lockFile takes an exclusive flock on the file name (created if need
// be), waiting until ctx ends when wait is true, and returns its release.
// The lock goes with the process: a killed holder releases it.
func lockFile(ctx context.Context, name string, wait bool) (func(), error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, err
		}
		if !wait {
			_ = f.Close()
			return nil, errLocked
		}
		if err := deadletter.Sleep(ctx, 2*time.Millisecond); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
}

// freeBytes is the space left to write on the file system of path, to a
// process that is not root (statfs: the available blocks). It leaves out
// the blocks a file system keeps for root, so a check on it errs on the
// safe side.
func freeBytes(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// isNoSpace reports whether err says a file system is full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
