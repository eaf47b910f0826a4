// The generator loads this package with the build tag streamgen, which
// leaves out streamgen_gen.go, and this file with it: it names the
// generated decoder.

//go:build !streamgen

package benchorder

import "github.com/streamgen/streamgen/internal/testsupport/benchpair"

// Decode is the generated decoder: it fills *o from body exactly as
// json.Unmarshal would, or reports false, leaving the body to
// json.Unmarshal (see runtime.HandleJSON).
func Decode(body []byte, o *benchpair.Order) bool { return streamgen_decode_benchpair_Order(body, o) }

// DecodeQuote is the generated decoder of benchpair.Quote, as Decode is
// of benchpair.Order.
func DecodeQuote(body []byte, q *benchpair.Quote) bool {
	return streamgen_decode_benchpair_Quote(body, q)
}

// DecodePrice is the generated decoder of benchpair.Price, the reply
// that the typed client RequestQuote reads with it.
func DecodePrice(body []byte, p *benchpair.Price) bool {
	return streamgen_decode_benchpair_Price(body, p)
}
