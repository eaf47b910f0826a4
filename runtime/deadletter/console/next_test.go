package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// hostileNext are places to go after signing in that a browser would
// take off the console, or that the console cannot vouch for: each must
// fall back to the console's root.
var hostileNext = []string{
	"/\t/evil.example",   // a browser strips the TAB: //evil.example
	"/\n/evil.example",   // ... and newlines
	"/\r/evil.example",   //
	"/\r\n/evil.example", //
	"\t//evil.example",
	"//evil.example",
	"//evil.example/",
	"///evil.example",
	"/\\evil.example",  // a browser reads \ as /
	"/\\/evil.example", //
	"\\\\evil.example",
	"\\/evil.example",
	"/%09/evil.example", // decoded by what reads it next
	"/%0a/evil.example",
	"/%0D/evil.example",
	"/%2F/evil.example",
	"/%2f%2fevil.example",
	"/%5C/evil.example",
	"/%5c%5cevil.example",
	"/%00",
	"/%",      // not a URL
	"/%zz/..", //
	"https://evil.example/",
	"http:evil.example",
	"HTTPS://evil.example/",
	"javascript:alert(1)",
	"JaVaScRiPt:alert(1)",
	" javascript:alert(1)",
	"data:text/html,<script>alert(1)</script>",
	"evil.example",
	"q/orders.parked/",
	"",
	" /",
	"/ /evil.example",
	"/\v/evil.example",
	"/\f/evil.example",
	"/\x00/evil.example",
	"/\x7f/evil.example",
	"/\u00a0/evil.example", // no-break space
	"/\u2028/evil.example", // line separator
	"/\u3000/evil.example", // ideographic space
	"/\u0085/evil.example", // next line
	"/\xff/evil.example",   // not UTF-8
	"/..//evil.example",
	"/.%2e//evil.example",
}

// After signing in, the console goes only to a path of its own: a
// hostile next, in the sign-in page's address or in its form, sends the
// operator to the console's root, never to another site.
func TestSignInGoesOnlyToAPathOfTheConsole(t *testing.T) {
	hidden := regexp.MustCompile(`<input type="hidden" name="next" value="([^"]*)">`)
	for _, prefix := range []string{"", "/ops/dlq"} {
		s := newSite(t, console.Options{Prefix: prefix}, orders())
		root := prefix + "/"
		for _, next := range hostileNext {
			next := strings.ReplaceAll(next, "/evil", prefix+"/evil")
			if strings.HasPrefix(next, "/") && !strings.HasPrefix(next, "//") {
				next = prefix + next // the hostile part after the console's prefix
			}
			// The sign-in page's form carries next on.
			a := s.get("/login?next=" + url.QueryEscape(next))
			m := hidden.FindStringSubmatch(a.body)
			if a.status != http.StatusOK || m == nil {
				t.Fatalf("prefix %q: the sign-in page for next %q: %d\n%s", prefix, next, a.status, a.body)
			}
			if got := html.UnescapeString(m[1]); got != root {
				t.Errorf("prefix %q: next %q: the sign-in form goes on to %q, not %q", prefix, next, got, root)
			}
			// The sign-in itself redirects.
			status, loc := signInTo(t, s, next)
			if status != http.StatusSeeOther || loc != root {
				t.Errorf("prefix %q: next %q: signed in, sent to %q (%d), not %q", prefix, next, loc, status, root)
			}
		}
	}
}

// The console's own pages are still where signing in goes on to.
func TestSignInGoesOnToThePageAskedFor(t *testing.T) {
	for _, prefix := range []string{"", "/ops/dlq"} {
		st := orders()
		s := newSite(t, console.Options{Prefix: prefix}, st)
		for _, next := range []string{
			"/", "/q/orders.parked/", "/q/orders.parked/g/" + groupOf(st, "m1") + "?page=2",
			"/q/team%20a%2Forders%20parked/", "/q/orders.parked/confirm?action=purge&group=" + groupOf(st, "m1") + "&to=a%20b",
		} {
			next = prefix + next
			if _, loc := signInTo(t, s, next); loc != next {
				t.Errorf("prefix %q: next %q: sent to %q", prefix, next, loc)
			}
		}
		// Where the sign-in page sends a visitor who is not signed in.
		a := s.get("/q/orders.parked/?page=2")
		loc, err := url.Parse(a.header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		if next := loc.Query().Get("next"); next != prefix+"/q/orders.parked/?page=2" {
			t.Fatalf("prefix %q: sent to sign in with next %q", prefix, next)
		}
		if _, got := signInTo(t, s, loc.Query().Get("next")); got != prefix+"/q/orders.parked/?page=2" {
			t.Fatalf("prefix %q: signed in, sent to %q", prefix, got)
		}
	}
}

// signInTo signs in with next and returns the answer's status and its
// Location as sent: read off the wire, since a client refuses to follow
// (or even parse) some of the hostile ones.
func signInTo(t *testing.T, s *site, next string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", s.base+"/login", strings.NewReader(url.Values{"token": {token}, "next": {next}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.srv.Client().Transport.RoundTrip(req)
	if err != nil {
		t.Fatalf("sign in with next %q: %v", next, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}
