package deadletter

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"time"
)

var (
	uuidPattern   = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	hexPattern    = regexp.MustCompile(`\b(?:0[xX][0-9a-fA-F]+|[0-9a-fA-F]{8,})\b`)
	numberPattern = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)
)

// NormalizeReason returns reason with what differs from one message to the
// next replaced by placeholders, so that letters that failed for the same
// cause share a group: UUIDs become <uuid>, hex ids (0x... or 8 or more hex
// digits with a digit among them) become <hex>, and other numbers become
// <n>. "order 123: card declined" and "order 456: card declined" both
// become "order <n>: card declined". Digits that end a word, as in the
// type names float64 and int32 or in utf8, are part of the word and stay.
func NormalizeReason(reason string) string {
	s := uuidPattern.ReplaceAllString(reason, "<uuid>")
	s = hexPattern.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "0x") || strings.HasPrefix(m, "0X") {
			return "<hex>"
		}
		if !strings.ContainsAny(m, "0123456789") {
			return m // a word such as "deadbeef" is no id
		}
		if !strings.ContainsAny(m, "abcdefABCDEF") {
			return "<n>"
		}
		return "<hex>"
	})
	var b strings.Builder
	last := 0
	for _, m := range numberPattern.FindAllStringIndex(s, -1) {
		if m[0] > 0 && isWordByte(s[m[0]-1]) {
			continue // float64, int32: a word's own digits
		}
		b.WriteString(s[last:m[0]])
		b.WriteString("<n>")
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// isWordByte reports whether c is an ASCII letter or an underscore, which
// digits after it belong to.
func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// GroupKey returns the key of the group l belongs to: a short stable id of
// its message type and normalised reason. Letters the broker
// dead-lettered itself are grouped by the broker's reason alone, whatever
// their type, apart from the letters streamgen parked.
func GroupKey(l *Letter) string {
	typ, reason := groupOf(l)
	sum := sha256.Sum256([]byte(typ + "\x00" + reason))
	return hex.EncodeToString(sum[:4])
}

// groupOf returns the type and reason a group is made of.
func groupOf(l *Letter) (typ, reason string) {
	switch {
	case !l.Explained:
		return "\x00unexplained", "(no dead-letter explanation: published into the queue by something else)"
	case l.ByBroker:
		return "\x00broker", NormalizeReason(l.Reason)
	}
	return l.Type(), NormalizeReason(l.Reason)
}

// Group is a set of letters with the same message type and normalised
// reason (see GroupKey).
type Group struct {
	// Key identifies the group, for Selection.Group.
	Key string `json:"key"`
	// Reason is the normalised reason the letters share.
	Reason string `json:"reason"`
	// ByBroker is true for letters the broker dead-lettered itself.
	ByBroker bool `json:"by_broker,omitempty"`
	// Count is the number of letters.
	Count int `json:"count"`
	// Types and Sources are the message types and source queues seen, sorted.
	Types   []string `json:"types"`
	Sources []string `json:"sources"`
	// Oldest and Newest are the earliest and latest park times; zero when
	// no letter of the group says when it was parked.
	Oldest time.Time `json:"oldest,omitzero"`
	Newest time.Time `json:"newest,omitzero"`
}

// Grouper gathers letters into groups. Its memory grows with the number
// of groups, not of letters. The zero value is ready to use.
type Grouper struct {
	groups map[string]*Group
}

// Add counts l in its group and returns the group's key.
func (g *Grouper) Add(l *Letter) string {
	if g.groups == nil {
		g.groups = map[string]*Group{}
	}
	key := GroupKey(l)
	gr, ok := g.groups[key]
	if !ok {
		_, reason := groupOf(l)
		gr = &Group{Key: key, Reason: reason, ByBroker: l.ByBroker, Types: []string{}, Sources: []string{}}
		g.groups[key] = gr
	}
	gr.Count++
	gr.Types = addSorted(gr.Types, l.Type())
	gr.Sources = addSorted(gr.Sources, l.Source)
	if t := l.ParkedAt; !t.IsZero() {
		if gr.Oldest.IsZero() || t.Before(gr.Oldest) {
			gr.Oldest = t
		}
		if t.After(gr.Newest) {
			gr.Newest = t
		}
	}
	return key
}

// Groups returns the groups, the largest first (then by reason).
func (g *Grouper) Groups() []Group {
	out := make([]Group, 0, len(g.groups))
	for _, gr := range g.groups {
		out = append(out, *gr)
	}
	slices.SortFunc(out, func(a, b Group) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Reason, b.Reason), strings.Compare(a.Key, b.Key))
	})
	return out
}

func addSorted(list []string, s string) []string {
	if s == "" {
		return list
	}
	i, found := slices.BinarySearch(list, s)
	if found {
		return list
	}
	return slices.Insert(list, i, s)
}
