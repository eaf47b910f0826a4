package zeromq_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/zeromq"
)

// FuzzParseHeaders: a header frame either is malformed (ErrMalformed) or
// reads as headers that FormatHeaders writes, within the limits, and that
// read back the same. Seeds: testdata/fuzz/FuzzParseHeaders.
func FuzzParseHeaders(f *testing.F) {
	f.Add([]byte("type: job\nmessage-id: 1\nx-retry-count: 2"))
	f.Add([]byte("x-note: a\rb"))
	f.Add([]byte(strings.Repeat("x-a: 1\n", 3)))
	f.Fuzz(func(t *testing.T, frame []byte) {
		headers, err := zeromq.ParseHeaders(frame)
		if err != nil {
			if !errors.Is(err, zeromq.ErrMalformed) {
				t.Fatalf("ParseHeaders(%q) = %v, not ErrMalformed", frame, err)
			}
			return
		}
		out, err := zeromq.FormatHeaders(headers)
		if err != nil {
			t.Fatalf("FormatHeaders(ParseHeaders(%q)) = %v: what was read cannot be written", frame, err)
		}
		if len(out) > zeromq.MaxHeaderBytes || len(headers) > zeromq.MaxHeaders {
			t.Fatalf("%d headers in %d bytes, over the limits", len(headers), len(out))
		}
		again, err := zeromq.ParseHeaders(out)
		if err != nil || !reflect.DeepEqual(again, headers) && len(headers) > 0 {
			t.Fatalf("ParseHeaders(FormatHeaders(%q)) = %q, %v; want %q", headers, again, err, headers)
		}
	})
}

// FuzzParseEnvelope: three frames either are a malformed message
// (ErrMalformed) or an envelope whose Frames read back as the same
// envelope. Seeds: testdata/fuzz/FuzzParseEnvelope.
func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte("jobs"), []byte("type: job\nmessage-id: m-1"), []byte(`{"id":1}`))
	f.Add([]byte(""), []byte(""), []byte(""))
	f.Add([]byte("jobs"), []byte("0:\r0"), []byte("{}"))
	f.Fuzz(func(t *testing.T, name, headers, body []byte) {
		env, err := zeromq.ParseEnvelope([][]byte{name, headers, body})
		if err != nil {
			if !errors.Is(err, zeromq.ErrMalformed) {
				t.Fatalf("ParseEnvelope = %v, not ErrMalformed", err)
			}
			return
		}
		frames, err := env.Frames()
		if err != nil {
			t.Fatalf("Frames of a parsed envelope = %v: it cannot be sent on (a retry copy would be lost)", err)
		}
		again, err := zeromq.ParseEnvelope(frames)
		if err != nil || again.Subscription != env.Subscription || string(again.Body) != string(env.Body) ||
			len(again.Headers) != len(env.Headers) || len(env.Headers) > 0 && !reflect.DeepEqual(again.Headers, env.Headers) {
			t.Fatalf("ParseEnvelope(Frames(%+v)) = %+v, %v", env, again, err)
		}
	})
}
