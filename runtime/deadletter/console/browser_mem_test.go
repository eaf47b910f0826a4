package console_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// A letter whose body, headers, type, id and reason hold script, an
// image with onerror and a javascript: link runs nothing on any page.
func TestBrowserAHostileLetterRunsNothing(t *testing.T) {
	evil := `<script>window.pwned=1;document.title="pwned"</script><img src=x onerror="window.pwned=2;document.title='pwned'"><a href="javascript:window.pwned=3">click</a><svg onload="window.pwned=4"></svg>`
	st := newMemStore("hostile.parked",
		letter(evil, evil, evil, evil, t0, evil, evil, evil, "x-html", []byte(evil)),
		letter("json", "Card", "orders", "reason "+evil, t0, `{"note":"`+strings.ReplaceAll(evil, `"`, `\"`)+`"}`, "traceparent", evil),
	)
	s := newSite(t, console.Options{}, st)
	b := newBrowser(t)
	b.signIn(s.base, token)
	l := st.snapshot()[0]
	q := s.base + "/q/" + url.PathEscape(st.name)
	for _, p := range []string{s.base + "/", q + "/", q + "/g/" + deadletter.GroupKey(l), q + "/l/" + deadletter.LetterKey(l),
		q + "/l/" + keyOf(st, "json"), q + "/confirm?action=purge&key=" + deadletter.LetterKey(l)} {
		b.open(p)
		title := eval[string](b, "document.title")
		if eval[bool](b, "window.pwned !== undefined") || title == "pwned" {
			t.Fatalf("%s ran the letter's script (title %q)", p, title)
		}
		if n := eval[int](b, `document.querySelectorAll("script, img, iframe, object, embed, a[href^='javascript'], [onerror], [onload]").length`); n != 0 {
			t.Fatalf("%s made %d elements of the letter", p, n)
		}
		if !strings.Contains(p, "confirm") && !strings.Contains(b.text("main"), "<script>") {
			t.Fatalf("%s does not show the letter's text as text:\n%s", p, b.text("main"))
		}
	}
	// Clicking what looks like a link does nothing either.
	b.open(q + "/l/" + deadletter.LetterKey(l))
	if eval[int](b, `document.querySelectorAll("a").length`) == 0 || eval[bool](b, "window.pwned !== undefined") {
		t.Fatal("the page has no links, or something ran")
	}
}

// In the browser: an action sent with a CSRF token used already is
// refused, and so is one sent after the session's cookie is gone; neither
// changes anything.
func TestBrowserRefusesAStaleFormAndAnActionWithoutTheToken(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	b := newBrowser(t)
	b.signIn(s.base, token)
	b.open(s.base + "/q/orders.parked/confirm?action=purge&key=" + keyOf(st, "m1"))
	used := eval[string](b, `document.querySelector("form.confirm input[name=csrf]").value`)
	b.click("#confirm")
	if got := b.text("#done"); !strings.HasPrefix(got, "1 letter purged") {
		t.Fatalf("purge: %s", got)
	}
	before := st.state()
	b.open(s.base + "/q/orders.parked/confirm?action=purge&all=1")
	eval[string](b, `document.querySelector("form.confirm input[name=csrf]").value = "`+used+`"`)
	b.click("#confirm")
	if got := b.text("main h1"); !strings.Contains(got, "the form was sent already") {
		t.Fatalf("a stale form: %s", got)
	}
	b.open(s.base + "/q/orders.parked/confirm?action=purge&all=1")
	b.clearCookies()
	b.click("#confirm")
	if got := b.text("main h1"); !strings.Contains(got, "Sign in with the operator token first") {
		t.Fatalf("without the token: %s", got)
	}
	if got := st.state(); got != before {
		t.Fatalf("a refused action changed the store: %s, was %s", got, before)
	}
	if !strings.Contains(s.logs.String(), "refused an action without the operator token") {
		t.Fatalf("the refusal is not logged:\n%s", s.logs)
	}
}
