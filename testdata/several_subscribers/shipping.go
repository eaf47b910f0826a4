package shop

import "context"

//stream:subscriber "shipments" broker=rabbitmq
func Ship(ctx context.Context, s *Shipment) error { return nil }
