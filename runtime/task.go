package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamgen/streamgen/runtime/observe"
)

// Task is work an App runs beside its subscriptions while it runs, such
// as the relay of package runtime/outbox, which publishes through the
// App's brokers. Give it to an App with WithTask.
type Task struct {
	// Name names the task in logs, errors and the health report.
	Name string
	// Run does the work. The App calls it in a goroutine of its own once
	// every broker has started (Ready is closed), with a context that
	// ends when the App begins to stop, and with the Env the brokers got
	// (the App's logger, clock and Observer). The App waits for Run to
	// return before it stops the brokers, so that what the task publishes
	// through them lands; a task still running when the shutdown timeout
	// passes is left to end on its own, and the App says so in Run's
	// error. An error Run returns while the App runs stops the App, as a
	// broker failure does; nil ends the task alone.
	Run func(ctx context.Context, env Env) error
	// Report, when set, says how the task is doing: the App's health
	// report (Readiness) shows it, and an Observer that exports gauges
	// (observe.GaugeObserver) exports its gauges. It is called often and
	// from any goroutine, before, during and after Run: make it quick
	// (return what the task measured last).
	Report func() TaskReport
}

// TaskReport is what a task says of itself (Task.Report).
type TaskReport struct {
	// Gauges are its measures, each name once: the outbox relay reports
	// its backlog and the age of its oldest message.
	Gauges []observe.Gauge
	// Warnings are what an operator should know, in a sentence each; none
	// when all is well. They do not make the App unready.
	Warnings []string
}

// WithTask adds a task the App runs while it runs (see Task). A task with
// no Run is reported by Run as an error.
func WithTask(t Task) Option {
	return func(a *App) {
		if t.Run == nil {
			a.errs = append(a.errs, fmt.Errorf("runtime: WithTask(%q) is given no Run function", t.Name))
			return
		}
		a.tasks = append(a.tasks, &taskState{Task: t})
	}
}

// taskState is a task of the App and whether it runs.
type taskState struct {
	Task
	running atomic.Bool
}

// taskRun is the App's tasks while they run.
type taskRun struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error // returned after the stop began
}

// startTasks runs every task in a goroutine of its own. A task's error
// while the App runs fails the App (env.Fail); one returned once the stop
// began is kept for stopTasks.
func (a *App) startTasks(ctx context.Context, env Env) *taskRun {
	ctx, cancel := context.WithCancel(ctx)
	r := &taskRun{cancel: cancel}
	gauges, _ := a.observer.(observe.GaugeObserver)
	for _, t := range a.tasks {
		var stopped func()
		if gauges != nil && t.Report != nil {
			report := t.Report
			stopped = gauges.WatchGauges(t.Name, func() []observe.Gauge { return report().Gauges })
		}
		t.running.Store(true)
		r.wg.Go(func() {
			defer func() {
				t.running.Store(false)
				if stopped != nil {
					stopped()
				}
			}()
			err := t.Run(ctx, env)
			switch {
			case err == nil:
			case ctx.Err() == nil:
				env.Fail(fmt.Errorf("runtime: task %s: %w", t.Name, err))
			case !errors.Is(err, context.Canceled):
				r.mu.Lock()
				r.errs = append(r.errs, fmt.Errorf("runtime: task %s: %w", t.Name, err))
				r.mu.Unlock()
			}
		})
	}
	return r
}

// stopTasks ends the tasks' context and waits for them within the
// shutdown timeout. It returns what they returned after the stop began,
// and an error naming those still running when the timeout passed.
func (a *App) stopTasks(r *taskRun) error {
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(a.shutdownTimeout)
	defer timer.Stop()
	var late error
	select {
	case <-done:
	case <-timer.C:
		var names []string
		for _, t := range a.tasks {
			if t.running.Load() {
				names = append(names, t.Name)
			}
		}
		late = fmt.Errorf("runtime: tasks still running after the shutdown timeout of %v, left to end on their own: %s", a.shutdownTimeout, andList(names))
		a.logger.Error("tasks still running after the shutdown timeout; stopping the brokers", "tasks", names, "timeout", a.shutdownTimeout)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(append(r.errs, late)...)
}

// TaskHealth is a task's part of the health report.
type TaskHealth struct {
	Task string `json:"task"`
	// Running is set while its Run has not returned.
	Running bool `json:"running"`
	// Gauges are its measures by name (Task.Report).
	Gauges map[string]float64 `json:"gauges,omitempty"`
	// Warnings are what it reports besides.
	Warnings []string `json:"warnings,omitempty"`
}

// taskHealth reports on every task, in the order given.
func (a *App) taskHealth() []TaskHealth {
	if len(a.tasks) == 0 {
		return nil
	}
	out := make([]TaskHealth, len(a.tasks))
	for i, t := range a.tasks {
		out[i] = TaskHealth{Task: t.Name, Running: t.running.Load()}
		if t.Report == nil {
			continue
		}
		r := t.Report()
		if len(r.Gauges) > 0 {
			out[i].Gauges = make(map[string]float64, len(r.Gauges))
			for _, g := range r.Gauges {
				out[i].Gauges[g.Name] = g.Value
			}
		}
		out[i].Warnings = r.Warnings
	}
	return out
}
