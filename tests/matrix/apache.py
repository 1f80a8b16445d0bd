"""Apache RocketMQ's own NameServer and broker in place of ringmq (`matrix.py --against`), to
show a scenario's assertions are RocketMQ's behaviour: 4.9.7 or 5.3.3, started by
tests/apache-servers/start.sh (the one Apache start-up, from ~/.m2, offline), which the compat
scenarios' tests/java-client/compat-against-apache.sh uses too. Same interface as
broker.Broker (topics are still made with `ringmq admin updateTopic`, which works against
Apache too), same broker.conf transaction keys."""

import shutil
import subprocess
import time
from pathlib import Path

from broker import TRANSACTION_CHECK, Broker, BrokerError, free_ports, terminate

APACHE_SERVERS = Path(__file__).resolve().parent.parent / "apache-servers"
START = APACHE_SERVERS / "start.sh"
# --against's names of the server releases start.sh runs (its server-<version>/pom.xml).
VERSIONS = {"apache-4.9.7": "4.9.7", "apache-5.3.3": "5.3.3"}
# Bound on a JVM printing "boot success", and on a 5.x broker's first registration, which can
# come 10 s after it booted with nothing announcing it.
BOOT_TIMEOUT_S = 60
# Apache 5.x's transactionOpBatchInterval here: well below TRANSACTION_CHECK's timeout.
OP_BATCH_INTERVAL_MS = 100
# How often the broker's registration is looked for (clusterList) while it boots.
REGISTER_POLL_S = 1


class ApacheBroker(Broker):
    def __init__(self, version, ringmq, work_dir, log_path):
        if version not in VERSIONS:
            raise BrokerError(f"--against takes {', '.join(sorted(VERSIONS))}, not {version}")
        self.version = version
        self.ringmq = ringmq  # only its `admin` is used
        self.work = work_dir
        self.data_dir = work_dir / "store"
        self.log_path = log_path
        # the broker also takes P - 2 (VIP) and P + 1 (HA)
        broker_port, namesrv_port = free_ports(neighbours=(-2, 1))
        self.broker_addr = f"127.0.0.1:{broker_port}"
        self.namesrv_addr = f"127.0.0.1:{namesrv_port}"
        self.process = None
        self.namesrv = None

    def _prepare(self):
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        (self.work / "namesrv.properties").write_text(f"listenPort={self.namesrv_addr.split(':')[1]}\n")
        conf = {
            "brokerClusterName": self.cluster, "brokerName": self.broker_name, "brokerId": 0,
            "brokerIP1": "127.0.0.1", "listenPort": self.broker_addr.split(":")[1],
            "namesrvAddr": self.namesrv_addr, "storePathRootDir": self.data_dir,
            "storePathCommitLog": self.data_dir / "commitlog", "autoCreateTopicEnable": "false",
            # small files: the store preallocates them
            "mappedFileSizeCommitLog": 67108864, "mappedFileSizeConsumeQueue": 60000,
            # SQL92 subscriptions (the sql92 scenario), as broker.py gives ringmq.
            "enablePropertyFilter": "true",
            **TRANSACTION_CHECK,
            # 5.x writes the op records of decided transactions in batches, every 3 s by
            # default: with the 1 s transactionTimeOut a check round finds decided halves
            # without their op record and checks them again (seen: committed ones checked and
            # committed up to 5 times). ringmq writes the op record with the decision. (4.9.7
            # has no such key and ignores it.)
            "transactionOpBatchInterval": OP_BATCH_INTERVAL_MS,
        }
        (self.work / "broker.conf").write_text("".join(f"{k}={v}\n" for k, v in conf.items()))

    def _java(self, name, config):
        log = self.work / f"{name}.out"
        out = open(log, "w")
        process = subprocess.Popen(
            [str(START), VERSIONS[self.version], name, str(self.work), str(config)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )
        out.close()
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while "boot success" not in log.read_text(errors="replace"):
            if process.poll() is not None:
                raise BrokerError(f"Apache {name} exited ({process.returncode}) at start; see {log}")
            if time.monotonic() > deadline:
                process.kill()
                raise BrokerError(f"Apache {name} did not boot within {BOOT_TIMEOUT_S} s; see {log}")
            time.sleep(REGISTER_POLL_S)
        return process

    def start(self):
        if self.namesrv is None:
            self._prepare()
            self.namesrv = self._java("namesrv", self.work / "namesrv.properties")
        self.process = self._java("broker", self.work / "broker.conf")
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while True:
            try:
                self.check_registered()
                return
            except BrokerError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(REGISTER_POLL_S)

    def stop(self):
        """SIGTERM to the broker, waited for (the NameServer stays: remove_data ends it)."""
        process, self.process = self.process, None
        if process is not None:
            terminate(process, "Apache's broker")

    def crash_restart(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        self.start()

    def remove_data(self):
        """The NameServer goes with the data: this is the end of the run."""
        if self.namesrv is not None:
            self.namesrv.kill()
            self.namesrv.wait()
            self.namesrv = None
        shutil.rmtree(self.data_dir, ignore_errors=True)

