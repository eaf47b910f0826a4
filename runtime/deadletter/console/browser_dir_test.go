package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/zeromq"
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
	if got := b.text("#done"); !strings.HasPrefix(got, "1 letter purged") || b.text("#left") != "3" {
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

// In the browser, a group of a keeper's directory is replayed to an
// address: the confirm page asks for it, refuses one that is not an
// address in its own words, and then the letters arrive at the PULL
// bound there, and leave the directory.
func TestBrowserReplaysAGroupOfAKeepersDirectoryToAnAddress(t *testing.T) {
	dir := ordersDir(t)
	s := newSite(t, console.Options{}, dir)
	addr, got := pullAt(t)
	b := newBrowser(t)
	b.signIn(s.base, token)
	b.waitRead()
	b.clickXPath(`//a[@class="group" and contains(., "card declined")]`)
	b.click("#replay-group")
	if got, want := b.text("#plan"), "to each letter's source queue at the address below"; !strings.HasPrefix(got, "Replay 3 of the 4 letters") || !strings.Contains(got, want) {
		t.Fatalf("the confirm page says %q", got)
	}
	b.do("type an address that is not one", chromedp.SetValue(chromedp.ID("address"), "localhost:5557"))
	b.click("#confirm")
	if got := b.text("p.error"); !strings.Contains(got, `"localhost:5557" is not an address to replay to: write tcp://host:port`) {
		t.Fatalf("the page says %q", got)
	}
	if n, err := dir.Len(context.Background()); err != nil || n != 4 {
		t.Fatalf("after the refused address, the directory holds %d (%v)", n, err)
	}
	b.do("type the address", chromedp.SetValue(chromedp.ID("address"), addr))
	b.click("#confirm")
	if got, want := b.text("#done"), "3 letters replayed to each letter's source queue at "+addr+", of 3 selected"; !strings.HasPrefix(got, want) || b.text("#left") != "1" {
		t.Fatalf("the result page says %q, %s left; want %q", got, b.text("#left"), want)
	}
	ids := map[string]bool{}
	for _, env := range receiveEnvelopes(t, got, 3) {
		id, _ := env.Header(zeromq.HeaderMessageID)
		ids[id] = true
		if env.Subscription != "orders" {
			t.Fatalf("letter %s replayed to queue %q, want its source orders", id, env.Subscription)
		}
	}
	if !ids["m1"] || !ids["m2"] || !ids["m3"] {
		t.Fatalf("replayed %v, want m1, m2, m3", ids)
	}
	if left := letterIDs(t, dir); len(left) != 1 || left[0] != "r1" {
		t.Fatalf("the directory holds %v after the replay", left)
	}
}

// letterIDs is the message ids of the letters of dir, oldest first.
func letterIDs(t *testing.T, dir *zeromq.DeadLetterDir) []string {
	t.Helper()
	var ids []string
	if err := dir.Scan(context.Background(), func(l *deadletter.Letter) error { ids = append(ids, l.MessageID()); return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}
