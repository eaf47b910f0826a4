package console_test

import (
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// In the browser, each swatch of the chart's legend sits on the line of
// its label, before it, not above it.
func TestBrowserLegendSwatchesSitBesideTheirLabels(t *testing.T) {
	s := newSite(t, console.Options{}, orders())
	b := newBrowser(t)
	b.signIn(s.base, token)
	b.waitRead()
	items := eval[int](b, `document.querySelectorAll("ul.legend li").length`)
	if items != 2 {
		t.Fatalf("the legend has %d items:\n%s", items, b.text("main"))
	}
	// For each item: the swatch's box and its label's (the text after it).
	bad := eval[[]string](b, `Array.from(document.querySelectorAll("ul.legend li")).flatMap(li => {
		const sw = li.querySelector("svg").getBoundingClientRect();
		const r = document.createRange();
		r.selectNodeContents(li);
		r.setStartAfter(li.querySelector("svg"));
		const label = r.getBoundingClientRect();
		const mid = sw.top + sw.height / 2;
		if (mid < label.top || mid > label.bottom || sw.right > label.left || label.left - sw.right > 12 || getComputedStyle(li.querySelector("svg")).display === "block") {
			return [li.textContent + ": swatch " + JSON.stringify(sw) + ", label " + JSON.stringify(label)];
		}
		return [];
	})`)
	if len(bad) > 0 {
		t.Fatalf("swatches not beside their labels: %v", bad)
	}
}
