"""The `ringmq standalone --shards 2` process the matrix runs every client against."""

import os
import shutil
import signal
import socket
import subprocess
import threading
import time

# Shards of the broker under test (the issue: a freshly started standalone with 2 shards).
SHARDS = 2
# How long ringmq may take to serve and register: its shards open and preallocate their
# stores first (tests/broker_support: once more than 30 s on the loaded 2-core host).
START_TIMEOUT_S = 120
# How long a SIGTERMed ringmq may take to flush, persist offsets and unregister.
STOP_TIMEOUT_S = 60
# How long one `ringmq admin` call may take before the matrix gives up on the broker.
ADMIN_TIMEOUT_S = 30
# Random ports tried for a broker port whose VIP port (port - 2) is free as well.
PORT_ATTEMPTS = 100

# The transaction check-back of every matrix broker (ringmq's and Apache's broker.conf keys):
# first check 1 s after a half was stored, a round every second, so the transaction scenarios
# see their check-backs in seconds; 15 checks (Apache's default) before a half is discarded,
# which outlasts the broker restart of transaction-crash and its phase 2 starting (the checks
# count on while no producer is connected).
TRANSACTION_CHECK = {
    "transactionTimeOut": 1000,
    "transactionCheckInterval": 1000,
    "transactionCheckMax": 15,
}
# ringmq acknowledges under ASYNC_FLUSH (the default, the matrix's) before the bytes are
# written, and flushes within flushIntervalCommitLog (500 ms): a SIGKILL takes what is not yet
# written, as a power loss would. transaction-crash is about the decisions made before the
# kill, not that window, so the kill waits it out. (Acknowledged SYNC_FLUSH messages across a
# SIGKILL: tests/compat_java_client.rs, tests/real_disk.rs.)
FLUSH_SETTLE_S = 2

BROKER_READY = "ringmq broker listening on "
# The NameServer's log line for a registration (debug level: enabled by RUST_LOG below).
REGISTERED = "broker registered"
RUST_LOG = "info,ringmq::namesrv::processor=debug"
# broker.conf keys the matrix sets beyond ringmq's defaults (written next to the data
# directory, passed with --config): SQL92 subscriptions (the sql92 scenario) need the
# property filter, off by default as in Apache RocketMQ.
BROKER_CONF = "enablePropertyFilter=true\n"


class BrokerError(Exception):
    pass


def free_ports(neighbours=(-2,)):
    """(P, Q) for the broker and the NameServer, P + n free too for each n of `neighbours`
    (ringmq's VIP channel is P - 2); all held while the next is picked, so none can be another."""
    for _ in range(PORT_ATTEMPTS):
        held = []
        try:
            broker = bind(0)
            held.append(broker)
            port = broker.getsockname()[1]
            try:
                held.extend(bind(port + n) for n in neighbours)
            except OSError:
                continue
            namesrv = bind(0)
            held.append(namesrv)
            return port, namesrv.getsockname()[1]
        finally:
            for sock in held:
                sock.close()
    raise BrokerError(f"no free port P with {', '.join(f'P {n:+d}' for n in neighbours)} free in {PORT_ATTEMPTS} attempts")


def terminate(process, what):
    """SIGTERM and wait (bounded, then SIGKILL and BrokerError)."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise BrokerError(f"{what} did not stop within {STOP_TIMEOUT_S} s of SIGTERM (killed)")


def bind(port):
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    return sock


class Broker:
    cluster = "DefaultCluster"
    broker_name = "broker-a"

    def __init__(self, ringmq, data_dir, log_path):
        self.ringmq = ringmq
        self.data_dir = data_dir
        self.log_path = log_path
        broker_port, namesrv_port = free_ports()
        self.broker_addr = f"127.0.0.1:{broker_port}"
        self.namesrv_addr = f"127.0.0.1:{namesrv_port}"
        self.process = None
        self.lines = []  # output lines of the current process
        self.changed = threading.Condition()

    def start(self):
        """Starts ringmq (again, on the same ports and data) and returns once the broker is
        registered with its NameServer and clusterList shows it."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        conf = self.data_dir.parent / "broker.conf"
        conf.write_text(BROKER_CONF + "".join(f"{key}={value}\n" for key, value in TRANSACTION_CHECK.items()))
        with self.changed:
            self.lines = []
        self.process = subprocess.Popen(
            [
                str(self.ringmq), "standalone",
                "--shards", str(SHARDS),
                "--listen", self.broker_addr,
                "--namesrv-listen", self.namesrv_addr,
                "--broker-ip", "127.0.0.1",
                "--data", str(self.data_dir),
                "--config", str(conf),
            ],
            env={**os.environ, "RUST_LOG": RUST_LOG},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        self._wait_for(BROKER_READY, deadline)
        self._wait_for(REGISTERED, deadline)
        self.check_registered()

    def _read(self, process):
        with open(self.log_path, "a") as out:
            out.write(f"--- ringmq started (pid {process.pid}) ---\n")
            for line in process.stdout:
                out.write(line)
                out.flush()
                with self.changed:
                    if process is self.process:
                        self.lines.append(line)
                    self.changed.notify_all()
            with self.changed:
                self.changed.notify_all()

    def _wait_for(self, needle, deadline):
        with self.changed:
            while True:
                if any(needle in line for line in self.lines):
                    return
                if self.process.poll() is not None:
                    raise BrokerError(f"ringmq exited ({self.process.returncode}) before '{needle}'; see {self.log_path}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrokerError(f"ringmq did not print '{needle}' within {START_TIMEOUT_S} s; see {self.log_path}")
                # Woken by every output line and at exit; the timeout only bounds the wait.
                self.changed.wait(min(left, 1.0))

    def admin(self, *args):
        command = [str(self.ringmq), "admin", *args]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=ADMIN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise BrokerError(f"`{' '.join(command)}` took more than {ADMIN_TIMEOUT_S} s")
        if done.returncode != 0:
            raise BrokerError(f"`{' '.join(command)}` failed: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def check_registered(self):
        listing = self.admin("clusterList", "-n", self.namesrv_addr)
        if self.broker_name not in listing or self.broker_addr not in listing:
            raise BrokerError(f"clusterList does not show {self.broker_name} at {self.broker_addr}:\n{listing}")

    def create_topic(self, topic, queues):
        self.admin(
            "updateTopic", "-n", self.namesrv_addr, "-c", self.cluster,
            "-t", topic, "-r", str(queues), "-w", str(queues),
        )

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def exit_code(self):
        return None if self.process is None else self.process.poll()

    def stop(self):
        """SIGTERM and wait: ringmq flushes, persists offsets and unregisters on its own."""
        if self.process is None:
            return
        process, self.process = self.process, None
        terminate(process, "ringmq")
        if process.returncode != 0:
            raise BrokerError(f"ringmq exited {process.returncode} on SIGTERM; see {self.log_path}")

    def restart(self):
        self.stop()
        self.start()

    def crash_restart(self):
        """SIGKILL (once what was acknowledged is flushed), then start again."""
        if self.process is not None:
            time.sleep(FLUSH_SETTLE_S)
            process, self.process = self.process, None
            process.kill()
            process.wait()
        self.start()

    def remove_data(self):
        """Each data directory preallocates about 2 GB."""
        shutil.rmtree(self.data_dir, ignore_errors=True)
