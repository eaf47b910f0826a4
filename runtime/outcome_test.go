package runtime_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

var errBoom = errors.New("boom")

func TestOutcomeConstructors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      runtime.Outcome
		action runtime.Action
		delay  time.Duration
		err    error
		text   string
	}{
		{"zero value", runtime.Outcome{}, runtime.ActionAck, 0, nil, "ack"},
		{"Ack", runtime.Ack(), runtime.ActionAck, 0, nil, "ack"},
		{"Retry", runtime.Retry(), runtime.ActionRetry, 0, nil, "retry"},
		{"Retry.After", runtime.Retry().After(30 * time.Second), runtime.ActionRetry, 30 * time.Second, nil, "retry after 30s"},
		{"Retry.After.Because", runtime.Retry().After(time.Second).Because(errBoom), runtime.ActionRetry, time.Second, errBoom, "retry after 1s: boom"},
		{"Retry.After(0)", runtime.Retry().After(0), runtime.ActionRetry, 0, nil, "retry"},
		{"Retry.After(negative)", runtime.Retry().After(-time.Second), runtime.ActionRetry, 0, nil, "retry"},
		{"After only changes a retry", runtime.Ack().After(time.Second), runtime.ActionAck, 0, nil, "ack"},
		{"DeadLetterNow", runtime.DeadLetterNow(), runtime.ActionDeadLetter, 0, nil, "dead-letter"},
		{"DeadLetterNow.After", runtime.DeadLetterNow().After(time.Second), runtime.ActionDeadLetter, 0, nil, "dead-letter"},
		{"DropNow.Because", runtime.DropNow().Because(errBoom), runtime.ActionDrop, 0, errBoom, "drop: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Action() != tc.action || tc.o.Delay() != tc.delay || tc.o.Err() != tc.err {
				t.Errorf("got action %v, delay %v, err %v; want %v, %v, %v", tc.o.Action(), tc.o.Delay(), tc.o.Err(), tc.action, tc.delay, tc.err)
			}
			if s := tc.o.String(); s != tc.text {
				t.Errorf("String() = %q, want %q", s, tc.text)
			}
		})
	}
}

func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		action runtime.Action
		delay  time.Duration
		text   string // Err().Error(), "" when nil
	}{
		{"nil acks", nil, runtime.ActionAck, 0, ""},
		{"a plain error retries", errBoom, runtime.ActionRetry, 0, "boom"},
		{"a wrapped plain error retries", fmt.Errorf("charge: %w", errBoom), runtime.ActionRetry, 0, "charge: boom"},
		{"RetryAfter", runtime.RetryAfter(time.Minute, errBoom), runtime.ActionRetry, time.Minute, "boom"},
		{"RetryAfter wrapped", fmt.Errorf("job 7: %w", runtime.RetryAfter(time.Minute, errBoom)), runtime.ActionRetry, time.Minute, "job 7: boom"},
		{"DeadLetter", runtime.DeadLetter(errBoom), runtime.ActionDeadLetter, 0, "boom"},
		{"DeadLetter wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", runtime.DeadLetter(errBoom))), runtime.ActionDeadLetter, 0, "a: b: boom"},
		{"Drop", runtime.Drop(errBoom), runtime.ActionDrop, 0, "boom"},
		{"Drop wrapped", fmt.Errorf("x: %w", runtime.Drop(errBoom)), runtime.ActionDrop, 0, "x: boom"},
		{"Drop joined", errors.Join(errors.New("first"), runtime.Drop(errBoom)), runtime.ActionDrop, 0, "first\nboom"},
		{"DeadLetter of nil", runtime.DeadLetter(nil), runtime.ActionDeadLetter, 0, "dead-letter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runtime.OutcomeOf(tc.err)
			if o.Action() != tc.action || o.Delay() != tc.delay {
				t.Errorf("OutcomeOf = %v (delay %v), want %v (delay %v)", o.Action(), o.Delay(), tc.action, tc.delay)
			}
			got := ""
			if o.Err() != nil {
				got = o.Err().Error()
			}
			if got != tc.text {
				t.Errorf("Err() = %q, want %q", got, tc.text)
			}
			// The outcome's reason is the error the handler returned, so
			// errors.Is still finds what it wraps.
			if tc.err != nil && !errors.Is(o.Err(), tc.err) {
				t.Errorf("Err() %v does not wrap the handler's error", o.Err())
			}
		})
	}
}

// An Action reads as the word logs and metrics have always shown, in
// text and in encodings.
func TestActionWords(t *testing.T) {
	for a, want := range map[runtime.Action]string{
		runtime.ActionAck: "ack", runtime.ActionRetry: "retry", runtime.ActionDeadLetter: "dead-letter", runtime.ActionDrop: "drop", 9: "Action(9)",
	} {
		text, err := a.MarshalText()
		if a.String() != want || string(text) != want || err != nil || fmt.Sprint(a) != want {
			t.Errorf("Action %d: String %q, MarshalText %q %v, Sprint %q; want %q", uint8(a), a.String(), text, err, fmt.Sprint(a), want)
		}
	}
	b, err := json.Marshal(map[string]runtime.Action{"outcome": runtime.ActionDeadLetter})
	if err != nil || string(b) != `{"outcome":"dead-letter"}` {
		t.Errorf("JSON %s %v, want the word", b, err)
	}
}

// The helpers' errors keep the error they wrap reachable.
func TestOutcomeErrorsUnwrap(t *testing.T) {
	for name, err := range map[string]error{
		"RetryAfter": runtime.RetryAfter(time.Second, errBoom),
		"DeadLetter": runtime.DeadLetter(errBoom),
		"Drop":       runtime.Drop(errBoom),
	} {
		if !errors.Is(err, errBoom) {
			t.Errorf("errors.Is(%s(errBoom), errBoom) = false", name)
		}
		if err.Error() != "boom" {
			t.Errorf("%s(errBoom).Error() = %q, want boom", name, err.Error())
		}
	}
}
