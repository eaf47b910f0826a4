package zeromq_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// On a disk that is really full, a keeper reads no letter: it waits for
// room, and says so, instead of reading a letter it cannot write and
// stopping (losing it, and one more at each restart); once there is
// room, it keeps every letter sent meanwhile, in order.
func TestKeeperOnAFullDiskLosesNoLetter(t *testing.T) {
	mnt := testkit.Tmpfs(t, 8<<20)
	path := filepath.Join(mnt, "dlq")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := zeromq.OpenDeadLetterDir(path)
	if err != nil {
		t.Fatal(err)
	}
	unfill := testkit.Fill(t, filepath.Join(mnt, "filler"))
	addr := freeEndpoint(t)
	r := startKeeper(t, dir, addr)
	sent := sendLetters(t, addr, 5)
	deadline := time.Now().Add(testkit.Patience)
	for r.logged("reading no letter until there is room") == 0 {
		select {
		case <-r.done:
			t.Fatalf("the keeper stopped on a full disk: %v\n%s", r.err, r.log.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the keeper did not say it waits for room:\n%s", r.log.String())
		}
	}
	unfill()
	testkit.Eventually(t, "5 letters kept", func() bool { n, _ := dir.Len(context.Background()); return n == 5 })
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if ids := letterIDs(t, dir); !slices.Equal(ids, sentIDs(5)) {
		t.Fatalf("the directory holds %v", ids)
	}
	if err := r.wait(); err != nil {
		t.Fatalf("Run = %v\n%s", err, r.log.String())
	}
}
