package adapter

import (
	"fmt"

	"github.com/streamgen/streamgen/runtime"
)

// readers returns the codecs each handler of sub reads, by index
// (runtime.Handler.Codecs, with app the App's codec), and the index of
// its handler of every message type, -1 when it has none.
func readers(sub *runtime.Subscription, app runtime.Codec) (codecs [][]runtime.Codec, every int) {
	codecs = make([][]runtime.Codec, len(sub.Handlers))
	every = -1
	for i := range sub.Handlers {
		h := &sub.Handlers[i]
		codecs[i] = h.Codecs(app)
		if h.Every() && every < 0 {
			every = i
		}
	}
	return codecs, every
}

// handler returns handler i, which takes d. The handler of every message
// type is returned as a copy that names d's type, so that its verdicts,
// log lines and Metadata name the type d has.
func (c *Consumer) handler(i int, d *Delivery) *runtime.Handler {
	h := &c.sub.Handlers[i]
	if i != c.every {
		return h
	}
	named := *h
	named.MessageType = d.Type
	return &named
}

// read decodes d's body for handler i, h, with the codec d's content type
// names among those h reads (the first when d has none). It returns the
// value, or the reason d is poison: no codec of h reads its content type,
// or its body does not decode. The handler of every message type reads no
// body: its value is made once its Metadata is (runtime.NewDelivery).
func (c *Consumer) read(i int, h *runtime.Handler, d *Delivery) (any, string) {
	if i == c.every {
		return nil, ""
	}
	codec := runtime.CodecFor(c.codecs[i], d.ContentType)
	if codec == nil {
		return nil, fmt.Sprintf("content type %q cannot be read by the codecs of message type %q, which read %s", d.ContentType, h.MessageType, runtime.ContentTypes(c.codecs[i]))
	}
	v, err := c.decode(h, codec, d)
	if err != nil {
		return nil, fmt.Sprintf("body does not decode into %s: %v", h.MessageType, err)
	}
	return v, ""
}
