package wait_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/internal/wait"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds each wait of a test for a goroutine to get somewhere.
const patience = time.Minute

// sleepIn runs wait.Sleep in the background and returns its result channel.
func sleepIn(ctx context.Context, clock *streamtest.Clock, d time.Duration) <-chan error {
	out := make(chan error, 1)
	go func() { out <- wait.Sleep(ctx, clock, d) }()
	return out
}

func waitPending(t *testing.T, clock *streamtest.Clock, n int) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%d timers pending", n), func() bool { return clock.Pending() == n })
}

func TestSleepReturnsOnceTheClockHasPassedTheDelay(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	done := sleepIn(context.Background(), clock, time.Minute)
	waitPending(t, clock, 1)
	if got := clock.PendingDelays(); len(got) != 1 || got[0] != time.Minute {
		t.Fatalf("pending delays %v, want [1m]", got)
	}
	clock.Advance(59 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("Sleep returned %v before the delay passed", err)
	default:
	}
	clock.Advance(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Sleep = %v, want nil", err)
		}
	case <-time.After(patience):
		t.Fatal("Sleep did not return once the delay passed")
	}
}

func TestSleepReturnsWhenTheContextEndsAndStopsItsTimer(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	done := sleepIn(ctx, clock, time.Hour)
	waitPending(t, clock, 1)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep = %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("Sleep did not return when its context ended")
	}
	if n := clock.Pending(); n != 0 {
		t.Errorf("%d timers pending after Sleep returned, want its timer stopped", n)
	}
}

func TestSleepWithoutADelayOnlyReportsTheContext(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	if err := wait.Sleep(context.Background(), clock, 0); err != nil {
		t.Errorf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Sleep(ctx, clock, -time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(-1s) with an ended context = %v, want context.Canceled", err)
	}
	if n := clock.Pending(); n != 0 {
		t.Errorf("%d timers set for no delay", n)
	}
}

func TestGroupWaitsForTheGroup(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })
	done := make(chan error, 1)
	go func() { done <- wait.Group(context.Background(), &wg) }()
	select {
	case err := <-done:
		t.Fatalf("Group returned %v while the group was busy", err)
	default:
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Group = %v, want nil", err)
		}
	case <-time.After(patience):
		t.Fatal("Group did not return once the group was done")
	}
}

func TestGroupReturnsWhenTheContextEnds(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Group(ctx, &wg); !errors.Is(err, context.Canceled) {
		t.Fatalf("Group = %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
}

func TestDoRunsTheFunctionToItsEnd(t *testing.T) {
	ran := false
	if err := wait.Do(context.Background(), func() { ran = true }); err != nil || !ran {
		t.Fatalf("Do = %v, ran %v; want nil, true", err, ran)
	}
}
