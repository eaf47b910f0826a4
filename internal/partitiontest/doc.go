// Package partitiontest holds the partition tests (build tag partitions):
// streamgen's RabbitMQ adapter consuming a quorum queue with retries and
// dead letters on a three-node cluster while the network between the
// nodes is cut, counting by message id what was lost, run twice or
// parked twice, and run with wrong attempt numbers.
//
// make test-partitions runs them on a cluster of RabbitMQ 3.10 and on one
// of 4.3, each node in a network namespace of its own
// (.ci/rabbitmq-partitions). Without such a cluster they fail, saying how
// to run them. docs/partitions.md describes the scenarios and the last
// figures.
package partitiontest
