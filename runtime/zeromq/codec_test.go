package zeromq_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// jobText is a codec that is not JSON: a Job is "job <id>".
type jobText struct{}

func (jobText) ContentType() string { return "text/x-job" }

func (jobText) Encode(v any) ([]byte, error) {
	j, ok := v.(Job)
	if !ok {
		return nil, fmt.Errorf("jobText encodes a Job, not %T", v)
	}
	return []byte("job " + strconv.Itoa(j.ID)), nil
}

func (jobText) Decode(body []byte, v any) error {
	j, ok := v.(*Job)
	id, found := strings.CutPrefix(string(body), "job ")
	if !ok || !found {
		return errors.New("jobText: not a job")
	}
	n, err := strconv.Atoi(id)
	j.ID = n
	return err
}

// TestPublishEncodesWithTheAppCodec: runtime.Publish through a started
// Broker encodes with the App's codec, the one its subscriptions decode
// with, and says so in the content-type header.
func TestPublishEncodesWithTheAppCodec(t *testing.T) {
	testkit.NoLeaks(t)
	rec := newRecorder()
	app := runtime.NewApp("codec", runtime.WithCodec(jobText{}))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))))
	var contentType string
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("job", runtime.Policy{}, func(_ context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			contentType, _ = md.Raw.(*zeromq.Envelope).Header(zeromq.HeaderContentType)
			rec.add(fmt.Sprint(j.ID), md)
			return runtime.Ack()
		})}})
	streamtest.RunApp(t, app)
	if c := zq.Codec(); c != (jobText{}) {
		t.Fatalf("Codec() = %T once started, want the App's", c)
	}
	publishJob(t, zq, "jobs", Job{ID: 7})
	if got := rec.waitFor(t, "jobs", 1); got[0].Body != "7" {
		t.Fatalf("handled %+v, want job 7", got)
	}
	if contentType != "text/x-job" {
		t.Errorf("content-type %q, want the codec's", contentType)
	}
}

// TestWithCodecSetsThePublishCodec: a Broker used only to publish encodes
// with WithCodec's codec, JSON without it; WithCodec wins over the App's.
func TestWithCodecSetsThePublishCodec(t *testing.T) {
	testkit.NoLeaks(t)
	plain := zeromq.New()
	defer shutdown(t, plain)
	if c := plain.Codec(); c != (runtime.JSON{}) {
		t.Errorf("Codec() without WithCodec = %T, want runtime.JSON", c)
	}
	text := zeromq.New(zeromq.WithCodec(jobText{}))
	defer shutdown(t, text)
	if c := text.Codec(); c != (jobText{}) {
		t.Errorf("Codec() with WithCodec = %T, want jobText", c)
	}

	app := runtime.NewApp("codec")
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))), zeromq.WithCodec(jobText{}))
	rec := newRecorder()
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)
	if c := zq.Codec(); c != (jobText{}) {
		t.Errorf("Codec() with WithCodec on an App using JSON = %T, want jobText", c)
	}
}
