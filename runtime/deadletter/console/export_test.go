package console

// SetIndexLimits sets the index's bounds (the rows, the bytes of letters
// kept whole) until the returned function restores them.
func SetIndexLimits(rows, whole int) (restore func()) {
	r, w := maxRows, maxWhole
	maxRows, maxWhole = rows, whole
	return func() { maxRows, maxWhole = r, w }
}
