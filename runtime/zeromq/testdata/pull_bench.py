"""The pyzmq (libzmq) side of BenchmarkSubscribe: a plain PULL loop.

Usage: pull_bench.py <endpoint> <messages per round>. It binds a PULL socket
at the endpoint and prints "ready". Then, for each line "go" read from
stdin, it receives that many messages, checks that each has three frames
and decodes frame 2 as JSON, as the Go baseline does, and prints one line:
the CPU time this process (libzmq's threads included) spent on the round,
in nanoseconds. It exits when stdin closes.
"""

import json
import sys
import time

import zmq


def main():
    endpoint, n = sys.argv[1], int(sys.argv[2])
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.setsockopt(zmq.LINGER, 0)
    pull.bind(endpoint)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            sys.exit("pull_bench.py: unexpected command %r" % line)
        cpu = time.process_time_ns()
        for _ in range(n):
            frames = pull.recv_multipart()
            if len(frames) != 3:
                sys.exit("pull_bench.py: %d frames, want 3" % len(frames))
            json.loads(frames[2])
        print(time.process_time_ns() - cpu, flush=True)
    pull.close()
    ctx.term()


if __name__ == "__main__":
    main()
