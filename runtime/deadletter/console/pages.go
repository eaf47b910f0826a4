package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

var pageNames = []string{"login", "overview", "queue", "group", "letter", "confirm", "result", "error"}

func (c *Console) parse() error {
	funcs := template.FuncMap{
		"seg":   url.PathEscape,
		"query": url.QueryEscape,
		"stamp": stamp,
		"join":  strings.Join,
		"add":   func(a, b int) int { return a + b },
		// "1 letter", "2 letters"; unit is the word alone, for a count
		// shown apart.
		"letters": deadletter.Letters,
		"unit": func(n int) string {
			_, word, _ := strings.Cut(deadletter.Letters(n), " ")
			return word
		},
	}
	c.pages = map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("console: template %s: %w", name, err)
		}
		c.pages[name] = t
	}
	return nil
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// pageData is what every page has: its title, where the console is
// mounted, and the sign-out form's CSRF token when signed in.
type pageData struct {
	Title   string
	Refresh int // seconds: the page reloads itself while a queue is read
	Base    string
	Logout  string
	View    any
}

type titled interface{ title() string }

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, view any) {
	d := pageData{Base: c.opts.Prefix, View: view}
	if t, ok := view.(titled); ok {
		d.Title = t.title()
	}
	if r, ok := view.(interface{ reading() bool }); ok && r.reading() {
		d.Refresh = 2
	}
	if sid := c.auth.session(r, time.Now()); sid != "" {
		d.Logout = c.auth.csrf(sid, "logout", time.Now())
	}
	var b strings.Builder
	if err := c.pages[name].ExecuteTemplate(&b, "layout", d); err != nil {
		c.log.Error("dlq console: cannot render a page", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

type errorView struct{ Message string }

func (errorView) title() string { return "Error" }

func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "error", errorView{Message: msg})
}

type loginView struct{ Next, Error string }

func (loginView) title() string { return "Sign in" }

// groupRow is a group as a table row.
type groupRow struct {
	Key, Reason    string
	Count          int
	Types, Sources []string
	Oldest, Newest time.Time
	ByBroker       bool
	Colour         string
}

// freshness says when a page's figures were read: from the store's
// index (see summary), how long ago, whether the store is being read
// again, and whether an action ended since.
type freshness struct {
	Have      bool // a summary was read
	Read      time.Time
	Age       string
	Took      string
	Reading   bool // the store is being read
	ReadSoFar int
	Stale     string    // the action that ended after the figures were read
	Acted     time.Time // when
}

func (f freshness) reading() bool { return f.Reading }

func freshOf(st summaryState) freshness {
	f := freshness{Reading: st.reading, ReadSoFar: st.read, Stale: st.stale, Acted: st.acted}
	if st.sum != nil {
		f.Have, f.Read, f.Took = true, st.sum.At, st.sum.Took.Round(time.Millisecond).String()
		f.Age = age(time.Since(st.sum.At))
	}
	return f
}

// age says how long ago something was, in words.
func age(d time.Duration) string {
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", d/time.Minute)
	}
	return fmt.Sprintf("%.1f h ago", d.Hours())
}

// queueView is a store's counts, groups and chart. Its figures (the
// headline count, the groups, the chart, the letters read) are of one
// reading of the store, and say when it was; the store's own count now
// (Len) is shown apart, when it differs and no reading is under way (a
// RabbitMQ queue does not count the letters a reading holds).
type queueView struct {
	Base          string
	Name          string
	Subscriptions []string
	Len           int  // the store's count now
	Now           bool // show Len apart: it differs from Letters
	LenErr        string
	Letters       int
	Held          int // other readers held letters this reading did not see
	Groups        []groupRow
	MoreGroups    int
	Chart         *chartView
	Err           string
	Pages         pager
	freshness
}

func (v queueView) title() string { return v.Name }

type overviewView struct{ Queues []queueView }

func (overviewView) title() string { return "Overview" }

func (v overviewView) reading() bool {
	for _, q := range v.Queues {
		if q.Reading {
			return true
		}
	}
	return false
}

// pager is the links to a paginated list's pages.
type pager struct {
	Page, Pages int
	Link        string // the page's address, to which page=N is added
}

func (p pager) Prev() int { return p.Page - 1 }
func (p pager) Next() int {
	if p.Page >= p.Pages {
		return 0
	}
	return p.Page + 1
}

func pageOf(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// view summarizes s for a page: all of its groups from first on, at
// most limit of them.
func (c *Console) view(r *http.Request, s deadletter.Store, first, limit int) queueView {
	v := queueView{Base: c.opts.Prefix, Name: s.Name(), Subscriptions: c.opts.Subscriptions[s.Name()]}
	st := c.summarize(r.Context(), s)
	v.freshness = freshOf(st)
	if st.err != nil {
		v.Err = c.redact(st.err)
	}
	// The store's count now, unless a reading is under way: a RabbitMQ
	// queue would not count the letters it holds.
	if !st.reading {
		n, err := s.Len(r.Context())
		if err != nil {
			v.LenErr = c.redact(err)
		}
		v.Len = n
		v.Now = err == nil && st.sum != nil && st.stale == "" && n != st.sum.Letters
	}
	sum := st.sum
	if sum == nil {
		return v
	}
	v.Letters, v.Held = sum.Letters, sum.Held
	v.Chart = chart(sum.Chart, sum.Groups)
	colours := map[string]string{}
	if v.Chart != nil {
		for _, l := range v.Chart.Legend {
			if l.Key != otherKey {
				colours[l.Key] = l.Fill
			}
		}
	}
	for i, g := range sum.Groups {
		if i < first {
			continue
		}
		if len(v.Groups) >= limit {
			v.MoreGroups = len(sum.Groups) - i
			break
		}
		v.Groups = append(v.Groups, groupRow{Key: g.Key, Reason: firstLine(g.Reason, 160), Count: g.Count, Types: g.Types,
			Sources: g.Sources, Oldest: g.Oldest, Newest: g.Newest, ByBroker: g.ByBroker, Colour: cmpOr(colours[g.Key], otherColour)})
	}
	v.Pages = pager{Page: first/max(limit, 1) + 1, Pages: (len(sum.Groups) + limit - 1) / max(limit, 1)}
	return v
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, _ string) {
	var v overviewView
	for _, s := range c.stores {
		v.Queues = append(v.Queues, c.view(r, s, 0, 10))
	}
	c.render(w, r, http.StatusOK, "overview", v)
}

func (c *Console) queuePage(w http.ResponseWriter, r *http.Request, _ string) {
	s, ok := c.store(w, r)
	if !ok {
		return
	}
	const perPage = 50
	v := c.view(r, s, (pageOf(r)-1)*perPage, perPage)
	v.Pages.Link = c.opts.Prefix + "/q/" + url.PathEscape(s.Name()) + "/"
	c.render(w, r, http.StatusOK, "queue", v)
}

// letterRow is a letter as a table row.
type letterRow struct {
	Key, ID, Type, Source, Reason string
	Attempts, Replays             int
	Parked                        time.Time
	Poison, ByBroker              bool
}

func row(l *deadletter.Letter) letterRow { return rowKeyed(l, deadletter.LetterKey(l)) }

func rowKeyed(l *deadletter.Letter, key string) letterRow {
	return letterRow{Key: key, ID: shown(l.MessageID()), Type: shown(l.Type()), Source: shown(l.Source),
		Reason: firstLine(l.Reason, 160), Attempts: l.Attempts, Replays: l.Replays(), Parked: l.ParkedAt, Poison: l.Poison, ByBroker: l.ByBroker}
}

type groupView struct {
	Queue   string
	Group   groupRow
	Letters []letterRow
	Total   int
	Pages   pager
	Err     string
	freshness
}

func (v groupView) title() string { return "Group " + v.Group.Key + " of " + v.Queue }

// maxDeep is how deep into a group its pages go when they are read from
// the store (past maxRows letters), which keeps the letters newer than
// the page: the newest maxDeep.
const maxDeep = 10_000

// groupPage lists a group's letters, newest first, a page at a time,
// from the store's index; it reads the store itself when the index holds
// no rows (the store held more than maxRows letters).
func (c *Console) groupPage(w http.ResponseWriter, r *http.Request, _ string) {
	s, ok := c.store(w, r)
	if !ok {
		return
	}
	key := r.PathValue("group")
	if !isHex(key, 8) {
		c.fail(w, r, http.StatusNotFound, "That is not a group key.")
		return
	}
	page, size := pageOf(r), c.opts.PageSize
	first := (page - 1) * size
	v := groupView{Queue: s.Name(), Group: groupRow{Key: key}}
	st := c.summarize(r.Context(), s)
	if st.err != nil {
		v.Err = c.redact(st.err)
	}
	switch {
	case st.sum != nil && st.sum.Complete:
		v.freshness = freshOf(st)
		es := st.sum.rows[key]
		v.Total = len(es)
		for _, e := range es[min(first, len(es)):min(first+size, len(es))] {
			v.Letters = append(v.Letters, e.row)
		}
		for _, g := range st.sum.Groups {
			if g.Key == key {
				v.Group = groupRow{Key: key, Reason: shown(g.Reason), Types: g.Types, Sources: g.Sources, ByBroker: g.ByBroker}
			}
		}
	case st.sum == nil && st.reading:
		v.freshness = freshOf(st) // the page refreshes itself until the index is read
	default:
		if first+size > maxDeep {
			c.fail(w, r, http.StatusNotFound, fmt.Sprintf("The queue holds too many letters to page this deep into a group from it (past its newest %d): select them by time with streamgen dlq.", maxDeep))
			return
		}
		if !c.readGroup(w, r, s, key, first, size, &v) {
			return
		}
	}
	v.Group.Count = v.Total
	v.Pages = pager{Page: page, Pages: (v.Total + size - 1) / size,
		Link: c.opts.Prefix + "/q/" + url.PathEscape(s.Name()) + "/g/" + key}
	c.render(w, r, http.StatusOK, "group", v)
}

// readGroup reads a group's page of letters from the store, keeping the
// newest first+size of them.
func (c *Console) readGroup(w http.ResponseWriter, r *http.Request, s deadletter.Store, key string, first, size int, v *groupView) bool {
	var g deadletter.Grouper
	var es []*entry
	keep := first + size
	err := s.Select(r.Context(), deadletter.Selection{Group: key}, func(l *deadletter.Letter) error {
		if v.Total == 0 {
			g.Add(l) // the group's reason and kind, from its first letter
		}
		es = append(es, &entry{row: row(l), seq: v.Total})
		v.Total++
		if len(es) >= 2*keep {
			slices.SortFunc(es, newestFirst)
			es = es[:keep]
		}
		return nil
	})
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "The letters could not be read: "+c.redact(err))
		return false
	}
	slices.SortFunc(es, newestFirst)
	for _, e := range es[min(first, len(es)):min(keep, len(es))] {
		v.Letters = append(v.Letters, e.row)
	}
	if gs := g.Groups(); len(gs) == 1 {
		v.Group = groupRow{Key: key, Reason: shown(gs[0].Reason), Types: gs[0].Types, Sources: gs[0].Sources, ByBroker: gs[0].ByBroker}
	}
	v.freshness = freshness{Have: true, Read: time.Now(), Age: "just now"}
	return true
}

type letterView struct {
	Queue, Key, Group, Reason, TraceID string
	Row                                letterRow
	Explained                          bool
	Properties, Headers, Broker        []field
	Body                               bodyView
	freshness
}

func (v letterView) title() string { return "Letter " + v.Row.ID }

func (c *Console) letterPage(w http.ResponseWriter, r *http.Request, _ string) {
	s, ok := c.store(w, r)
	if !ok {
		return
	}
	key := r.PathValue("key")
	if !isHex(key, 20) {
		c.fail(w, r, http.StatusNotFound, "That is not a letter key.")
		return
	}
	var found *deadletter.Letter
	var fresh freshness
	// From the index, unless an action ended since it was read (the
	// letter may be gone) or it did not keep the letter whole.
	if st := c.summarize(r.Context(), s); st.sum != nil && st.stale == "" {
		for _, e := range st.sum.byKey[key] {
			var l deadletter.Letter
			if e.whole != nil && l.UnmarshalJSON(e.whole) == nil {
				found, fresh = &l, freshOf(st)
				fresh.Reading = false // the letter's page does not refresh itself
				break
			}
		}
	}
	if found == nil {
		sel := deadletter.Selection{Keys: []string{key}, Limit: 1}
		if g := r.URL.Query().Get("group"); isHex(g, 8) {
			sel.Group = g
		}
		err := s.Select(r.Context(), sel, func(l *deadletter.Letter) error {
			if found == nil {
				found = l
			}
			return nil
		})
		if err != nil {
			c.fail(w, r, http.StatusBadGateway, "The letters could not be read: "+c.redact(err))
			return
		}
		fresh = freshness{Have: true, Read: time.Now(), Age: "just now"}
	}
	if found == nil {
		c.fail(w, r, http.StatusNotFound, "No letter of "+s.Name()+" has that key: it was replayed or purged, or it changed.")
		return
	}
	l := found
	reason := l.Reason
	if !l.Explained {
		reason = "(no dead-letter explanation: the message was published into the queue by something else)"
	}
	headers, broker := viewHeaders(l.Headers)
	c.render(w, r, http.StatusOK, "letter", letterView{Queue: s.Name(), Key: key, Group: deadletter.GroupKey(l), Reason: shown(reason),
		TraceID: traceID(l.Headers), Row: row(l), Explained: l.Explained, Properties: viewProperties(l.Properties),
		Headers: headers, Broker: broker, Body: viewBody(l.Body), freshness: fresh})
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
