package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Codec turns message values into bodies and back. An App reads and
// writes JSON unless it is given another codec with WithCodec; this
// package has Protobuf, MsgPack and CBOR too, and any type with these
// methods is a codec. A handler may have a codec of its own
// (Handler.Codec, which generated code sets from the annotation's codec=,
// and Handle sets to Protobuf for a protocol buffer message), which it
// reads besides the App's.
//
// Each delivery is read with the codec its content type names among those
// its handler reads (Handler.Codecs); a delivery without a content type
// with the first of them. A message whose content type none of them reads
// is poison: it is parked (or rejected) with a reason that names the
// content type and the ones the handler reads, never decoded anyway. A
// codec reads its own ContentType (parameters and case aside) and those
// its method Reads(contentType string) bool accepts, when it has one (as
// JSON does).
type Codec interface {
	// ContentType names the encoding, for example "application/json".
	ContentType() string
	// Encode returns the body for v.
	Encode(v any) ([]byte, error)
	// Decode fills the value v points to from body.
	Decode(body []byte, v any) error
}

// JSON is the default codec: encoding/json, content type application/json.
// A protocol buffer message (a proto.Message) is written and read in the
// protobuf JSON mapping instead (google.golang.org/protobuf/encoding/protojson),
// which is what other languages' protobuf libraries read and write;
// fields it does not know are skipped.
type JSON struct{}

// ContentType returns "application/json".
func (JSON) ContentType() string { return "application/json" }

// Encode marshals v with encoding/json, or a proto.Message with protojson.
func (JSON) Encode(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		b, err := protojson.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("runtime: encode: protobuf JSON: %w", err)
		}
		return b, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("runtime: encode: %w", err) // encoding/json says "json: ..."
	}
	return b, nil
}

// Decode unmarshals body into v with encoding/json, or into a
// proto.Message with protojson. A body that is JSON null is refused: it
// would reach the handler as a zero value.
func (JSON) Decode(body []byte, v any) error {
	if string(bytes.TrimSpace(body)) == "null" {
		return errors.New("runtime: decode: the body is null")
	}
	if m, ok := v.(proto.Message); ok {
		if err := protoJSON.Unmarshal(body, m); err != nil {
			return fmt.Errorf("runtime: decode: protobuf JSON: %w", err)
		}
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("runtime: decode: %w", err) // encoding/json says "json: ..."
	}
	return nil
}

// Reads reports whether a body of the given content type is JSON: no
// content type, application/json, or a type ending in +json (such as
// application/vnd.api+json), with any parameters.
func (JSON) Reads(contentType string) bool {
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}
