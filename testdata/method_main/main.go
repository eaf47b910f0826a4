// Command worker has its handlers on an unexported type, which is fine in
// a main: no other package calls its Mount. Its App type is named like
// Mount's first parameter.
package main

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Job is work.
type Job struct{ ID int }

type worker struct{ done int }

//stream:subscriber "jobs" broker=zeromq
func (w *worker) Work(ctx context.Context, j Job) error {
	w.done++
	return nil
}

// App has the name of Mount's first parameter.
type App struct{}

//stream:subscriber "jobs" broker=zeromq type=App.Job
func (a App) Work(ctx context.Context, j *Job) error { return nil }

func main() {
	app := runtime.NewApp("worker")
	var b runtime.Broker
	Mount(app, b, App{}, &worker{})
}
