package zeromq

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/streamgen/streamgen/runtime/adapter"
)

// Header names with a meaning of their own (the runtime's, package
// adapter's FieldHeader constants). Header names are case-insensitive and
// always written in lower case.
const (
	// HeaderType carries the message type name that selects the handler.
	HeaderType = adapter.FieldHeaderType
	// HeaderContentType carries the codec's content type.
	HeaderContentType = adapter.FieldHeaderContentType
	// HeaderMessageID carries the message id.
	HeaderMessageID = adapter.FieldHeaderMessageID

	// The message properties (runtime.WithProperties),
	// each written only when set. They are headers like any other on a
	// copy, which keeps them.

	// HeaderCorrelationID carries the correlation id.
	HeaderCorrelationID = adapter.FieldHeaderCorrelationID
	// HeaderReplyTo carries where a reply goes.
	HeaderReplyTo = adapter.FieldHeaderReplyTo
	// HeaderPriority carries the priority as decimal text, 0 to 255.
	HeaderPriority = adapter.FieldHeaderPriority
	// HeaderTimestamp carries when the message was made, in RFC 3339 in
	// UTC (2026-12-01T10:00:00.5Z).
	HeaderTimestamp = adapter.FieldHeaderTimestamp
	// HeaderAppID carries the name of the sending application.
	HeaderAppID = adapter.FieldHeaderAppID
)

// FrameCount is the number of frames of every message: the subscription
// name, the headers, the body.
const FrameCount = 3

// Limits of the header frame. A header frame over either is malformed:
// ParseHeaders refuses to read it and FormatHeaders to write it, so what is
// read can be written again. The runtime's copies carry a few headers more
// than the message they copy (the retry count, the dead-letter headers), so
// a message that uses all of either limit may not be copied: its copy is
// refused, and the runtime logs that it could not retry or park it.
const (
	// MaxHeaders is the most headers a message may have.
	MaxHeaders = 256
	// MaxHeaderBytes is the most bytes a header frame may have, as it
	// arrives and as FormatHeaders writes it.
	MaxHeaderBytes = 64 << 10
)

// linearScan is how many headers are checked for a repeated name by
// comparing names; beyond it, a set of the names is built.
const linearScan = 16

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
// when the subscription name is empty or not UTF-8, or the headers cannot
// be written (see FormatHeaders).
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
// joined by "\n", names in lower case, values without their surrounding
// spaces and tabs, no trailing line break. No headers make an empty frame.
// It fails, wrapping ErrMalformed, when a name is not a token, a value
// holds a line break or is not UTF-8, two headers share a name, or the
// frame would be over MaxHeaders or MaxHeaderBytes.
func FormatHeaders(headers []Header) ([]byte, error) {
	if len(headers) > MaxHeaders {
		return nil, fmt.Errorf("%w: %d headers, over the limit of %d", ErrMalformed, len(headers), MaxHeaders)
	}
	var names nameSet
	var b strings.Builder
	for i, h := range headers {
		name := strings.ToLower(h.Name)
		if !isToken(name) {
			return nil, fmt.Errorf("%w: header name %q is not a token (letters, digits and !#$%%&'*+-.^_`|~)", ErrMalformed, h.Name)
		}
		if !names.add(headers[:i], name) {
			return nil, fmt.Errorf("%w: header %q appears twice", ErrMalformed, name)
		}
		if strings.ContainsAny(h.Value, "\r\n") {
			return nil, fmt.Errorf("%w: the value of header %q holds a line break", ErrMalformed, name)
		}
		if !utf8.ValidString(h.Value) {
			return nil, fmt.Errorf("%w: the value of header %q is not UTF-8", ErrMalformed, name)
		}
		value := strings.Trim(h.Value, " \t")
		if i > 0 {
			b.WriteByte('\n')
		}
		if b.Len()+len(name)+len(": ")+len(value) > MaxHeaderBytes {
			return nil, fmt.Errorf("%w: the header frame would be over the limit of %d bytes", ErrMalformed, MaxHeaderBytes)
		}
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(value)
	}
	return []byte(b.String()), nil
}

// nameSet tells whether a header name was seen: by comparing it with the
// names before it while there are few, with a set beyond that, so that
// checking n headers costs O(n).
type nameSet struct {
	set map[string]struct{}
}

// add reports whether name, the name of the header after before, is new,
// and records it. before holds the earlier headers, names in lower case.
func (s *nameSet) add(before []Header, name string) bool {
	if len(before) < linearScan {
		for _, h := range before {
			if strings.EqualFold(h.Name, name) {
				return false
			}
		}
		return true
	}
	if s.set == nil {
		s.set = make(map[string]struct{}, 2*linearScan)
		for _, h := range before {
			s.set[strings.ToLower(h.Name)] = struct{}{}
		}
	}
	if _, ok := s.set[name]; ok {
		return false
	}
	s.set[name] = struct{}{}
	return true
}

// ParseEnvelope reads a message of three frames. It fails, wrapping
// ErrMalformed, when there are not three frames, the name is empty or not
// UTF-8, or the header frame does not parse (see ParseHeaders).
func ParseEnvelope(frames [][]byte) (*Envelope, error) {
	env := new(Envelope)
	if err := parseEnvelope(env, frames, nil, ""); err != nil {
		return nil, err
	}
	return env, nil
}

// parseEnvelope is ParseEnvelope into env. The headers are appended to
// headers[:0], which saves an allocation when it has room for them; a
// subscription name equal to name is stored as name, which saves another.
func parseEnvelope(env *Envelope, frames [][]byte, headers []Header, name string) error {
	if len(frames) != FrameCount {
		return fmt.Errorf("%w: %d frames, want %d (subscription name, headers, body)", ErrMalformed, len(frames), FrameCount)
	}
	sub := frames[0]
	if len(sub) == 0 || !utf8.Valid(sub) {
		return fmt.Errorf("%w: frame 0 (the subscription name) is empty or not UTF-8", ErrMalformed)
	}
	headers, err := parseHeaders(headers[:0], frames[1])
	if err != nil {
		return err
	}
	if string(sub) == name {
		env.Subscription = name
	} else {
		env.Subscription = string(sub)
	}
	env.Headers, env.Body = headers, frames[2]
	return nil
}

// ParseHeaders reads a header frame. The frame is UTF-8 text of lines
// separated by "\n" (a "\r" ending a line is ignored, and so are empty
// lines). Each line is "name: value": the name is everything before the
// first colon, a token, matched case-insensitively and returned in lower
// case; the value is the rest, without its surrounding spaces and tabs. A
// line without a colon, a name that is not a token, a name given twice, a
// "\r" anywhere but at the end of a line, more than MaxHeaders headers and
// a frame over MaxHeaderBytes (as it arrives, or as FormatHeaders would
// write it) make the frame malformed. Reading a frame costs time in
// proportion to its size.
func ParseHeaders(frame []byte) ([]Header, error) {
	return parseHeaders(nil, frame)
}

// parseHeaders is ParseHeaders, appending to headers, which is empty.
func parseHeaders(headers []Header, frame []byte) ([]Header, error) {
	if len(frame) == 0 {
		return headers, nil
	}
	if len(frame) > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: the header frame has %d bytes, over the limit of %d", ErrMalformed, len(frame), MaxHeaderBytes)
	}
	if !utf8.Valid(frame) {
		return nil, fmt.Errorf("%w: the header frame is not UTF-8", ErrMalformed)
	}
	var (
		names nameSet
		size  int // of the frame as FormatHeaders writes it
	)
	rest := string(frame)
	for n := 1; rest != ""; n++ {
		line, after, _ := strings.Cut(rest, "\n")
		rest = after
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.IndexByte(line, '\r') >= 0 {
			return nil, fmt.Errorf("%w: header line %d holds a carriage return that does not end it", ErrMalformed, n)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: header line %d %q has no colon (want \"name: value\")", ErrMalformed, n, line)
		}
		name = strings.ToLower(strings.Trim(name, " \t"))
		if !isToken(name) {
			return nil, fmt.Errorf("%w: header line %d: name %q is not a token", ErrMalformed, n, name)
		}
		if len(headers) == MaxHeaders {
			return nil, fmt.Errorf("%w: more than %d headers, over the limit", ErrMalformed, MaxHeaders)
		}
		if !names.add(headers, name) {
			return nil, fmt.Errorf("%w: header %q appears twice", ErrMalformed, name)
		}
		value = strings.Trim(value, " \t")
		if len(headers) > 0 {
			size++ // the line break before this line
		}
		if size += len(name) + len(": ") + len(value); size > MaxHeaderBytes {
			return nil, fmt.Errorf("%w: the header frame, written as name: value lines, is over the limit of %d bytes", ErrMalformed, MaxHeaderBytes)
		}
		if cap(headers) == 0 {
			headers = make([]Header, 0, min(strings.Count(rest, "\n")+1, MaxHeaders))
		}
		headers = append(headers, Header{Name: name, Value: value})
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
