package adapter

import (
	"mime"

	"github.com/streamgen/streamgen/runtime"
)

// codecReads reports whether c reads bodies of contentType: when it is
// empty or c's own ContentType (parameters and case aside), or when c's
// Reads method, if it has one, says so.
func codecReads(c runtime.Codec, contentType string) bool {
	if contentType == "" || contentType == c.ContentType() {
		return true // the usual case, without parsing
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	if own, _, err := mime.ParseMediaType(c.ContentType()); err == nil && mt == own {
		return true
	}
	r, ok := c.(interface{ Reads(contentType string) bool })
	return ok && r.Reads(contentType)
}
