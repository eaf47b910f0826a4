package exchangekeysbad

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "a" exchange=orders
func A(ctx context.Context, j Job) error { return nil }

//stream:subscriber "b" exchange=events exchange_type=fanout binding=order.placed
func B(ctx context.Context, j Job) error { return nil }

//stream:subscriber "c" exchange=orders binding=order..placed
func C(ctx context.Context, j Job) error { return nil }

//stream:subscriber "d" exchange=orders exchange_type=headers binding=x
func D(ctx context.Context, j Job) error { return nil }

//stream:subscriber "e" broker=rabbitmq binding=order.placed
func E(ctx context.Context, j Job) error { return nil }

//stream:subscriber "f" exchange=orders binding=order.placed,,order.x*
func F(ctx context.Context, j Job) error { return nil }

//stream:subscriber "g" exchange=mail exchange_type=direct
func G(ctx context.Context, j Job) error { return nil }
