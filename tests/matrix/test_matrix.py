"""The orchestrator's own checks (scripts/compat-matrix.sh runs them before the matrix):
how a phase's output becomes a cell, how a driver that overruns is stopped, and the tables."""

import contextlib
import io
import json
import os
import select
import socket
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import broker  # noqa: E402
import matrix  # noqa: E402
import remoting  # noqa: E402
from report import Cell, write_reports  # noqa: E402


# How long the overrunning driver may run before it is killed: long enough to start its child.
CHILD_WAIT_S = 2
# How long a killed process may take to be gone.
EXIT_BOUND_S = 30


def write(path, text, executable=False):
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


class ParseResult(unittest.TestCase):
    def cell(self, output, returncode=0):
        with tempfile.TemporaryDirectory() as tmp:
            return matrix.parse_result(write(Path(tmp) / "phase.log", output), returncode)

    def test_the_last_result_line_is_the_cell(self):
        cell = self.cell("RESULT FAIL first try\nnoise\nRESULT PASS 16 consumed once\n")
        self.assertEqual((cell.status, cell.detail), ("PASS", "16 consumed once"))

    def test_na_keeps_its_reason(self):
        cell = self.cell("RESULT NA no batch API\n")
        self.assertEqual((cell.status, cell.detail), ("NA", "no batch API"))

    def test_fail_names_the_log(self):
        cell = self.cell("RESULT FAIL 3 missing\n", returncode=1)
        self.assertEqual(cell.status, "FAIL")
        self.assertIn("3 missing", cell.detail)
        self.assertIn("phase.log", cell.detail)

    def test_no_result_line_fails(self):
        self.assertEqual(self.cell("Exception in thread main\n", returncode=1).status, "FAIL")

    def test_a_result_word_inside_a_line_does_not_count(self):
        self.assertEqual(self.cell("log: RESULT PASS\nRESULT PASSED\n").status, "FAIL")

    def test_pass_with_a_failing_exit_status_fails(self):
        cell = self.cell("RESULT PASS fine\n", returncode=2)
        self.assertEqual(cell.status, "FAIL")
        self.assertIn("exit 2", cell.detail)


class DriverProcess(unittest.TestCase):
    def test_an_overrunning_driver_and_what_it_started_are_killed(self):
        with tempfile.TemporaryDirectory() as tmp:
            row_dir = Path(tmp) / "slow"
            row_dir.mkdir()
            # The driver starts a child that would outlive it, tells its pid, then hangs.
            write(row_dir / "driver", "#!/bin/sh\nsleep 300 &\necho child $!\nwait\n", executable=True)
            saved = matrix.OUT
            matrix.OUT = Path(tmp) / "out"
            try:
                driver = matrix.Driver(matrix.Row(row_dir), "send-sync", dict(os.environ), stdin=subprocess.DEVNULL)
                cell = driver.finish(CHILD_WAIT_S, f"killed after {CHILD_WAIT_S} s")
                output = driver.log_path.read_text()
            finally:
                matrix.OUT = saved
        self.assertEqual(cell.status, "FAIL")
        self.assertIn(f"killed after {CHILD_WAIT_S} s", cell.detail)
        child = int(output.split("child ")[1].split()[0])
        try:
            pidfd = os.pidfd_open(child)
        except ProcessLookupError:
            return  # already gone
        with os.fdopen(pidfd) as handle:
            # Readable once the process has exited; SIGKILL takes effect at once, the bound is
            # for a loaded host.
            readable, _, _ = select.select([handle], [], [], EXIT_BOUND_S)
        self.assertTrue(readable, f"the driver's child {child} still runs")


class Tables(unittest.TestCase):
    class FakeRow:
        def __init__(self, id, kind):
            self.id, self.kind = id, kind

    def report(self, cells, cross=None):
        with tempfile.TemporaryDirectory() as tmp:
            rows = [self.FakeRow("a", "client"), self.FakeRow("b", "client")]
            with contextlib.redirect_stdout(io.StringIO()):
                failed = write_reports(
                    Path(tmp), rows=rows, scenarios=["send-sync", "send-batch"], mqadmin_commands=[],
                    cells=cells, cross=cross or {}, row_seconds={"a": 1.0}, ringmq="ringmq",
                )
            return failed, (Path(tmp) / "table.md").read_text(), json.loads((Path(tmp) / "results.json").read_text())

    def test_a_fail_fails_the_run_and_na_does_not(self):
        na = {("a", "send-sync"): Cell("PASS"), ("a", "send-batch"): Cell("NA", "no batch API")}
        self.assertFalse(self.report(na)[0])
        self.assertTrue(self.report({**na, ("b", "send-sync"): Cell("FAIL", "lost 2")})[0])
        self.assertTrue(self.report(na, cross={("a", "b"): Cell("FAIL", "8 of 9")})[0])

    def test_the_legend_gives_each_reason_once_with_its_cells(self):
        shared = "not set up (run scripts/fetch-deps.sh)"
        cells = {
            ("a", "send-sync"): Cell("PASS"), ("a", "send-batch"): Cell("NA", "no batch API"),
            ("b", "send-sync"): Cell("FAIL", shared), ("b", "send-batch"): Cell("FAIL", shared),
        }
        _, table, results = self.report(cells)
        self.assertIn("| send-batch        | n/a [2] | FAIL [1] |", table)
        self.assertEqual(table.count(shared), 1)
        self.assertIn("(b / send-sync, b / send-batch)", table)
        self.assertEqual(results["cells"]["a/send-batch"]["status"], "NA")

    def test_a_row_over_its_budget_is_marked(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            write_reports(
                Path(tmp), rows=[], scenarios=[], mqadmin_commands=[], cells={}, cross={},
                row_seconds={"slow": 181.0, "quick": 179.0, "(total)": 900.0}, ringmq="ringmq",
            )
            text = (Path(tmp) / "table.md").read_text()
        self.assertIn("slow 181 s (over its budget), quick 179 s, (total) 900 s\n", text)


class Ports(unittest.TestCase):
    def test_the_broker_port_comes_with_its_neighbours_free(self):
        # Apache's broker also binds P - 2 (VIP) and P + 1 (HA): all free when picked.
        port, namesrv = broker.free_ports(neighbours=(-2, 1))
        self.assertNotIn(namesrv, (port - 2, port, port + 1))
        for taken in (port - 2, port, port + 1, namesrv):
            broker.bind(taken).close()


class Frames(unittest.TestCase):
    def test_a_frame_reads_back_as_sent(self):
        left, right = socket.socketpair()
        with left, right:
            _, data = remoting.request(remoting.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, b"body")
            left.sendall(data)
            header, body = remoting.read_frame(right)
        self.assertEqual((header["code"], header["extFields"], body), (105, {"topic": "T"}, b"body"))

    def test_a_frame_over_the_limit_is_refused(self):
        left, right = socket.socketpair()
        with left, right:
            left.sendall(b"\x40\x00\x00\x00\x00\x00\x00\x10")
            with self.assertRaises(remoting.RemotingError):
                remoting.read_frame(right)


if __name__ == "__main__":
    unittest.main()
