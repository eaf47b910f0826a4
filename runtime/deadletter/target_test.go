package deadletter_test

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// Each Target has the kind of the fields it sets; one that mixes kinds
// has none.
func TestTargetKind(t *testing.T) {
	for _, c := range []struct {
		t    deadletter.Target
		want deadletter.TargetKind
	}{
		{deadletter.Target{}, deadletter.ToSource},
		{deadletter.Target{Queue: "q"}, deadletter.ToQueue},
		{deadletter.Target{Exchange: "x", RoutingKey: "k"}, deadletter.ToExchange},
		{deadletter.Target{Exchange: "x"}, deadletter.ToExchange},
		{deadletter.Target{Address: "tcp://h:1"}, deadletter.ToSourceAt},
		{deadletter.Target{Address: "tcp://h:1", Queue: "q"}, deadletter.ToQueueAt},
		{deadletter.Target{Exchange: "x", Queue: "q"}, 0},
		{deadletter.Target{Exchange: "x", Address: "tcp://h:1"}, 0},
		{deadletter.Target{RoutingKey: "k"}, 0},
	} {
		if got := c.t.Kind(); got != c.want {
			t.Errorf("%+v.Kind() = %v, want %v", c.t, got, c.want)
		}
	}
	if got := deadletter.ToSourceAt.String(); got != "each letter's source queue at an address" {
		t.Errorf("ToSourceAt says %q", got)
	}
}

// A Store says which Targets it takes by TargetKinds; one that does not
// takes those of a broker with queues and exchanges.
func TestTargetKindsOfAStore(t *testing.T) {
	if got := deadletter.TargetKinds(plainStore{}); !slices.Equal(got, []deadletter.TargetKind{deadletter.ToSource, deadletter.ToQueue, deadletter.ToExchange}) {
		t.Errorf("a store that does not say takes %v", got)
	}
	if got := deadletter.TargetKinds(addressStore{}); !slices.Equal(got, []deadletter.TargetKind{deadletter.ToSourceAt}) {
		t.Errorf("a store that says takes %v", got)
	}
}

// plainStore is a Store that does nothing.
type plainStore struct{}

func (plainStore) Name() string                     { return "plain" }
func (plainStore) Len(context.Context) (int, error) { return 0, nil }
func (plainStore) Scan(context.Context, func(*deadletter.Letter) error) error {
	return nil
}
func (plainStore) Select(context.Context, deadletter.Selection, func(*deadletter.Letter) error) error {
	return nil
}
func (plainStore) Groups(context.Context) ([]deadletter.Group, error) { return nil, nil }
func (plainStore) Replay(context.Context, deadletter.Selection, deadletter.ReplayOptions) (deadletter.Report, error) {
	return deadletter.Report{}, nil
}
func (plainStore) Purge(context.Context, deadletter.Selection, bool) (deadletter.Report, error) {
	return deadletter.Report{}, nil
}
func (plainStore) Export(context.Context, io.Writer, deadletter.Selection) (int, error) {
	return 0, nil
}
func (plainStore) Import(context.Context, io.Reader) (int, error) { return 0, nil }
func (plainStore) Close() error                                   { return nil }

// addressStore replays to each letter's source queue at an address only.
type addressStore struct{ plainStore }

func (addressStore) TargetKinds() []deadletter.TargetKind {
	return []deadletter.TargetKind{deadletter.ToSourceAt}
}
