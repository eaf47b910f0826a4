// Package events only sends: it has no subscriber, so no Mount.
package events

// Shipped is sent to a topic exchange.
//
//stream:publisher exchange=shipping routing_key=parcel.shipped
type Shipped struct {
	Parcel string `json:"parcel"`
}

// Ping is sent to a ZeroMQ subscription by name.
//
//stream:publisher queue=pings broker=zeromq
type Ping struct{ Seq int }
