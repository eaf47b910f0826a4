package adapter

import (
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// textCodec is a codec of another content type than JSON's.
type textCodec struct{ runtime.JSON }

func (textCodec) ContentType() string { return "text/plain" }

func TestPublishCodecIsTheBrokersElseTheAppsElseJSON(t *testing.T) {
	var none PublishCodec
	if got := none.Codec().ContentType(); got != "application/json" {
		t.Errorf("a broker given no codec, not started, encodes %s, want JSON", got)
	}
	none.Adopt(textCodec{})
	if got := none.Codec().ContentType(); got != "text/plain" {
		t.Errorf("after Start, a broker given no codec encodes %s, want the App's text/plain", got)
	}

	own := NewPublishCodec(textCodec{})
	own.Adopt(runtime.JSON{})
	if got := own.Codec().ContentType(); got != "text/plain" {
		t.Errorf("a broker given its own codec encodes %s after Start, want its own text/plain", got)
	}
}
