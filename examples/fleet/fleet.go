package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/examples/fleet/fleetpb"
	"github.com/streamgen/streamgen/runtime"
)

//go:generate go tool streamgen
//go:generate go tool streamgen -asyncapi asyncapi.yaml

// ErrNoVehicle is why a message that names no vehicle is parked at once.
var ErrNoVehicle = errors.New("the message names no vehicle")

// Reading is what a vehicle's sensor unit reports, in MessagePack: its
// firmware writes a map keyed by the json names.
type Reading struct {
	Vehicle     string    `json:"vehicle"`
	FuelPercent float64   `json:"fuel_percent"`
	At          time.Time `json:"at"`
}

// Alert is what a roadside unit reports, in CBOR.
type Alert struct {
	Vehicle string    `json:"vehicle"`
	Code    string    `json:"code"`
	At      time.Time `json:"at"`
}

// Fleet is what the fleet service knows: where each vehicle is, its fuel,
// its alerts, and the other messages its units sent. Its methods are the
// handlers; Mount takes the Fleet they run on.
type Fleet struct {
	mu        sync.Mutex
	positions map[string]*fleetpb.Position
	fuel      map[string]float64
	alerts    map[string][]string
	other     []string
}

// New returns a Fleet that knows nothing yet.
func New() *Fleet {
	return &Fleet{positions: map[string]*fleetpb.Position{}, fuel: map[string]float64{}, alerts: map[string][]string{}}
}

// Track records where a vehicle is. The tracking service writes
// protobuf, the default of a protocol buffer message; it used to write
// JSON, and Track still reads that (the protobuf JSON mapping), each
// message by its content type.
//
//stream:subscriber "fleet.positions" broker=rabbitmq max_attempts=3 dead_letter=fleet.parked
func (f *Fleet) Track(ctx context.Context, p *fleetpb.Position) error {
	if p.GetVehicle() == "" {
		return runtime.DeadLetter(ErrNoVehicle)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.positions[p.GetVehicle()] = p
	return nil
}

// Refuel records a vehicle's fuel level, which its sensor unit sends in
// MessagePack.
//
//stream:subscriber "fleet.units" codec=msgpack max_attempts=3 dead_letter=fleet.parked
func (f *Fleet) Refuel(ctx context.Context, r Reading) error {
	if r.Vehicle == "" {
		return runtime.DeadLetter(ErrNoVehicle)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fuel[r.Vehicle] = r.FuelPercent
	return nil
}

// Raise records an alert, which a roadside unit sends in CBOR on the same
// queue as the readings: each message is read by its content type.
//
//stream:subscriber "fleet.units" codec=cbor max_attempts=3 dead_letter=fleet.parked
func (f *Fleet) Raise(ctx context.Context, a Alert) error {
	if a.Vehicle == "" {
		return runtime.DeadLetter(ErrNoVehicle)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alerts[a.Vehicle] = append(f.alerts[a.Vehicle], a.Code)
	return nil
}

// Note takes every other message type of fleet.units: a unit's new
// firmware may send types this service does not know yet, which Note
// records instead of their being parked as poison.
//
//stream:subscriber "fleet.units"
func (f *Fleet) Note(ctx context.Context, m runtime.Delivery) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.other = append(f.other, fmt.Sprintf("%s (%s, %d bytes)", m.MessageType, m.ContentType, len(m.Body)))
	return nil
}

// Position returns where vehicle was last seen, or nil.
func (f *Fleet) Position(vehicle string) *fleetpb.Position {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.positions[vehicle]; p != nil {
		return proto.Clone(p).(*fleetpb.Position)
	}
	return nil
}

// Fuel returns the fuel levels, by vehicle.
func (f *Fleet) Fuel() map[string]float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.fuel)
}

// Alerts returns the alert codes of vehicle, in the order they came.
func (f *Fleet) Alerts(vehicle string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.alerts[vehicle])
}

// Other returns the messages Note took: "type (content type, n bytes)".
func (f *Fleet) Other() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.other)
}
