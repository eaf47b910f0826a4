package deadletter

import (
	"slices"
	"strings"
	"time"
)

// Selection picks letters. Every condition set must hold; the zero
// Selection picks every letter.
type Selection struct {
	// Group is a group's key (GroupKey, Group.Key).
	Group string
	// Reason is a substring of the reason, matched without regard to case.
	Reason string
	// Types are message types; a letter of any of them is picked.
	Types []string
	// IDs are message ids; a letter with any of them is picked.
	IDs []string
	// Before and After bound the park time: picked are letters parked
	// before Before and after After. A letter without a park time is not
	// picked when either is set.
	Before, After time.Time
	// Keys are letter keys (LetterKey); a letter with any of them is
	// picked. They name letters exactly where message ids may repeat or
	// be missing: the console's selections use them.
	Keys []string
	// Limit is the most letters an operation acts on; 0 is no limit.
	Limit int
}

// Matches reports whether s picks l, Limit aside.
func (s Selection) Matches(l *Letter) bool {
	if s.Group != "" && GroupKey(l) != s.Group {
		return false
	}
	if s.Reason != "" && !strings.Contains(strings.ToLower(l.Reason), strings.ToLower(s.Reason)) {
		return false
	}
	if len(s.Types) > 0 && !slices.Contains(s.Types, l.Type()) {
		return false
	}
	if len(s.IDs) > 0 && !slices.Contains(s.IDs, l.MessageID()) {
		return false
	}
	if !s.Before.IsZero() && (l.ParkedAt.IsZero() || !l.ParkedAt.Before(s.Before)) {
		return false
	}
	if !s.After.IsZero() && (l.ParkedAt.IsZero() || !l.ParkedAt.After(s.After)) {
		return false
	}
	if len(s.Keys) > 0 && !slices.Contains(s.Keys, LetterKey(l)) {
		return false // last: the key is the costliest condition
	}
	return true
}
