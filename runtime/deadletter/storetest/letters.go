package storetest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// epoch is when the suite's letters were parked, give or take minutes.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// minute returns epoch plus n minutes and a few nanoseconds, which a
// park time keeps.
func minute(n int) time.Time { return epoch.Add(time.Duration(n)*time.Minute + 123456789) }

// pastHeaders are the headers of past deliveries the suite writes on a
// letter besides the explanation: a replay sends none of them.
var pastHeaders = map[string]string{
	"x-retry-count":        "2",
	"x-first-death-reason": "rejected",
}

// typedPastHeaders are more headers of past deliveries the suite writes
// on a letter of a store whose headers are typed: a broker's record of
// the letter's past dead-lettering (RabbitMQ's).
var typedPastHeaders = map[string]any{
	"x-death": []any{map[string]any{"count": int64(1), "reason": "rejected", "queue": "orders", "time": epoch,
		"exchange": "", "routing-keys": []any{"orders"}}},
	"x-last-death-queue": "orders",
}

// explanation are the names of the explanation headers.
var explanation = []string{runtime.HeaderDeadLetterReason, runtime.HeaderDeadLetterSource,
	runtime.HeaderDeadLetterAttempts, runtime.HeaderDeadLetterPoison, runtime.HeaderDeadLetterTime}

// pastHeader reports whether the suite wrote name as a header of a past
// delivery.
func pastHeader(name string) bool {
	_, ok := pastHeaders[strings.ToLower(name)]
	_, typed := typedPastHeaders[strings.ToLower(name)]
	return ok || typed || slices.Contains(explanation, strings.ToLower(name))
}

// parked returns a letter as a subscription parks it: message id, type,
// properties, user headers (a trace context, a tenant), the explanation
// (reason, source, 3 attempts, parked at at unless zero) and the retry
// count of its last delivery. An empty reason makes a letter without any
// explanation, as something else publishes into a dead-letter queue.
func parked(id, typ, source, reason string, at time.Time) *deadletter.Letter {
	h := map[string]any{
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"x-tenant":    "acme",
		"x-order":     id,
	}
	if reason != "" {
		h[runtime.HeaderDeadLetterReason] = reason
		h[runtime.HeaderDeadLetterSource] = source
		h[runtime.HeaderDeadLetterAttempts] = "3"
		h[runtime.HeaderDeadLetterPoison] = "false"
		if !at.IsZero() {
			h[runtime.HeaderDeadLetterTime] = at.Format(time.RFC3339Nano)
		}
		for k, v := range pastHeaders {
			h[k] = v
		}
	}
	return deadletter.NewLetter(fmt.Appendf(nil, `{"id":%q}`, id), h, deadletter.Properties{
		ContentType: "application/json", MessageID: id, Type: typ, CorrelationID: "c-" + id,
		ReplyTo: "replies", AppID: "storetest", Priority: 3, Timestamp: epoch,
	})
}

// sample returns six letters, oldest first, of two types and three causes,
// parked from source and other, one replayed twice before, one without a
// park time, one without any explanation.
func sample(prefix, source, other string) []*deadletter.Letter {
	m4 := parked(prefix+"m-4", "Card", source, "order 333: card declined", minute(4))
	m4.Headers[deadletter.HeaderReplays] = "2"
	return []*deadletter.Letter{
		parked(prefix+"m-1", "Card", source, "order 1: card declined", minute(1)),
		parked(prefix+"m-2", "Card", other, "order 22: card declined", minute(2)),
		parked(prefix+"m-3", "Invoice", source, "ledger unavailable", minute(3)),
		m4,
		parked(prefix+"m-5", "Invoice", other, "ledger unavailable", time.Time{}),
		parked(prefix+"m-6", "Card", "", "", time.Time{}),
	}
}

// numbered returns n letters r-00, r-01..., from source, each parked a
// minute after the one before.
func numbered(n int, source string) []*deadletter.Letter {
	out := make([]*deadletter.Letter, n)
	for i := range out {
		out[i] = parked(fmt.Sprintf("r-%02d", i), "Card", source, fmt.Sprintf("order %d: card declined", i), minute(i))
	}
	return out
}

// oddLetters returns letters whose bytes a careless store would change:
// a body that is not UTF-8, one with NUL bytes, a 1 MiB body of random
// bytes, an empty one, text JSON must escape; and headers with odd values
// (for a text store, odd text; else every type a letter holds, nested).
func oddLetters(source string, text bool) []*deadletter.Letter {
	random := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{1, 2, 3}).Read(random) // never fails
	bodies := []struct {
		id   string
		body []byte
	}{
		{"b-1", []byte{0xff, 0xfe, 'a', 0x00, 0x80, 0xc3, '"', '\\'}},
		{"b-2", []byte("nul\x00in\x00the\x00middle\x00")},
		{"b-3", random},
		{"b-4", []byte{}},
		{"b-5", []byte("é✓😀 \ufffd \\ud800 \"quoted\" <tag> & \u2028 \x7f")},
	}
	odd := map[string]any{
		"x-odd-unicode":     "é✓😀",
		"x-odd-nul":         "a\x00b",
		"x-odd-json":        `{"type":"int32","value":5}`,
		"x-odd-empty":       "",
		"x-odd-replacement": "\ufffd",
		"x-odd-quotes":      "\"'\\`",
		"x-odd-colons":      "a: b: c",
		"x-odd-inner-space": "a  \t b",
		"x-odd-long":        strings.Repeat("0123456789", 2000),
	}
	if !text {
		typed := map[string]any{
			"x-odd-int8":    int8(-8),
			"x-odd-int16":   int16(-1600),
			"x-odd-int32":   int32(-320000),
			"x-odd-int64":   int64(math.MinInt64),
			"x-odd-uint8":   uint8(255),
			"x-odd-uint16":  uint16(65535),
			"x-odd-uint32":  uint32(math.MaxUint32),
			"x-odd-float32": float32(3.25),
			"x-odd-float64": -0.1,
			"x-odd-bool":    true,
			"x-odd-nil":     nil,
			"x-odd-time":    epoch,
			"x-odd-bytes":   []byte{0xff, 0x00, 0xfe},
			"x-odd-decimal": deadletter.Decimal{Scale: 2, Value: -12345},
			"x-odd-table":   map[string]any{"s": "v", "n": int32(7), "inner": map[string]any{"b": []byte{1, 2}, "f": false}},
			"x-odd-array":   []any{"a", int64(2), true, map[string]any{"k": "v"}, []any{}},
			"x-odd-break":   "line\r\nbreak",
			"x-odd-spaces":  "  padded\t",
			"x-odd-latin1":  "caf\xe9",
			"X-Odd-Case":    "Upper",
		}
		for k, v := range typed {
			odd[k] = v
		}
		for k, v := range typedPastHeaders {
			odd[k] = v
		}
	}
	out := make([]*deadletter.Letter, len(bodies))
	for i, b := range bodies {
		l := parked(b.id, "Blob", source, "cannot decode blob "+b.id, minute(i))
		l.Body = b.body
		for k, v := range odd {
			l.Headers[k] = v
		}
		if !text {
			l.Properties.ContentEncoding, l.Properties.DeliveryMode = "identity", 2
		}
		out[i] = l
	}
	return out
}

// replayOf is the message a replay of l sends, as the suite wrote l: its
// body and properties, its headers but those of past deliveries, and the
// replay count one more than l carried.
func replayOf(l *deadletter.Letter) *deadletter.Letter {
	h := map[string]any{}
	for k, v := range l.Headers {
		if !pastHeader(k) {
			h[k] = v
		}
	}
	n, _ := strconv.Atoi(fmt.Sprint(l.Headers[deadletter.HeaderReplays]))
	h[deadletter.HeaderReplays] = strconv.Itoa(n + 1)
	return &deadletter.Letter{Body: l.Body, Headers: h, Properties: l.Properties}
}

// brokerCount reports whether name is a count a broker keeps on a letter
// while it waits (a quorum queue's): not the letter's own.
func brokerCount(name string) bool {
	return name == "x-delivery-count" || name == "x-acquired-count"
}

// diffLetter describes how got differs from want: body byte for byte,
// properties, headers with their types (a broker's delivery counts
// aside) and, with explained, the explanation. "" means no difference.
func diffLetter(want, got *deadletter.Letter, explained bool) string {
	var d strings.Builder
	if !bytes.Equal(want.Body, got.Body) {
		fmt.Fprintf(&d, "\n\tbody: %s", diffBytes(want.Body, got.Body))
	}
	wp, gp := want.Properties, got.Properties
	if wp.Timestamp.Equal(gp.Timestamp) {
		wp.Timestamp, gp.Timestamp = time.Time{}, time.Time{}
	}
	if wp != gp {
		fmt.Fprintf(&d, "\n\tproperties: %+v, want %+v", got.Properties, want.Properties)
	}
	names := map[string]bool{}
	for k := range want.Headers {
		names[k] = true
	}
	for k := range got.Headers {
		if _, wanted := want.Headers[k]; wanted || !brokerCount(k) {
			names[k] = true
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		wv, wok := want.Headers[k]
		gv, gok := got.Headers[k]
		switch {
		case !gok:
			fmt.Fprintf(&d, "\n\theader %s: missing, want %s", k, describe(wv))
		case !wok:
			fmt.Fprintf(&d, "\n\theader %s: %s, want no such header", k, describe(gv))
		case !sameValue(wv, gv):
			fmt.Fprintf(&d, "\n\theader %s: %s, want %s", k, describe(gv), describe(wv))
		}
	}
	if explained {
		type expl struct {
			Reason, Source      string
			Attempts            int
			Poison              bool
			ParkedAt            string
			ByBroker, Explained bool
		}
		of := func(l *deadletter.Letter) expl {
			at := ""
			if !l.ParkedAt.IsZero() {
				at = l.ParkedAt.UTC().Format(time.RFC3339Nano)
			}
			return expl{l.Reason, l.Source, l.Attempts, l.Poison, at, l.ByBroker, l.Explained}
		}
		if w, g := of(want), of(got); w != g {
			fmt.Fprintf(&d, "\n\texplanation: %+v, want %+v", g, w)
		}
	}
	return d.String()
}

// sameValue reports whether header values a and b are equal and of one
// type: times by the instant, tables and arrays element by element.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, sameValue)
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b) && a == b
}

// describe writes a header value with its type, cut short when long.
func describe(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = strconv.Quote(x)
	case []byte:
		s = fmt.Sprintf("%q", x)
	default:
		s = fmt.Sprintf("%v", v)
	}
	if len(s) > 120 {
		s = s[:120] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return fmt.Sprintf("%T %s", v, s)
}

// diffBytes says where got first differs from want.
func diffBytes(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	show := func(b []byte) string { return fmt.Sprintf("%q", b[i:min(len(b), i+24)]) }
	return fmt.Sprintf("%d bytes, want %d; first difference at byte %d: %s, want %s", len(got), len(want), i, show(got), show(want))
}
