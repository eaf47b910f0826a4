// Package errs misuses methods as handlers.
package errs

import "context"

// Job is work.
type Job struct{ ID int }

// Queue is generic.
type Queue[T any] struct{ items []T }

//stream:subscriber "generic" broker=zeromq
func (q *Queue[T]) Work(ctx context.Context, j Job) error { return nil }

type worker struct{}

//stream:subscriber "hidden" broker=zeromq
func (w worker) Work(ctx context.Context, j Job) error { return nil }

// Service is fine.
type Service struct{}

// Twice is annotated twice for one queue.
//
//stream:subscriber "twice" broker=zeromq
//stream:subscriber "twice" broker=zeromq
func (s *Service) Twice(ctx context.Context, j Job) error { return nil }

// Again is a function annotated twice for one queue.
//
//stream:subscriber "again" broker=zeromq
//stream:subscriber "again" broker=zeromq
func Again(ctx context.Context, j Job) error { return nil }

// Service_Work has the name of Service.Work's guard.
//
//stream:subscriber "underscore" broker=zeromq
func Service_Work(ctx context.Context, j Job) error { return nil }

// Work clashes with Service_Work's guard.
//
//stream:subscriber "clash" broker=zeromq
func (s *Service) Work(ctx context.Context, j Job) error { return nil }
