package console_test

import (
	"bufio"
	"errors"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

const token = "operator-secret-token"

// site is a console on a test server, with an operator's browser-like
// client (a cookie jar; redirects are not followed).
type site struct {
	t      *testing.T
	c      *console.Console
	srv    *httptest.Server
	client *http.Client
	logs   *testkit.SyncBuffer
	base   string
}

func newSite(t *testing.T, opts console.Options, stores ...deadletter.Store) *site {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	if opts.Token == "" {
		opts.Token = token
	}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c, err := console.New(stores, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	prefix := opts.Prefix
	mux.Handle(prefix+"/", c)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &site{t: t, c: c, srv: srv, client: newClient(), logs: logs, base: srv.URL + prefix}
}

// serveConsole serves c, built by the test, and closes both at its end.
func serveConsole(t *testing.T, c *console.Console) *site {
	srv := httptest.NewServer(c)
	t.Cleanup(func() {
		srv.Close()
		_ = c.Close()
	})
	return &site{t: t, c: c, srv: srv, client: newClient(), base: srv.URL}
}

func newClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type answer struct {
	status int
	body   string
	header http.Header
}

func (s *site) do(client *http.Client, method, path string, form url.Values) answer {
	s.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

func (s *site) get(path string) answer { s.t.Helper(); return s.do(s.client, "GET", path, nil) }
func (s *site) post(path string, form url.Values) answer {
	s.t.Helper()
	return s.do(s.client, "POST", path, form)
}

func (s *site) signIn() {
	s.t.Helper()
	a := s.post("/login", url.Values{"token": {token}, "next": {"/"}})
	if a.status != http.StatusSeeOther {
		s.t.Fatalf("sign in: %d %s", a.status, a.body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// confirm opens the confirm page of an action and returns its form.
func (s *site) confirm(queue, query string) (answer, url.Values) {
	s.t.Helper()
	a := s.get("/q/" + url.PathEscape(queue) + "/confirm?" + query)
	if a.status != http.StatusOK {
		s.t.Fatalf("confirm %s: %d %s", query, a.status, a.body)
	}
	ms := regexp.MustCompile(`<form method="post" action="[^"]*/(replay|purge)" class="confirm">([\s\S]*?)</form>`).FindStringSubmatch(a.body)
	if ms == nil {
		s.t.Fatalf("confirm %s: no form in\n%s", query, a.body)
	}
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(ms[2], -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	return a, form
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func orders() *memStore {
	return newMemStore("orders.parked",
		letter("m1", "Card", "orders", "order 1: card declined", t0, `{"order":1}`),
		letter("m2", "Card", "orders", "order 2: card declined", t0.Add(time.Hour), `{"order":2}`),
		letter("m3", "Card", "orders", "order 3: card declined", t0.Add(2*time.Hour), `{"order":3}`),
		letter("r1", "Refund", "refunds", "gateway timeout\nat line 2", t0.Add(3*time.Hour), `{"refund":1}`),
	)
}

func groupOf(s *memStore, id string) string {
	for _, l := range s.snapshot() {
		if l.MessageID() == id {
			return deadletter.GroupKey(l)
		}
	}
	return ""
}

func keyOf(s *memStore, id string) string {
	for _, l := range s.snapshot() {
		if l.MessageID() == id {
			return deadletter.LetterKey(l)
		}
	}
	return ""
}

func TestPagesAskToSignInFirst(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	for _, path := range []string{"/", "/q/orders.parked/", "/q/orders.parked/g/" + groupOf(st, "m1"), "/q/orders.parked/export?all=1"} {
		a := s.get(path)
		if a.status != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/login?next=") {
			t.Errorf("GET %s without signing in: %d, Location %q", path, a.status, a.header.Get("Location"))
		}
		if strings.Contains(a.body, "card declined") {
			t.Errorf("GET %s shows letters without the token", path)
		}
	}
	if a := s.get("/login"); a.status != http.StatusOK || !strings.Contains(a.body, `name="token"`) {
		t.Fatalf("login page: %d %s", a.status, a.body)
	}
}

func TestAWrongTokenDoesNotSignIn(t *testing.T) {
	s := newSite(t, console.Options{}, orders())
	a := s.post("/login", url.Values{"token": {"not-the-token"}})
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "not the operator token") {
		t.Fatalf("wrong token: %d %s", a.status, a.body)
	}
	if a := s.get("/"); a.status != http.StatusSeeOther {
		t.Fatalf("after a wrong token the overview answers %d", a.status)
	}
	if !strings.Contains(s.logs.String(), "sign-in refused") {
		t.Fatalf("the refusal is not logged:\n%s", s.logs)
	}
}

// An action without a session, with a CSRF token used already, of
// another session, or of another action, is refused and changes nothing.
func TestActionsWithoutTheTokenOrAFreshCSRFTokenAreRefused(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	group := groupOf(st, "m1")
	_, form := s.confirm("orders.parked", "action=purge&group="+group)
	before := st.state()

	// No session at all: a client without the cookie.
	if a := s.do(newClient(), "POST", "/q/orders.parked/purge", form); a.status != http.StatusForbidden {
		t.Fatalf("purge without the token: %d %s", a.status, a.body)
	}
	// No CSRF token.
	noCSRF := url.Values{"group": {group}}
	if a := s.post("/q/orders.parked/purge", noCSRF); a.status != http.StatusForbidden {
		t.Fatalf("purge without a CSRF token: %d", a.status)
	}
	// The purge form's token on the replay action.
	if a := s.post("/q/orders.parked/replay", form); a.status != http.StatusForbidden {
		t.Fatalf("replay with a purge token: %d", a.status)
	}
	// Another session's token.
	other := &site{t: t, srv: s.srv, client: newClient(), base: s.base}
	other.signIn()
	if a := other.post("/q/orders.parked/purge", form); a.status != http.StatusForbidden || !strings.Contains(a.body, "not of this session") {
		t.Fatalf("purge with another session's token: %d %s", a.status, a.body)
	}
	// A token altered.
	bad := url.Values{"group": {group}, "csrf": {form.Get("csrf") + "0"}}
	if a := s.post("/q/orders.parked/purge", bad); a.status != http.StatusForbidden {
		t.Fatalf("purge with an altered token: %d", a.status)
	}
	if got := st.state(); got != before {
		t.Fatalf("a refused action changed the store: %s, was %s", got, before)
	}

	// The form works once...
	if a := s.post("/q/orders.parked/purge", form); a.status != http.StatusOK || !strings.Contains(a.body, "3 letters purged") {
		t.Fatalf("purge: %d %s", a.status, a.body)
	}
	// ...and, stale, never again.
	st.add(letter("m9", "Card", "orders", "order 9: card declined", t0, `{}`)) // the store is read again meanwhile
	after := st.state()
	if a := s.post("/q/orders.parked/purge", form); a.status != http.StatusForbidden || !strings.Contains(a.body, "sent already") {
		t.Fatalf("purge with a used token: %d %s", a.status, a.body)
	}
	if got := st.state(); got != after {
		t.Fatalf("a stale form changed the store: %s, was %s", got, after)
	}
	// Signed out, the session's forms are refused.
	_, form = s.confirm("orders.parked", "action=purge&group="+group)
	logout := csrfField.FindStringSubmatch(s.get("/").body)
	if a := s.post("/logout", url.Values{"csrf": {logout[1]}}); a.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", a.status)
	}
	if a := s.post("/q/orders.parked/purge", form); a.status != http.StatusForbidden {
		t.Fatalf("purge after signing out: %d", a.status)
	}
	if got := st.state(); got != after {
		t.Fatalf("a refused action changed the store: %s, was %s", got, after)
	}
}

// A POST from another site is refused before it is read.
func TestACrossSitePostIsRefused(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	_, form := s.confirm("orders.parked", "action=purge&all=1")
	req, _ := http.NewRequest("POST", s.base+"/q/orders.parked/purge", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || st.state() != "4 letters, ops 0" {
		t.Fatalf("cross-site purge: %d, %s", resp.StatusCode, st.state())
	}
}

// No GET changes anything: pages, the confirm page, the export, and a
// GET of an action's address.
func TestGetNeverChangesState(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	group, key := groupOf(st, "m1"), keyOf(st, "m1")
	before := st.state()
	for _, path := range []string{
		"/", "/q/orders.parked/", "/q/orders.parked/?page=2", "/q/orders.parked/g/" + group, "/q/orders.parked/g/" + group + "?page=9",
		"/q/orders.parked/l/" + key, "/q/orders.parked/confirm?action=purge&all=1", "/q/orders.parked/confirm?action=replay&group=" + group,
		"/q/orders.parked/export?all=1", "/q/orders.parked/purge?all=1", "/q/orders.parked/replay?all=1&csrf=x",
	} {
		a := s.get(path)
		if a.status >= 500 {
			t.Errorf("GET %s: %d %s", path, a.status, a.body)
		}
	}
	if got := st.state(); got != before {
		t.Fatalf("GETs changed the store: %s, was %s", got, before)
	}
	if a := s.get("/q/orders.parked/purge?all=1"); a.status != http.StatusMethodNotAllowed && a.status != http.StatusNotFound {
		t.Fatalf("GET of the purge action: %d", a.status)
	}
}

func TestOverviewShowsEachQueueWithItsGroupsAndChart(t *testing.T) {
	st := orders()
	other := newMemStore("billing.parked")
	s := newSite(t, console.Options{Subscriptions: map[string][]string{"orders.parked": {"orders", "refunds"}}}, st, other)
	s.signIn()
	a := s.get("/")
	for _, want := range []string{
		`orders.parked`, `data-queue="orders.parked">4<`, "order &lt;n&gt;: card declined", "gateway timeout …",
		"Parked by orders, refunds.", "<svg", `<rect class="bar"`, "billing.parked", "No letters: nothing failed.",
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	// The largest first: the cards (3) come before the refund group (1),
	// parked last.
	table := a.body[strings.Index(a.body, `<table class="groups">`):]
	if strings.Index(table, "gateway timeout") < strings.Index(table, "card declined") {
		t.Errorf("the groups are not the largest first")
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"} {
		if a.header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q", csp)
	}
}

func TestGroupPageListsItsLettersAPageAtATime(t *testing.T) {
	var letters []*deadletter.Letter
	for i := range 120 {
		letters = append(letters, letter("m"+strings.Repeat("x", i%3)+string(rune('a'+i%26)), "Card", "orders", "card declined", t0.Add(time.Duration(i)*time.Minute), `{}`))
	}
	st := newMemStore("orders.parked", letters...)
	s := newSite(t, console.Options{PageSize: 50}, st)
	s.signIn()
	g := deadletter.GroupKey(letters[0])
	a := s.get("/q/orders.parked/g/" + g)
	if n := strings.Count(a.body, `class="letter"`); n != 50 {
		t.Fatalf("page 1 shows %d letters", n)
	}
	if !strings.Contains(a.body, "page 1 of 3") || !strings.Contains(a.body, `id="group-count">120<`) {
		t.Fatalf("page 1:\n%s", a.body)
	}
	// Newest first: page 1 starts at the last letter
	// parked, page 3 ends at the first.
	parked := regexp.MustCompile(`<td>(2026-11-30 \d\d:\d\d:\d\d)</td>`)
	if got := parked.FindAllStringSubmatch(a.body, -1); len(got) != 50 || got[0][1] != "2026-11-30 10:59:00" || got[49][1] != "2026-11-30 10:10:00" {
		t.Fatalf("page 1 is not newest first: %v", got)
	}
	a = s.get("/q/orders.parked/g/" + g + "?page=3")
	if n := strings.Count(a.body, `class="letter"`); n != 20 {
		t.Fatalf("page 3 shows %d letters", n)
	}
	if got := parked.FindAllStringSubmatch(a.body, -1); len(got) != 20 || got[0][1] != "2026-11-30 09:19:00" || got[19][1] != "2026-11-30 09:00:00" {
		t.Fatalf("page 3 is not newest first: %v", got)
	}
	for _, want := range []string{"orders", "Card", "These letters were read at "} {
		if !strings.Contains(a.body, want) {
			t.Errorf("page 3 lacks %q", want)
		}
	}
}

func TestLetterPageShowsHeadersPropertiesTraceAndBody(t *testing.T) {
	st := newMemStore("orders.parked",
		letter("j1", "Card", "orders", "order 1: card declined\ncaused by: gateway said no", t0, `{"order":1,"lines":[1,2]}`,
			"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tenant", "acme"),
		letter("b1", "Blob", "blobs", "not text", t0, "\x00\x01\xffbinary"),
	)
	s := newSite(t, console.Options{}, st)
	s.signIn()
	a := s.get("/q/orders.parked/l/" + keyOf(st, "j1"))
	for _, want := range []string{
		"4bf92f3577b34da6a3ce929d0e0e4736", "tenant", "acme", "message_id", "application/json",
		"{\n  &#34;order&#34;: 1,\n  &#34;lines&#34;: [\n    1,\n    2\n  ]\n}", "caused by: gateway said no", "Body <span class=\"unit\">JSON",
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the letter page lacks %q", want)
		}
	}
	a = s.get("/q/orders.parked/l/" + keyOf(st, "b1"))
	for _, want := range []string{"binary, 9 bytes", "00 01 ff 62 69 6e 61 72  79", "AAH/YmluYXJ5"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the binary letter's page lacks %q:\n%s", want, a.body)
		}
	}
	if a := s.get("/q/orders.parked/l/00000000000000000000"); a.status != http.StatusNotFound {
		t.Fatalf("a letter that is not there: %d", a.status)
	}
}

// Hostile letters: whatever a body, header, type, id, source or reason
// holds is shown as text, never as markup.
func TestEveryByteOfALetterIsEscaped(t *testing.T) {
	evil := `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">javascript:alert(1)"'&`
	st := newMemStore("evil<q>\"'",
		letter(evil, evil, evil, evil, t0, evil, evil, evil, "x-other", []byte(evil)),
		letter("j", "T", "s", evil, t0, `{"html":"`+strings.ReplaceAll(evil, `"`, `\"`)+`"}`),
	)
	s := newSite(t, console.Options{}, st)
	s.signIn()
	var l1 = st.snapshot()[0]
	q := "/q/" + url.PathEscape(st.name)
	pages := []string{"/", q + "/", q + "/g/" + deadletter.GroupKey(l1), q + "/l/" + deadletter.LetterKey(l1),
		q + "/l/" + keyOf(st, "j"), q + "/confirm?action=purge&key=" + deadletter.LetterKey(l1)}
	for _, p := range pages {
		a := s.get(p)
		if a.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, a.status, a.body)
		}
		low := strings.ToLower(a.body)
		for _, bad := range []string{"<script", "<img", `href="javascript`, "<q>", `"'&`} {
			if strings.Contains(low, bad) {
				t.Errorf("GET %s holds %q unescaped", p, bad)
			}
		}
		if !strings.Contains(p, "confirm") && !strings.Contains(a.body, "&lt;script&gt;") {
			t.Errorf("GET %s does not show the letter's text", p)
		}
	}
}

func TestReplayAGroupToItsSource(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	page, form := s.confirm("orders.parked", "action=replay&group="+groupOf(st, "m1"))
	if !strings.Contains(page.body, "Replay <strong>3</strong> of the 4 letters") || !strings.Contains(page.body, "each letter&#39;s source queue") {
		t.Fatalf("confirm page:\n%s", page.body)
	}
	a := s.post("/q/orders.parked/replay", form)
	if a.status != http.StatusOK || !strings.Contains(a.body, "3 letters replayed to each letter&#39;s source queue, of 3 selected") || !strings.Contains(a.body, `id="left">1<`) {
		t.Fatalf("replay: %d %s", a.status, a.body)
	}
	if len(st.sent["orders"]) != 3 || len(st.letters) != 1 {
		t.Fatalf("after the replay: %s", st.state())
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "dlq console: replay") || !strings.Contains(logs, "replayed=3") || !strings.Contains(logs, "token="+console.Fingerprint(token)) {
		t.Fatalf("the replay is not logged with its count and the token's fingerprint:\n%s", logs)
	}
	if strings.Contains(logs, token) {
		t.Fatalf("the log holds the token:\n%s", logs)
	}
	// The overview is read again at once: the group is gone.
	if a := s.get("/"); strings.Contains(a.body, "card declined") {
		t.Fatalf("the overview still shows the replayed group")
	}
}

func TestReplaySelectedLettersToANamedQueueReportsFailures(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	keys := "key=" + keyOf(st, "m1") + "&key=" + keyOf(st, "m3")
	_, form := s.confirm("orders.parked", "action=replay&to=orders.fixed&group="+groupOf(st, "m1")+"&"+keys)
	if form.Get("to") != "orders.fixed" || len(form["key"]) != 2 {
		t.Fatalf("form %v", form)
	}
	a := s.post("/q/orders.parked/replay", form)
	if !strings.Contains(a.body, "2 letters replayed to queue orders.fixed, of 2 selected") {
		t.Fatalf("replay: %s", a.body)
	}
	if got := st.sent["orders.fixed"]; len(got) != 2 || got[0].MessageID() != "m1" || got[1].MessageID() != "m3" {
		t.Fatalf("sent %v", st.state())
	}
	_, form = s.confirm("orders.parked", "action=replay&to=missing&all=1")
	a = s.post("/q/orders.parked/replay", form)
	if !strings.Contains(a.body, "0 letters replayed") || !strings.Contains(a.body, `id="failed">2<`) || !strings.Contains(a.body, "nothing takes it at queue missing") {
		t.Fatalf("failed replay: %s", a.body)
	}
}

func TestPurgeOneLetter(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	_, form := s.confirm("orders.parked", "action=purge&key="+keyOf(st, "m2"))
	a := s.post("/q/orders.parked/purge", form)
	if !strings.Contains(a.body, "1 letter purged") {
		t.Fatalf("purge: %s", a.body)
	}
	for _, l := range st.snapshot() {
		if l.MessageID() == "m2" {
			t.Fatal("m2 is still there")
		}
	}
	if len(st.letters) != 3 || !strings.Contains(s.logs.String(), "purged=1") {
		t.Fatalf("after the purge: %s\n%s", st.state(), s.logs)
	}
}

func TestAnActionNamesItsLetters(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	if a := s.get("/q/orders.parked/confirm?action=purge"); a.status != http.StatusBadRequest || !strings.Contains(a.body, "no letter is selected") {
		t.Fatalf("purge of nothing named: %d %s", a.status, a.body)
	}
	for _, q := range []string{"action=purge&group=zz", "action=purge&key=12", "action=drop&all=1"} {
		if a := s.get("/q/orders.parked/confirm?" + q); a.status != http.StatusBadRequest {
			t.Errorf("confirm %s: %d", q, a.status)
		}
	}
}

func TestExportWritesJSONLines(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{}, st)
	s.signIn()
	a := s.get("/q/orders.parked/export?group=" + groupOf(st, "m1"))
	if a.status != http.StatusOK || !strings.Contains(a.header.Get("Content-Disposition"), `filename="orders.parked.jsonl"`) {
		t.Fatalf("export: %d %v", a.status, a.header)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(a.body))
	for sc.Scan() {
		var l deadletter.Letter
		if err := l.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 || len(st.letters) != 4 || !strings.Contains(s.logs.String(), "exported=3") {
		t.Fatalf("exported %d lines; store %s", n, st.state())
	}
}

// A store's error is shown, redacted, beside the other queues.
func TestAStoreErrorIsShownWithoutThePassword(t *testing.T) {
	broken := newMemStore("broken.parked")
	broken.err = errors.New("deadletter: cannot reach amqp://app:hunter2@rabbit:5672/")
	s := newSite(t, console.Options{Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2", "xxxxx") }}, broken, orders())
	s.signIn()
	a := s.get("/")
	if strings.Contains(a.body, "hunter2") || !strings.Contains(a.body, "amqp://app:xxxxx@rabbit") || !strings.Contains(a.body, "card declined") {
		t.Fatalf("overview:\n%s", a.body)
	}
}

func TestMountedUnderAPrefix(t *testing.T) {
	st := orders()
	s := newSite(t, console.Options{Prefix: "/ops/dlq"}, st)
	if a := s.get("/"); a.header.Get("Location") != "/ops/dlq/login?next=%2Fops%2Fdlq%2F" {
		t.Fatalf("redirect %q", a.header.Get("Location"))
	}
	s.signIn()
	a := s.get("/")
	if !strings.Contains(a.body, `href="/ops/dlq/static/style.css"`) || !strings.Contains(a.body, `href="/ops/dlq/q/orders.parked/g/`) {
		t.Fatalf("links:\n%s", a.body)
	}
	if a := s.get("/static/style.css"); a.status != http.StatusOK || !strings.Contains(a.header.Get("Content-Type"), "text/css") {
		t.Fatalf("style: %d", a.status)
	}
	if a := s.post("/login", url.Values{"token": {token}, "next": {"https://evil.example/"}}); a.header.Get("Location") != "/ops/dlq/" {
		t.Fatalf("sign-in went to %q", a.header.Get("Location"))
	}
}

func TestQueueNamesWithSlashesAndSpaces(t *testing.T) {
	st := newMemStore("team a/orders parked", letter("m1", "Card", "orders", "declined", t0, `{}`))
	s := newSite(t, console.Options{}, st)
	s.signIn()
	q := "/q/" + url.PathEscape(st.name)
	if a := s.get(q + "/"); a.status != http.StatusOK || !strings.Contains(a.body, "declined") {
		t.Fatalf("queue page: %d %s", a.status, a.body)
	}
	if a := s.get(q + "/g/" + groupOf(st, "m1")); a.status != http.StatusOK || !strings.Contains(a.body, `class="letter"`) {
		t.Fatalf("group page: %d %s", a.status, a.body)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	if _, err := console.New([]deadletter.Store{newMemStore("a"), newMemStore("a")}, console.Options{}); err == nil || !strings.Contains(err.Error(), "two stores are named a") {
		t.Fatalf("two stores of one name: %v", err)
	}
	if _, err := console.New(nil, console.Options{Token: "short"}); err == nil || !strings.Contains(err.Error(), "shorter than 8") {
		t.Fatalf("short token: %v", err)
	}
	c, err := console.New(nil, console.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if len(c.Token()) < 32 {
		t.Fatalf("the token made is %q", c.Token())
	}
}

// A queue slow to read does not hold the overview: it says how far the
// reading got and refreshes itself until the groups are there.
func TestTheOverviewShowsAQueueBeingRead(t *testing.T) {
	st := orders()
	st.gate = make(chan struct{})
	s := newSite(t, console.Options{Wait: 50 * time.Millisecond}, st)
	s.signIn()
	if a := s.get("/"); !strings.Contains(a.body, "Reading the letters of orders.parked: 0 so far.") {
		t.Fatalf("while reading:\n%s", a.body)
	}
	st.gate <- struct{}{}
	deadline := time.Now().Add(testkit.Patience)
	a := s.get("/")
	for ; !strings.Contains(a.body, "Reading the letters of orders.parked: 1 so far."); a = s.get("/") {
		if time.Now().After(deadline) {
			t.Fatalf("while reading:\n%s", a.body)
		}
	}
	if !strings.Contains(a.body, `<meta http-equiv="refresh" content="2">`) || strings.Contains(a.body, "card declined") {
		t.Fatalf("while reading:\n%s", a.body)
	}
	for range 3 {
		st.gate <- struct{}{}
	}
	for a = s.get("/"); strings.Contains(a.body, "Reading the letters"); a = s.get("/") {
		if time.Now().After(deadline) {
			t.Fatalf("still reading:\n%s", a.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(a.body, "card declined") || strings.Contains(a.body, "http-equiv") {
		t.Fatalf("after reading:\n%s", a.body)
	}
}

// Close ends a scan under way.
func TestCloseEndsAScanUnderWay(t *testing.T) {
	st := orders()
	st.gate = make(chan struct{})
	c, err := console.New([]deadletter.Store{st}, console.Options{Token: token, Wait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	s := &site{t: t, srv: srv, client: newClient(), base: srv.URL}
	s.signIn()
	if a := s.get("/"); !strings.Contains(a.body, "Reading the letters") {
		t.Fatalf("not reading:\n%s", a.body)
	}
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("Close waits for a scan it should end")
	}
}
