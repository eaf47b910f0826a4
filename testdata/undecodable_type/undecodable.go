package undecodable

import (
	"context"
	"io"
	"unsafe"
)

// Job has a channel.
type Job struct {
	ID   int
	Done chan bool
}

// Step is nested in Plan.
type Step struct {
	Name string
	Run  func() error
}

// Point is comparable, but JSON object keys cannot decode into it.
type Point struct{ X, Y int }

// Plan reaches a func through a slice and a map.
type Plan struct {
	Steps  []Step
	ByName map[string]*Step
	Z      complex128
	P      unsafe.Pointer
	Src    io.Reader
	Keys   map[Point]int
	skip   chan int
	Tagged chan int `json:"-"`
}

// Event is an interface.
type Event interface{ Kind() string }

// Anything is an empty interface.
type Anything interface{}

//stream:subscriber "jobs"
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "plans"
func Execute(ctx context.Context, p *Plan) error { _ = p.skip; return nil }

//stream:subscriber "events"
func Handle(ctx context.Context, e Event) error { return nil }

//stream:subscriber "anything"
func Take(ctx context.Context, a Anything) error { return nil }
