package rabbitmq

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/streamgen/streamgen/runtime/clock"
)

// publisher owns the publishing connection: it connects on first use,
// reconnects on the next use after a loss, and publishes through one
// confirm-mode channel (see confirmChannel). It is separate from the
// consuming connection, so RabbitMQ's flow control on publishers never
// holds back the acks of consumed deliveries.
type publisher struct {
	dial    func(ctx context.Context, role string) (*connection, error)
	timeout time.Duration
	blocks  *blockState
	// open opens a confirm-mode channel; tests replace it.
	open func(ctx context.Context) (publishChannel, error)
	// window holds a token per message of PublishAsync awaiting its
	// confirm.
	window chan struct{}

	mu    sync.Mutex
	clock clock.Clock
	log   *slog.Logger
	conn  *connection
	ch    *confirmChannel
	// replies is the channel replies go out on, not in confirm mode (see
	// replyChannel); nil until the first.
	replies *amqp.Channel
	dialed  bool // a connection was opened before: the next one is a reconnect
	closed  bool
	drains  sync.WaitGroup
}

func newPublisher(dial func(ctx context.Context, role string) (*connection, error), timeout time.Duration, window int, blocks *blockState, log *slog.Logger) *publisher {
	p := &publisher{dial: dial, timeout: timeout, window: make(chan struct{}, window), blocks: blocks, clock: clock.System{}, log: log}
	p.open = p.openAMQP
	return p
}

// use sets the clock and logger for what follows (a Broker's Start).
func (p *publisher) use(clock clock.Clock, log *slog.Logger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock, p.log = clock, log
}

// channel returns a usable confirm channel, opening one first if needed.
func (p *publisher) channel(ctx context.Context) (*confirmChannel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.ch != nil && p.ch.usable() {
		return p.ch, nil
	}
	if p.ch != nil {
		p.ch.close()
		p.ch = nil
	}
	ch, err := p.open(ctx)
	if err != nil {
		return nil, err
	}
	p.ch = newConfirmChannel(ch, p.clock, p.timeout, p.log)
	if conn := p.conn; conn != nil {
		p.ch.held = func() bool { return p.blocks.isBlocked(conn) }
	}
	return p.ch, nil
}

// openAMQP opens a channel in confirm mode on the publishing connection,
// connecting first when there is none. The caller holds p.mu.
func (p *publisher) openAMQP(ctx context.Context) (publishChannel, error) {
	if p.conn == nil || p.conn.IsClosed() {
		if p.conn != nil {
			_ = p.conn.Close()
		}
		conn, err := p.dial(ctx, rolePublish)
		if err != nil {
			p.conn = nil
			return nil, err
		}
		p.conn = conn
		p.watch(conn)
		if p.dialed {
			p.log.Info("rabbitmq: publishing connection reopened", "url", conn.addr)
		}
		p.dialed = true
	}
	ch, err := p.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: open publishing channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("rabbitmq: enable publisher confirms: %w", err)
	}
	return amqpPublishChannel{ch}, nil
}

// watch logs the loss of conn and drains its close notification, and
// follows whether the broker blocks it.
func (p *publisher) watch(conn *connection) {
	closes := conn.NotifyClose(make(chan *amqp.Error, 1))
	p.drains.Go(func() {
		for e := range closes {
			if e != nil && !p.isClosed() {
				p.logger().Warn("rabbitmq: publishing connection lost; it reopens on the next publish", "url", conn.addr, "err", e)
			}
		}
	})
	p.blocks.watch(conn, rolePublish, &p.drains, p.logger)
}

func (p *publisher) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *publisher) logger() *slog.Logger {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log
}

// publish sends msg to queue and waits for the broker's confirm (see
// confirmChannel.publish).
func (p *publisher) publish(ctx context.Context, queue string, msg amqp.Publishing) error {
	ch, err := p.channel(ctx)
	if err != nil {
		return err
	}
	return ch.publish(ctx, queue, msg)
}

// publishTo sends msg through exchange with routing key key and waits for
// the broker's confirm (see confirmChannel.publishTo).
func (p *publisher) publishTo(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) error {
	ch, err := p.channel(ctx)
	if err != nil {
		return err
	}
	return ch.publishTo(ctx, exchange, key, mandatory, msg)
}

// publishCopy sends a copy and returns once it is sent; done gets the
// outcome from the goroutine that learns it, and must not block. Its
// confirm wait does not time out while the broker blocks the connection
// (see confirmChannel.publishCopy). When it returns an error, done is
// never called.
func (p *publisher) publishCopy(ctx context.Context, queue string, msg amqp.Publishing, done func(error)) error {
	ch, err := p.channel(ctx)
	if err != nil {
		return err
	}
	return ch.publishCopy(ctx, queue, msg, done)
}

// publishAsyncTo is publishAsync with pp as the pending publish, which
// names the route and whose receiver gets the outcome (see
// confirmChannel.publishAsyncTo).
func (p *publisher) publishAsyncTo(ctx context.Context, msg amqp.Publishing, pp *pendingPublish) error {
	ch, err := p.channel(ctx)
	if err != nil {
		return err
	}
	return ch.publishAsyncTo(ctx, msg, pp)
}

// close closes the channel and the connection; publish fails with
// ErrClosed from now on. When ctx ends before the broker answered (it
// reads nothing from a connection it blocks), the connection is dropped
// and close returns an error saying so.
func (p *publisher) close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	ch, conn := p.ch, p.conn
	p.ch, p.conn = nil, nil
	p.mu.Unlock()
	var err error
	if conn != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if ch != nil {
				ch.close()
			}
			_ = conn.Close()
		}()
		why := ""
		if !waitOrAbort(ctx, done, func() { why = blockedBecause(p.blocks); conn.abort() }) {
			err = fmt.Errorf("the publishing connection did not close in time%s, so it was dropped", why)
		}
	} else if ch != nil {
		ch.close()
	}
	p.drains.Wait()
	return err
}

// blockedBecause says, for an error, that the broker blocks a connection
// and why, or nothing.
func blockedBecause(s *blockState) string {
	if reason, blocked := s.blocked(); blocked {
		return " (the broker blocks it: " + reason + ")"
	}
	return ""
}
