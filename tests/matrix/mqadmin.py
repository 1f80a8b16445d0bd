"""The mqadmin rows' driver (tests/matrix/README.md "mqadmin"): Apache's own mqadmin of one
version, run from the Maven jars its row's setup.sh resolved into classpath.txt, runs one
command against ringmq; this checks that the output names what ringmq holds (the messages,
offsets and consumer that tests/matrix/fixture.py put there, described in fixture.json).

Usage (from a row's directory): python3 ../../mqadmin.py <version> <command>"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import remoting  # noqa: E402

# One mqadmin JVM: it starts in seconds, but on the loaded 2-core host 5.3.3's took 8 s.
MQADMIN_TIMEOUT_S = 120
# A heap far below the JVM default (a quarter of the machine), plenty for one admin command.
JVM_OPTS = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
# How long a request to the NameServer may take (updateTopic's check).
REQUEST_TIMEOUT_S = 10
# Keys every brokerStatus answer has (Apache 4.9 and 5.x alike).
BROKER_STATUS_KEYS = ["msgPutTotalTodayNow", "brokerVersionDesc", "bootTimestamp", "putTps", "commitLogMaxOffset"]

# 4.9 mqadmin logs through plain logback configured from $ROCKETMQ_HOME/conf/logback_tools.xml,
# 5.x through RocketMQ's shaded logback (rmq.logback.configurationFile): warnings to stderr.
LOGBACK = """<configuration>
  <appender name="STDERR" class="{prefix}ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level %logger - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"""


# A line of a Java stack trace's head: `java.lang.NullPointerException: ...`.
JAVA_EXCEPTION = re.compile(r"^[\w.$]+(?:Exception|Error)\b.*$", re.MULTILINE)
# Exceptions mqadmin prints against Apache RocketMQ too. 5.x queryMsgById first tries the id as
# an offsetMsgId (address + offset); a client's UNIQ_KEY decodes to a port out of range there,
# which it prints before querying by key.
ALLOWED_EXCEPTIONS = {("queryMsgById", 5): ["port out of range"]}


class Mismatch(Exception):
    """The output does not show what ringmq holds."""


class Env:
    def __init__(self, version):
        self.version = version
        self.major = int(version.split(".")[0])
        self.namesrv = os.environ["MATRIX_NAMESRV"]
        self.broker = os.environ["MATRIX_BROKER_ADDR"]
        self.cluster = os.environ["MATRIX_CLUSTER"]
        self.broker_name = os.environ["MATRIX_BROKER_NAME"]
        self.topic = os.environ["MATRIX_TOPIC"]
        self.topic2 = os.environ["MATRIX_TOPIC2"]
        self.group = os.environ["MATRIX_GROUP"]
        self.state = Path(os.environ["MATRIX_STATE"])
        self.fixture = json.loads((self.state / "fixture.json").read_text())
        self.stderr = []
        self.home = self.state / "java-home"
        (self.home / "conf").mkdir(parents=True, exist_ok=True)
        (self.home / "conf" / "logback_tools.xml").write_text(LOGBACK.format(prefix=""))
        (self.home / "logback.xml").write_text(LOGBACK.format(prefix="org.apache.rocketmq.logging."))

    def mqadmin(self, *args):
        """(stdout, stderr) of `mqadmin <args> -n <namesrv>`, echoed to the phase's log."""
        classpath = Path("classpath.txt").read_text().strip()
        command = [
            "java", *JVM_OPTS, f"-Duser.home={self.home}",
            f"-Drmq.logback.configurationFile={self.home / 'logback.xml'}",
            "-cp", classpath, "org.apache.rocketmq.tools.command.MQAdminStartup", *args, "-n", self.namesrv,
        ]
        print("$ mqadmin " + " ".join([*args, "-n", self.namesrv]), flush=True)
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=MQADMIN_TIMEOUT_S,
            env={**os.environ, "ROCKETMQ_HOME": str(self.home)},
        )
        print(done.stdout, flush=True)
        print(done.stderr, file=sys.stderr, flush=True)
        self.stderr.append(done.stderr)
        return done.stdout, done.stderr

    def exceptions(self, allowed):
        """The Java exceptions mqadmin printed (it catches many and goes on printing), less
        those Apache's broker makes it print as well."""
        found = []
        for text in self.stderr:
            for match in JAVA_EXCEPTION.finditer(text):
                if not any(pattern in match.group(0) for pattern in allowed):
                    found.append(match.group(0))
        return found

    def queues(self):
        """{queueId: max offset} of the fixture's messages."""
        queues = {}
        for message in self.fixture["messages"]:
            queue = message["queueId"]
            queues[queue] = max(queues.get(queue, 0), message["queueOffset"] + 1)
        return queues


def rows(out, first):
    """The whitespace-split lines of a table whose first column is `first`."""
    return [line.split() for line in out.splitlines() if line.split()[:1] == [first]]


def cluster_list(env):
    out, _ = env.mqadmin("clusterList")
    if not any(row[1:2] == [env.broker_name] and env.broker in row for row in rows(out, env.cluster)):
        raise Mismatch(f"no line with {env.cluster}, {env.broker_name} and {env.broker}")
    return f"{env.cluster} / {env.broker_name} at {env.broker}"


def route_problems(text, broker_name):
    wanted = [f'"brokerName":"{broker_name}"', '"readQueueNums":4', '"writeQueueNums":4']
    return [piece for piece in wanted if piece not in text]


def topic_route(env):
    out, _ = env.mqadmin("topicRoute", "-t", env.topic)
    missing = route_problems(out, env.broker_name) + [addr for addr in [env.broker] if addr not in out]
    if missing:
        raise Mismatch(f"route lacks {', '.join(missing)}")
    return f"{env.topic} on {env.broker_name} at {env.broker}, 4 + 4 queues"


def topic_list(env):
    out, _ = env.mqadmin("topicList")
    names = {line.strip() for line in out.splitlines()}
    missing = [topic for topic in (env.topic, "TBW102") if topic not in names]
    if missing:
        raise Mismatch(f"{', '.join(missing)} not listed")
    return f"lists {env.topic} among {len(names)} lines"


def update_topic(env):
    out, _ = env.mqadmin("updateTopic", "-c", env.cluster, "-t", env.topic2, "-r", "4", "-w", "4")
    if f"create topic to {env.broker} success" not in out:
        raise Mismatch(f"no 'create topic to {env.broker} success'")
    connection = remoting.Connection(env.namesrv, REQUEST_TIMEOUT_S)
    try:
        header, body = connection.call(remoting.GET_ROUTEINFO_BY_TOPIC, {"topic": env.topic2})
    finally:
        connection.close()
    if header.get("code") != remoting.SUCCESS:
        raise Mismatch(f"the NameServer has no route for {env.topic2} afterwards: {header.get('remark')}")
    missing = route_problems(body.decode(errors="replace"), env.broker_name)
    if missing:
        raise Mismatch(f"the new route lacks {', '.join(missing)}")
    return f"created {env.topic2}; the NameServer routes it to {env.broker_name}, 4 + 4 queues"


def topic_status(env):
    out, _ = env.mqadmin("topicStatus", "-t", env.topic)
    seen = {int(row[1]): (int(row[2]), int(row[3])) for row in rows(out, env.broker_name) if len(row) >= 4}
    wanted = {queue: (0, offset) for queue, offset in env.queues().items()}
    wanted.update({queue: (0, 0) for queue in range(4) if queue not in wanted})
    if seen != wanted:
        raise Mismatch(f"queue (min, max) offsets {seen}, expected {wanted}")
    return f"4 queues with the (min, max) offsets sent: {wanted}"


def consumer_progress(env):
    out, _ = env.mqadmin("consumerProgress", "-g", env.group)
    committed = {int(queue): offset for queue, offset in env.fixture["committed"].items()}
    wanted = {queue: (offset, committed.get(queue, 0)) for queue, offset in env.queues().items()}
    seen = {
        int(row[2]): (int(row[3]), int(row[4]))
        for row in rows(out, env.topic) if len(row) >= 5 and row[1] == env.broker_name
    }
    if seen != wanted:
        raise Mismatch(f"queue (broker, consumer) offsets {seen}, expected {wanted}")
    lag = sum(broker - consumer for broker, consumer in wanted.values())
    if not re.search(rf"Diff Total: {lag}\b", out):
        raise Mismatch(f"no 'Diff Total: {lag}'")
    return f"(broker, consumer) offsets per queue {wanted}, lag {lag}"


def consumer_connection(env):
    out, _ = env.mqadmin("consumerConnection", "-g", env.group)
    client = env.fixture["clientId"]
    wanted = [client, "CONSUME_PASSIVELY", "CLUSTERING"]
    missing = [piece for piece in wanted if piece not in out]
    if not rows(out, env.topic):
        missing.append(f"subscription to {env.topic}")
    if missing:
        raise Mismatch(f"lacks {', '.join(missing)}")
    return f"the live consumer {client}, subscribed to {env.topic}, CLUSTERING"


def field(out, name):
    match = re.search(rf"^{re.escape(name)}:\s+(.*)$", out, re.MULTILINE)
    return match.group(1).strip() if match else None


def query_msg_by_id(env):
    message = env.fixture["messages"][1]
    if env.major >= 5:
        # 5.x takes the client's id (UNIQ_KEY) with the topic.
        out, _ = env.mqadmin("queryMsgById", "-i", message["msgId"], "-t", env.topic)
    else:
        # 4.9 takes the broker's offsetMsgId.
        out, _ = env.mqadmin("queryMsgById", "-i", message["offsetMsgId"])
    wanted = {
        "OffsetID": message["offsetMsgId"], "Topic": env.topic, "Tags": f"[{message['tag']}]",
        "Keys": f"[{message['key']}]", "Queue ID": str(message["queueId"]),
        "Queue Offset": str(message["queueOffset"]),
    }
    wrong = [f"{name}: {field(out, name)!r} (expected {value!r})" for name, value in wanted.items() if field(out, name) != value]
    properties = field(out, "Properties") or ""
    for pair in (f"UNIQ_KEY={message['msgId']}", f"matrix-index={message['index']}"):
        if pair not in properties:
            wrong.append(f"properties lack {pair}")
    body_path = field(out, "Message Body Path")
    body = Path(body_path).read_bytes() if body_path and Path(body_path).is_file() else None
    if body != message["body"].encode():
        wrong.append(f"body at {body_path!r} is {body!r}, expected {message['body']!r}")
    if wrong:
        raise Mismatch("; ".join(wrong))
    return f"message {message['index']}: topic, tag, key, queue, offset, properties and body"


def query_msg_by_key(env):
    message = env.fixture["messages"][1]
    out, _ = env.mqadmin("queryMsgByKey", "-t", env.topic, "-k", message["key"])
    found = rows(out, message["msgId"])
    if [row[1:3] for row in found] != [[str(message["queueId"]), str(message["queueOffset"])]]:
        raise Mismatch(f"expected one line '{message['msgId']} {message['queueId']} {message['queueOffset']}', got {found}")
    return f"{message['key']} -> {message['msgId']} at queue {message['queueId']} offset {message['queueOffset']}"


def broker_status(env):
    out, _ = env.mqadmin("brokerStatus", "-b", env.broker)
    stats = {}
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            stats[key.strip()] = value.strip()
    missing = [key for key in BROKER_STATUS_KEYS if key not in stats]
    if missing:
        raise Mismatch(f"lacks {', '.join(missing)}")
    put = int(stats["msgPutTotalTodayNow"])
    if put < len(env.fixture["messages"]):
        raise Mismatch(f"msgPutTotalTodayNow {put}, but {len(env.fixture['messages'])} were put")
    if "ringmq" not in stats["brokerVersionDesc"]:
        raise Mismatch(f"brokerVersionDesc {stats['brokerVersionDesc']!r}")
    return f"{len(stats)} statistics, msgPutTotalTodayNow {put}"


COMMANDS = {
    "clusterList": cluster_list,
    "topicRoute": topic_route,
    "topicList": topic_list,
    "updateTopic": update_topic,
    "topicStatus": topic_status,
    "consumerProgress": consumer_progress,
    "consumerConnection": consumer_connection,
    "queryMsgById": query_msg_by_id,
    "queryMsgByKey": query_msg_by_key,
    "brokerStatus": broker_status,
}
def main():
    version, command = sys.argv[1], sys.argv[2]
    if command not in COMMANDS:
        print(f"RESULT NA mqadmin rows have only the phases {', '.join(COMMANDS)}")
        return 0
    if not Path("classpath.txt").is_file():
        print("RESULT FAIL not set up (setup.sh resolves the jars into classpath.txt)")
        return 1
    try:
        env = Env(version)
        verdict = COMMANDS[command](env)
        thrown = env.exceptions(ALLOWED_EXCEPTIONS.get((command, env.major), []))
        if thrown:
            raise Mismatch(f"the output is right, but mqadmin printed {thrown[0]}")
    except Mismatch as err:
        print(f"RESULT FAIL {command}: {err}")
        return 1
    except (subprocess.TimeoutExpired, OSError, remoting.RemotingError, KeyError, ValueError) as err:
        print(f"RESULT FAIL {command}: {type(err).__name__}: {err}")
        return 1
    print(f"RESULT PASS {command}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
