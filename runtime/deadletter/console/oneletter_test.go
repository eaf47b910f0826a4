package console_test

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// pageText is the text of a page as a browser shows it: without tags,
// entities read, each run of spaces one space.
func pageText(body string) string {
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, " ")
	return strings.Join(strings.Fields(html.UnescapeString(text)), " ")
}

// oneLetters finds a count of one letter written as "1 letters", and the
// chart's bars, whose titles (drawn on hover) say how many letters each is.
var (
	oneLetters = regexp.MustCompile(`(^|[^0-9])1 letters`)
	barTitle   = regexp.MustCompile(`<title>([^<]*)</title>`)
)

// The console counts one letter as "1 letter", never "1 letters": the
// headline and the letters read of the overview and the queue's page, a
// group's page, the chart, the confirm page's button and the result page.
func TestTheConsoleCountsOneLetterInWords(t *testing.T) {
	st := newMemStore("orders.parked",
		letter("m1", "Card", "orders", "order 1: card declined", t0, `{"order":1}`),
		letter("r1", "Refund", "refunds", "gateway timeout", t0.Add(3*time.Hour), `{"refund":1}`),
	)
	s := newSite(t, console.Options{}, st)
	s.signIn()
	pages := map[string]string{}
	show := func(name, body string) {
		pages[name] = body
		if m := oneLetters.FindString(pageText(body)); m != "" {
			t.Errorf("%s says %q:\n%s", name, m, pageText(body))
		}
		for _, title := range barTitle.FindAllStringSubmatch(body, -1) {
			if oneLetters.MatchString(html.UnescapeString(title[1])) {
				t.Errorf("%s: a bar of the chart says %q", name, title[1])
			}
		}
	}
	show("the group page", s.get("/q/orders.parked/g/"+groupOf(st, "m1")).body)
	confirm, form := s.confirm("orders.parked", "action=purge&group="+groupOf(st, "m1"))
	show("the confirm page", confirm.body)
	show("the result page", s.post("/q/orders.parked/purge", form).body)
	show("the overview", s.getRead("/").body)
	show("the queue's page", s.getRead("/q/orders.parked/").body)
	for name, want := range map[string]string{
		"the group page":   "1 letter : order <n>: card declined",
		"the confirm page": "Purge 1 letter",
		"the result page":  "1 letter purged",
		"the overview":     "Read 1 letter at",
		"the queue's page": "orders.parked 1 letter, read at",
	} {
		if !strings.Contains(pageText(pages[name]), want) {
			t.Errorf("%s does not say %q:\n%s", name, want, pageText(pages[name]))
		}
	}
	if !strings.Contains(pageText(pages["the result page"]), "orders.parked now holds 1 letter.") {
		t.Errorf("the result page does not say how many are left in words:\n%s", pageText(pages["the result page"]))
	}
}
