package deadletter

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter/internal/textbody"
	"github.com/streamgen/streamgen/runtime/internal/headers"
)

// Letters counts n letters in words, "1 letter", "0 letters", "2
// letters": what every tool and error that counts letters writes.
func Letters(n int) string {
	if n == 1 {
		return "1 letter"
	}
	return fmt.Sprintf("%d letters", n)
}

// WriteGroups writes groups as an aligned table, one row per group: its
// key, count, types, sources, oldest and newest park time, and reason.
func WriteGroups(w io.Writer, groups []Group) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tCOUNT\tTYPES\tSOURCE\tOLDEST\tNEWEST\tREASON")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", g.Key, g.Count, orDash(strings.Join(g.Types, ",")),
			orDash(strings.Join(g.Sources, ",")), stamp(g.Oldest), stamp(g.Newest), oneLine(g.Reason))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// oneLine keeps a reason on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// WriteLetter writes l for a person to read: its explanation, properties,
// headers and body. A JSON body is indented; a body that is not valid
// UTF-8, or has control characters, is shown as a hex dump, so that
// nothing it holds reaches the terminal as it is.
func WriteLetter(w io.Writer, l *Letter) error {
	var b strings.Builder
	fmt.Fprintf(&b, "message %s", orDash(l.MessageID()))
	if l.Type() != "" {
		fmt.Fprintf(&b, " (type %s)", l.Type())
	}
	b.WriteString("\n")
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(&b, "  %-16s %s\n", name+":", value)
		}
	}
	switch {
	case !l.Explained:
		field("reason", "(no dead-letter explanation)")
	case l.ByBroker:
		field("reason", l.Reason)
	default:
		field("reason", l.Reason)
	}
	field("group", GroupKey(l))
	field("source", l.Source)
	if l.Attempts > 0 {
		field("attempts", fmt.Sprint(l.Attempts))
	}
	if l.Poison {
		field("poison", "true (it could not be decoded)")
	}
	if !l.ParkedAt.IsZero() {
		field("parked at", l.ParkedAt.UTC().Format(time.RFC3339Nano))
	}
	if n := l.Replays(); n > 0 {
		field("replays", fmt.Sprint(n))
	}
	b.WriteString("  properties:\n")
	props, _ := json.Marshal(l.Properties)
	var pm map[string]any
	_ = json.Unmarshal(props, &pm)
	for _, k := range headerNames(pm) {
		fmt.Fprintf(&b, "    %s: %s\n", k, safeText(fmt.Sprint(pm[k])))
	}
	// The broker's delivery counts are not the message's: apart.
	for _, part := range []struct {
		title  string
		counts bool
	}{{"headers", false}, {"broker bookkeeping", true}} {
		titled := false
		for _, k := range headerNames(l.Headers) {
			if headers.DeliveryCount(k) != part.counts {
				continue
			}
			if !titled {
				b.WriteString("  " + part.title + ":\n")
				titled = true
			}
			fmt.Fprintf(&b, "    %s: %s\n", safeText(k), safeText(HeaderText(l.Headers[k])))
		}
	}
	b.WriteString(body(l.Body))
	_, err := io.WriteString(w, b.String())
	return err
}

// body renders a body: indented JSON, plain text, or a hex dump.
func body(p []byte) string {
	switch {
	case len(p) == 0:
		return "  body: (empty)\n"
	case json.Valid(p):
		var out bytes.Buffer
		if err := json.Indent(&out, p, "    ", "  "); err == nil {
			return "  body (JSON):\n    " + out.String() + "\n"
		}
	case textbody.IsText(p):
		return "  body (text):\n    " + strings.ReplaceAll(string(p), "\n", "\n    ") + "\n"
	}
	dump := strings.TrimRight(hex.Dump(p), "\n")
	return fmt.Sprintf("  body (%d bytes, not text; hex):\n    %s\n", len(p), strings.ReplaceAll(dump, "\n", "\n    "))
}

// safeText quotes s when it holds what should not reach a terminal.
func safeText(s string) string {
	if textbody.IsText([]byte(s)) && !strings.ContainsAny(s, "\n\r") {
		return s
	}
	return fmt.Sprintf("%q", s)
}
