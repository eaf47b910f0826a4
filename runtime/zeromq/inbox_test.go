package zeromq

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// An Outlet's envelopes reach an Inbox in order; an envelope that cannot
// be framed is not sent, and an address without a transport is refused.
func TestInboxReceivesWhatAnOutletSends(t *testing.T) {
	testkit.NoLeaks(t)
	got := make(chan string, 100)
	in, err := listenInbox("tcp://127.0.0.1:0", func(_ context.Context, frames [][]byte) bool {
		env, err := ParseEnvelope(frames)
		if err != nil {
			got <- "malformed"
			return true
		}
		id, _ := env.Header(HeaderMessageID)
		got <- env.Subscription + " " + id + " " + string(env.Body)
		return true
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := dialOutlet(in.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	defer func() { _ = out.Close(ctx) }()
	for i := range 50 {
		env := &Envelope{Subscription: "jobs.dead", Body: fmt.Appendf(nil, "%d", i), Headers: []Header{{Name: HeaderMessageID, Value: fmt.Sprint("m-", i)}}}
		if err := out.Send(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if g, want := <-got, fmt.Sprintf("jobs.dead m-%d %d", i, i); g != want {
			t.Fatalf("message %d arrived as %q, want %q", i, g, want)
		}
	}
	if err := out.Send(ctx, &Envelope{}); err == nil {
		t.Fatal("an envelope without a subscription was sent")
	}
	if _, err := listenInbox("nowhere", nil, nil); err == nil {
		t.Fatal("Listen took an address without a transport")
	}
}
