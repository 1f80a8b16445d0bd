#!/usr/bin/env python3
"""The compatibility matrix's orchestrator (tests/matrix/README.md is the contract).

Starts `ringmq standalone --shards 2` on free loopback ports with a fresh data directory,
runs every client row's driver phase by phase, restarts the broker where a scenario asks,
and prints the client x scenario, producer x consumer, mqadmin command x version tables and
the hostile cell. Exits 1 if any cell FAILs. Python 3 standard library only.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture  # noqa: E402  (the mqadmin rows' messages and live consumer)
from apache import VERSIONS, ApacheBroker  # noqa: E402
from broker import TRANSACTION_CHECK, Broker, BrokerError  # noqa: E402
from report import LABELS, Cell, write_reports  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CLIENTS_DIR = HERE / "clients"
OUT = REPO / "target" / "matrix"

# Phase names are the contract (README "Scenarios"); a scenario of two phases has the
# broker restarted between them.
SCENARIOS = [
    "route",
    "send-sync",
    "send-async",
    "send-oneway",
    "send-batch",
    "message-props",
    "push-tag",
    "sql92",
    "broadcast",
    "consume-from",
    "offsets-consumer-restart",
    "offsets-broker-restart",
    "rebalance",
    "orderly",
    "lite-pull",
    "query",
    "request-reply",
    "transaction",
    "transaction-crash",
    "timer",
]
# Scenarios of two phases, with the broker stopped between them: SIGTERM (a clean restart) or
# SIGKILL (a crash), then started again on the same ports and data.
RESTART_SCENARIOS = {
    "offsets-broker-restart": signal.SIGTERM,
    "transaction-crash": signal.SIGKILL,
}
CROSS_PRODUCE = "cross-produce"
CROSS_CONSUME = "cross-consume"
MQADMIN_COMMANDS = [
    "clusterList",
    "topicRoute",
    "topicList",
    "updateTopic",
    "topicStatus",
    "consumerProgress",
    "consumerConnection",
    "queryMsgById",
    "queryMsgByKey",
    "brokerStatus",
]
HOSTILE = "hostile"
MQADMIN_PREFIX = "mqadmin-"
# A directory under clients/ with this suffix holds code several rows share: not a row.
SHARED_SUFFIX = "-common"

# A phase running longer is killed and FAILs (README "The driver contract").
PHASE_TIMEOUT_S = 180
# How long the hostile row may take to finish its round and report once told to stop.
HOSTILE_STOP_TIMEOUT_S = 60
# Messages a scenario sends where it does not say (README: MATRIX_COUNT).
DEFAULT_COUNT = 16
# Queues of every topic the orchestrator creates (README: 4 read + 4 write).
QUEUES = 4
RESULT_PREFIXES = ("RESULT PASS", "RESULT FAIL", "RESULT NA")


def log(message):
    print(f"[matrix {time.strftime('%H:%M:%S')}] {message}", flush=True)


def sanitize(text):
    """A RocketMQ topic or group name allows only [%|a-zA-Z0-9_-]: client ids have dots."""
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in text)


def parse_result(log_path, returncode):
    """The last `RESULT ...` line of the phase's output, checked against its exit status."""
    last = None
    with open(log_path, errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if line in ("RESULT PASS", "RESULT FAIL", "RESULT NA") or line.startswith(
                tuple(prefix + " " for prefix in RESULT_PREFIXES)
            ):
                last = line
    if last is None:
        return Cell("FAIL", f"no RESULT line (exit {returncode}); see {rel(log_path)}")
    _, verdict, *rest = last.split(" ", 2) + [""]
    detail = rest[0].strip()
    status = {"PASS": "PASS", "FAIL": "FAIL", "NA": "NA"}[verdict]
    if status == "FAIL":
        return Cell("FAIL", f"{detail or 'no reason given'}; see {rel(log_path)}")
    if returncode != 0:
        return Cell("FAIL", f"RESULT {verdict} but exit {returncode}; see {rel(log_path)}")
    return Cell(status, detail)


def rel(path):
    try:
        return str(Path(path).relative_to(REPO))
    except ValueError:
        return str(path)


class Row:
    """One directory under tests/matrix/clients/: a client, an mqadmin version, or hostile."""

    def __init__(self, path):
        self.path = path
        self.id = path.name
        self.driver = path / "driver"

    @property
    def set_up(self):
        return self.driver.is_file() and os.access(self.driver, os.X_OK)

    @property
    def kind(self):
        if self.id == HOSTILE:
            return "hostile"
        if self.id.startswith(MQADMIN_PREFIX):
            return "mqadmin"
        return "client"


def discover_rows(wanted):
    rows = [
        Row(path) for path in sorted(CLIENTS_DIR.iterdir())
        if path.is_dir() and not path.name.endswith(SHARED_SUFFIX)
    ]
    if wanted is None:
        return rows
    known = {row.id for row in rows}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        sys.exit(f"matrix: no such client row(s): {', '.join(unknown)} (have: {', '.join(sorted(known))})")
    return [row for row in rows if row.id in wanted]


class Matrix:
    def __init__(self, args):
        self.ringmq = Path(args.ringmq).resolve()
        self.scenarios = args.scenarios
        self.rows = discover_rows(args.clients)
        self.client_scenarios = [scenario for scenario in SCENARIOS if scenario in self.scenarios]
        self.mqadmin_commands = [command for command in MQADMIN_COMMANDS if command in self.scenarios]
        if args.against:
            self.broker = ApacheBroker(args.against, self.ringmq, OUT / "apache", OUT / "logs" / "apache.log")
        else:
            self.broker = Broker(self.ringmq, OUT / "data", OUT / "logs" / "ringmq.log")
        self.against = args.against
        self.hostile = None  # (Row, Driver, state dir) while attacking
        self.cells = {}  # (row id, column) -> Cell
        self.cross = {}  # (producer, consumer) -> Cell
        self.row_seconds = {}

    # --- running one phase -------------------------------------------------------------

    def env(self, row, scenario, topic, topic2, group, state, peer=None):
        env = dict(os.environ)
        env.update(
            MATRIX_NAMESRV=self.broker.namesrv_addr,
            MATRIX_BROKER_ADDR=self.broker.broker_addr,
            MATRIX_CLUSTER=self.broker.cluster,
            MATRIX_BROKER_NAME=self.broker.broker_name,
            MATRIX_TOPIC=topic,
            MATRIX_TOPIC2=topic2,
            MATRIX_GROUP=group,
            MATRIX_GROUP2=group + "_2",
            MATRIX_STATE=str(state),
            MATRIX_COUNT=str(DEFAULT_COUNT),
            MATRIX_TRANSACTION_CHECK_MAX=str(TRANSACTION_CHECK["transactionCheckMax"]),
        )
        if peer is not None:
            env["MATRIX_PEER"] = peer
        return env

    def run_phase(self, row, phase, env):
        started = time.monotonic()
        driver = Driver(row, phase, env, stdin=subprocess.DEVNULL)
        cell = driver.finish(PHASE_TIMEOUT_S, f"killed after {PHASE_TIMEOUT_S} s")
        seconds = time.monotonic() - started
        if not self.broker.alive():
            cell = Cell("FAIL", f"ringmq exited ({self.broker.exit_code()}) during this phase; see {rel(self.broker.log_path)}")
            log("ringmq is down: starting it again for the phases that follow")
            self.broker.start()
        cell.seconds = seconds
        log(f"{row.id} {phase}: {cell.status} {cell.detail} ({seconds:.1f} s)")
        return cell

    def fresh_state(self, row, name):
        state = OUT / "state" / row.id / name
        shutil.rmtree(state, ignore_errors=True)
        state.mkdir(parents=True)
        return state

    def topics_for(self, row, name):
        base = sanitize(f"mx_{row.id}_{name}")
        topic, topic2 = base, base + "_2"
        for created in (topic, topic2):
            self.broker.create_topic(created, QUEUES)
        return topic, topic2, sanitize(f"mxg_{row.id}_{name}")

    # --- the broker restart between the phases of a RESTART_SCENARIOS one ------------------

    def restart_broker(self, signum):
        """SIGTERM (and wait) or SIGKILL, then start on the same ports and data. The hostile
        row is paused meanwhile and told (by the epoch file) to discard the round the restart
        cut."""
        self.signal_hostile(signal.SIGSTOP)
        try:
            if self.hostile is not None:
                epoch = self.hostile[2] / "broker-epoch"
                epoch.write_text(str(int(epoch.read_text() or "0") + 1))
            if signum == signal.SIGKILL:
                self.broker.crash_restart()
            else:
                self.broker.restart()
        finally:
            self.signal_hostile(signal.SIGCONT)

    def signal_hostile(self, signum):
        if self.hostile is None:
            return
        try:
            os.killpg(self.hostile[1].process.pid, signum)
        except ProcessLookupError:
            pass  # it ended on its own (its deadline): its cell says so

    # --- rows --------------------------------------------------------------------------

    def run_client_row(self, row):
        for scenario in self.client_scenarios:
            if not row.set_up:
                self.cells[(row.id, scenario)] = Cell("FAIL", "not set up (run scripts/fetch-deps.sh)")
                continue
            try:
                topic, topic2, group = self.topics_for(row, scenario)
            except BrokerError as err:
                self.cells[(row.id, scenario)] = Cell("FAIL", f"the orchestrator could not create the topics: {err}")
                continue
            state = self.fresh_state(row, scenario)
            env = self.env(row, scenario, topic, topic2, group, state)
            if scenario not in RESTART_SCENARIOS:
                self.cells[(row.id, scenario)] = self.run_phase(row, scenario, env)
                continue
            first = self.run_phase(row, scenario + ".1", env)
            if first.status != "PASS":
                self.cells[(row.id, scenario)] = first
                continue
            try:
                self.restart_broker(RESTART_SCENARIOS[scenario])
            except BrokerError as err:
                self.cells[(row.id, scenario)] = Cell("FAIL", f"broker restart: {err}")
                self.broker.start()
                continue
            second = self.run_phase(row, scenario + ".2", env)
            second.seconds += first.seconds
            self.cells[(row.id, scenario)] = second

    def run_mqadmin_row(self, row):
        if not row.set_up:
            for command in self.mqadmin_commands:
                self.cells[(row.id, command)] = Cell("FAIL", "not set up (run scripts/fetch-deps.sh)")
            return
        topic = sanitize(f"mx_{row.id}")
        topic2 = topic + "_new"  # not created: the updateTopic phase creates it
        group = sanitize(f"mxg_{row.id}")
        self.broker.create_topic(topic, QUEUES)
        state = self.fresh_state(row, "mqadmin")
        env = self.env(row, "mqadmin", topic, topic2, group, state)
        try:
            held = fixture.prepare(self.broker.broker_addr, topic, group, state)
        except fixture.FixtureError as err:
            for command in self.mqadmin_commands:
                self.cells[(row.id, command)] = Cell("FAIL", f"orchestrator could not prepare messages: {err}")
            return
        try:
            for command in self.mqadmin_commands:
                self.cells[(row.id, command)] = self.run_phase(row, command, env)
        finally:
            held.close()

    def run_cross(self, clients):
        producers = []
        for row in clients:
            if not row.set_up:
                cell = Cell("FAIL", "not set up (run scripts/fetch-deps.sh)")
                self.cells[(row.id, CROSS_PRODUCE)] = cell
                producers.append((row, None, cell))
                continue
            topic, topic2, group = self.topics_for(row, CROSS_PRODUCE)
            env = self.env(row, CROSS_PRODUCE, topic, topic2, group, self.fresh_state(row, CROSS_PRODUCE))
            cell = self.run_phase(row, CROSS_PRODUCE, env)
            self.cells[(row.id, CROSS_PRODUCE)] = cell
            producers.append((row, topic, cell))
        if CROSS_CONSUME not in self.scenarios:
            return
        for producer, topic, produced in producers:
            for consumer in clients:
                if consumer.id == producer.id:
                    continue
                if produced.status != "PASS":
                    self.cross[(producer.id, consumer.id)] = Cell("NA", f"producer failed ({producer.id} {CROSS_PRODUCE} {LABELS[produced.status]})")
                    continue
                if not consumer.set_up:
                    self.cross[(producer.id, consumer.id)] = Cell("FAIL", "not set up (run scripts/fetch-deps.sh)")
                    continue
                name = f"{CROSS_CONSUME}-from-{producer.id}"
                state = self.fresh_state(consumer, name)
                group = sanitize(f"mxg_{consumer.id}_{name}")
                env = self.env(consumer, CROSS_CONSUME, topic, topic + "_2", group, state, peer=producer.id)
                cell = self.run_phase(consumer, CROSS_CONSUME, env)
                self.cross[(producer.id, consumer.id)] = cell

    # --- hostile, beside the others ------------------------------------------------------

    def start_hostile(self, row):
        if not row.set_up:
            self.cells[(row.id, HOSTILE)] = Cell("FAIL", "not set up")
            return
        topic, topic2, group = self.topics_for(row, HOSTILE)
        state = self.fresh_state(row, HOSTILE)
        (state / "broker-epoch").write_text("0")
        env = self.env(row, HOSTILE, topic, topic2, group, state)
        # Its stdin is a pipe it watches: closing it is the "stop" (README "Hostile input").
        driver = Driver(row, HOSTILE, env, stdin=subprocess.PIPE)
        self.hostile = (row, driver, state)
        self.hostile_started = time.monotonic()
        log(f"{row.id}: attacking beside the client rows (pid {driver.process.pid})")

    def stop_hostile(self):
        if self.hostile is None:
            return
        row, driver, _ = self.hostile
        self.hostile = None
        driver.process.stdin.close()
        cell = driver.finish(HOSTILE_STOP_TIMEOUT_S, f"did not stop within {HOSTILE_STOP_TIMEOUT_S} s of its stdin closing")
        if cell.status == "PASS" and not self.broker.alive():
            cell = Cell("FAIL", "ringmq is no longer running after the attacks")
        if cell.status == "PASS":
            try:
                self.broker.check_registered()
            except BrokerError as err:
                cell = Cell("FAIL", f"ringmq no longer answers after the attacks: {err}")
        cell.seconds = time.monotonic() - self.hostile_started
        self.row_seconds[row.id] = cell.seconds
        self.cells[(row.id, HOSTILE)] = cell
        log(f"{row.id}: {cell.status} {cell.detail}")

    # --- everything --------------------------------------------------------------------

    def run(self):
        shutil.rmtree(OUT / "logs", ignore_errors=True)
        shutil.rmtree(OUT / "state", ignore_errors=True)
        started = time.monotonic()
        self.broker.start()
        try:
            clients = [row for row in self.rows if row.kind == "client"]
            for row in self.rows:
                if row.kind == "hostile" and HOSTILE in self.scenarios:
                    self.start_hostile(row)
            for row in self.rows:
                row_started = time.monotonic()
                if row.kind == "client":
                    self.run_client_row(row)
                elif row.kind == "mqadmin" and self.mqadmin_commands:
                    self.run_mqadmin_row(row)
                else:
                    continue
                self.row_seconds[row.id] = time.monotonic() - row_started
                log(f"{row.id}: row done in {self.row_seconds[row.id]:.0f} s")
            if clients and (CROSS_PRODUCE in self.scenarios or CROSS_CONSUME in self.scenarios):
                cross_started = time.monotonic()
                self.run_cross(clients)
                self.row_seconds["(cross-client)"] = time.monotonic() - cross_started
        finally:
            self.stop_hostile()
            self.broker.stop()
            self.broker.remove_data()
        self.row_seconds["(total)"] = time.monotonic() - started
        return write_reports(
            OUT,
            rows=self.rows,
            scenarios=self.client_scenarios + [s for s in [CROSS_PRODUCE] if s in self.scenarios],
            mqadmin_commands=self.mqadmin_commands,
            cells=self.cells,
            cross=self.cross,
            row_seconds=self.row_seconds,
            ringmq=f"Apache RocketMQ {self.against.split('-', 1)[1]}, not ringmq" if self.against else str(self.ringmq),
        )


class Driver:
    """One running phase of a row's driver, its output in target/matrix/logs/<id>/<phase>.log."""

    def __init__(self, row, phase, env, stdin):
        self.log_path = OUT / "logs" / row.id / f"{phase}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.out = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [str(row.driver), phase],
            cwd=row.path,
            env=env,
            stdin=stdin,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so a timeout kills the clients it started too
        )

    def finish(self, timeout, timeout_reason):
        """Waits for the driver (killed after `timeout` s) and returns its cell."""
        try:
            returncode = self.process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(self.process)
            returncode = self.process.wait()
            timed_out = True
        # A driver must stop what it started; whatever it left behind goes now, so it
        # cannot disturb the next phase.
        kill_group(self.process)
        self.out.close()
        if timed_out:
            return Cell("FAIL", f"{timeout_reason}; see {rel(self.log_path)}")
        return parse_result(self.log_path, returncode)


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ringmq", default=str(REPO / "target" / "release" / "ringmq"), help="the ringmq binary to test")
    parser.add_argument("--clients", help="comma-separated row ids (default: every tests/matrix/clients/*)")
    parser.add_argument(
        "--scenarios",
        help="comma-separated scenarios, mqadmin commands or `hostile` (default: all, cross-client included)",
    )
    parser.add_argument(
        "--against",
        choices=sorted(VERSIONS),
        help="run the rows against Apache RocketMQ's NameServer and broker of that version (from ~/.m2) instead"
        " of ringmq; output in target/matrix-<version>/",
    )
    args = parser.parse_args()
    args.clients = args.clients.split(",") if args.clients else None
    every = SCENARIOS + [CROSS_PRODUCE, CROSS_CONSUME] + MQADMIN_COMMANDS + [HOSTILE]
    if args.scenarios:
        args.scenarios = args.scenarios.split(",")
        unknown = [s for s in args.scenarios if s not in every]
        if unknown:
            sys.exit(f"matrix: no such scenario(s): {', '.join(unknown)} (have: {', '.join(every)})")
        if CROSS_CONSUME in args.scenarios and CROSS_PRODUCE not in args.scenarios:
            args.scenarios.append(CROSS_PRODUCE)  # cross-consume reads what cross-produce sent
    else:
        args.scenarios = every
    if not Path(args.ringmq).is_file():
        sys.exit(f"matrix: no ringmq binary at {args.ringmq} (scripts/compat-matrix.sh builds it)")
    if args.against:
        global OUT
        OUT = REPO / "target" / f"matrix-{args.against}"
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        failed = Matrix(args).run()
    except BrokerError as err:
        sys.exit(f"matrix: {err}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
