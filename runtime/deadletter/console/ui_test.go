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
		if a := s.post("/q/orders.parked/purge", form); !strings.Contains(a.body, "1 letters purged") {
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
