package console

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/internal/textbody"
	"github.com/streamgen/streamgen/runtime/internal/headers"
)

// maxShown bounds how much of a body or a header a page shows; the rest
// is in the export.
const maxShown = 256 << 10

// bodyView is a body made safe to show: indented JSON, text, or, when it
// is not text, a hex dump and base64.
type bodyView struct {
	Kind      string // "JSON", "text", "binary", "empty"
	Text      string
	Hex       string
	Base64    string
	Size      int
	Truncated bool
}

func viewBody(p []byte) bodyView {
	v := bodyView{Size: len(p)}
	if len(p) == 0 {
		v.Kind = "empty"
		return v
	}
	if json.Valid(p) {
		var out bytes.Buffer
		if err := json.Indent(&out, p, "", "  "); err == nil {
			v.Kind, v.Text = "JSON", out.String()
			v.Text, v.Truncated = cut(v.Text)
			return v
		}
	}
	if textbody.IsText(p) {
		v.Kind = "text"
		v.Text, v.Truncated = cut(string(p))
		return v
	}
	shown := p
	if len(shown) > maxShown/4 {
		shown, v.Truncated = shown[:maxShown/4], true
	}
	v.Kind, v.Hex, v.Base64 = "binary", hex.Dump(shown), base64.StdEncoding.EncodeToString(shown)
	return v
}

func cut(s string) (string, bool) {
	if len(s) <= maxShown {
		return s, false
	}
	s = s[:maxShown]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s, true
}

// shown is a string as a page shows it: as it is when it is text, quoted
// (control characters escaped) when it is not.
func shown(s string) string {
	if textbody.IsText([]byte(s)) {
		out, _ := cut(s)
		return out
	}
	out, _ := cut(strconv.Quote(s))
	return out
}

// field is a name and a value shown in a table.
type field struct{ Name, Value string }

// viewHeaders returns a letter's headers, and apart, the broker's
// delivery counters (headers.DeliveryCount: not the message's, they are
// left out of its key and dropped on replay), each sorted by name.
func viewHeaders(h map[string]any) (own, broker []field) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		f := field{Name: shown(k), Value: headerValue(h[k])}
		if headers.DeliveryCount(k) {
			broker = append(broker, f)
		} else {
			own = append(own, f)
		}
	}
	return own, broker
}

// headerValue is a header value as a page shows it: a scalar as
// headers.Text writes it (as dlq show does), bytes that are not text in
// base64, nil as "(null)", and a table or array as plain JSON.
func headerValue(v any) string {
	switch x := v.(type) {
	case []byte:
		if !textbody.IsText(x) {
			return "base64:" + base64.StdEncoding.EncodeToString(x)
		}
	case nil:
		return "(null)"
	}
	if s, ok := headers.Text(v); ok {
		return shown(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return shown(fmt.Sprint(v))
	}
	return shown(string(b))
}

func viewProperties(p deadletter.Properties) []field {
	var out []field
	add := func(name, v string) {
		if v != "" {
			out = append(out, field{name, shown(v)})
		}
	}
	add("type", p.Type)
	add("message_id", p.MessageID)
	add("correlation_id", p.CorrelationID)
	add("content_type", p.ContentType)
	add("content_encoding", p.ContentEncoding)
	if p.DeliveryMode != 0 {
		add("delivery_mode", strconv.Itoa(int(p.DeliveryMode)))
	}
	if p.Priority != 0 {
		add("priority", strconv.Itoa(int(p.Priority)))
	}
	add("reply_to", p.ReplyTo)
	add("expiration", p.Expiration)
	if !p.Timestamp.IsZero() {
		add("timestamp", p.Timestamp.UTC().Format(time.RFC3339))
	}
	add("user_id", p.UserID)
	add("app_id", p.AppID)
	return out
}

// traceID reads the trace id of a W3C traceparent header, "" when there
// is none.
func traceID(h map[string]any) string {
	tp, _ := h["traceparent"].(string)
	parts := strings.Split(strings.TrimSpace(tp), "-")
	if len(parts) < 4 || len(parts[1]) != 32 {
		return ""
	}
	if _, err := hex.DecodeString(parts[1]); err != nil || strings.Trim(parts[1], "0") == "" {
		return ""
	}
	return parts[1]
}

// firstLine is the first line of s, at most n characters.
func firstLine(s string, n int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return shown(s)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}
