"""A libzmq peer (pyzmq) that speaks streamgen's ZeroMQ framing.

It follows runtime/zeromq/doc.go: frame 0 the subscription name (UTF-8),
frame 1 the headers as "name: value" lines joined by "\n", frame 2 the body.

Usage: peer.py '<json plan>'. The plan names endpoints:
  "bind":   {"label": "tcp://..."}   PULL sockets to bind (queues read here)
  "dial":   {"label": "tcp://..."}   PULL sockets that dial a ventilator
  "send_to": "tcp://..."             where a PUSH socket sends "messages"
  "messages": [[name, headers, body], ...]
  "expect": {"label": n}             messages to read from each PULL
  "expect_total": n                  messages to read from all PULLs together
  "idle_exit": seconds               after the first message, give up once no
                                     message came for this long (exit status 0;
                                     the counts tell what came)
  "summary": true                    print only the counts, not each message
It prints "ready" once every socket is set up, then one JSON line per
message read: {"socket": label, "frames": [name, headers, body]}, or with
"summary" one line at the end: {"counts": {label: n}}.
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
    total = plan.get("expect_total", 0)
    idle = plan.get("idle_exit")
    summary = plan.get("summary", False)
    counts = {label: 0 for label in labels.values()}
    deadline = time.monotonic() + 25
    last = None  # when the last message came
    while any(n > 0 for n in want.values()) or sum(counts.values()) < total:
        now = time.monotonic()
        if idle is not None and last is not None and now - last >= idle:
            break
        left = deadline - now
        if left <= 0:
            print("timed out; still expected: %s, %d of %d in all" % (want, sum(counts.values()), total), file=sys.stderr)
            sys.exit(1)
        if idle is not None and last is not None:
            left = min(left, idle - (now - last))
        for s, _ in poller.poll(max(1, int(left * 1000))):
            frames = s.recv_multipart()
            last = time.monotonic()
            label = labels[s]
            want[label] = want.get(label, 0) - 1
            counts[label] += 1
            if not summary:
                print(json.dumps({"socket": label, "frames": [f.decode("utf-8") for f in frames]}), flush=True)
    if summary:
        print(json.dumps({"counts": counts}), flush=True)
    ctx.destroy(linger=10000)


if __name__ == "__main__":
    main()
