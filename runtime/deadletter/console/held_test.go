package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// otherReaderStore is a store whose letters another reader holds, as a RabbitMQ
// queue's are while a replay reads them: a Scan sees none of them.
type otherReaderStore struct {
	*memStore
	readers int
}

func (h otherReaderStore) Holders(context.Context) (int, error) { return h.readers, nil }

// While another reader holds the letters, the overview and the queue's
// page say so, never that nothing failed.
func TestPagesSayWhenAnotherReaderHoldsTheLetters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		letters []*deadletter.Letter
		want    string
	}{
		{"all held", nil, "The letters were held by another reader (a replay or listing under way) and not read"},
		{"some held", []*deadletter.Letter{letter("m1", "Card", "orders", "declined", time.Unix(1700000000, 0), "{}")}, "More letters were held by another reader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := otherReaderStore{memStore: newMemStore("orders.parked", tc.letters...), readers: 1}
			site := newSite(t, console.Options{}, s)
			site.signIn()
			for _, page := range []string{"/", "/q/orders.parked/"} {
				body := site.getRead(page).body
				if !strings.Contains(body, tc.want) || strings.Contains(body, "nothing failed") {
					t.Errorf("%s:\n%s", page, body)
				}
			}
		})
	}
	// With no other reader, an empty queue is empty.
	site := newSite(t, console.Options{}, newMemStore("orders.parked"))
	site.signIn()
	if body := site.getRead("/").body; !strings.Contains(body, "No letters: nothing failed.") || strings.Contains(body, "held by") {
		t.Errorf("an empty queue:\n%s", body)
	}
}
