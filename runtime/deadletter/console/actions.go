package console

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

const maxKeys = 1000

// scope is which letters an action takes: one letter, a selection of
// them, a group, or the whole queue.
type scope struct {
	Keys    []string
	Group   string
	All     bool
	To      string // the replay's target queue; "" for each letter's source
	Address string // where to push the replay, for a store that takes an address
}

func (s scope) selection() deadletter.Selection {
	return deadletter.Selection{Group: s.Group, Keys: s.Keys}
}

// String says which letters s takes.
func (s scope) String() string {
	switch {
	case len(s.Keys) == 1:
		return "the letter " + s.Keys[0]
	case len(s.Keys) > 1:
		return fmt.Sprintf("the %d letters selected", len(s.Keys))
	case s.Group != "":
		return "the letters of group " + s.Group
	}
	return "every letter"
}

func (s scope) target() deadletter.Target { return deadletter.Target{Queue: s.To, Address: s.Address} }

// takesAddress reports whether store s replays to an address.
func takesAddress(s deadletter.Store) bool {
	for _, k := range deadletter.TargetKinds(s) {
		if k == deadletter.ToSourceAt || k == deadletter.ToQueueAt {
			return true
		}
	}
	return false
}

// checkTarget says why store s does not replay to the target of sc, in
// the words of the page, or "" when it does. A store that takes an
// address wants one.
func checkTarget(s deadletter.Store, sc scope) string {
	kinds := deadletter.TargetKinds(s)
	t := sc.target()
	switch {
	case t.Address != "" && !isAddress(t.Address):
		return fmt.Sprintf("%q is not an address to replay to: write tcp://host:port (or ipc:///path), where the source queue is bound", t.Address)
	case slices.Contains(kinds, t.Kind()):
		return ""
	case t.Address == "" && takesAddress(s):
		return "give the address to replay to: tcp://host:port, where the source queue is bound"
	case t.Address != "" && !takesAddress(s):
		return s.Name() + " replays through its broker, not to an address: leave the address empty"
	}
	words := make([]string, len(kinds))
	for i, k := range kinds {
		words[i] = k.String()
	}
	return fmt.Sprintf("%s replays only to %s, not to %s", s.Name(), strings.Join(words, " or "), t)
}

// isAddress reports whether a is an address a replay can push to:
// tcp://host:port, or ipc:///path.
func isAddress(a string) bool {
	if len(a) > 255 || strings.ContainsFunc(a, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return false
	}
	if rest, ok := strings.CutPrefix(a, "tcp://"); ok {
		host, port, err := net.SplitHostPort(rest)
		n, perr := strconv.Atoi(port)
		return err == nil && host != "" && host != "*" && perr == nil && n > 0 && n <= 65535
	}
	if rest, ok := strings.CutPrefix(a, "ipc://"); ok {
		return len(rest) > 1 && strings.HasPrefix(rest, "/")
	}
	return false
}

// readScope reads the letters an action takes from form. It takes none
// unless told: a form that names no letter, no group and not all of them
// is refused, so that a slip never replays a whole queue.
func readScope(form url.Values, replay bool) (scope, string) {
	var s scope
	for _, k := range form["key"] {
		if !isHex(k, 20) {
			return s, "a selected letter's key is not a letter key"
		}
		if len(s.Keys) < maxKeys {
			s.Keys = append(s.Keys, k)
		} else {
			return s, fmt.Sprintf("more than %d letters are selected: act on their group instead", maxKeys)
		}
	}
	if g := form.Get("group"); g != "" {
		if !isHex(g, 8) {
			return s, "that is not a group key"
		}
		s.Group = g
	}
	s.All = form.Get("all") == "1"
	if len(s.Keys) == 0 && s.Group == "" && !s.All {
		return s, "no letter is selected: tick some letters, or act on a group"
	}
	if replay {
		s.To = strings.TrimSpace(form.Get("to"))
		if len(s.To) > 255 || strings.ContainsFunc(s.To, unicode.IsControl) {
			return s, "the target queue's name is not a queue name (at most 255 bytes, no control characters)"
		}
		s.Address = strings.TrimSpace(form.Get("address")) // checkTarget checks it
	}
	return s, ""
}

type confirmView struct {
	Queue, Action, Verb, What string
	Scope                     scope
	AskAddress                bool // the form asks for the address to replay to
	Selected, Scanned         int
	Counted                   freshness // the index the letters were counted in; none: a dry run
	CSRF                      string
	Err                       string
	Back                      string
}

func (v confirmView) title() string { return v.Verb + " letters of " + v.Queue }

func csrfAction(action, queue string) string { return action + "\x00" + queue }

// confirmPage says what an action would do, counted by a dry run, and
// holds the form that does it. Showing it changes nothing.
func (c *Console) confirmPage(w http.ResponseWriter, r *http.Request, sid string) {
	s, ok := c.store(w, r)
	if !ok {
		return
	}
	action := r.URL.Query().Get("action")
	if action != "replay" && action != "purge" {
		c.fail(w, r, http.StatusBadRequest, "Say what to do: replay or purge.")
		return
	}
	sc, why := readScope(r.URL.Query(), action == "replay")
	if why != "" {
		c.fail(w, r, http.StatusBadRequest, "Nothing can be done: "+why+".")
		return
	}
	if action == "replay" {
		switch why := checkTarget(s, sc); {
		case why == "" || sc.Address == "" && takesAddress(s):
			// The address a store wants, the page asks for.
		case takesAddress(s):
			c.confirm(w, r, sid, s, action, sc, "Nothing can be done: "+why+".", http.StatusBadRequest)
			return
		default:
			c.fail(w, r, http.StatusBadRequest, "Nothing can be done: "+why+".")
			return
		}
	}
	c.confirm(w, r, sid, s, action, sc, "", http.StatusOK)
}

// confirm renders the confirm page of an action on sc, with an error
// when the form was refused (status). A replay from a store that takes an
// address asks for it there.
func (c *Console) confirm(w http.ResponseWriter, r *http.Request, sid string, s deadletter.Store, action string, sc scope, refused string, status int) {
	v := confirmView{Queue: s.Name(), Action: action, Scope: sc, CSRF: c.auth.csrf(sid, csrfAction(action, s.Name()), time.Now()),
		Err: refused, Back: c.opts.Prefix + "/q/" + url.PathEscape(s.Name()) + "/"}
	if sc.Group != "" {
		v.Back += "g/" + sc.Group
	}
	switch action {
	case "replay":
		v.Verb = "Replay"
		v.What = "to " + sc.target().String()
		if v.AskAddress = takesAddress(s); v.AskAddress {
			v.What = "to " + deadletter.Target{Queue: sc.To}.String() + " at the address below"
		}
	default:
		v.Verb = "Purge"
		v.What = "for good: they cannot be got back (export them first to keep a copy)"
	}
	st := c.summarize(r.Context(), s)
	if st.sum != nil && st.sum.Complete && st.stale == "" && countIn(st.sum, sc) > 0 {
		// Counted in the index, which the page says when it was read:
		// the action reads the store and says what it did. (None found
		// there may be letters parked since: a dry run counts them.)
		v.Selected, v.Scanned, v.Counted = countIn(st.sum, sc), st.sum.Letters, freshOf(st)
		v.Counted.Reading = false
	} else {
		plan, err := s.Purge(r.Context(), sc.selection(), true)
		if err != nil && v.Err == "" {
			v.Err = c.redact(err)
		}
		v.Selected, v.Scanned = plan.Selected, plan.Scanned
	}
	c.render(w, r, status, "confirm", v)
}

// countIn counts the letters sc takes in an index, as a dry run would.
func countIn(sum *summary, sc scope) int {
	if len(sc.Keys) > 0 {
		n := 0
		seen := map[string]bool{}
		for _, k := range sc.Keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			for _, e := range sum.byKey[k] {
				if sc.Group == "" || e.group == sc.Group {
					n++
				}
			}
		}
		return n
	}
	if sc.Group != "" {
		return len(sum.rows[sc.Group])
	}
	return sum.Letters
}

type resultView struct {
	Queue, Action, Done, Target string
	Scope                       scope
	Report                      deadletter.Report
	Err                         string
	Left                        int
	Back                        string
}

func (v resultView) title() string { return v.Action + " of " + v.Queue }

// act checks an action's form and returns its store and scope; it
// answers and returns false when the action is refused.
func (c *Console) act(w http.ResponseWriter, r *http.Request, sid, action string) (deadletter.Store, scope, bool) {
	s, ok := c.store(w, r)
	if !ok {
		return nil, scope{}, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read: nothing was done.")
		return nil, scope{}, false
	}
	if why := c.auth.spend(sid, csrfAction(action, s.Name()), r.PostForm.Get("csrf"), time.Now()); why != "" {
		c.log.Warn("dlq console: refused an action", "action", action, "queue", s.Name(), "why", why, "token", c.auth.fingerprint, "remote", r.RemoteAddr)
		c.fail(w, r, http.StatusForbidden, "Nothing was done: "+why+".")
		return nil, scope{}, false
	}
	sc, why := readScope(r.PostForm, action == "replay")
	if why != "" {
		c.fail(w, r, http.StatusBadRequest, "Nothing was done: "+why+".")
		return nil, scope{}, false
	}
	return s, sc, true
}

func (c *Console) replay(w http.ResponseWriter, r *http.Request, sid string) {
	s, sc, ok := c.act(w, r, sid, "replay")
	if !ok {
		return
	}
	if why := checkTarget(s, sc); why != "" {
		// Nothing was done: the confirm page again, to mend the form.
		c.confirm(w, r, sid, s, "replay", sc, "Nothing was done: "+why+".", http.StatusBadRequest)
		return
	}
	// The replay goes on if the browser goes away: only Close stops it.
	start := time.Now()
	rep, err := s.Replay(c.ctx, sc.selection(), deadletter.ReplayOptions{To: sc.target()})
	c.log.Info("dlq console: replay", "queue", s.Name(), "letters", sc.String(), "to", sc.target().String(),
		"scanned", rep.Scanned, "selected", rep.Selected, "replayed", rep.Done, "failed", rep.Failed,
		"error", c.redact(err), "took", time.Since(start).Round(time.Millisecond), "token", c.auth.fingerprint, "remote", r.RemoteAddr)
	c.result(w, r, s, "Replay", "replayed", sc, rep, err)
}

func (c *Console) purge(w http.ResponseWriter, r *http.Request, sid string) {
	s, sc, ok := c.act(w, r, sid, "purge")
	if !ok {
		return
	}
	start := time.Now()
	rep, err := s.Purge(c.ctx, sc.selection(), false)
	c.log.Info("dlq console: purge", "queue", s.Name(), "letters", sc.String(),
		"scanned", rep.Scanned, "selected", rep.Selected, "purged", rep.Done, "failed", rep.Failed,
		"error", c.redact(err), "took", time.Since(start).Round(time.Millisecond), "token", c.auth.fingerprint, "remote", r.RemoteAddr)
	c.result(w, r, s, "Purge", "purged", sc, rep, err)
}

func (c *Console) result(w http.ResponseWriter, r *http.Request, s deadletter.Store, action, done string, sc scope, rep deadletter.Report, err error) {
	v := resultView{Queue: s.Name(), Action: action, Done: done, Scope: sc, Report: rep, Err: c.redact(err),
		Back: c.opts.Prefix + "/q/" + url.PathEscape(s.Name()) + "/"}
	if action == "Replay" {
		v.Target = sc.target().String()
	}
	for i, e := range v.Report.Errors {
		v.Report.Errors[i] = c.redact(fmt.Errorf("%s", e))
	}
	n, lerr := s.Len(r.Context())
	v.Left = n
	if lerr != nil {
		v.Left = -1
	}
	// Read the store again now, and not before its count: the reading
	// holds the letters a moment, which a RabbitMQ queue does not count.
	c.acted(s, strings.ToLower(action))
	status := http.StatusOK
	if err != nil {
		status = http.StatusBadGateway
	}
	c.render(w, r, status, "result", v)
}

// export writes the letters a scope takes as JSON Lines, for the browser
// to save. Reading changes nothing, so it is a GET.
func (c *Console) export(w http.ResponseWriter, r *http.Request, _ string) {
	s, ok := c.store(w, r)
	if !ok {
		return
	}
	sc, why := readScope(r.URL.Query(), false)
	if why != "" {
		c.fail(w, r, http.StatusBadRequest, "Nothing to export: "+why+".")
		return
	}
	w.Header().Set("Content-Type", "application/jsonl; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+fileName(s.Name())+`.jsonl"`)
	bw := bufio.NewWriter(w)
	n, err := s.Export(r.Context(), bw, sc.selection())
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	c.log.Info("dlq console: export", "queue", s.Name(), "letters", sc.String(), "exported", n, "error", c.redact(err),
		"token", c.auth.fingerprint, "remote", r.RemoteAddr)
}

// fileName keeps the letters, digits, dots, dashes and underscores of a
// queue's name, for a file name.
func fileName(name string) string {
	out := strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, name)
	if strings.Trim(out, "._") == "" {
		return "letters"
	}
	return out
}
