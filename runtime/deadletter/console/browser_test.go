package console_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// chromium is Debian's browser, which .ci/run installs. The browser
// tests need it and fail without it.
const chromium = "/usr/bin/chromium"

// browser is a headless Chromium of the test's own, with a fresh
// profile and no network but loopback; it is gone when the test ends.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1200, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTime()
		cancelBrowser()
		cancelAlloc()
	})
	// Start the browser now, so that a failure to is this test's.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// do runs actions, failing the test on an error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) open(url string) {
	b.t.Helper()
	b.do("open "+url, chromedp.Navigate(url))
}

// click clicks sel and waits for the page it loads.
func (b *browser) click(sel string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel)))); err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// signIn signs in on the login page at base.
func (b *browser) signIn(base, token string) {
	b.t.Helper()
	b.open(base + "/")
	b.do("type the token", chromedp.SetValue(chromedp.ID("token"), token))
	b.click("#signin")
	if loc := eval[string](b, "location.pathname"); strings.HasSuffix(loc, "/login") {
		b.t.Fatalf("not signed in: %s", b.text("main"))
	}
}

func (b *browser) clearCookies() {
	b.t.Helper()
	b.do("clear the cookies", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, network.ClearBrowserCookies, cdp.Empty{})
		return chromedp.Void{}, err
	})
}

// clickXPath clicks the element an XPath query finds, and waits for the
// page it loads.
func (b *browser) clickXPath(xpath string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.Search(xpath)))); err != nil {
		b.t.Fatalf("click %s: %v", xpath, err)
	}
}

func chromedpReload() chromedp.Action[chromedp.Void] { return chromedp.Reload() }

func chromedpScreenshot(b *browser) ([]byte, error) {
	return chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
}

// waitRead reloads the page until no queue on it is being read (the
// page says so and refreshes itself meanwhile).
func (b *browser) waitRead() {
	b.t.Helper()
	deadline := time.Now().Add(testkit.Patience)
	for eval[bool](b, `document.querySelector("p.reading") !== null`) {
		if time.Now().After(deadline) {
			b.t.Fatalf("the queue is still being read:\n%s", b.text("main"))
		}
		time.Sleep(200 * time.Millisecond)
		b.do("reload", chromedp.Reload())
	}
}
