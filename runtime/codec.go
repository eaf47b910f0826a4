package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
)

// Codec turns message values into bodies and back. An App uses JSON unless
// it is given another codec with WithCodec.
//
// A message whose content type the App's codec does not read is poison:
// it is parked (or rejected) with the reason, never decoded anyway. A
// codec reads no content type, its own ContentType, and those its method
// Reads(contentType string) bool accepts, when it has one (as JSON does).
type Codec interface {
	// ContentType names the encoding, for example "application/json".
	ContentType() string
	// Encode returns the body for v.
	Encode(v any) ([]byte, error)
	// Decode fills the value v points to from body.
	Decode(body []byte, v any) error
}

// JSON is the default codec: encoding/json, content type application/json.
type JSON struct{}

// ContentType returns "application/json".
func (JSON) ContentType() string { return "application/json" }

// Encode marshals v with encoding/json.
func (JSON) Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("runtime: encode: %w", err) // encoding/json says "json: ..."
	}
	return b, nil
}

// Decode unmarshals body into v with encoding/json. A body that is JSON
// null is refused: it would reach the handler as a zero value.
func (JSON) Decode(body []byte, v any) error {
	if string(bytes.TrimSpace(body)) == "null" {
		return errors.New("runtime: decode: the body is null")
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
