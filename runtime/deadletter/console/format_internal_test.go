package console

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// A page shows a header's scalar value as dlq show writes it
// (deadletter.HeaderText), bytes that are not text in base64, and a table
// as plain JSON.
func TestHeaderValueShowsScalarsAsDlqShowDoes(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 5e8, time.FixedZone("CET", 3600))
	for _, v := range []any{"text", []byte("bytes"), true, int8(-3), int64(3), uint32(7), float64(2.5), at} {
		if got, want := headerValue(v), deadletter.HeaderText(v); got != want {
			t.Errorf("headerValue(%T %v) = %q, dlq show writes %q", v, v, got, want)
		}
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{[]byte{0xff, 0x00}, "base64:/wA="},
		{nil, "(null)"},
		{map[string]any{"count": int64(1), "q": "a"}, `{"count":1,"q":"a"}`},
	} {
		if got := headerValue(c.v); got != c.want {
			t.Errorf("headerValue(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}
