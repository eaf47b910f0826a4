package console_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// getRead gets path until no store on it is being read.
func (s *site) getRead(path string) answer {
	s.t.Helper()
	deadline := time.Now().Add(testkit.Patience)
	for {
		a := s.get(path)
		if !strings.Contains(a.body, `class="note reading"`) {
			return a
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s is still being read:\n%s", path, a.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// One reading of the store serves the overview, a group's page, a
// letter's page and the count of a confirm page, each saying when its
// letters were read; the store is not read again until the figures are
// older than Options.Fresh, or an action ends.
func TestThePagesAreServedFromOneReadingOfTheStore(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{Fresh: time.Hour}, st)
	s.signIn()
	a := s.getRead("/")
	if !strings.Contains(a.body, "Read 4 letters at ") || !strings.Contains(a.body, "card declined") {
		t.Fatalf("the overview:\n%s", a.body)
	}
	if n := st.readings(); n != 1 {
		t.Fatalf("the overview read the store %d times", n)
	}
	g, k := groupOf(st, "m2"), keyOf(st, "m2")
	if a := s.get("/q/orders.parked/g/" + g); !strings.Contains(a.body, `id="group-count">3<`) || !strings.Contains(a.body, "These letters were read at ") {
		t.Fatalf("the group page:\n%s", a.body)
	}
	if a := s.get("/q/orders.parked/l/" + k + "?group=" + g); !strings.Contains(a.body, "order 2: card declined") ||
		!strings.Contains(a.body, "As read at ") || !strings.Contains(a.body, "&#34;order&#34;: 2") {
		t.Fatalf("the letter page:\n%s", a.body)
	}
	a, form := s.confirm("orders.parked", "action=purge&key="+k)
	if !strings.Contains(a.body, "<strong>1</strong> of the 4 letters") || !strings.Contains(a.body, "Counted in the letters read at ") {
		t.Fatalf("the confirm page:\n%s", a.body)
	}
	if a := s.get("/q/orders.parked/"); !strings.Contains(a.body, "Read 4 letters at ") {
		t.Fatalf("the queue page:\n%s", a.body)
	}
	if n := st.readings(); n != 1 {
		t.Fatalf("the pages read the store %d times, not once", n)
	}
	// The purge reads the store, and so does the index after it.
	if a := s.post("/q/orders.parked/purge", form); !strings.Contains(a.body, "1 letter purged") {
		t.Fatalf("purge: %s", a.body)
	}
	a = s.getRead("/")
	if !strings.Contains(a.body, "Read 3 letters at ") || strings.Contains(a.body, "before the purge") {
		t.Fatalf("the overview after the purge:\n%s", a.body)
	}
	if a := s.get("/q/orders.parked/g/" + g); !strings.Contains(a.body, `id="group-count">2<`) || strings.Contains(a.body, "m2") {
		t.Fatalf("the group page after the purge:\n%s", a.body)
	}
	if a := s.get("/q/orders.parked/l/" + k); a.status != 404 {
		t.Fatalf("the page of the letter purged: %d\n%s", a.status, a.body)
	}
}

// After an action, the pages say that their figures were read before it
// while the store is read again, and then show the new figures.
func TestAfterAnActionThePagesSayTheirFiguresAreFromBeforeIt(t *testing.T) {
	st := orders()
	st.gate = make(chan struct{})
	s := newSite(t, console.Options{Fresh: time.Hour, Wait: 20 * time.Millisecond}, st)
	s.signIn()
	s.get("/") // starts the first reading, which waits at the gate
	for range 4 {
		st.gate <- struct{}{}
	}
	s.getRead("/")
	g := groupOf(st, "m1")
	_, form := s.confirm("orders.parked", "action=purge&group="+g)
	if a := s.post("/q/orders.parked/purge", form); !strings.Contains(a.body, "3 letters purged") {
		t.Fatalf("purge: %s", a.body)
	}
	// The reading after the purge waits at the gate.
	for _, p := range []string{"/", "/q/orders.parked/g/" + g} {
		a := s.get(p)
		if !strings.Contains(a.body, "before the purge that ended at ") || !strings.Contains(a.body, `class="note reading"`) ||
			!strings.Contains(a.body, `http-equiv="refresh"`) {
			t.Fatalf("%s while the store is read again:\n%s", p, a.body)
		}
	}
	st.gate <- struct{}{}
	a := s.getRead("/")
	if strings.Contains(a.body, "before the purge") || strings.Contains(a.body, "card declined") || !strings.Contains(a.body, "Read 1 letter at ") {
		t.Fatalf("the overview read after the purge:\n%s", a.body)
	}
}

// A store of more letters than the index keeps rows of: a group's pages
// are read from the store, newest first all the same.
func TestAGroupPastTheIndexIsReadFromTheStoreNewestFirst(t *testing.T) {
	defer console.SetIndexLimits(10, 1<<20)()
	var ls []*deadletter.Letter
	for i := range 30 {
		ls = append(ls, letter("m"+string(rune('a'+i)), "Card", "orders", "card declined", t0.Add(time.Duration(i)*time.Minute), `{}`))
	}
	st := newMemStore("orders.parked", ls...)
	s := newSite(t, console.Options{Fresh: time.Hour, PageSize: 20}, st)
	s.signIn()
	if a := s.getRead("/"); !strings.Contains(a.body, "Read 30 letters at ") {
		t.Fatalf("the overview:\n%s", a.body)
	}
	before := st.readings()
	g := deadletter.GroupKey(ls[0])
	a := s.get("/q/orders.parked/g/" + g + "?page=2")
	if st.readings() != before+1 || !strings.Contains(a.body, `id="group-count">30<`) {
		t.Fatalf("page 2 (read %d times):\n%s", st.readings()-before, a.body)
	}
	rows := strings.Split(a.body, `class="letter"`)[1:]
	if len(rows) != 10 || !strings.HasPrefix(rows[0][strings.Index(rows[0], ">")+1:], "mj<") || !strings.HasPrefix(rows[9][strings.Index(rows[9], ">")+1:], "ma<") {
		t.Fatalf("page 2 is not the oldest 10, newest first:\n%s", a.body)
	}
	// A letter's page is read from the store too.
	k := deadletter.LetterKey(ls[3])
	if a := s.get("/q/orders.parked/l/" + k); a.status != 200 || !strings.Contains(a.body, "Letter md") {
		t.Fatalf("the letter page: %d\n%s", a.status, a.body)
	}
	if n := st.readings() - before; n != 2 {
		t.Fatalf("the pages read the store %d times", n)
	}
}

// A letter the index does not keep whole (past its bytes) is read from
// the store for its page.
func TestALetterNotKeptWholeIsReadFromTheStore(t *testing.T) {
	defer console.SetIndexLimits(1000, 8)()
	st := orders()
	s := newSite(t, console.Options{Fresh: time.Hour}, st)
	s.signIn()
	s.getRead("/")
	before := st.readings()
	a := s.get("/q/orders.parked/l/" + url.PathEscape(keyOf(st, "r1")))
	if a.status != 200 || !strings.Contains(a.body, "gateway timeout") || st.readings() != before+1 {
		t.Fatalf("the letter page (read %d times): %d\n%s", st.readings()-before, a.status, a.body)
	}
}
