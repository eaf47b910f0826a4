"""A libzmq peer (pyzmq) that speaks streamgen's ZeroMQ framing.

It follows runtime/zeromq/doc.go: frame 0 the subscription name (UTF-8),
frame 1 the headers as "name: value" lines joined by "\n", frame 2 the body.

Usage: peer.py '<json plan>'. The plan names endpoints:
  "bind":   {"label": "tcp://..."}   PULL sockets to bind (queues read here)
  "dial":   {"label": "tcp://..."}   PULL sockets that dial a ventilator
  "send_to": "tcp://..."             where a PUSH socket sends "messages"
  "messages": [[name, headers, body], ...]
  "expect": {"label": n}             messages to read from each PULL
It prints "ready" once every socket is set up, then one JSON line per
message read: {"socket": label, "frames": [name, headers, body]}.
"""

import json
import sys
import time

import zmq


def main():
    plan = json.loads(sys.argv[1])
    ctx = zmq.Context()
    labels = {}
    poller = zmq.Poller()
    for label, ep in plan.get("bind", {}).items():
        s = ctx.socket(zmq.PULL)
        s.bind(ep)
        labels[s] = label
        poller.register(s, zmq.POLLIN)
    for label, ep in plan.get("dial", {}).items():
        s = ctx.socket(zmq.PULL)
        s.connect(ep)
        labels[s] = label
        poller.register(s, zmq.POLLIN)
    print("ready", flush=True)

    if plan.get("send_to"):
        push = ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 10000)
        push.connect(plan["send_to"])
        for name, headers, body in plan["messages"]:
            push.send_multipart([name.encode(), headers.encode(), body.encode()])

    want = dict(plan.get("expect", {}))
    deadline = time.monotonic() + 25
    while any(n > 0 for n in want.values()):
        left = deadline - time.monotonic()
        if left <= 0:
            print("timed out; still expected: %s" % want, file=sys.stderr)
            sys.exit(1)
        for s, _ in poller.poll(int(left * 1000)):
            frames = s.recv_multipart()
            label = labels[s]
            want[label] = want.get(label, 0) - 1
            print(json.dumps({"socket": label, "frames": [f.decode("utf-8") for f in frames]}), flush=True)
    ctx.destroy(linger=10000)


if __name__ == "__main__":
    main()
