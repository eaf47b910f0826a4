package runtime

import (
	"net/url"
	"strings"
)

// RedactURL returns rawURL with any password replaced by "xxxxx", for logs
// and errors. A URL that does not parse is reduced to its scheme, so a
// password inside it never leaks either.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i >= 0 {
			return rawURL[:i+3] + "(unparsable URL)"
		}
		return "(unparsable URL)"
	}
	if i := strings.LastIndex(u.Opaque, "@"); i >= 0 {
		// Without "//", "guest:secret@host:5672" parses as the scheme
		// "guest" and the opaque "secret@host:5672": no User to redact.
		return u.Scheme + ":xxxxx" + u.Opaque[i:]
	}
	return u.Redacted()
}
