package adapter

import (
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// Rules are what a Consumer must know of the broker it runs on. Everything
// else that differs between brokers follows from Kind, in this package:
//
//   - RabbitMQ acknowledges; a retry copy waits in a wait queue, so the
//     Consumer sends it at once; header names keep their case and values
//     may hold line breaks.
//   - ZeroMQ has no acknowledgement: an ack does nothing and a reject
//     drops; a retry copy waits in memory on the App's clock, then is sent;
//     header names are lower case and a value is one line.
type Rules struct {
	// Kind is the broker: runtime.RabbitMQ or runtime.ZeroMQ.
	Kind runtime.BrokerKind
	// RetryCountHeader names the header that carries the retry count; ""
	// means runtime.RetryCountHeader.
	RetryCountHeader string
}

// RetryCountHeaderName is the retry count header as the broker writes it
// and a handler sees it.
func (r Rules) RetryCountHeaderName() string {
	name := r.RetryCountHeader
	if name == "" {
		name = runtime.RetryCountHeader
	}
	return r.headerName(name)
}

// acks reports whether the broker has acknowledgements.
func (r Rules) acks() bool { return r.Kind != runtime.ZeroMQ }

// delaysInMemory reports whether a retry delay is waited out by the
// Consumer (ZeroMQ) rather than by a wait queue (RabbitMQ).
func (r Rules) delaysInMemory() bool { return r.Kind == runtime.ZeroMQ }

// headerName is name as the broker shows it.
func (r Rules) headerName(name string) string {
	if r.Kind == runtime.ZeroMQ {
		return strings.ToLower(name)
	}
	return name
}

// headerValue is v as the broker can carry it.
func (r Rules) headerValue(v string) string {
	if r.Kind == runtime.ZeroMQ {
		return oneLine(v)
	}
	return v
}

// Headers returns h as a handler on this broker sees it: on ZeroMQ, names
// in lower case. It returns h itself when nothing changes, and never nil.
func (r Rules) Headers(h map[string]string) map[string]string {
	if h == nil {
		return map[string]string{}
	}
	if r.Kind != runtime.ZeroMQ {
		return h
	}
	for k := range h {
		if k != strings.ToLower(k) {
			return r.foldNames(h)
		}
	}
	return h
}

func (r Rules) foldNames(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		lk := strings.ToLower(k)
		if _, dup := out[lk]; dup && k != lk {
			continue // a lower-case name wins over another spelling
		}
		out[lk] = v
	}
	return out
}

// lineBreaks turns each line break into a space. A Replacer is safe for
// concurrent use and never changes.
var lineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

// oneLine makes s fit a one-line header value.
func oneLine(s string) string { return lineBreaks.Replace(s) }
