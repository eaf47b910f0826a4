package console_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// groupRows returns the reasons of the groups table of a page, in order.
func groupRows(t *testing.T, body string) []string {
	t.Helper()
	i := strings.Index(body, `<table class="groups">`)
	if i < 0 {
		t.Fatalf("no groups table in\n%s", body)
	}
	table := body[i : i+strings.Index(body[i:], "</table>")]
	var out []string
	for _, m := range regexp.MustCompile(`<a class="group" href="[^"]*">([^<]*)</a>`).FindAllStringSubmatch(table, -1) {
		out = append(out, m[1])
	}
	return out
}

// The groups are listed largest first, as deadletter.Grouper.Groups has
// them, not newest first: the group that fails most leads, however long
// ago its last letter was parked.
func TestTheGroupsAreListedLargestFirst(t *testing.T) {
	var ls []*deadletter.Letter
	add := func(n int, reason string, at time.Time) {
		for i := range n {
			ls = append(ls, letter(reason+string(rune('a'+i)), "Card", "orders", reason, at.Add(time.Duration(i)*time.Second), `{}`))
		}
	}
	add(2, "timeout", t0.Add(3*time.Hour))
	add(5, "declined", t0)
	add(1, "unknown card", t0.Add(5*time.Hour))
	add(3, "expired", t0.Add(time.Hour))
	st := newMemStore("orders.parked", ls...)
	s := newSite(t, console.Options{}, st)
	s.signIn()
	var g deadletter.Grouper
	for _, l := range ls {
		g.Add(l)
	}
	var want []string
	for _, gr := range g.Groups() {
		want = append(want, gr.Reason)
	}
	if strings.Join(want, ",") != "declined,expired,timeout,unknown card" {
		t.Fatalf("Grouper.Groups: %v", want)
	}
	for _, p := range []string{"/", "/q/orders.parked/"} {
		if got := groupRows(t, s.getRead(p).body); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s lists the groups %v, not largest first %v", p, got, want)
		}
	}
}
