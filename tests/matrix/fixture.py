"""What the mqadmin rows look at: a few messages with keys in a topic, a consumer group that
committed offsets for part of them, and a live consumer of that group (consumerConnection
needs one), sent by hand over the remoting protocol. The phase reads $MATRIX_STATE/fixture.json."""

import json
import os
import threading
import time
import uuid

import remoting

# Messages sent: enough for several queues, few enough to read in mqadmin's output.
MESSAGES = 8
# Of those, how many the group commits as consumed (the rest is its lag).
CONSUMED = 4
# How long one request may take; ringmq answers in milliseconds on an idle host.
REQUEST_TIMEOUT_S = 10
# A client heartbeats every 30 s (REMOTING.md §4.3, code 34); the broker drops it after 120 s.
HEARTBEAT_INTERVAL_S = 30
QUEUES = 4
TAG = "TagA"


class FixtureError(Exception):
    pass


def heartbeat_body(client_id, topic, group):
    return json.dumps({
        "clientID": client_id,
        "consumerDataSet": [{
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
            "consumeType": "CONSUME_PASSIVELY",
            "groupName": group,
            "messageModel": "CLUSTERING",
            "subscriptionDataSet": [{
                "classFilterMode": False, "codeSet": [], "expressionType": "TAG", "subString": "*",
                "subVersion": int(time.time() * 1000), "tagsSet": [], "topic": topic,
            }],
            "unitMode": False,
        }],
        "producerDataSet": [{"groupName": group + "_producer"}],
    }).encode()


def expect_success(response, what):
    header, _ = response
    if header.get("code") != remoting.SUCCESS:
        raise FixtureError(f"{what}: code {header.get('code')} {header.get('remark', '')}")
    return header.get("extFields") or {}


class Consumer:
    """A connection that heartbeats as a consumer of the group until closed."""

    def __init__(self, connection, body):
        self.connection = connection
        self.body = body
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def _beat(self):
        while not self.stopped.wait(HEARTBEAT_INTERVAL_S):
            try:
                self.connection.call(remoting.HEART_BEAT, {}, self.body)
            except remoting.RemotingError:
                return  # closed: the phases that need it report the missing consumer

    def close(self):
        self.stopped.set()
        self.connection.close()
        self.thread.join()


def prepare(broker_addr, topic, group, state):
    """Sends MESSAGES messages to `topic` (keys, tag, properties), commits CONSUMED of them
    for `group`, writes fixture.json into `state`, and returns the live Consumer."""
    try:
        connection = remoting.Connection(broker_addr, REQUEST_TIMEOUT_S)
    except OSError as err:
        raise FixtureError(f"connect {broker_addr}: {err}")
    try:
        client_id = f"127.0.0.1@matrix-fixture-{os.getpid()}"
        body = heartbeat_body(client_id, topic, group)
        expect_success(connection.call(remoting.HEART_BEAT, {}, body), "HEART_BEAT")
        sent = [send(connection, topic, group, index) for index in range(MESSAGES)]
        committed = {}
        for message in sent[:CONSUMED]:
            queue = message["queueId"]
            committed[queue] = max(committed.get(queue, 0), message["queueOffset"] + 1)
        for queue, offset in committed.items():
            ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue), "commitOffset": str(offset)}
            expect_success(connection.call(remoting.UPDATE_CONSUMER_OFFSET, ext), "UPDATE_CONSUMER_OFFSET")
    except (remoting.RemotingError, FixtureError) as err:
        connection.close()
        raise FixtureError(str(err))
    (state / "fixture.json").write_text(json.dumps({
        "topic": topic, "group": group, "clientId": client_id, "messages": sent,
        "committed": {str(queue): offset for queue, offset in committed.items()},
    }, indent=2))
    return Consumer(connection, body)


def send(connection, topic, group, index):
    uniq_key = uuid.uuid4().hex.upper()
    key = f"key-{index}"
    props = remoting.properties({
        "KEYS": key, "TAGS": TAG, "UNIQ_KEY": uniq_key, "WAIT": "true", "matrix-index": str(index),
    })
    ext = {
        "producerGroup": group + "_producer", "topic": topic, "defaultTopic": "TBW102",
        "defaultTopicQueueNums": str(QUEUES), "queueId": str(index % QUEUES), "sysFlag": "0",
        "bornTimestamp": str(int(time.time() * 1000)), "flag": "0", "properties": props,
        "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
    }
    body = f"matrix-mqadmin-{index}"
    reply = expect_success(connection.call(remoting.SEND_MESSAGE, ext, body.encode()), "SEND_MESSAGE")
    return {
        "index": index, "key": key, "body": body, "tag": TAG, "msgId": uniq_key, "offsetMsgId": reply.get("msgId"),
        "queueId": int(reply.get("queueId", index % QUEUES)), "queueOffset": int(reply.get("queueOffset", -1)),
    }
