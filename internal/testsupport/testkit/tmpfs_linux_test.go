package testkit_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// A filled Tmpfs refuses a new block, and takes it once unfilled.
func TestTmpfsFillsAndEmpties(t *testing.T) {
	dir := testkit.Tmpfs(t, 256<<10)
	unfill := testkit.Fill(t, filepath.Join(dir, "filler"))
	name := filepath.Join(dir, "new")
	if err := os.WriteFile(name, []byte("x"), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write on the full tmpfs: %v, want ENOSPC", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Bavail != 0 {
		t.Fatalf("statfs of the full tmpfs: %d blocks free, %v", st.Bavail, err)
	}
	unfill()
	if err := os.WriteFile(name, []byte("x"), 0o600); err != nil {
		t.Fatalf("a write once unfilled: %v", err)
	}
}
