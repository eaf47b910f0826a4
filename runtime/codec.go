package runtime

import (
	"encoding/json"
	"fmt"
)

// Codec turns message values into bodies and back. An App uses JSON unless
// it is given another codec with WithCodec.
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
		return nil, fmt.Errorf("runtime: encode json: %w", err)
	}
	return b, nil
}

// Decode unmarshals body into v with encoding/json.
func (JSON) Decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("runtime: decode json: %w", err)
	}
	return nil
}
