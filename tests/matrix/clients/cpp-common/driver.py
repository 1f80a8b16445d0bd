"""Driver of the cpp-0.4.4 and cpp-2.x matrix rows: runs one phase (tests/matrix/README.md).

Called by each row's `driver` script with that row's venv (and, for 2.x, LD_LIBRARY_PATH).
Prints one `RESULT PASS|FAIL|NA ...` line, stops every client it started first, and exits
without running the bindings' finalizers (they shut clients down again at interpreter exit).
"""

import json
import os
import subprocess
import sys
import threading
import time

# The C++ client keeps broadcasting offsets under ~/.rocketmq_offsets and 1.x its logs under
# ~/logs: per phase, not per user. The 2.x build logs to $ROCKETMQ_CLIENT_LOG_DIR (else /logs).
os.environ["HOME"] = os.path.join(os.environ.get("MATRIX_STATE", "."), "home")
os.environ["ROCKETMQ_CLIENT_LOG_DIR"] = os.path.join(os.environ.get("MATRIX_STATE", "."), "cpp-logs")

import binding  # noqa: E402  (HOME must be set before the library loads)
from checks import (  # noqa: E402
    DEADLINE_S, Collector, Expect, bodies_seen, compare, cross, standard, summary,
)

NAMESRV = os.environ.get("MATRIX_NAMESRV", "127.0.0.1:9876")
TOPIC = os.environ.get("MATRIX_TOPIC", "")
GROUP = os.environ.get("MATRIX_GROUP", "")
GROUP2 = os.environ.get("MATRIX_GROUP2", GROUP + "-2")
BROKER_NAME = os.environ.get("MATRIX_BROKER_NAME", "broker-a")
STATE = os.environ.get("MATRIX_STATE", ".")
COUNT = int(os.environ.get("MATRIX_COUNT", "16"))
QUEUES = 4
# Order keys of the orderly scenario and messages per key.
ORDER_KEYS = 10
PER_KEY = 5
# The cross-client set (README: 8 sync sends).
CROSS_COUNT = 8
# Readiness probes: one every PROBE_PAUSE_S until the consumers report what the probe asks for.
PROBE_PAUSE_S = 0.2
# Pull batch size of the lite-pull scenario.
PULL_BATCH = 32
# A body over the client's compression threshold (default 4 KiB) and the largest the contract asks.
KIB10 = 10 * 1024
MIB1 = 1024 * 1024
# Threshold above every body here: the producer that must not compress.
NEVER_COMPRESS = 64 * 1024 * 1024

ctx = binding.Context(NAMESRV, STATE)


class Na(Exception):
    """The client has no API for the scenario."""


class Fail(Exception):
    pass


def require(ok, text):
    if not ok:
        raise Fail(text)


def deadline():
    return time.monotonic() + DEADLINE_S


def consume(expected, topic=TOPIC, group=GROUP, expression="*", prop_names=("matrix-index",), check_ids=True,
            orderly=False):
    """Push-consumes until every expected body arrived (bounded); returns the collector."""
    col = Collector()
    c = ctx.push_consumer(group, topic, expression, col, prop_names=prop_names, orderly=orderly)
    arrived = col.wait_for(bodies_seen(expected), deadline())
    ctx.stop(c)
    problems = compare(expected, col.messages(), check_ids)
    require(arrived and not problems, summary(problems) or "not all arrived")
    return col


def send_standard(scenario, n=COUNT, topic=TOPIC):
    p = ctx.producer("PG-" + GROUP)
    expected = {}
    for i in range(n):
        s = standard(topic, scenario, i)
        msg_id, offset = p.send_sync(s)
        require(offset >= 0, "send %d: offset %d" % (i, offset))
        expected[s.body] = Expect(s, msg_id)
    ctx.stop(p.p)
    return expected


def probe_until(producer, col, predicate, topic=TOPIC):
    """Sends probes round-robin over the queues until predicate(collector) holds (bounded)."""
    end = deadline()
    n = 0
    while not predicate(col):
        require(time.monotonic() < end, "consumers not ready after %d probes" % n)
        producer.send_to_queue(binding.Spec(topic, b"probe-%d" % n, "probe", "probe-%d" % n, {}), n % QUEUES)
        n += 1
        col.wait_for(lambda _got: predicate(col), time.monotonic() + PROBE_PAUSE_S)
    return n


def queues_probed(col, name):
    return {r.queue_id for r in col.probes() if r.consumer == name}


# --- scenarios -----------------------------------------------------------------------------


def route():
    pc = ctx.pull_consumer(GROUP)
    qs = pc.queues(TOPIC)
    require(sorted(q[2] for q in qs) == list(range(QUEUES)), "queues %r" % qs)
    require(all(q[1] == BROKER_NAME and q[0] == TOPIC for q in qs), "queues %r" % qs)
    return "4 queues of %s on %s via FetchSubscriptionMessageQueues" % (TOPIC, BROKER_NAME)


def send_sync():
    expected = send_standard("send-sync")
    consume(expected)
    return "%d sync sends SEND_OK with msgId and offset, each consumed once intact" % COUNT


def send_async():
    p = ctx.producer("PG-" + GROUP)
    done = threading.Condition()
    results, errors = {}, []

    def ok(i, msg_id, _offset):
        with done:
            results[i] = msg_id
            done.notify_all()

    def err(text):
        with done:
            errors.append(text)
            done.notify_all()

    specs = [standard(TOPIC, "send-async", i) for i in range(COUNT)]
    for i, s in enumerate(specs):
        p.send_async(s, lambda mid, off, i=i: ok(i, mid, off), err)
    end = deadline()
    with done:
        while len(results) + len(errors) < COUNT and time.monotonic() < end:
            done.wait(end - time.monotonic())
    require(not errors and len(results) == COUNT, "callbacks: %d ok, errors %r" % (len(results), errors[:3]))
    require(all(results.values()), "a success callback without msgId")
    consume({s.body: Expect(s, results[i]) for i, s in enumerate(specs)})
    return "%d async sends, all success callbacks with msgId, each consumed once intact" % COUNT


def send_oneway():
    p = ctx.producer("PG-" + GROUP)
    specs = [standard(TOPIC, "send-oneway", i) for i in range(COUNT)]
    for s in specs:
        p.send_oneway(s)
    consume({s.body: Expect(s) for s in specs})
    return "%d oneway sends all consumed once intact" % COUNT


def send_batch():
    p = ctx.producer("PG-" + GROUP)
    specs = [standard(TOPIC, "send-batch", i) for i in range(COUNT)]
    msg_id, _offset = p.send_batch(specs)
    ids = msg_id.split(",") if msg_id else []
    expected = {s.body: Expect(s, ids[i] if len(ids) == COUNT else None) for i, s in enumerate(specs)}
    col = consume(expected)
    require(len({r.id for r in col.messages() if r.id}) == COUNT, "consumed msgIds not distinct")
    return "one batch of %d (SendBatchMessage) SEND_OK, consumed once each intact with distinct msgIds; %s" % (
        COUNT, "send msgIds match" if len(ids) == COUNT else "the send returned msgId %r" % msg_id)


def filler(n, seed):
    """n printable bytes (the C API reads bodies as NUL-terminated strings)."""
    alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return bytes(alphabet[(i * 31 + seed * 7 + i // 61) % len(alphabet)] for i in range(n))


def message_props():
    names = ("matrix-index", "matrix-color", "matrix-size")
    plan = [(0, 16, False), (1, KIB10, False), (2, KIB10, True), (3, MIB1, False), (4, MIB1, True)]
    compressing = ctx.producer("PG-" + GROUP)
    plain = ctx.producer("PG2-" + GROUP, compress_over=NEVER_COMPRESS)
    expected = {}
    for i, size, compress in plan:
        props = {"matrix-index": str(i), "matrix-color": "blue-%d" % i, "matrix-size": str(size)}
        s = binding.Spec(TOPIC, filler(size, i), "TagA", "key-%d key-%d-b" % (i, i), props)
        msg_id, _ = (compressing if compress else plain).send_sync(s)
        expected[s.body] = Expect(s, msg_id)
    col = consume(expected, prop_names=names)
    # The filler compresses well: a record smaller than its body was stored compressed.
    stored = {r.body: r.store_size < len(r.body) for r in col.messages()}
    wrong = [(size, compress) for i, size, compress in plan if size > KIB10 // 2 and
             stored[filler(size, i)] != compress]
    require(not wrong, "stored compressed or not against the producer's setting: %r" % wrong)
    return ("two keys, tag, 3 properties; bodies 16 B, 10 KiB and 1 MiB, plain and compressed (stored smaller "
            "than the body): byte-identical")


def push_tag():
    p = ctx.producer("PG-" + GROUP)
    expected = {}
    for i in range(COUNT):
        for tag in ("TagA", "TagB", "TagC"):
            s = standard(TOPIC, "push-tag-" + tag, i, tag)
            msg_id, _ = p.send_sync(s)
            if tag != "TagC":
                expected[s.body] = Expect(s, msg_id)
    consume(expected, expression="TagA || TagB")
    return "subscription 'TagA || TagB': %d TagA/TagB once each, no TagC" % len(expected)


def broadcast():
    col = Collector()
    for name in ("b1", "b2"):
        ctx.push_consumer(GROUP, TOPIC, "*", col, broadcast=True, name=name)
    p = ctx.producer("PG-" + GROUP)
    # A new broadcasting consumer starts at the queue's end (local offset store): wait until both
    # pull every queue before the real sends.
    probe_until(p, col, lambda _c: all(len(queues_probed(col, n)) == QUEUES for n in ("b1", "b2")))
    specs = [standard(TOPIC, "broadcast", i) for i in range(COUNT)]
    expected = {s.body: Expect(s, p.send_sync(s)[0]) for s in specs}

    def each_has_all(_got):
        return all(set(expected) <= {r.body for r in col.messages() if r.consumer == n} for n in ("b1", "b2"))

    arrived = col.wait_for(each_has_all, deadline())
    ctx.stop_all()
    for n in ("b1", "b2"):
        problems = compare(expected, [r for r in col.messages() if r.consumer == n])
        require(arrived and not problems, "%s: %s" % (n, summary(problems) or "not all arrived"))
    return "two BROADCASTING consumers each got all %d once, intact" % COUNT


def sql92():
    raise Na("the C API has no SQL92 selector: CPushConsumer.h's Subscribe(consumer, topic, expression) "
             "takes a tag expression only (no expression type, no MessageSelector)")


def consume_from():
    raise Na("the C API has no consume-from setting (no SetPushConsumerConsumeFromWhere in CPushConsumer.h); "
             "every scenario runs its default, CONSUME_FROM_LAST_OFFSET")


def sub_consume(expected_bodies, tag):
    """Runs a consumer of GROUP in a new process until it has the expected bodies; its received list."""
    out = os.path.join(STATE, "%s.json" % tag)
    with open(out + ".want", "w") as f:
        json.dump([b.decode() for b in expected_bodies], f)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "_consume", out],
                          timeout=DEADLINE_S + 2 * binding.SHUTDOWN_TIMEOUT_S, stdout=subprocess.PIPE, text=True)
    require(proc.returncode == 0, "%s process: %s" % (tag, proc.stdout.strip()[-300:]))
    with open(out) as f:
        return [b.encode() for b in json.load(f)]


def _consume(out):
    """Hidden phase of sub_consume: consume GROUP until the wanted bodies arrived, stop, record."""
    with open(out + ".want") as f:
        want = [b.encode() for b in json.load(f)]
    col = Collector()
    c = ctx.push_consumer(GROUP, TOPIC, "*", col)
    col.wait_for(bodies_seen(want), deadline())
    ctx.stop(c)
    with open(out, "w") as f:
        json.dump([r.body.decode() for r in col.messages()], f)
    return "consumed %d" % len(col.messages())


def exactly(got, want, what):
    problems = [b.decode() for b in set(got) - set(want)][:3]
    dups = len(got) - len(set(got))
    require(set(got) >= set(want) and not problems and not dups,
            "%s: %d of %d, unexpected %r, %d duplicates" % (what, len(set(got) & set(want)), len(want), problems, dups))


def offsets_consumer_restart():
    first = send_standard("offsets-consumer-restart")
    got = sub_consume(list(first), "first")
    exactly(got, list(first), "first process")
    p = ctx.producer("PG-" + GROUP)
    rest = []
    for i in range(COUNT, 2 * COUNT):
        s = standard(TOPIC, "offsets-consumer-restart", i)
        p.send_sync(s)
        rest.append(s.body)
    got = sub_consume(rest, "second")
    exactly(got, rest, "second process")
    return "process 1 consumed %d and committed at shutdown; process 2 of the group got exactly the %d sent after" % (
        COUNT, COUNT)


def offsets_broker_restart_1():
    first = send_standard("offsets-broker-restart")
    consume(first)
    p = ctx.producer("PG-" + GROUP)
    second = {}
    for i in range(COUNT, 2 * COUNT):
        s = standard(TOPIC, "offsets-broker-restart", i)
        second[s.body.decode()] = p.send_sync(s)[0]
    with open(os.path.join(STATE, "broker-restart.json"), "w") as f:
        json.dump({"first": {b.decode(): e.msg_id for b, e in first.items()}, "second": second}, f)
    return "sent %d, consumed and committed the first %d" % (2 * COUNT, COUNT)


def offsets_broker_restart_2():
    with open(os.path.join(STATE, "broker-restart.json")) as f:
        sent = json.load(f)
    col = Collector()
    second = [b.encode() for b in sent["second"]]
    c = ctx.push_consumer(GROUP, TOPIC, "*", col)
    col.wait_for(bodies_seen(second), deadline())
    ctx.stop(c)
    exactly([r.body for r in col.messages()], second, "after restart")
    # No query API in the C client: the stand-in for "found by msgId" is reading every queue.
    ids = set(sent["first"].values()) | set(sent["second"].values())
    pull_all(ctx.pull_consumer(GROUP2), lambda got: ids <= {r.id for r in got})
    return "after the restart the group got exactly the other %d; all %d msgIds still in the queues" % (
        COUNT, 2 * COUNT)


def pull_all(pc, done, topic=TOPIC):
    """Pulls every queue of the topic from offset 0 on until done(messages) holds (bounded).

    A message just sent may not be pullable yet and the C Pull does not wait for one, so an
    empty round is followed by a short pause before the next.
    """
    queues = pc.queues(topic)
    offsets = {q: 0 for q in queues}
    out, statuses = [], []
    end = deadline()
    while not done(out):
        require(time.monotonic() < end, "pulled %d; last statuses %r" % (len(out), statuses[-len(queues):]))
        found = 0
        for q in queues:
            status, nxt, msgs = pc.pull(q, "*", offsets[q], PULL_BATCH)
            statuses.append(status)
            out.extend(msgs)
            found += len(msgs)
            if status != binding.PULL_BROKER_TIMEOUT:
                offsets[q] = nxt
        if not found:
            threading.Event().wait(PROBE_PAUSE_S)
    return out


def rebalance():
    col = Collector()
    c1 = ctx.push_consumer(GROUP, TOPIC, "*", col, name="r1")
    c2 = ctx.push_consumer(GROUP, TOPIC, "*", col, name="r2")
    p = ctx.producer("PG-" + GROUP)
    split = stable_owners(p, col)
    require(set(split.values()) == {"r1", "r2"}, "queues not split: %r" % split)
    specs = [standard(TOPIC, "rebalance", i) for i in range(COUNT)]
    expected = {s.body: Expect(s, p.send_sync(s)[0]) for s in specs}
    col.wait_for(bodies_seen(expected), deadline())
    problems = compare(expected, col.messages())
    require(not problems, "two consumers: " + summary(problems))
    # r1, the first to start, leaves: 2.x never pulls again a queue it dropped and gets back
    # (README.md), and r1 dropped half of its queues when r2 joined.
    ctx.stop(c1)
    owners = stable_owners(p, col)
    require(set(owners.values()) == {"r2"}, "after r1 left: %r" % owners)
    later = [standard(TOPIC, "rebalance", i) for i in range(COUNT, 2 * COUNT)]
    start = len(col.messages())
    expected2 = {s.body: Expect(s, p.send_sync(s)[0]) for s in later}
    col.wait_for(lambda _g: set(expected2) <= {r.body for r in col.messages()[start:]}, deadline())
    ctx.stop(c2)
    problems = compare(expected2, [r for r in col.messages()[start:] if r.body in expected2])
    require(not problems and all(r.consumer == "r2" for r in col.messages()[start:]),
            "after r1 left: " + summary(problems))
    return "split %r, each message once; after r1 left r2 got all %d later ones" % (sorted(split.items()), COUNT)


def stable_owners(p, col):
    """Probe rounds (one probe per queue) until two rounds in a row go to the same single owners."""
    previous = None
    end = deadline()
    # Probe bodies stay unique across calls: a round must not match an earlier call's receipts.
    first = len(col.probes())
    for rnd in range(first, first + 10 ** 6):
        require(time.monotonic() < end, "no stable assignment; last %r" % previous)
        bodies = {}
        for q in range(QUEUES):
            body = b"probe-%d-%d" % (rnd, q)
            p.send_to_queue(binding.Spec(TOPIC, body, "probe", body.decode(), {}), q)
            bodies[body] = q
        col.wait_for(lambda got: set(bodies) <= {r.body for r in got}, time.monotonic() + DEADLINE_S / 4)
        receivers = {}
        for r in col.probes():
            if r.body in bodies:
                receivers.setdefault(bodies[r.body], set()).add(r.consumer)
        owners = {q: next(iter(rs)) for q, rs in receivers.items() if len(rs) == 1}
        if len(owners) == QUEUES and owners == previous:
            return owners
        previous = owners if len(owners) == QUEUES else None
        col.wait_for(lambda _g: False, time.monotonic() + PROBE_PAUSE_S)
    return previous


def orderly():
    p = ctx.producer("PG-" + GROUP, orderly=True)
    expected = {}
    for j in range(PER_KEY):
        for k in range(ORDER_KEYS):
            s = binding.Spec(TOPIC, b"matrix-orderly-%d-%d" % (k, j), "TagA", "order-%d" % k, {"matrix-index": str(j)})
            expected[s.body] = Expect(s, p.send_by_key(s, k)[0])
    col = consume(expected, orderly=True)
    seen = {}
    for r in col.messages():
        k, j = (int(x) for x in r.body.decode().rsplit("-", 2)[1:])
        seen.setdefault(k, []).append(j)
    bad = {k: js for k, js in seen.items() if js != list(range(PER_KEY))}
    require(not bad, "per-key order broken: %r" % bad)
    return "%d keys x %d by key (%s), orderly consumer saw each key in send order" % (
        ORDER_KEYS, PER_KEY, "selector" if binding.FLAVOR == "0.4.4" else "sharding key")


def lite_pull():
    expected = send_standard("lite-pull")
    pc = ctx.pull_consumer(GROUP)
    got = pull_all(pc, bodies_seen(expected))
    problems = compare(expected, got)
    require(not problems, summary(problems))
    by_queue = {}
    for r in got:
        by_queue.setdefault(r.queue_id, []).append(r)
    q, msgs = max(by_queue.items(), key=lambda kv: len(kv[1]))
    require(len(msgs) >= 2, "no queue with two messages")
    target = sorted(msgs, key=lambda r: r.queue_offset)[-1]
    queue = next(x for x in pc.queues(TOPIC) if x[2] == q)
    status, _nxt, again = pc.pull(queue, "*", target.queue_offset, PULL_BATCH)
    require(status == binding.PULL_FOUND and again and again[0].queue_offset == target.queue_offset
            and again[0].body == target.body, "seek to %d of queue %d: status %d, %r" % (
                target.queue_offset, q, status, [(r.queue_offset, r.body[:30]) for r in again[:2]]))
    return ("assign (FetchSubscriptionMessageQueues), poll all %d intact, seek (Pull at offset %d) got exactly "
            "from it; commit: n/a, the C pull API has no offset commit/fetch") % (COUNT, target.queue_offset)


def query():
    raise Na("the C API has no query (no QueryMessage/ViewMessage by msgId or key in CProducer.h/CPushConsumer.h/"
             "CPullConsumer.h)")


def request_reply():
    raise Na("the C API has no request-reply: CProducer.h has SendMessage*/SendBatchMessage/SendMessageTransaction "
             "only (no Request, no reply-message helper)")


def cross_produce():
    p = ctx.producer("PG-" + GROUP)
    for i in range(CROSS_COUNT):
        p.send_sync(cross(TOPIC, i))
    return "%d cross messages sent" % CROSS_COUNT


def cross_consume():
    specs = [cross(TOPIC, i) for i in range(CROSS_COUNT)]
    consume({s.body: Expect(s) for s in specs})
    return "exactly the %d messages of %s, intact" % (CROSS_COUNT, os.environ.get("MATRIX_PEER", "?"))


# --- transactions (2.x binding only) -------------------------------------------------------

# The 2.x binding's TransactionStatus (CTransactionStatus of the C API).
TXN_COMMIT, TXN_ROLLBACK, TXN_UNKNOWN = 0, 1, 2
# The user property naming what the producer does with a transaction: its kind, whose
# (answer at the send, answer at a check-back) is KINDS[kind]. WITNESS is sent last and
# committed by the check-back: once it arrived, check rounds went by since the others' answers.
TXN_KIND = "matrix-txn"
KINDS = {
    "COMMIT": (TXN_COMMIT, TXN_COMMIT),
    "ROLLBACK": (TXN_ROLLBACK, TXN_ROLLBACK),
    "CHECK_COMMIT": (TXN_UNKNOWN, TXN_COMMIT),
    "CHECK_ROLLBACK": (TXN_UNKNOWN, TXN_ROLLBACK),
    "NEVER": (TXN_UNKNOWN, TXN_UNKNOWN),
    "WITNESS": (TXN_UNKNOWN, TXN_COMMIT),
}
TXN_PROPS = ("matrix-index", TXN_KIND)
TXN_PER_KIND = 4
CRASH_HALVES = 8
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
CRASH_STATE = "transaction-crash.json"


class CheckBook:
    """The producer's check-back listener: answers by kind (once answering), notes each check's
    TRANSACTION_CHECK_TIMES by index, and any message the consumer had before its first check."""

    def __init__(self, answering, consumed=None):
        self.answering, self.consumed = answering, consumed
        self.cond = threading.Condition()
        self.checks, self.early = {}, []

    def __call__(self, msg):
        # the binding's check-back message gives properties as bytes
        index, kind, times = (
            (msg.get_property(name) or b"").decode() for name in ("matrix-index", TXN_KIND, "TRANSACTION_CHECK_TIMES"))
        times = int(times or 0)
        with self.cond:
            if index not in self.checks and self.consumed is not None and any(
                    r.props.get("matrix-index") == index for r in self.consumed.messages()):
                self.early.append(index)
            self.checks.setdefault(index, []).append(times)
            self.cond.notify_all()
        return KINDS[kind][1] if self.answering else TXN_UNKNOWN

    def of(self, spec):
        with self.cond:
            return list(self.checks.get(spec.props["matrix-index"], []))

    def wait(self, what, sent, done):
        """Waits (bounded) until done(its check counts) holds for each of sent ({body: Expect})."""
        end = deadline()
        with self.cond:
            while not all(done(self.checks.get(e.spec.props["matrix-index"], [])) for e in sent.values()):
                left = end - time.monotonic()
                require(left > 0, "%s: not so within %d s (checks %r)" % (what, DEADLINE_S, self.checks))
                self.cond.wait(left)


def txn_producer(book):
    p = ctx.transaction_producer("P_" + GROUP, book)
    if p is None:
        raise Na("the 0.4.4 binding (and its librocketmq 1.x C API) has no transaction producer: no "
                 "TransactionMQProducer / CreateTransactionProducer")
    return p


def send_halves(p, scenario, kinds, n, first=0):
    """Halves first..first+n-1 of scenario, kinds round-robin: {body: Expect} of what is sent."""
    sent = {}
    for i in range(first, first + n):
        s = standard(TOPIC, scenario, i)
        s.props[TXN_KIND] = kinds[i % len(kinds)]
        msg_id, _ = p.send(s, KINDS[s.props[TXN_KIND]][0])
        sent[s.body] = Expect(s, msg_id)
    return sent


def of_kind(sent, *kinds):
    return {b: e for b, e in sent.items() if e.spec.props[TXN_KIND] in kinds}


def committed_only(col, committed, what, all_pushed=True):
    """The consumer got `committed` (or, not all_pushed, some of them) once each, intact, and
    nothing else, and the topic's queues hold exactly them, once each."""
    pushed = committed if all_pushed else {r.body: committed[r.body] for r in col.messages() if r.body in committed}
    problems = compare(pushed, col.messages())
    require(not problems, "%s: %s" % (what, summary(problems)))
    pulled = pull_all(ctx.pull_consumer(GROUP + "-read"), lambda got: set(committed) <= {r.body for r in got})
    extra = sorted(r.body.decode() for r in pulled if r.body not in committed)
    require(not extra and len(pulled) == len(committed), "the topic's queues hold %d messages, not the %d "
            "committed: %r" % (len(pulled), len(committed), extra[:4]))


def witness(p, col, scenario, index, before):
    w = send_halves(p, scenario, ["WITNESS"], 1, first=index)
    want = {**before, **w}
    require(col.wait_for(bodies_seen(want), deadline()), "the witness and the committed ones did not all arrive")
    return want


def transaction():
    check_max = int(os.environ["MATRIX_TRANSACTION_CHECK_MAX"])
    col = Collector()
    book = CheckBook(answering=True, consumed=col)
    p = txn_producer(book)
    c = ctx.push_consumer(GROUP, TOPIC, "*", col, prop_names=TXN_PROPS, instance=p.instance)
    kinds = ["COMMIT", "ROLLBACK", "CHECK_COMMIT", "CHECK_ROLLBACK", "NEVER"]
    sent = send_halves(p, "transaction", kinds, TXN_PER_KIND * len(kinds))
    committed = of_kind(sent, "COMMIT", "CHECK_COMMIT")
    require(col.wait_for(bodies_seen(committed), deadline()), "committed ones missing: %r; checks so far %r" % (
        sorted(set(committed) - {r.body for r in col.messages()}), book.checks))
    book.wait("check-rollback ones checked", of_kind(sent, "CHECK_ROLLBACK"), bool)
    never = of_kind(sent, "NEVER")
    book.wait("never-answered ones checked %d times" % check_max, never, lambda t: len(t) >= check_max)
    committed = witness(p, col, "transaction", len(sent), committed)
    ctx.stop(c)
    require(not book.early, "delivered before their first check: %r" % book.early)
    firsts = [book.of(e.spec)[0] for e in of_kind(sent, "CHECK_COMMIT", "CHECK_ROLLBACK").values()]
    require(firsts == [1] * len(firsts), "first checks counted %r, not 1" % firsts)
    decided = [book.of(e.spec) for e in of_kind(sent, "COMMIT", "ROLLBACK").values()]
    require(not any(decided), "halves decided at the send checked back: %r" % decided)
    counts = [book.of(e.spec) for e in never.values()]
    require(all(t == list(range(1, check_max + 1)) for t in counts), "never-answered checked %r" % counts)
    committed_only(col, committed, "committed transactions")
    ids = {e.msg_id for e in never.values()}
    pull_all(ctx.pull_consumer(GROUP + "-discards"), lambda got: ids <= {r.id for r in got}, topic=CHECK_MAX_TIME_TOPIC)
    return ("of %d each: commit, rollback, UNKNOWN then check-back commit and rollback, never answered (checked "
            "1..%d, then in %s): exactly the %d committed consumed once intact, none before its check") % (
        TXN_PER_KIND, check_max, CHECK_MAX_TIME_TOPIC, len(committed))


def transaction_crash_1():
    p = txn_producer(CheckBook(answering=False))
    sent = send_halves(p, "transaction-crash", ["COMMIT", "ROLLBACK", "CHECK_COMMIT", "CHECK_ROLLBACK"], CRASH_HALVES)
    consume(of_kind(sent, "COMMIT"), prop_names=TXN_PROPS)
    with open(os.path.join(STATE, CRASH_STATE), "w") as f:
        json.dump([[e.spec.props[TXN_KIND], b.decode(), e.msg_id] for b, e in sent.items()], f)
    return "%d halves: committed, rolled back, %d left UNKNOWN for the kill" % (
        CRASH_HALVES, len(of_kind(sent, "CHECK_COMMIT", "CHECK_ROLLBACK")))


def transaction_crash_2():
    with open(os.path.join(STATE, CRASH_STATE)) as f:
        saved = json.load(f)
    sent = {}
    for i, (kind, body, msg_id) in enumerate(saved):
        s = standard(TOPIC, "transaction-crash", i)
        s.props[TXN_KIND] = kind
        require(s.body.decode() == body, "state of phase 1: %r is not message %d" % (body, i))
        sent[s.body] = Expect(s, msg_id)
    col = Collector()
    book = CheckBook(answering=True)
    p = txn_producer(book)
    # A group of its own: a new C++ push consumer starts at the end of each queue (CONSUME_FROM_LAST
    # is the C API's only choice, and its client takes the broker's max offset for a new group),
    # so it gets what is committed from now on: the witness, maybe some check-back commits. The
    # topic's queues are read from offset 0 for the whole set.
    c = ctx.push_consumer(GROUP2, TOPIC, "*", col, prop_names=TXN_PROPS, instance=p.instance)
    # the producer sends first, as an application's would (a producer that never sent may get no check)
    committed = witness(p, col, "transaction-crash", len(sent), {})
    book.wait("halves undecided at the kill checked back", of_kind(sent, "CHECK_COMMIT", "CHECK_ROLLBACK"), bool)
    ctx.stop(c)
    decided = [book.of(e.spec) for e in of_kind(sent, "COMMIT", "ROLLBACK").values()]
    require(not any(decided), "halves decided before the kill checked again: %r" % decided)
    committed.update(of_kind(sent, "COMMIT", "CHECK_COMMIT"))
    committed_only(col, committed, "committed before and after the kill", all_pushed=False)
    return "after the kill the undecided halves were checked back; exactly the %d committed in the queues once " \
           "intact, no rolled-back one" % len(committed)


def timer():
    raise Na("the C API has no timer API: CMessage.h has SetDelayTimeLevel only, no deliver-time or delay-seconds "
             "setter (the 5.x TIMER_* properties)")


PHASES = {
    "route": route,
    "send-sync": send_sync,
    "send-async": send_async,
    "send-oneway": send_oneway,
    "send-batch": send_batch,
    "message-props": message_props,
    "push-tag": push_tag,
    "sql92": sql92,
    "broadcast": broadcast,
    "consume-from": consume_from,
    "offsets-consumer-restart": offsets_consumer_restart,
    "offsets-broker-restart.1": offsets_broker_restart_1,
    "offsets-broker-restart.2": offsets_broker_restart_2,
    "rebalance": rebalance,
    "orderly": orderly,
    "lite-pull": lite_pull,
    "query": query,
    "request-reply": request_reply,
    "cross-produce": cross_produce,
    "cross-consume": cross_consume,
    "transaction": transaction,
    "transaction-crash.1": transaction_crash_1,
    "transaction-crash.2": transaction_crash_2,
    "timer": timer,
}


def main(argv):
    phase = argv[1] if len(argv) > 1 else ""
    if phase == "_consume":
        run = lambda: _consume(argv[2])  # noqa: E731
    elif phase in PHASES:
        run = PHASES[phase]
    else:
        print("RESULT FAIL unknown phase %r" % phase)
        return 1
    try:
        verdict, text = "PASS", run()
    except Na as e:
        verdict, text = "NA", str(e)
    except Fail as e:
        verdict, text = "FAIL", str(e)
    except Exception as e:  # a client error is a failed cell, not a crash without RESULT
        verdict, text = "FAIL", "%s: %s" % (type(e).__name__, e)
    ctx.stop_all()
    if ctx.hung:
        text += " (shutdown of %s still running after %d s; the process exits anyway)" % (
            ", ".join(ctx.hung), binding.SHUTDOWN_TIMEOUT_S)
    print("RESULT %s %s (%s client)" % (verdict, text, binding.FLAVOR), flush=True)
    return 1 if verdict == "FAIL" else 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
