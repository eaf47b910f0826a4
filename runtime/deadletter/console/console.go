package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure a Console. The zero Options are ready to use.
type Options struct {
	// Token is the operator token that signs in (STREAMGEN_DLQ_TOKEN in
	// streamgen dlq serve). "" makes a random one: read it with Token and
	// show it to the operator once.
	Token string
	// Prefix is the path the console is mounted at, such as "/dlq" for
	// mux.Handle("/dlq/", c); "" for the root.
	Prefix string
	// Logger takes a record of every action and sign-in; the default is
	// slog.Default().
	Logger *slog.Logger
	// Redact, when set, rewrites every error text before a page shows it
	// or the log records it: give it what hides a broker password (see
	// rabbitmq.RedactURL).
	Redact func(string) string
	// PageSize is the number of letters a group page shows (default 50).
	PageSize int
	// Fresh is how long the index of a queue (its counts, groups, chart
	// and letters) is used before a page has it read again in the
	// background, and at least five times the last reading took (default
	// 2s; an action has it read again at once).
	Fresh time.Duration
	// Wait is how long a page without an index of its queue, or with one
	// read before the last action, waits for the reading before it shows
	// what it has, and refreshes itself until the reading ends (default
	// 1s).
	Wait time.Duration
	// Subscriptions names, for each store, the subscriptions that park on
	// it, to show beside it. ForApp fills it.
	Subscriptions map[string][]string
	// AllowedHosts are other names the console answers to, in a request's
	// Host: "name" at any port or "name:port", an entry each or several
	// separated by commas; "*" answers to any name. By default the console
	// answers only to the address a request came in at (its connection's
	// local address) and, when that is a loopback address, to localhost,
	// 127.0.0.1 and [::1] at its port: a page of another site that reaches
	// it by a name of its own (DNS rebinding) is refused with 421. List the
	// names the console is reached by behind a proxy or a DNS name
	// (streamgen dlq serve -allow-host).
	AllowedHosts []string
}

// Console is the dead-letter console: an http.Handler that serves its
// pages. Close it when done, which closes its stores.
type Console struct {
	opts    Options
	stores  []deadletter.Store
	byName  map[string]int
	pages   map[string]*template.Template
	static  http.Handler
	mux     *http.ServeMux
	handler http.Handler
	log     *slog.Logger
	auth    *auth
	// throttle makes clients that send wrong tokens wait.
	throttle *throttle
	hosts    hosts
	ctx      context.Context // ends on Close: the actions run under it
	cancel   context.CancelFunc

	mu        sync.Mutex
	summaries map[string]*summaryCache
	scans     sync.WaitGroup
}

// New returns a console over stores, each shown under its Name. The
// console owns the stores: Close closes them.
func New(stores []deadletter.Store, opts Options) (*Console, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.Fresh <= 0 {
		opts.Fresh = 2 * time.Second
	}
	if opts.Wait <= 0 {
		opts.Wait = time.Second
	}
	opts.Prefix = strings.TrimRight(opts.Prefix, "/")
	if opts.Prefix != "" && !strings.HasPrefix(opts.Prefix, "/") {
		return nil, fmt.Errorf("console: prefix %q: start it with a slash, such as /dlq", opts.Prefix)
	}
	if opts.Token == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		opts.Token = hex.EncodeToString(b)
	}
	if len(opts.Token) < 8 {
		return nil, errors.New("console: the operator token is shorter than 8 characters: give a longer one, or none to have a random one made")
	}
	hs, err := parseHosts(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	c := &Console{opts: opts, byName: map[string]int{}, log: opts.Logger, summaries: map[string]*summaryCache{}, hosts: hs}
	for i, s := range stores {
		if _, dup := c.byName[s.Name()]; dup {
			return nil, fmt.Errorf("console: two stores are named %s: give each queue once", s.Name())
		}
		c.byName[s.Name()] = i
		c.stores = append(c.stores, s)
	}
	if err := c.parse(); err != nil {
		return nil, err
	}
	c.auth = newAuth(opts.Token)
	c.throttle = newThrottle(c.log)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.routes()
	return c, nil
}

// Opener opens the store of one of an App's dead-letter queues.
type Opener func(ctx context.Context, q runtime.DeadLetterQueue) (deadletter.Store, error)

// ForApp returns a console over every dead-letter queue of app's
// subscriptions (App.DeadLetterQueues), each opened with open. Mount it
// beside app.Health():
//
//	dlq, err := console.ForApp(ctx, app, rabbitmq.DeadLetterOpener(url), console.Options{Prefix: "/dlq"})
//	mux.Handle("/readyz", app.Health())
//	mux.Handle("/dlq/", dlq)
//
// Reached by a name, such as the service's DNS name or through a proxy,
// the console answers only once that name is in Options.AllowedHosts.
func ForApp(ctx context.Context, app *runtime.App, open Opener, opts Options) (*Console, error) {
	queues := app.DeadLetterQueues()
	if len(queues) == 0 {
		return nil, fmt.Errorf("console: app %s has no dead-letter queue: mount its subscriptions first, and give their handlers a dead_letter", app.Name())
	}
	subs := map[string][]string{}
	var stores []deadletter.Store
	closeAll := func() {
		for _, s := range stores {
			_ = s.Close()
		}
	}
	for _, q := range queues {
		s, err := open(ctx, q)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("console: open dead-letter queue %s: %w", q.Name, err)
		}
		stores = append(stores, s)
		subs[s.Name()] = append(subs[s.Name()], q.Subscriptions...)
	}
	if opts.Subscriptions == nil {
		opts.Subscriptions = subs
	}
	c, err := New(stores, opts)
	if err != nil {
		closeAll()
	}
	return c, err
}

// Token returns the operator token that signs in.
func (c *Console) Token() string { return c.opts.Token }

// Fingerprint is what the log records for the operator token: a short
// digest that tells tokens apart and gives nothing of the token away.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte("streamgen dlq console token\x00" + token))
	return hex.EncodeToString(sum[:6])
}

// Close ends the actions and scans under way and closes the stores.
func (c *Console) Close() error {
	c.cancel()
	c.scans.Wait()
	var errs []error
	for _, s := range c.stores {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.handler.ServeHTTP(w, r)
}

// securityHeaders are on every response: no script at all, nothing from
// elsewhere, no framing, no sniffing, no caching of letters.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	c.static = http.FileServerFS(static)
	m.Handle("GET /static/", http.StripPrefix("/static/", c.static))
	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("POST /login", c.login)
	m.HandleFunc("POST /logout", c.signedIn(c.logout))
	m.HandleFunc("GET /{$}", c.signedIn(c.overview))
	m.HandleFunc("GET /q/{queue}/{$}", c.signedIn(c.queuePage))
	m.HandleFunc("GET /q/{queue}/g/{group}", c.signedIn(c.groupPage))
	m.HandleFunc("GET /q/{queue}/l/{key}", c.signedIn(c.letterPage))
	m.HandleFunc("GET /q/{queue}/confirm", c.signedIn(c.confirmPage))
	m.HandleFunc("POST /q/{queue}/replay", c.signedIn(c.replay))
	m.HandleFunc("POST /q/{queue}/purge", c.signedIn(c.purge))
	m.HandleFunc("GET /q/{queue}/export", c.signedIn(c.export))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "There is no such page.")
	})
	c.mux = m
	var h http.Handler = m
	if c.opts.Prefix != "" {
		h = http.StripPrefix(c.opts.Prefix, m)
	}
	// A POST from another site (a page the operator has open elsewhere)
	// is refused before anything else sees it.
	cop := http.NewCrossOriginProtection()
	h = cop.Handler(h)
	c.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		// A request for another name is refused before anything else.
		if !c.hosts.allowed(r) {
			c.misdirected(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// store returns the store the request names, or answers 404.
func (c *Console) store(w http.ResponseWriter, r *http.Request) (deadletter.Store, bool) {
	i, ok := c.byName[r.PathValue("queue")]
	if !ok {
		c.fail(w, r, http.StatusNotFound, "The console shows no queue of that name.")
		return nil, false
	}
	return c.stores[i], true
}

// redact applies Options.Redact to an error's text.
func (c *Console) redact(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if c.opts.Redact != nil {
		msg = c.opts.Redact(msg)
	}
	return msg
}
