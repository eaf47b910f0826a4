package testkit

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Tmpfs mounts a file system of size bytes, held in memory, on a new
// directory of the test and returns the directory; it is unmounted when
// the test ends. Tests of what a full disk does fill it with Fill. It
// needs root, as CI runs; without, the test fails and says so.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount a tmpfs of %d bytes on %s: %v: this test fills a small file system, and mounting one needs root (CI runs as root)", size, dir, err)
	}
	// Unmounted before t.TempDir removes the directory: the cleanups
	// run last registered first.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			_ = syscall.Unmount(dir, syscall.MNT_DETACH) // a file left open
		}
	})
	return dir
}

// Fill writes the file name until its file system is full, and returns
// a function that removes it, which makes the room again. A file that
// was there already may still grow within its last block.
func Fill(t testing.TB, name string) (unfill func()) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", name, err)
			}
			break
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(name); err != nil {
			t.Errorf("make room: %v", err)
		}
	}
}
