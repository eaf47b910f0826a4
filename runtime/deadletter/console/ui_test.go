package console_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
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

// swatches returns the colour of each group of a page's groups table, by
// group key.
func swatches(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<rect width="10" height="10" fill="(#[0-9a-f]{6})"/></svg></td>\s*<td class="num">\d+</td>\s*<td><a class="group" href="[^"]*/g/([0-9a-f]{8})"`).FindAllStringSubmatch(body, -1) {
		out[m[2]] = m[1]
	}
	return out
}

// legend returns the colour of each group in a page's chart legend, by
// its label.
func legend(body string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<li><svg [^>]*><rect [^>]*fill="(#[0-9a-f]{6})"/></svg> ([^<(]*) \(\d+\)</li>`).FindAllStringSubmatch(body, -1) {
		out[m[2]] = m[1]
	}
	return out
}

// A group keeps its colour from one reading to the next, in the chart
// and in the groups table, however the counts change; each group of the
// chart has a colour of its own.
func TestAGroupKeepsItsColour(t *testing.T) {
	var ls []*deadletter.Letter
	for i, reason := range []string{"declined", "declined", "declined", "declined", "expired", "expired", "expired", "timeout", "timeout", "refused"} {
		ls = append(ls, letter("m"+string(rune('a'+i)), "Card", "orders", reason, t0.Add(time.Duration(i)*time.Minute), `{}`))
	}
	st := newMemStore("orders.parked", ls...)
	s := newSite(t, console.Options{}, st)
	s.signIn()
	a := s.getRead("/")
	before, keys := swatches(t, a.body), legend(a.body)
	if len(before) != 4 || len(keys) != 4 {
		t.Fatalf("swatches %v, legend %v in\n%s", before, keys, a.body)
	}
	seen := map[string]bool{}
	for _, c := range before {
		if seen[c] {
			t.Fatalf("two groups of the chart share a colour: %v", before)
		}
		seen[c] = true
	}
	// The legend and the table agree.
	for label, c := range keys {
		if before[groupOf(st, map[string]string{"declined": "ma", "expired": "me", "timeout": "mh", "refused": "mj"}[label])] != c {
			t.Fatalf("the legend's %s is %s, the table's %v", label, c, before)
		}
	}
	// Purge three of the declined: it goes from the largest to among the
	// smallest.
	for _, id := range []string{"ma", "mb", "mc"} {
		_, form := s.confirm("orders.parked", "action=purge&key="+keyOf(st, id))
		if a := s.post("/q/orders.parked/purge", form); !strings.Contains(a.body, "1 letter purged") {
			t.Fatalf("purge %s: %s", id, a.body)
		}
	}
	a = s.getRead("/")
	if got := groupRows(t, a.body); strings.Join(got, ",") != "expired,timeout,declined,refused" {
		t.Fatalf("the groups after the purge: %v", got)
	}
	if after := swatches(t, a.body); len(after) != 4 || !equalMaps(after, before) {
		t.Fatalf("the colours changed from %v to %v", before, after)
	}
	// Another console, over the same letters, colours them alike.
	other := newSite(t, console.Options{}, newMemStore("orders.parked", st.snapshot()...))
	other.signIn()
	if got := swatches(t, other.getRead("/").body); !equalMaps(got, before) {
		t.Fatalf("another console colours the groups %v, not %v", got, before)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The legend's swatches are inline, beside their labels: the stylesheet
// makes only the chart's own SVG a block, and swatches inline blocks.
// (TestBrowserLegendSwatchesSitBesideTheirLabels checks the layout.)
func TestLegendSwatchesAreInline(t *testing.T) {
	s := newSite(t, console.Options{}, orders())
	s.signIn()
	a := s.getRead("/")
	items := regexp.MustCompile(`<ul class="legend">([\s\S]*?)</ul>`).FindStringSubmatch(a.body)
	if items == nil || strings.Count(items[1], "<li>") != 2 || strings.Count(items[1], `<li><svg class="swatch"`) != 2 {
		t.Fatalf("the legend's swatches:\n%s", a.body)
	}
	css := s.get("/static/style.css").body
	rules := map[string]string{}
	for _, m := range regexp.MustCompile(`([^{}]+)\{([^}]*)\}`).FindAllStringSubmatch(css, -1) {
		for sel := range strings.SplitSeq(m[1], ",") {
			rules[strings.Join(strings.Fields(sel), " ")] += m[2]
		}
	}
	for sel, decl := range rules {
		if strings.Contains(strings.ReplaceAll(decl, " ", ""), "display:block") && strings.HasSuffix(sel, "svg") && sel != "figure.chart > svg" {
			t.Errorf("%s { %s } makes a swatch a block", sel, decl)
		}
	}
	if d := strings.ReplaceAll(rules["svg.swatch"], " ", ""); !strings.Contains(d, "display:inline-block") || !strings.Contains(d, "vertical-align:") {
		t.Errorf("svg.swatch { %s }", rules["svg.swatch"])
	}
}

// The broker's delivery counters (x-delivery-count, x-acquired-count),
// which it changes while the letter waits in the dead-letter queue, are
// not headers of the letter: its page shows them apart, as the broker's
// bookkeeping.
func TestALettersPageShowsTheBrokersCountersApart(t *testing.T) {
	st := newMemStore("orders.parked",
		letter("q1", "Card", "orders", "card declined", t0, `{}`, "tenant", "acme", "x-acquired-count", int64(3), "x-delivery-count", int64(2)),
		letter("q2", "Card", "orders", "card declined", t0.Add(time.Minute), `{}`, "tenant", "acme"),
	)
	s := newSite(t, console.Options{}, st)
	s.signIn()
	section := func(body, id string) string {
		m := regexp.MustCompile(`<table class="fields" id="` + id + `">([\s\S]*?)</table>`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return m[1]
	}
	a := s.get("/q/orders.parked/l/" + keyOf(st, "q1"))
	headers, broker := section(a.body, "headers"), section(a.body, "broker")
	if !strings.Contains(headers, "<th>tenant</th><td>acme</td>") {
		t.Fatalf("the headers lack tenant:\n%s", a.body)
	}
	for _, counter := range []string{"x-acquired-count", "x-delivery-count"} {
		if strings.Contains(headers, counter) {
			t.Errorf("the letter's headers list %s:\n%s", counter, headers)
		}
	}
	if !strings.Contains(broker, "<th>x-acquired-count</th><td>3</td>") || !strings.Contains(broker, "<th>x-delivery-count</th><td>2</td>") {
		t.Errorf("the broker's counters are not shown apart:\n%s", a.body)
	}
	if !strings.Contains(a.body, "Broker bookkeeping") || !strings.Contains(a.body, "not the message's") {
		t.Errorf("the page does not say what the broker's counters are:\n%s", a.body)
	}
	// A letter without them has no such section.
	if a := s.get("/q/orders.parked/l/" + keyOf(st, "q2")); strings.Contains(a.body, `id="broker"`) || !strings.Contains(section(a.body, "headers"), "tenant") {
		t.Errorf("the page of a letter without counters:\n%s", a.body)
	}
}

// heldStore counts its letters as a RabbitMQ queue does: those a scan
// holds (delivered, not yet put back) are not counted.
type heldStore struct {
	*memStore
	mu   sync.Mutex
	held int
}

func (h *heldStore) Len(ctx context.Context) (int, error) {
	n, err := h.memStore.Len(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	return n - h.held, err
}

func (h *heldStore) Scan(ctx context.Context, fn func(*deadletter.Letter) error) error {
	defer func() {
		h.mu.Lock()
		h.held = 0
		h.mu.Unlock()
	}()
	return h.memStore.Scan(ctx, func(l *deadletter.Letter) error {
		h.mu.Lock()
		h.held++
		h.mu.Unlock()
		return fn(l)
	})
}

func (h *heldStore) Select(ctx context.Context, sel deadletter.Selection, fn func(*deadletter.Letter) error) error {
	return h.memStore.Select(ctx, sel, fn)
}

// figures returns the counts of a queue a page shows: its headline
// count, the letters read, the groups' counts added up and the legend's.
type figures struct {
	headline, unit, read string
	groups, legend       int
	now                  string // the count of the queue now, shown apart
}

func figuresOf(t *testing.T, body string) figures {
	t.Helper()
	var f figures
	if m := regexp.MustCompile(`<span class="count" data-queue="[^"]*">([^<]*)</span> <span class="unit">([^<]*)</span>`).FindStringSubmatch(body); m != nil {
		f.headline, f.unit = m[1], m[2]
	}
	if m := regexp.MustCompile(`Read (\d+) letters at`).FindStringSubmatch(body); m != nil {
		f.read = m[1]
	}
	if m := regexp.MustCompile(`<p class="note now">[^<]*<span class="count now"[^>]*>(\d+)</span>`).FindStringSubmatch(body); m != nil {
		f.now = m[1]
	}
	if i := strings.Index(body, `<table class="groups">`); i >= 0 {
		for _, m := range regexp.MustCompile(`<td class="num">(\d+)</td>`).FindAllStringSubmatch(body[i:], -1) {
			n, _ := strconv.Atoi(m[1])
			f.groups += n
		}
	}
	for _, m := range regexp.MustCompile(`\((\d+)\)</li>`).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[1])
		f.legend += n
	}
	return f
}

// After an action, while the queue is read again, the overview and the
// queue's page show one count of its letters: the one read, before the
// action, which the headline, the groups, the chart and the line that
// says when they were read agree on, and say so. A count of the queue
// while it is being read (which a RabbitMQ queue makes without the
// letters the reading holds) is not shown.
func TestAfterAnActionThePagesShowOneCount(t *testing.T) {
	st := &heldStore{memStore: orders()}
	st.gate = make(chan struct{})
	s := newSite(t, console.Options{Fresh: time.Hour, Wait: 20 * time.Millisecond}, st)
	s.signIn()
	s.get("/")
	for range 4 {
		st.gate <- struct{}{}
	}
	s.getRead("/")
	_, form := s.confirm("orders.parked", "action=purge&group="+groupOf(st.memStore, "r1"))
	if a := s.post("/q/orders.parked/purge", form); !strings.Contains(a.body, "1 letter purged") {
		t.Fatalf("purge: %s", a.body)
	}
	st.gate <- struct{}{} // the reading after the purge holds a letter, and waits
	for _, p := range []string{"/", "/q/orders.parked/"} {
		a := s.get(p)
		f := figuresOf(t, a.body)
		if !strings.Contains(a.body, "before the purge") || f.headline != "4" || f.read != "4" || f.groups != 4 || f.legend != 4 || f.now != "" {
			t.Errorf("%s while the queue is read again after the purge shows %+v:\n%s", p, f, a.body)
		}
		if !strings.Contains(f.unit, "read at ") {
			t.Errorf("%s does not say when its count was read: %q", p, f.unit)
		}
		if strings.Contains(a.body, ">2<") || strings.Contains(a.body, ">2 letters") {
			t.Errorf("%s shows a count of the queue while it is being read:\n%s", p, a.body)
		}
	}
	close(st.gate)
	for _, p := range []string{"/", "/q/orders.parked/"} {
		if f := figuresOf(t, s.getRead(p).body); f.headline != "3" || f.read != "3" || f.groups != 3 || f.legend != 3 || f.now != "" {
			t.Errorf("%s once read again shows %+v", p, f)
		}
	}
}

// A letter parked since the reading: the headline is the count read,
// with the groups, and the queue's count now is shown apart, labelled.
func TestACountOfTheQueueNowIsShownApart(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{Fresh: time.Hour}, st)
	s.signIn()
	s.getRead("/")
	st.add(letter("m9", "Card", "orders", "order 9: card declined", t0.Add(4*time.Hour), `{}`))
	for _, p := range []string{"/", "/q/orders.parked/"} {
		a := s.get(p)
		f := figuresOf(t, a.body)
		if f.headline != "4" || f.read != "4" || f.groups != 4 || f.now != "5" || !strings.Contains(a.body, "letters now") {
			t.Errorf("%s shows %+v:\n%s", p, f, a.body)
		}
	}
}
