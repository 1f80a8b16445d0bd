"""The matrix's tables: printed, and written to target/matrix/table.md and results.json."""

import json

LABELS = {"PASS": "PASS", "FAIL": "FAIL", "NA": "n/a"}


class Cell:
    def __init__(self, status, detail="", seconds=0.0):
        assert status in LABELS
        self.status = status
        self.detail = detail
        self.seconds = seconds

    def as_json(self):
        return {"status": self.status, "detail": self.detail, "seconds": round(self.seconds, 1)}


# Wall-time budgets (tests/matrix/README.md): a client row's own scenarios, and the whole run.
ROW_BUDGET_S = 3 * 60
TOTAL_BUDGET_S = 20 * 60
# The hostile row runs beside all others, so it has the whole run's budget.
WHOLE_RUN = ("(total)", "(cross-client)", "hostile")


def budget(name):
    return TOTAL_BUDGET_S if name in WHOLE_RUN else ROW_BUDGET_S


class Legend:
    """Numbers every FAIL and n/a reason; the table shows `FAIL [n]`, the legend the reason
    and the cells that gave it (one note for a reason many cells share, e.g. "not set up")."""

    def __init__(self):
        self.notes = {}  # (status, detail) -> (number, [where])

    def label(self, cell, where):
        if cell is None:
            return "-"
        if cell.status == "PASS":
            return "PASS"
        number, places = self.notes.setdefault((cell.status, cell.detail), (len(self.notes) + 1, []))
        places.append(where)
        return f"{LABELS[cell.status]} [{number}]"

    def lines(self):
        return [
            f"[{number}] {LABELS[status]}: {detail} ({', '.join(places)})"
            for (status, detail), (number, places) in self.notes.items()
        ]


def table(corner, columns, rows):
    """rows: [(name, [text per column])] -> a Markdown table, aligned for the terminal too."""
    header = [corner] + columns
    body = [[name] + texts for name, texts in rows]
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]

    def line(cells):
        return "| " + " | ".join(text.ljust(width) for text, width in zip(cells, widths)) + " |"

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return "\n".join([line(header), rule] + [line(cells) for cells in body])


def write_reports(out, rows, scenarios, mqadmin_commands, cells, cross, row_seconds, ringmq):
    """Prints and writes every table; returns whether any cell FAILed."""
    legend = Legend()
    sections = []
    clients = [row.id for row in rows if row.kind == "client"]
    if clients:
        # Scenarios down, clients across: seven clients fit a terminal, fifteen scenarios do not.
        body = [
            (scenario, [legend.label(cells.get((client, scenario)), f"{client} / {scenario}") for client in clients])
            for scenario in scenarios
        ]
        body.append(("(row wall time)", [f"{row_seconds.get(client, 0):.0f} s" for client in clients]))
        sections.append("## Client x scenario\n\n" + table("scenario \\ client", clients, body))
    if cross:
        producers = sorted({producer for producer, _ in cross})
        consumers = sorted({consumer for _, consumer in cross})
        body = [
            (producer, [legend.label(cross.get((producer, consumer)), f"{producer} -> {consumer}") for consumer in consumers])
            for producer in producers
        ]
        sections.append("## Cross-client: producer (down) x consumer (across)\n\n" + table("producer \\ consumer", consumers, body))
    admins = [row.id for row in rows if row.kind == "mqadmin"]
    if admins and mqadmin_commands:
        body = [
            (command, [legend.label(cells.get((admin, command)), f"{admin} / {command}") for admin in admins])
            for command in mqadmin_commands
        ]
        sections.append("## mqadmin command x version\n\n" + table("command \\ version", admins, body))
    for row in rows:
        if row.kind == "hostile":
            cell = cells.get((row.id, "hostile"))
            text = legend.label(cell, "hostile")
            detail = f" ({cell.detail})" if cell is not None and cell.status == "PASS" and cell.detail else ""
            sections.append(f"## Hostile input\n\nhostile: {text}{detail}")
    times = ", ".join(
        f"{name} {seconds:.0f} s" + (" (over its budget)" if seconds > budget(name) else "")
        for name, seconds in row_seconds.items()
    )
    sections.append("## Wall time\n\n" + times)
    if legend.notes:
        sections.append("## Legend (every FAIL and n/a)\n\n" + "\n".join(f"- {note}" for note in legend.lines()))
    text = f"# Compatibility matrix (ringmq: {ringmq})\n\n" + "\n\n".join(sections) + "\n"
    print("\n" + text, flush=True)
    (out / "table.md").write_text(text)
    every = list(cells.values()) + list(cross.values())
    results = {
        "ringmq": ringmq,
        "cells": {f"{row}/{column}": cell.as_json() for (row, column), cell in cells.items()},
        "cross": {f"{producer}->{consumer}": cell.as_json() for (producer, consumer), cell in cross.items()},
        "row_seconds": {name: round(seconds, 1) for name, seconds in row_seconds.items()},
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"tables: {out / 'table.md'}, results: {out / 'results.json'}", flush=True)
    return any(cell.status == "FAIL" for cell in every)
