package bad

import "context"

//stream:publisher exchange=orders queue=orders
type Both struct{}

//stream:publisher routing_key=order.placed
type KeyOnly struct{}

//stream:publisher exchange=orders routing_key=order.placed broker=zeromq
type OnZeroMQ struct{}

//stream:publisher
type Nowhere struct{}

//stream:publisher exchnage=orders
type Typo struct{}

//stream:publisher queue=jobs max_attempts=3
type SubscriberKey struct{}

//stream:publisher "jobs"
type Quoted struct{}

//stream:publisher queue=jobs broker=kafka
type BadBroker struct{}

//stream:publisher queue=jobs queue=other
type Twice struct{}

//stream:publisher queue=jobs routing_key=
type Empty struct{}

//stream:publisher queue=generic
type Generic[T any] struct{ V T }

//stream:publisher queue=alias
type Alias = Both

//stream:publisher queue=lower
type lower struct{}

//stream:publisher queue=chans
type Chans struct{ C chan int }

//stream:publisher queue=a
//stream:publisher queue=b
type Repeated struct{}

//stream:publisher queue=group
type (
	One struct{}
	Two struct{}
)

//stream:publisher queue=jobs
func Send(ctx context.Context) error { return nil }

//stream:publisher queue=jobs
var V int

// PublishClash is the user's own.
func PublishClash() {}

//stream:publisher queue=clash
type Clash struct{}

// Job is published elsewhere than to the queue Work consumes, so Work
// has a publisher of its own.
//
//stream:publisher queue=jobs.incoming
type Job struct{}

//stream:subscriber "jobs"
func Work(ctx context.Context, j Job) error { return nil }

// JobToJobs would take the name of Work's publisher.
//
//stream:publisher queue=elsewhere
type JobToJobs struct{}
