package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// In the browser, over the directory a ZeroMQ keeper writes: the overview
// shows its groups and chart, and a letter of a group is purged from the
// directory, after which the overview counts one letter fewer.
func TestBrowserOverAKeepersDirectoryShowsTheGroupsAndPurgesALetter(t *testing.T) {
	dir := ordersDir(t)
	s := newSite(t, console.Options{}, dir)
	b := newBrowser(t)
	b.signIn(s.base, token)
	b.waitRead()
	main := b.text("main")
	for _, want := range []string{dir.Name(), "order <n>: card declined", "gateway timeout", "Read 4 letters at "} {
		if !strings.Contains(main, want) {
			t.Fatalf("the overview lacks %q:\n%s", want, main)
		}
	}
	if got := b.text(".count"); got != "4" {
		t.Fatalf("the overview counts %s letters", got)
	}
	if n := eval[int](b, `document.querySelectorAll("figure.chart svg rect.bar").length`); n == 0 {
		t.Fatal("the overview has no chart")
	}
	b.clickXPath(`//a[@class="group" and contains(., "card declined")]`)
	if got := b.text("#group-count"); got != "3" {
		t.Fatalf("the group page counts %s letters", got)
	}
	b.click("a.letter") // the newest: m3
	if got := b.text("main h1"); got != "Letter m3" {
		t.Fatalf("the first letter of the group is %q", got)
	}
	b.click("#purge-letter")
	if got := b.text("#plan"); !strings.HasPrefix(got, "Purge 1 of the 4 letters") {
		t.Fatalf("the confirm page says %q", got)
	}
	b.click("#confirm")
	if got := b.text("#done"); !strings.HasPrefix(got, "1 letters purged") || b.text("#left") != "3" {
		t.Fatalf("the result page says %q, %s left", got, b.text("#left"))
	}
	left := map[string]bool{}
	if err := dir.Scan(context.Background(), func(l *deadletter.Letter) error { left[l.MessageID()] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || left["m3"] {
		t.Fatalf("the directory holds %v after the purge of m3", left)
	}
	b.open(s.base + "/")
	b.waitRead()
	if got, main := b.text(".count"), b.text("main"); got != "3" || !strings.Contains(main, "Read 3 letters at ") {
		t.Fatalf("the overview after the purge counts %s:\n%s", got, main)
	}
}
