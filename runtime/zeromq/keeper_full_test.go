package zeromq_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// keeperRun is an in-process Keeper on a directory of its own, its log,
// and its end.
type keeperRun struct {
	k    *zeromq.Keeper
	dir  *zeromq.DeadLetterDir
	log  *testkit.SyncBuffer
	stop context.CancelFunc
	done chan struct{} // closed once Run returned err
	err  error
}

// wait stops the keeper and returns Run's error.
func (r *keeperRun) wait() error {
	r.stop()
	<-r.done
	return r.err
}

// startKeeper runs a Keeper on dir, bound at bind ("" for a port the
// system picks), until the test ends.
func startKeeper(t *testing.T, dir *zeromq.DeadLetterDir, bind string) *keeperRun {
	t.Helper()
	if bind == "" {
		bind = "tcp://127.0.0.1:0"
	}
	r := &keeperRun{dir: dir, log: &testkit.SyncBuffer{}, done: make(chan struct{})}
	r.k = &zeromq.Keeper{Bind: bind, Dir: dir, Logger: slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.err = r.k.Run(ctx); close(r.done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(testkit.Patience):
			t.Error("the keeper did not stop")
		}
	})
	return r
}

// logged counts the lines of the keeper's log that hold s.
func (r *keeperRun) logged(s string) int {
	n := 0
	for _, l := range r.log.Lines() {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// send pushes letters m-000000 to m-(n-1) to addr, from a goroutine of
// its own, and returns a channel that tells when it is done.
func sendLetters(t *testing.T, addr string, n int) <-chan error {
	t.Helper()
	out, err := zeromq.DialOutlet(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*testkit.Patience)
		defer cancel()
		var err error
		for i := 0; i < n && err == nil; i++ {
			err = out.Send(ctx, zmqLetter(fmt.Sprintf("m-%06d", i), i))
		}
		if cerr := out.Close(ctx); err == nil {
			err = cerr
		}
		done <- err
	}()
	return done
}

func sentIDs(n int) []string {
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("m-%06d", i))
	}
	return ids
}

func isLetter(line []byte) bool { return bytes.HasPrefix(line, []byte(`{"id"`)) }

// A keeper whose writes fail for a while holds the letter in hand and
// writes it once it can, reading no other meanwhile: it keeps every
// letter, in order, and logs the failure once, not once a try.
func TestKeeperHoldsALetterItCannotWriteUntilItCan(t *testing.T) {
	dir, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int32
	zeromq.FailDirWrites(dir, func(line []byte) error {
		if isLetter(line) {
			if n := tries.Add(1); n >= 3 && n < 3+5 {
				return syscall.EIO
			}
		}
		return nil
	})
	r := startKeeper(t, dir, "")
	<-r.k.Ready()
	sent := sendLetters(t, r.k.Addr(), 20)
	testkit.Eventually(t, "20 letters kept", func() bool { n, _ := dir.Len(context.Background()); return n == 20 })
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if ids := letterIDs(t, dir); !slices.Equal(ids, sentIDs(20)) {
		t.Fatalf("the directory holds %v", ids)
	}
	if n := tries.Load(); n != 25 {
		t.Fatalf("%d writes of letters, want 20 and 5 that failed", n)
	}
	if a, b := r.logged("level=ERROR"), r.logged("the letter it held is written"); a != 1 || b != 1 {
		t.Fatalf("the log has %d errors and %d lines of the letter written after all, want 1 and 1:\n%s", a, b, r.log.String())
	}
	if err := r.wait(); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// A keeper reads no letter while its disk has no room: it pauses after
// the letter it wrote, logs it once, and reads on once there is room; no
// letter is lost, and they keep their order.
func TestKeeperPausesReadingWhileTheDiskIsFull(t *testing.T) {
	dir, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	var writes, looksFull atomic.Int32
	zeromq.SetDirFree(dir, func() (uint64, error) {
		if full.Load() {
			looksFull.Add(1)
			return 100 << 10, nil
		}
		return 1 << 30, nil
	})
	zeromq.FailDirWrites(dir, func(line []byte) error {
		if isLetter(line) && writes.Add(1) == 5 {
			full.Store(true) // the fifth letter fills the disk
		}
		return nil
	})
	r := startKeeper(t, dir, "")
	<-r.k.Ready()
	sent := sendLetters(t, r.k.Addr(), 20)
	testkit.Eventually(t, "the keeper paused", func() bool { return r.logged("reading no letter until there is room") == 1 })
	// It is paused: no letter is read (and so none is written) until
	// there is room, however often it looks. Three looks at the full
	// disk since it paused: three times it could have read one.
	paused := looksFull.Load()
	testkit.Eventually(t, "the keeper to look at the full disk 3 times more", func() bool { return looksFull.Load() >= paused+3 })
	if n := writes.Load(); n != 5 {
		t.Fatalf("%d letters written while the disk was full, want the 5 before", n)
	}
	full.Store(false)
	testkit.Eventually(t, "20 letters kept", func() bool { n, _ := dir.Len(context.Background()); return n == 20 })
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if ids := letterIDs(t, dir); !slices.Equal(ids, sentIDs(20)) {
		t.Fatalf("the directory holds %v", ids)
	}
	if a, b := r.logged("level=WARN"), r.logged("room again"); a != 1 || b != 1 {
		t.Fatalf("the log has %d warnings and %d lines of room again, want 1 and 1:\n%s", a, b, r.log.String())
	}
}

// A keeper stopped while it holds a letter it could not write says the
// letter is lost, by its message id, in its log and in Run's error.
func TestKeeperStoppedWithALetterInHandSaysItIsLost(t *testing.T) {
	dir, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	zeromq.FailDirWrites(dir, func(line []byte) error { return syscall.ENOSPC })
	r := startKeeper(t, dir, "")
	<-r.k.Ready()
	sent := sendLetters(t, r.k.Addr(), 1)
	testkit.Eventually(t, "the write failed", func() bool { return r.logged("cannot write a letter") == 1 })
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	err = r.wait()
	if err == nil || !strings.Contains(err.Error(), "it lost 1 letter it read and could not write: m-000000") {
		t.Fatalf("Run = %v; want it to name the letter lost", err)
	}
	if n := r.logged("could not be written: the letter is lost"); n != 1 || !strings.Contains(r.log.String(), "message_id=m-000000") {
		t.Fatalf("the log does not say m-000000 is lost:\n%s", r.log.String())
	}
}
