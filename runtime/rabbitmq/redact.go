package rabbitmq

import (
	"net/url"
	"regexp"
	"strings"
)

// addressStart matches a comma that begins another broker address: a
// comma, spaces, then a URL scheme and "://". A comma anywhere else (in a
// virtual host name, say) belongs to the address it is in.
var addressStart = regexp.MustCompile(`,\s*[A-Za-z][A-Za-z0-9+.-]*://`)

// splitAddresses splits a comma list of broker addresses. Each address
// starts with a scheme and "://"; spaces around the commas are dropped.
func splitAddresses(list string) []string {
	var out []string
	for {
		loc := addressStart.FindStringIndex(list)
		if loc == nil {
			break
		}
		out = append(out, strings.TrimSpace(list[:loc[0]]))
		list = list[loc[0]+1:]
	}
	return append(out, strings.TrimSpace(list))
}

// RedactURL returns a broker URL, or a comma list of them as New takes,
// with every password replaced by "xxxxx", for logs and errors. A URL that
// does not parse is reduced to its scheme, and a URL whose path, query or
// fragment holds what looks like another URL or a user's credentials
// (addresses run together without a comma) loses them, so a password never
// leaks either way.
func RedactURL(list string) string {
	parts := splitAddresses(list)
	for i, p := range parts {
		parts[i] = redactOne(p)
	}
	return strings.Join(parts, ",")
}

// redactOne redacts one URL.
func redactOne(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i >= 0 && !strings.ContainsAny(rawURL[:i], "@:/") {
			return rawURL[:i+3] + "(unparsable URL)"
		}
		return "(unparsable URL)"
	}
	if i := strings.LastIndex(u.Opaque, "@"); i >= 0 {
		// Without "//", "guest:secret@host:5672" parses as the scheme
		// "guest" and the opaque "secret@host:5672": no User to redact.
		return u.Scheme + ":xxxxx" + u.Opaque[i:]
	}
	if rest := u.Path + u.RawQuery + u.Fragment; strings.ContainsAny(rest, "@") || strings.Contains(rest, "://") {
		// "amqp://a:pw@h1/;amqp://b:pw2@h2/" parses with the second
		// address, password included, as the first one's path.
		u.Path, u.RawPath, u.RawQuery, u.Fragment, u.RawFragment = "", "", "", "", ""
		u.ForceQuery = false
		return u.Redacted() + "/(redacted)"
	}
	return u.Redacted()
}

// passwordsIn returns what may be a password in rawURL, parsed or not: the
// text between the first colon and the last "@" of each authority.
func passwordsIn(rawURL string) []string {
	var out []string
	for rest := rawURL; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		rest = rest[i+3:]
		auth := rest
		if j := strings.IndexAny(auth, "/?#"); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(auth[:at], ":"); ok && pw != "" {
				out = append(out, pw)
			}
		}
	}
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
	}
	return out
}

// safeText returns text, or instead when text may hold a password or
// another address of rawURL.
func safeText(text, rawURL, instead string) string {
	if strings.Contains(text, "@") || strings.Contains(text, "://") {
		return instead
	}
	for _, pw := range passwordsIn(rawURL) {
		if strings.Contains(text, pw) {
			return instead
		}
	}
	return text
}
