package generator

import "strings"

// closest returns the candidate that word most likely misspells, or "" when
// none is close. Case, '-' and '_' are ignored first (maxAttempts and
// max-attempts mean max_attempts); then the edit distance must be small for
// the length of the word.
func closest(word string, candidates []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	for _, c := range candidates {
		if norm(c) == norm(word) {
			return c
		}
	}
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(norm(word), norm(c))
		limit := max(1, min(3, len(c)/3))
		if d <= limit && (best == "" || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, counting bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
