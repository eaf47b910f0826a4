package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	sessionCookie = "streamgen_dlq_session"
	sessionTTL    = 12 * time.Hour
	csrfTTL       = 30 * time.Minute
	maxSessions   = 1000
	maxUsedTokens = 100000
)

// auth keeps the sessions of signed-in operators and the CSRF tokens
// already used. Sessions live in memory: a restart signs everyone out.
type auth struct {
	tokenSum    [32]byte
	fingerprint string
	key         []byte

	mu       sync.Mutex
	sessions map[string]time.Time // session id: expiry
	used     map[string]time.Time // CSRF nonce: expiry
}

func newAuth(token string) *auth {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &auth{tokenSum: sha256.Sum256([]byte(token)), fingerprint: Fingerprint(token), key: key,
		sessions: map[string]time.Time{}, used: map[string]time.Time{}}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// check reports whether token is the operator token, in constant time.
func (a *auth) check(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return hmac.Equal(sum[:], a.tokenSum[:])
}

// open starts a session and returns its id.
func (a *auth) open(now time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prune(now)
	if len(a.sessions) >= maxSessions { // the oldest goes
		var oldest string
		for id, exp := range a.sessions {
			if oldest == "" || exp.Before(a.sessions[oldest]) {
				oldest = id
			}
		}
		delete(a.sessions, oldest)
	}
	id := randomHex(32)
	a.sessions[id] = now.Add(sessionTTL)
	return id
}

func (a *auth) prune(now time.Time) {
	for id, exp := range a.sessions {
		if !now.Before(exp) {
			delete(a.sessions, id)
		}
	}
	for n, exp := range a.used {
		if !now.Before(exp) {
			delete(a.used, n)
		}
	}
}

// session returns the request's live session id, "" when it has none.
func (a *auth) session(r *http.Request, now time.Time) string {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.sessions[ck.Value]
	if !ok || !now.Before(exp) {
		return ""
	}
	return ck.Value
}

func (a *auth) close(id string) {
	a.mu.Lock()
	delete(a.sessions, id)
	a.mu.Unlock()
}

func (a *auth) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// csrf returns a new CSRF token for a form of the session sid that does
// action: it is good once, for that session and action, for csrfTTL.
func (a *auth) csrf(sid, action string, now time.Time) string {
	nonce := randomHex(16)
	exp := strconv.FormatInt(now.Add(csrfTTL).Unix(), 10)
	return nonce + "." + exp + "." + a.mac("csrf", sid, action, nonce, exp)
}

// spend checks a CSRF token of session sid for action and uses it up. It
// returns why it is refused, "" when it is good.
func (a *auth) spend(sid, action, token string, now time.Time) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "the form carries no CSRF token"
	}
	nonce, exp, mac := parts[0], parts[1], parts[2]
	if !hmac.Equal([]byte(mac), []byte(a.mac("csrf", sid, action, nonce, exp))) {
		return "the form's CSRF token is not of this session: open the page again"
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !now.Before(time.Unix(unix, 0)) {
		return "the form has expired: open the page again"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, used := a.used[nonce]; used {
		return "the form was sent already: open the page again to do it once more"
	}
	if len(a.used) >= maxUsedTokens {
		a.prune(now)
		if len(a.used) >= maxUsedTokens {
			return "too many forms were sent: wait a little"
		}
	}
	a.used[nonce] = time.Unix(unix, 0)
	return ""
}

// signedIn serves h only to a signed-in operator: others are sent to
// the sign-in page (a GET) or refused (anything else).
func (c *Console) signedIn(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sid := c.auth.session(r, time.Now())
		if sid == "" {
			if r.Method == http.MethodGet {
				next := c.opts.Prefix + r.URL.RequestURI()
				http.Redirect(w, r, c.opts.Prefix+"/login?next="+urlQueryEscape(next), http.StatusSeeOther)
				return
			}
			c.log.Warn("dlq console: refused an action without the operator token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			c.fail(w, r, http.StatusForbidden, "Sign in with the operator token first: nothing was done.")
			return
		}
		h(w, r, sid)
	}
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", loginView{Next: c.safeNext(r.URL.Query().Get("next"))})
}

// safeNext keeps a place to go after signing in only when it is a path
// of the console's own (see localPath); anything else goes to the
// console's root.
func (c *Console) safeNext(next string) string {
	base := c.opts.Prefix + "/"
	if !strings.HasPrefix(next, base) || !localPath(next) {
		return base
	}
	return next
}

// localPath reports whether p is a path on this server that no browser
// reads as another site's address. It starts with a single slash; it is
// printable ASCII, without a backslash (browsers read one as a slash),
// whitespace or a control character (browsers drop tabs and newlines,
// which could leave "//host"); net/url reads it as a path, without a
// scheme or a host; and, decoded, it still has no control character or
// backslash and is clean: no empty, "." or ".." segment, so no "//".
func localPath(p string) bool {
	if p == "" || p[0] != '/' || len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if b := p[i]; b <= ' ' || b >= 0x7f || b == '\\' {
			return false
		}
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	if strings.ContainsFunc(u.Path, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' }) {
		return false
	}
	clean := path.Clean(u.Path)
	return u.Path == clean || u.Path == clean+"/"
}

// login signs in with the operator token. A client that sent wrong
// tokens waits before it tries again (see throttle): meanwhile its tries
// are refused with 429, and their token is not checked.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := c.safeNext(r.PostFormValue("next"))
	who := clientOf(r)
	if wait := c.throttle.wait(who); wait > 0 {
		secs := retryAfter(w, wait)
		c.render(w, r, http.StatusTooManyRequests, "login", loginView{Next: next,
			Error: fmt.Sprintf("Too many wrong tokens were sent from your address: wait %d s, then try again.", secs)})
		return
	}
	if !c.auth.check(r.PostFormValue("token")) {
		msg := "That is not the operator token."
		if wait := c.throttle.failed(who); wait > 0 {
			msg += fmt.Sprintf(" Too many wrong tokens were sent from your address: wait %d s before the next try.", retryAfter(w, wait))
		}
		c.render(w, r, http.StatusForbidden, "login", loginView{Next: next, Error: msg})
		return
	}
	wrong := c.throttle.succeeded(who)
	sid := c.auth.open(time.Now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sid, Path: c.opts.Prefix + "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL / time.Second)})
	attrs := []any{"token", c.auth.fingerprint, "remote", r.RemoteAddr}
	if wrong > 0 {
		attrs = append(attrs, "after_wrong_tokens", wrong)
	}
	c.log.Info("dlq console: signed in", attrs...)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// retryAfter sets the Retry-After header to wait, in whole seconds
// (rounded up), and returns them.
func retryAfter(w http.ResponseWriter, wait time.Duration) int {
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, sid string) {
	if why := c.auth.spend(sid, "logout", r.PostFormValue("csrf"), time.Now()); why != "" {
		c.fail(w, r, http.StatusForbidden, "Not signed out: "+why+".")
		return
	}
	c.auth.close(sid)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: c.opts.Prefix + "/", HttpOnly: true, MaxAge: -1})
	http.Redirect(w, r, c.opts.Prefix+"/login", http.StatusSeeOther)
}
