package deadletter_test

import (
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// show lists the broker's delivery counts apart from the letter's
// headers: they are not the message's.
func TestWriteLetterShowsDeliveryCountsApart(t *testing.T) {
	l := letterOf("m", "T", `{}`, map[string]any{"x-streamgen-reason": "r", "tenant": "acme", "x-delivery-count": int64(3), "x-acquired-count": int64(4)})
	var b strings.Builder
	if err := deadletter.WriteLetter(&b, l); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	headers, broker, ok := strings.Cut(out, "  broker bookkeeping:\n")
	if !ok || !strings.Contains(headers, "    tenant: acme") || strings.Contains(headers, "count") ||
		!strings.Contains(broker, "    x-acquired-count: 4") || !strings.Contains(broker, "    x-delivery-count: 3") {
		t.Fatalf("show:\n%s", out)
	}
}

// A count of letters is written in words: "1 letter", never "1 letters".
func TestLettersCountsInWords(t *testing.T) {
	for n, want := range map[int]string{0: "0 letters", 1: "1 letter", 2: "2 letters", 11: "11 letters", 21: "21 letters"} {
		if got := deadletter.Letters(n); got != want {
			t.Errorf("Letters(%d) = %q, want %q", n, got, want)
		}
	}
}
