package demo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// startNotes runs an App with one subscription, notes, which acks every
// note, and returns its broker and counters.
func startNotes(t *testing.T) (*streamtest.Broker, func() []runtime.SubscriptionStats) {
	t.Helper()
	clock := streamtest.NewClock(time.Time{})
	b := streamtest.NewBroker(runtime.ZeroMQ, clock)
	app := runtime.NewApp("steps-test", runtime.WithClock(clock))
	app.Mount(b, &runtime.Subscription{Name: "notes", Handlers: []runtime.Handler{
		runtime.Handle("Note", runtime.Policy{}, func(context.Context, *note, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}})
	svc, err := Start(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Stop(); err != nil {
			t.Error(err)
		}
	})
	return b, app.Stats
}

func sendNotes(texts ...string) func(context.Context, runtime.Publisher) error {
	return func(ctx context.Context, p runtime.Publisher) error {
		for _, text := range texts {
			if err := runtime.Publish(ctx, p, runtime.Queue("notes"), "Note", note{text}); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestPlayTellsEachStepAndWaitsForItsCounters(t *testing.T) {
	b, m := startNotes(t)
	var out testkit.SyncBuffer
	err := Play(context.Background(), NewNarrator(&out, time.Now), b, m, []Step{
		{Title: "Two notes.", Send: sendNotes("a", "b"), Want: map[string]runtime.SubscriptionStats{"notes": {Delivered: 2, Acked: 2}}},
		{Title: "One more.", Send: sendNotes("c"), Want: map[string]runtime.SubscriptionStats{"notes": {Delivered: 3, Acked: 3}}},
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "\n1. Two notes.\n\n" + ColumnTitles() + "\n\n2. One more.\n\n" + ColumnTitles() + "\n"
	if got := out.String(); got != want {
		t.Errorf("Play wrote\n%q\nwant\n%q", got, want)
	}
	if err := Check(m(), map[string]runtime.SubscriptionStats{"notes": {Delivered: 3, Acked: 3}}); err != nil {
		t.Errorf("after the steps: %v", err)
	}
}

func TestPlayNamesTheStepWhoseCountersWereNotReached(t *testing.T) {
	b, m := startNotes(t)
	var out testkit.SyncBuffer
	err := Play(context.Background(), NewNarrator(&out, time.Now), b, m, []Step{
		{Title: "One note.", Send: sendNotes("a"), Want: map[string]runtime.SubscriptionStats{"notes": {Delivered: 1, Acked: 1}}},
		{Title: "Counters that cannot happen.", Send: sendNotes("b"), Want: map[string]runtime.SubscriptionStats{"notes": {Delivered: 2, Acked: 1, Dropped: 1}}},
	}, 100*time.Millisecond)
	if err == nil || !strings.HasPrefix(err.Error(), "step 2: demo: the counters did not reach") {
		t.Fatalf("Play = %v, want step 2's counters not reached", err)
	}
}

func TestPlayNamesTheStepThatCouldNotSend(t *testing.T) {
	b, m := startNotes(t)
	refused := errors.New("refused")
	err := Play(context.Background(), NewNarrator(&testkit.SyncBuffer{}, time.Now), b, m, []Step{
		{Title: "Nothing to send.", Send: func(context.Context, runtime.Publisher) error { return refused }},
	}, time.Second)
	if !errors.Is(err, refused) || !strings.HasPrefix(err.Error(), "step 1: send: ") {
		t.Fatalf("Play = %v, want step 1's send error", err)
	}
}

func TestPlaySaysItWasInterrupted(t *testing.T) {
	b, m := startNotes(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out testkit.SyncBuffer
	err := Play(ctx, NewNarrator(&out, time.Now), b, m, []Step{
		// Ctrl-C while the demo waits for counters that never come.
		{Title: "Waiting.", Send: func(context.Context, runtime.Publisher) error { cancel(); return nil },
			Want: map[string]runtime.SubscriptionStats{"notes": {Delivered: 1}}},
		{Title: "Never told.", Send: sendNotes("a")},
	}, time.Minute)
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "interrupted: ") {
		t.Fatalf("Play = %v, want interrupted", err)
	}
	if strings.Contains(out.String(), "Never told.") {
		t.Errorf("Play went on after the interruption:\n%s", out.String())
	}
}
