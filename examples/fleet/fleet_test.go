package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/streamgen/streamgen/examples/fleet"
	"github.com/streamgen/streamgen/examples/fleet/fleetpb"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// at is when the messages of the tests were made.
var at = time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)

// send publishes the tests' messages with p: each codec through its
// generated publisher, a position in JSON as the tracking service sent
// it before protobuf, a message type the units' new firmware sends, and
// poison of each kind.
func send(t *testing.T, ctx context.Context, p runtime.Publisher) {
	t.Helper()
	position := &fleetpb.Position{Vehicle: "truck-1", Lat: 52.52, Lon: 13.405, At: timestamppb.New(at)}
	steps := []error{
		fleet.PublishPosition(ctx, p, position, runtime.WithMessageID("pos-1")),
		runtime.PublishWith(ctx, p, runtime.JSON{}, runtime.Queue("fleet.positions"), "Position",
			&fleetpb.Position{Vehicle: "van-2", Lat: 48.85, Lon: 2.35, At: timestamppb.New(at)}, runtime.WithMessageID("pos-2")),
		fleet.PublishReading(ctx, p, fleet.Reading{Vehicle: "truck-1", FuelPercent: 62.5, At: at}, runtime.WithMessageID("fuel-1")),
		fleet.PublishAlert(ctx, p, fleet.Alert{Vehicle: "truck-1", Code: "TYRE", At: at}, runtime.WithMessageID("alert-1")),
		runtime.PublishWith(ctx, p, runtime.CBOR{}, runtime.Queue("fleet.units"), "Diagnostics", map[string]int{"temp": 71}, runtime.WithMessageID("diag-1")),
		p.Publish(ctx, "fleet.units", runtime.Message{ID: "fuel-bad", Type: "Reading", ContentType: "application/msgpack", Body: []byte{0x81, 0xa7}}),
		p.Publish(ctx, "fleet.positions", runtime.Message{ID: "pos-xml", Type: "Position", ContentType: "application/xml", Body: []byte("<position/>")}),
		fleet.PublishPosition(ctx, p, &fleetpb.Position{Lat: 1}, runtime.WithMessageID("pos-nobody")),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
}

// check compares what the Fleet learnt with what send sent.
func check(t *testing.T, f *fleet.Fleet) {
	t.Helper()
	if got := f.Position("truck-1"); !proto.Equal(got, &fleetpb.Position{Vehicle: "truck-1", Lat: 52.52, Lon: 13.405, At: timestamppb.New(at)}) {
		t.Errorf("truck-1 is at %v, want the protobuf position", got)
	}
	if got := f.Position("van-2"); got.GetLat() != 48.85 || !got.GetAt().AsTime().Equal(at) {
		t.Errorf("van-2 is at %v, want the JSON position", got)
	}
	if got := f.Fuel(); len(got) != 1 || got["truck-1"] != 62.5 {
		t.Errorf("fuel %v, want truck-1 at 62.5 (MessagePack)", got)
	}
	if got := f.Alerts("truck-1"); len(got) != 1 || got[0] != "TYRE" {
		t.Errorf("alerts %v, want TYRE (CBOR)", got)
	}
	if got := f.Other(); len(got) != 1 || got[0] != "Diagnostics (application/cbor, 8 bytes)" {
		t.Errorf("Note took %v, want the diagnostics", got)
	}
}

// The generated Mount and publishers on the in-process broker: each
// codec reaches its handler, the handler of every message type takes the
// diagnostics, and the poison is parked with its reason.
func TestFleetOnTheHarness(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	f := fleet.New()
	fleet.Mount(h.App(), h.Broker(), f)
	h.Start()
	send(t, t.Context(), h.Broker())
	h.Wait()
	check(t, f)

	reasons := map[string]string{}
	for _, m := range h.Queue("fleet.parked") {
		reasons[m.ID] = m.Headers[runtime.HeaderDeadLetterReason]
	}
	checkParked(t, reasons)
}

// checkParked compares the reasons of the parked messages, by message id,
// with the poison send sent.
func checkParked(t *testing.T, reasons map[string]string) {
	t.Helper()
	for id, want := range map[string]string{
		"fuel-bad":   "body does not decode into Reading: runtime: decode: msgpack: ",
		"pos-xml":    `content type "application/xml" cannot be read by the codecs of message type "Position", which read application/protobuf or application/json`,
		"pos-nobody": "dead-lettered by the handler: " + fleet.ErrNoVehicle.Error(),
	} {
		if !strings.HasPrefix(reasons[id], want) {
			t.Errorf("%s parked with %q, want %q", id, reasons[id], want)
		}
	}
	if len(reasons) != 3 {
		t.Errorf("parked %v, want the 3 poison messages", reasons)
	}
}
