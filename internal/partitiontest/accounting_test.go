//go:build partitions

package partitiontest

import (
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// The accounting finds each kind of trouble it counts, in a run made up
// by hand; it needs no cluster.
func TestAccountingFindsEachKindOfTrouble(t *testing.T) {
	w := &workload{t: t, okIDs: map[int]bool{}, final: map[int]bool{}}
	record := func(id int, attempts ...int) {
		for _, a := range attempts {
			f := fateOf(id)
			ok := f == succeeds || (f == failsOnce && a >= 2)
			w.calls = append(w.calls, call{id: id, attempt: a, ok: ok})
		}
	}
	letter := func(id string, attempts int) *deadletter.Letter {
		return &deadletter.Letter{Properties: deadletter.Properties{MessageID: id}, Attempts: attempts, Explained: true, Reason: "failed on purpose"}
	}
	parked := map[int][]*deadletter.Letter{}
	for id := range 25 {
		if id == 10 {
			continue // never confirmed: not counted
		}
		w.confirmed[id].Store(true)
		switch {
		case id == 5: // lost
		case id == 6:
			record(id, 1, 1) // a success twice
		case id == 7:
			parked[id] = []*deadletter.Letter{letter("7", 1)} // parked, though it succeeds
		case id == 4:
			record(id, 1, 2, 3)
			parked[id] = []*deadletter.Letter{letter("4", 3), letter("4", 3)} // parked twice
		case id == 24:
			record(id, 1, 3) // skipped attempt 2
			parked[id] = []*deadletter.Letter{letter("24", 3)}
		case id == 1:
			w.calls = append(w.calls, call{id: id, attempt: 1, ok: true}) // succeeded on attempt 1; it fails once
		case fateOf(id) == failsOnce:
			record(id, 1, 2)
		default:
			record(id, 1)
		}
	}
	parked[-1] = []*deadletter.Letter{letter("stray", 3)}

	f, r := w.account(parked)
	if f.published != 24 {
		t.Errorf("published %d, want 24", f.published)
	}
	check := func(what string, got int, ids []string, want ...string) {
		t.Helper()
		if got != len(want) || len(ids) != len(want) {
			t.Errorf("%s: %d %v, want %d", what, got, ids, len(want))
			return
		}
		for k, prefix := range want {
			if !strings.HasPrefix(ids[k], prefix) {
				t.Errorf("%s: %q, want it to start with %q", what, ids[k], prefix)
			}
		}
	}
	check("lost", f.lost, r.lost, "5 (never ran)")
	check("wrong attempts", f.wrongAttempts, r.wrong, "1: succeeded on attempt 1, want 2", "24: never ran as attempt 2")
	check("unexpected", f.unexpected, r.unexpected, "7 parked", `a letter with message id "stray"`)
	if f.dupSuccesses != 1 || f.dupParks != 1 {
		t.Errorf("duplicated successes %d, parks %d; want 1 and 1", f.dupSuccesses, f.dupParks)
	}
}
