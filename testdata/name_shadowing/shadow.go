// Package shadow declares, at package scope, the names the generated code
// would import or use as parameters: the generated file picks others.
package shadow

import (
	stdcontext "context"
)

// These shadow the import names the generated file would use.
var (
	context = "not the context package"
	runtime = 1
)

// Msg is the message type.
type Msg struct{ ID int }

// ctx is a function named like the publishers' context parameter.
//
//stream:subscriber "ctx" broker=zeromq
func ctx(c stdcontext.Context, m Msg) error { return nil }

// app is a handler named like Mount's first parameter.
//
//stream:subscriber "app" broker=zeromq type=app.msg
func app(c stdcontext.Context, m *Msg) error { return nil }

// zeromq is a handler named like Mount's broker parameter.
//
//stream:subscriber "zeromq" broker=zeromq type=zmq.msg
func zeromq(c stdcontext.Context, m Msg) error { return nil }

var _, _ = context, runtime
