package adapter

import (
	"sync"

	"github.com/streamgen/streamgen/runtime"
)

// PublishCodec is the codec a broker's Publish encodes with: the one the
// broker was given (its WithCodec option), else the App's once the broker
// has started, else JSON. A broker embeds it, so that its Codec method is
// the one runtime.Publish asks for. The zero PublishCodec encodes JSON;
// it is safe for concurrent use.
type PublishCodec struct {
	mu    sync.Mutex
	codec runtime.Codec
}

// NewPublishCodec returns a PublishCodec with the broker's own codec c, or
// none (nil), which the App's replaces at Start.
func NewPublishCodec(c runtime.Codec) PublishCodec { return PublishCodec{codec: c} }

// Codec returns the codec to encode with: the broker's own, else the
// App's once started, else runtime.JSON.
func (p *PublishCodec) Codec() runtime.Codec {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.codec == nil {
		return runtime.JSON{}
	}
	return p.codec
}

// Adopt takes the App's codec c, as a broker does at Start, unless the
// broker was given one of its own.
func (p *PublishCodec) Adopt(c runtime.Codec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.codec == nil {
		p.codec = c
	}
}
