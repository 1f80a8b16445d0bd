"""What the cpp drivers send and how they check what came back (tests/matrix/README.md)."""

import threading
import time

from binding import Spec

# Longest any phase waits for messages, probes or callbacks (the contract's consume deadline).
DEADLINE_S = 60
# Bodies of readiness probes start with this; they are never part of a scenario's expected set.
PROBE_PREFIX = b"probe-"


class Expect:
    """One sent message as a consumer must see it; msg_id None when the send returned none."""

    def __init__(self, spec, msg_id=None):
        self.spec, self.msg_id = spec, msg_id


def standard(topic, scenario, i, tag="TagA"):
    """The contract's default message: body, tag, key and matrix-index property."""
    return Spec(topic, b"matrix-%s-%d" % (scenario.encode(), i), tag, "key-%d" % i, {"matrix-index": str(i)})


def cross(topic, i):
    """The cross-client set every row produces and consumes."""
    return Spec(topic, b"cross-%d" % i, "cross", "cross-key-%d" % i, {"matrix-index": str(i)})


class Collector:
    """Gathers what consumers receive; wakes waiters whenever something arrives."""

    def __init__(self):
        self.cond = threading.Condition()
        self.got = []

    def __call__(self, received):
        with self.cond:
            self.got.append(received)
            self.cond.notify_all()

    def wait_for(self, predicate, deadline):
        """Waits until predicate(list of received) holds or the deadline (time.monotonic) passes."""
        with self.cond:
            while not predicate(self.got):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def messages(self):
        with self.cond:
            return [r for r in self.got if not r.body.startswith(PROBE_PREFIX)]

    def probes(self):
        with self.cond:
            return [r for r in self.got if r.body.startswith(PROBE_PREFIX)]


def bodies_seen(expected):
    """A predicate: every expected body has arrived at least once."""
    want = set(expected)
    return lambda got: want <= {r.body for r in got}


def compare(expected, received, check_ids=True):
    """Problems with `received` against {body: Expect}: missing, duplicated, unexpected, altered."""
    problems = []
    counts = {}
    for r in received:
        counts[r.body] = counts.get(r.body, 0) + 1
        e = expected.get(r.body)
        if e is None:
            problems.append("unexpected body %r" % r.body[:40])
            continue
        s = e.spec
        if r.tag != s.tag:
            problems.append("%r: tag %r != %r" % (r.body[:40], r.tag, s.tag))
        if r.keys != s.keys:
            problems.append("%r: keys %r != %r" % (r.body[:40], r.keys, s.keys))
        for k, v in s.props.items():
            if r.props.get(k) != v:
                problems.append("%r: property %s=%r != %r" % (r.body[:40], k, r.props.get(k), v))
        if check_ids and e.msg_id is not None and r.id != e.msg_id:
            problems.append("%r: msgId %s != sent %s" % (r.body[:40], r.id, e.msg_id))
    for body in expected:
        n = counts.get(body, 0)
        if n != 1:
            problems.append("%r received %d times" % (body[:40], n))
    return problems


def summary(problems, limit=4):
    more = "" if len(problems) <= limit else " (+%d more)" % (len(problems) - limit)
    return "; ".join(problems[:limit]) + more
