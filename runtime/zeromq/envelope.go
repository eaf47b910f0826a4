package zeromq

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Header names with a meaning of their own. Header names are
// case-insensitive and always written in lower case.
const (
	// HeaderType carries the message type name that selects the handler.
	HeaderType = "type"
	// HeaderContentType carries the codec's content type.
	HeaderContentType = "content-type"
	// HeaderMessageID carries the message id.
	HeaderMessageID = "message-id"

	// The message properties (runtime.WithCorrelationID and the like),
	// each written only when set. They are headers like any other on a
	// copy, which keeps them.

	// HeaderCorrelationID carries the correlation id.
	HeaderCorrelationID = "correlation-id"
	// HeaderReplyTo carries where a reply goes.
	HeaderReplyTo = "reply-to"
	// HeaderPriority carries the priority as decimal text, 0 to 255.
	HeaderPriority = "priority"
	// HeaderTimestamp carries when the message was made, in RFC 3339 in
	// UTC (2026-12-01T10:00:00.5Z).
	HeaderTimestamp = "timestamp"
	// HeaderAppID carries the name of the sending application.
	HeaderAppID = "app-id"
)

// propertyHeaders lists the header names set from a runtime.Message's
// own fields, which its Headers may not set.
var propertyHeaders = []string{HeaderType, HeaderContentType, HeaderMessageID, HeaderCorrelationID, HeaderReplyTo, HeaderPriority, HeaderTimestamp, HeaderAppID}

// FrameCount is the number of frames of every message: the subscription
// name, the headers, the body.
const FrameCount = 3

// Header is one line of the header frame.
type Header struct {
	Name  string
	Value string
}

// Envelope is one message in streamgen's ZeroMQ framing (see the package
// documentation): the name of the subscription it is meant for, its
// headers in wire order, and its body.
type Envelope struct {
	// Subscription is frame 0: the name of the subscription (queue) the
	// message is meant for.
	Subscription string
	// Headers is frame 1, in wire order. Names are lower case.
	Headers []Header
	// Body is frame 2, as the codec wrote it.
	Body []byte
}

// ErrMalformed is wrapped by every error ParseEnvelope and Envelope.Frames
// return.
var ErrMalformed = errors.New("zeromq: malformed message")

// Header returns the value of the header name (matched case-insensitively)
// and whether the message has it.
func (e *Envelope) Header(name string) (string, bool) {
	for _, h := range e.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// SetHeader sets the header name to value: it replaces the value in place
// when the message has the header, and appends it otherwise. The name is
// stored in lower case.
func (e *Envelope) SetHeader(name, value string) {
	name = strings.ToLower(name)
	for i, h := range e.Headers {
		if strings.EqualFold(h.Name, name) {
			e.Headers[i].Value = value
			return
		}
	}
	e.Headers = append(e.Headers, Header{Name: name, Value: value})
}

// DeleteHeader removes the header name (matched case-insensitively).
func (e *Envelope) DeleteHeader(name string) {
	e.Headers = slices.DeleteFunc(e.Headers, func(h Header) bool { return strings.EqualFold(h.Name, name) })
}

// clone returns a copy of e whose header slice may be changed without
// changing e. The body is shared: nobody changes it.
func (e *Envelope) clone() *Envelope {
	c := *e
	c.Headers = slices.Clone(e.Headers)
	return &c
}

// Frames returns the three frames of e. It fails, wrapping ErrMalformed,
// when the subscription name is empty or not UTF-8, a header name is not a
// token, a header value holds a line break, or two headers share a name.
func (e *Envelope) Frames() ([][]byte, error) {
	if e.Subscription == "" || !utf8.ValidString(e.Subscription) {
		return nil, fmt.Errorf("%w: the subscription name %q is empty or not UTF-8", ErrMalformed, e.Subscription)
	}
	headers, err := FormatHeaders(e.Headers)
	if err != nil {
		return nil, err
	}
	return [][]byte{[]byte(e.Subscription), headers, e.Body}, nil
}

// FormatHeaders writes the header frame: one "name: value" line per header,
// joined by "\n", names in lower case, no trailing line break. No headers
// make an empty frame.
func FormatHeaders(headers []Header) ([]byte, error) {
	var b strings.Builder
	seen := make(map[string]bool, len(headers))
	for i, h := range headers {
		name := strings.ToLower(h.Name)
		if !isToken(name) {
			return nil, fmt.Errorf("%w: header name %q is not a token (letters, digits and !#$%%&'*+-.^_`|~)", ErrMalformed, h.Name)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: header %q appears twice", ErrMalformed, name)
		}
		seen[name] = true
		if strings.ContainsAny(h.Value, "\r\n") {
			return nil, fmt.Errorf("%w: the value of header %q holds a line break", ErrMalformed, name)
		}
		if !utf8.ValidString(h.Value) {
			return nil, fmt.Errorf("%w: the value of header %q is not UTF-8", ErrMalformed, name)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(strings.Trim(h.Value, " \t"))
	}
	return []byte(b.String()), nil
}

// ParseEnvelope reads a message of three frames. It fails, wrapping
// ErrMalformed, when there are not three frames, the name is empty or not
// UTF-8, or the header frame does not parse (see ParseHeaders).
func ParseEnvelope(frames [][]byte) (*Envelope, error) {
	if len(frames) != FrameCount {
		return nil, fmt.Errorf("%w: %d frames, want %d (subscription name, headers, body)", ErrMalformed, len(frames), FrameCount)
	}
	name := frames[0]
	if len(name) == 0 || !utf8.Valid(name) {
		return nil, fmt.Errorf("%w: frame 0 (the subscription name) is empty or not UTF-8", ErrMalformed)
	}
	headers, err := ParseHeaders(frames[1])
	if err != nil {
		return nil, err
	}
	return &Envelope{Subscription: string(name), Headers: headers, Body: frames[2]}, nil
}

// ParseHeaders reads a header frame. The frame is UTF-8 text of lines
// separated by "\n" (a "\r" ending a line is ignored, and so are empty
// lines). Each line is "name: value": the name is everything before the
// first colon, a token, matched case-insensitively and returned in lower
// case; the value is the rest, without its surrounding spaces and tabs. A
// line without a colon, a name that is not a token and a name given twice
// make the frame malformed.
func ParseHeaders(frame []byte) ([]Header, error) {
	if len(frame) == 0 {
		return nil, nil
	}
	if !utf8.Valid(frame) {
		return nil, fmt.Errorf("%w: the header frame is not UTF-8", ErrMalformed)
	}
	lines := strings.Split(string(frame), "\n")
	headers := make([]Header, 0, len(lines))
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: header line %d %q has no colon (want \"name: value\")", ErrMalformed, i+1, line)
		}
		name = strings.ToLower(strings.Trim(name, " \t"))
		if !isToken(name) {
			return nil, fmt.Errorf("%w: header line %d: name %q is not a token", ErrMalformed, i+1, name)
		}
		for _, h := range headers {
			if h.Name == name {
				return nil, fmt.Errorf("%w: header %q appears twice", ErrMalformed, name)
			}
		}
		headers = append(headers, Header{Name: name, Value: strings.Trim(value, " \t")})
	}
	return headers, nil
}

// isToken reports whether s is a non-empty header name of the characters
// HTTP allows in a token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
