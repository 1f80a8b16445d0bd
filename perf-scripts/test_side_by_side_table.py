"""Tests of side_by_side_table.py on made-up run directories:
python3 -m unittest discover -s perf-scripts -p 'test_*.py'"""
import contextlib
import io
import json
import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import side_by_side_table as table  # noqa: E402


def java_result(messages, wall, broker_s, loadgen_s, direction="produce", host_busy_s=None):
    cpu = {"wall_s": wall, "broker_s": broker_s, "loadgen_s": loadgen_s}
    if host_busy_s is not None:
        cpu["host_busy_s"] = host_busy_s
    return {direction: {"messages": messages, "msg_per_s": messages / wall, "latency_us": {"p99": 5000}},
            "cpu": cpu}


class TableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = pathlib.Path(self.dir.name)
        (self.out / "host.json").write_text(json.dumps({"cores": 2}))

    def tearDown(self):
        self.dir.cleanup()

    def put(self, rep, kind, workload, result, cpu_s=None):
        d = self.out / str(rep)
        d.mkdir(exist_ok=True)
        (d / f"{kind}-{workload}.json").write_text(json.dumps(result))
        if cpu_s is not None:
            (d / f"{kind}-{workload}.proc").write_text(json.dumps({"cpu_s": cpu_s}))

    def render(self):
        buf = io.StringIO()
        sys.argv = ["side_by_side_table.py", str(self.out)]
        with contextlib.redirect_stdout(buf):
            table.main()
        return buf.getvalue()

    def test_two_apache_releases_and_java_rows(self):
        (self.out / "settings.txt").write_text(
            "apache: Apache RocketMQ 5.3.3, jars x\napache-5.5.1: Apache RocketMQ 5.5.1, jars y\n")
        for rep in (1, 2, 3):
            # apache: 10 000 msg/s, broker 1.2 cores; apache-5.5.1: 12 000; ringmq: 18 000.
            for kind, n, broker in (("apache", 100_000, 12.0), ("apache-5.5.1", 120_000, 11.0),
                                    ("ringmq", 180_000, 3.0)):
                self.put(rep, kind, "java-produce-json", java_result(n, 10.0, broker, 9.5), cpu_s=broker)
        text = self.render()
        head = next(line for line in text.splitlines() if line.startswith("| workload | measure"))
        self.assertIn("| Apache RocketMQ 5.3.3 | Apache RocketMQ 5.5.1 | ringmq | ringmq / Apache 5.3.3 | "
                      "ringmq / Apache 5.5.1 |", head)
        produce = next(line for line in text.splitlines() if line.startswith("| java-produce-json | produce |"))
        self.assertIn("| 1.80× | 1.50× |", produce)
        loadgen = next(line for line in text.splitlines()
                       if line.startswith("| java-produce-json | load generator CPU per M msgs |"))
        self.assertIn("| 95.00 (95.00–95.00) | 79.17 (79.17–79.17) | 52.78 (52.78–52.78) |", loadgen)
        bound = next(line for line in text.splitlines() if line.startswith("| java-produce-json |")
                     and "host CPU" in line)
        # apache: 1.2 + 0.95 cores of 2: both and the host; ringmq: 0.3 + 0.95: the load generator.
        self.assertIn("| broker and load generator and host CPU (2.15 of 2 cores busy) |", bound)
        self.assertTrue(bound.rstrip(" |").endswith("load generator"), bound)
        self.assertNotIn("async-1k", text)

    def test_classic_pair_keeps_two_broker_table(self):
        for kind, rate in (("apache", 10_000), ("ringmq", 25_000)):
            self.put(1, kind, "async-1k", {"produce": {"messages": rate * 10, "msg_per_s": rate}}, cpu_s=5.0)
        text = self.render()
        self.assertIn("| workload | measure | unit | Apache RocketMQ | ringmq | ratio |", text)
        self.assertIn("| async-1k | produce | msg/s | 10000 | 25000 | 2.50× (higher is better) |", text)
        self.assertNotIn("| sync-1k", text)
        self.assertNotIn("Official Java client", text)

    def test_bound(self):
        self.assertEqual(table.bound(0.3, 0.5, 2), "neither (< 0.9 cores each: waits)")
        self.assertEqual(table.bound(1.0, 0.5, 2), "broker")
        self.assertEqual(table.bound(None, 0.5, 2), "–")
        # /proc/stat's busy time names what other processes took.
        self.assertEqual(table.bound(0.6, 1.0, 2, 1.95),
                         "load generator and host CPU (1.95 of 2 cores busy, 0.35 by other processes)")
        self.assertEqual(table.bound(0.6, 0.7, 2, 1.2), "neither (< 0.9 cores each: waits)")

    def test_host_busy_row(self):
        self.put(1, "ringmq", "java-consume-rocketmq", java_result(100_000, 5.0, 1.0, 5.0, "consume", 9.5),
                 cpu_s=1.0)
        text = self.render()
        self.assertIn("| java-consume-rocketmq | host cores busy (every process) | cores | 1.90 |", text)
        self.assertIn("| java-consume-rocketmq | load generator and host CPU (1.90 of 2 cores busy, "
                      "0.70 by other processes) |", text)

    def test_features_table(self):
        # Timer deliveries count as the messages of the CPU per message; lateness is in ms.
        for kind, rate, p99, broker in (("apache", 5000.0, 900, 20.0), ("ringmq", 10000.0, 450, 5.0)):
            timer = {"messages": 100_000, "msg_per_s": rate, "early": 0,
                     "lateness_ms": {"p50": 300, "p99": p99, "p999": p99, "max": p99}}
            self.put(1, kind, "java-timer", {"timer": timer, "cpu": {"wall_s": 10.0, "broker_s": broker}},
                     cpu_s=broker)
        text = self.render()
        self.assertIn("Transactions, SQL92 and timers", text)
        rate = next(line for line in text.splitlines() if line.startswith("| java-timer | timer delivery |"))
        self.assertIn("| 5000 | 10000 | 2.00× | higher |", rate)
        late = next(line for line in text.splitlines() if line.startswith("| java-timer | lateness p99 |"))
        self.assertIn("| 900 | 450 | 0.50× | lower |", late)
        cpu = next(line for line in text.splitlines() if line.startswith("| java-timer | broker CPU per M"))
        self.assertIn("| 200 | 50.00 | 0.25× |", cpu)


if __name__ == "__main__":
    unittest.main()
