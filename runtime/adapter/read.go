package adapter

import (
	"fmt"
	"strings"

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

// encodeReply encodes d's reply (see replyMessage) in the codec its
// request was read with, among those of its handler, handler i (-1: none,
// the App's codec alone): its caller wrote
// that one, and so reads the reply, also while producers move from one
// codec to another. When that codec cannot encode the reply (Protobuf, and
// a reply that is not a protocol buffer message), the first of the
// handler's other codecs that can writes it: its own, then the App's. It
// returns the body and its content type, or the reason no codec could
// encode the reply.
func (c *Consumer) encodeReply(d *Delivery, i int) (body []byte, contentType, reason string) {
	codecs := []runtime.Codec{c.codec}
	if i >= 0 {
		codecs = c.codecs[i]
	}
	read := runtime.CodecFor(codecs, d.ContentType)
	var failed []string
	encode := func(codec runtime.Codec) bool {
		b, err := codec.Encode(d.reply)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", codec.ContentType(), err))
			return false
		}
		body, contentType = b, codec.ContentType()
		return true
	}
	if read != nil && encode(read) {
		return body, contentType, ""
	}
	for _, codec := range codecs {
		// The codecs of a handler have content types of their own
		// (runtime.Handler.Codecs).
		if read != nil && codec.ContentType() == read.ContentType() {
			continue
		}
		if encode(codec) {
			return body, contentType, ""
		}
	}
	return nil, "", "its reply does not encode as " + strings.Join(failed, " nor as ")
}
