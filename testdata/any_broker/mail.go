// Package mail names no broker: it runs on whichever it is mounted on.
package mail

import "context"

// Mail is sent to someone.
type Mail struct {
	To, Subject string
}

//stream:subscriber "mail" dead_letter=mail.dead concurrency=8
func Send(ctx context.Context, m Mail) error { return nil }
