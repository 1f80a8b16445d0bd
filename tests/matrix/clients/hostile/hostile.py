"""The matrix's hostile row (tests/matrix/README.md "Hostile input"): raw remoting frames that
no client sends, in rounds, against the broker and the NameServer, beside the client rows.

Every attack must be answered with an error code or with a closed connection within
READ_TIMEOUT_S; after each round a valid request on a new connection must be served. Runs
until its stdin closes (the orchestrator's "stop") or MAX_RUN_S pass. Python 3 stdlib only."""

import json
import os
import random
import select
import socket
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import remoting  # noqa: E402

# How long ringmq may take to answer or close after an attack before it counts as a hang:
# it answers in milliseconds; the slack is for the 2-core host under the whole matrix.
READ_TIMEOUT_S = 10
# Pause between rounds: the attacks are not a load test, and the host is shared.
ROUND_PAUSE_S = 2
# The row stops on its own after this long, even if nobody closes its stdin (README: 20 min).
MAX_RUN_S = 20 * 60
# Garbage sizes: one read of the broker's buffer and a bit more.
GARBAGE_MIN, GARBAGE_MAX = 16, 4096
# A length prefix far above the 16 MiB frame limit (REMOTING.md §1.2).
ONE_GIB = 1 << 30
# Failures quoted in the RESULT line; the log lists all.
QUOTED_FAILURES = 3


def attacks(topic, group, rng):
    """(name, bytes to send, whether to half-close after sending): every attack of a round."""
    heartbeat = lambda body: remoting.frame(remoting.encode_header(remoting.HEART_BEAT, {}), body)  # noqa: E731
    header = lambda obj: remoting.frame(json.dumps(obj).encode())  # noqa: E731
    base = {"flag": 0, "language": "PYTHON", "opaque": 7, "version": remoting.VERSION}
    garbage = bytes(rng.getrandbits(8) for _ in range(rng.randint(GARBAGE_MIN, GARBAGE_MAX)))
    return [
        ("heartbeat body cut mid-JSON", heartbeat(b'{"clientID":"hostile","consumerDataSet":[{"groupName":'), False),
        ("heartbeat body not JSON", heartbeat(b"\xff\xfe not json at all \x00"), False),
        ("heartbeat body of wrong JSON types", heartbeat(json.dumps({
            "clientID": 42, "consumerDataSet": {"groupName": [group]}, "producerDataSet": "x",
        }).encode()), False),
        ("heartbeat body a JSON array", heartbeat(b"[1,2,3]"), False),
        ("extFields values numbers/objects/arrays", header({
            **base, "code": remoting.GET_ROUTEINFO_BY_TOPIC, "extFields": {"topic": {"nested": [topic]}},
        }), False),
        ("send with non-string header values", header({
            **base, "code": remoting.SEND_MESSAGE, "extFields": {
                "producerGroup": ["g"], "topic": 12345, "defaultTopic": None, "defaultTopicQueueNums": "four",
                "queueId": {"id": 1}, "sysFlag": 1.5, "bornTimestamp": [], "flag": True,
            },
        }) + b"body", False),
        ("pull with a queueId beyond 32 bits", header({
            **base, "code": remoting.PULL_MESSAGE, "extFields": {
                "consumerGroup": group, "topic": topic, "queueId": str(1 << 32), "queueOffset": "0",
                "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
                "subscription": "*", "subVersion": "0",
            },
        }), False),
        ("update offset with array queueId", header({
            **base, "code": remoting.UPDATE_CONSUMER_OFFSET,
            "extFields": {"consumerGroup": group, "topic": topic, "queueId": [0], "commitOffset": {"o": 1}},
        }), False),
        # A numeric string ("106") is read as the number, as Java's fastjson does: not hostile.
        ("code is a non-numeric string", header({**base, "code": "GET_BROKER_CLUSTER_INFO"}), False),
        ("code is an object", header({**base, "code": {"code": remoting.GET_BROKER_CLUSTER_INFO}}), False),
        ("extFields is an array", header({**base, "code": remoting.GET_ROUTEINFO_BY_TOPIC, "extFields": [topic]}), False),
        ("header is a JSON string", remoting.frame(b'"just a string"'), False),
        ("header length past the frame", struct.pack(">ii", 20, 100) + bytes(16), False),
        ("header length zero", struct.pack(">ii", 4, 0), False),
        ("connection closed mid-frame", struct.pack(">ii", 1000, 200) + b'{"code":105,', True),
        ("length prefix of 1 GiB", struct.pack(">ii", ONE_GIB, 100) + bytes(64), False),
        ("negative length prefix", struct.pack(">ii", -5, 0), False),
        ("random garbage, then end of stream", garbage, True),
    ]


def attack(addr, payload, half_close, follow_up):
    """Sends one attack on a new connection; returns (what went wrong or None, what happened).
    Right are a closed connection, or an error code after which the same connection still
    serves `follow_up` (a request code), as Apache's does: it closes only on undecodable frames."""
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=READ_TIMEOUT_S) as sock:
            sock.sendall(payload)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
            try:
                header, _ = remoting.read_frame(sock)
            except (EOFError, ConnectionError):
                return None, "closed"
            problem, outcome = judge(header)
            if problem is None and not half_close:
                problem = follow(sock, follow_up, outcome)
                outcome += f", then served code {follow_up} on that connection"
            return problem, outcome
    except socket.timeout:
        return f"neither answered nor closed within {READ_TIMEOUT_S} s", "hang"
    except OSError as err:
        return f"connection error that is not a close: {err}", "error"
    except (remoting.RemotingError, ValueError) as err:
        return f"answered with an unreadable frame: {err}", "unreadable"


def judge(header):
    code = header.get("code")
    if not header.get("flag", 0) & remoting.RESPONSE_FLAG:
        return f"answered with a request, not a response: {header}", "request"
    if code == remoting.SUCCESS:
        return f"answered SUCCESS: {header}", "SUCCESS"
    return None, f"code {code} ({header.get('remark', '')})"


def follow(sock, code, outcome):
    """The valid request `code` on the connection that just answered an attack with an error."""
    opaque, data = remoting.request(code)
    sock.sendall(data)
    try:
        header, _ = remoting.read_frame(sock)
    except (EOFError, ConnectionError):
        return f"answered {outcome}, then closed the connection"
    if header.get("opaque") != opaque or header.get("code") != remoting.SUCCESS:
        return f"answered {outcome}, then code {code} on the same connection got {header}"
    return None


def valid_requests(broker, namesrv, topic):
    """(addr, code, ext) a healthy broker and NameServer serve with SUCCESS."""
    return [
        (broker, remoting.GET_BROKER_RUNTIME_INFO, None),
        (namesrv, remoting.GET_BROKER_CLUSTER_INFO, None),
        (namesrv, remoting.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}),
    ]


def serve_check(addr, code, ext):
    try:
        connection = remoting.Connection(addr, READ_TIMEOUT_S)
    except OSError as err:
        return f"code {code} to {addr}: cannot connect: {err}"
    try:
        header, _ = connection.call(code, ext)
    except remoting.RemotingError as err:
        return f"code {code} to {addr}: {err}"
    finally:
        connection.close()
    if header.get("code") != remoting.SUCCESS:
        return f"code {code} to {addr}: answered {header.get('code')} {header.get('remark', '')}"
    return None


def epoch(state):
    return (state / "broker-epoch").read_text().strip() if (state / "broker-epoch").exists() else "0"


def stopped(wait_s):
    """Waits up to wait_s for stdin to close (the orchestrator's stop); True if it did."""
    readable, _, _ = select.select([sys.stdin], [], [], wait_s)
    return bool(readable) and not sys.stdin.buffer.read1(4096)


def main():
    broker, namesrv = os.environ["MATRIX_BROKER_ADDR"], os.environ["MATRIX_NAMESRV"]
    topic, group = os.environ["MATRIX_TOPIC"], os.environ["MATRIX_GROUP"]
    state = Path(os.environ["MATRIX_STATE"])
    seed = int(os.environ.get("MATRIX_HOSTILE_SEED", time.time_ns() % (1 << 32)))
    rng = random.Random(seed)
    print(f"hostile: seed {seed} (MATRIX_HOSTILE_SEED reruns the same garbage)", flush=True)
    failures, rounds, discarded, closed_or_error = [], 0, 0, 0
    deadline = time.monotonic() + MAX_RUN_S
    while time.monotonic() < deadline:
        seen = epoch(state)
        round_failures, round_answered = [], 0
        for name, payload, half_close in attacks(topic, group, rng):
            targets = (
                ("broker", broker, remoting.GET_BROKER_RUNTIME_INFO),
                ("namesrv", namesrv, remoting.GET_BROKER_CLUSTER_INFO),
            )
            for target, addr, follow_up in targets:
                problem, outcome = attack(addr, payload, half_close, follow_up)
                if rounds == 0:
                    print(f"{target}: {name}: {outcome}", flush=True)
                if problem is not None:
                    round_failures.append(f"{target}: {name}: {problem}")
                else:
                    round_answered += 1
        for addr, code, ext in valid_requests(broker, namesrv, topic):
            problem = serve_check(addr, code, ext)
            if problem is not None:
                round_failures.append(f"not served after the round: {problem}")
        if epoch(state) != seen:
            discarded += 1  # the broker restarted under this round: not judged
            print(f"round {rounds + discarded}: discarded (broker restarted meanwhile)", flush=True)
        else:
            rounds += 1
            closed_or_error += round_answered
            for failure in round_failures:
                print(f"round {rounds}: FAIL {failure}", flush=True)
            failures.extend(round_failures)
        if stopped(ROUND_PAUSE_S):
            break
    final = [problem for problem in (serve_check(*request) for request in valid_requests(broker, namesrv, topic)) if problem]
    failures.extend(f"at the end: {problem}" for problem in final)
    summary = (
        f"{rounds} rounds ({discarded} discarded across broker restarts), {len(attacks(topic, group, rng))} attacks "
        f"x broker and NameServer each, {closed_or_error} answered with an error or closed"
    )
    print(summary, flush=True)
    if failures or rounds == 0:
        distinct = list(dict.fromkeys(failures))
        quoted = "; ".join(distinct[:QUOTED_FAILURES]) or "no round completed"
        print(f"RESULT FAIL {len(failures)} problems, e.g. {quoted}", flush=True)
        return 1
    print(f"RESULT PASS {summary}; each round then served on new connections", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
