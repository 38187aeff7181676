"""Readable text tables of a partition document (what `ptxmoe partition` prints)."""
from __future__ import annotations

SWEEP_COLUMNS = (
    ("comm SMs", "comm SMs", "{:d}"), ("series", "series", "{}"), ("comm (us)", "comm us", "{:.1f}"),
    ("comm bandwidth (GB/s)", "comm GB/s", "{:.0f}"), ("GEMM SMs", "GEMM SMs", "{:d}"),
    ("GEMM (us)", "GEMM us", "{:.1f}"), ("GEMM (TFLOP/s)", "TFLOP/s", "{:.0f}"),
    ("GEMM interference slowdown (%)", "GEMM slowdown %", "{:.2f}"),
    ("step overlapped (us)", "overlapped us", "{:.1f}"), ("step back-to-back (us)", "back-to-back us", "{:.1f}"),
    ("step unpartitioned (us)", "unpartitioned us", "{:.1f}"),
)
SCHEDULE_COLUMNS = (("method", "{}"), ("devices", "{}"), ("bubble", "{:.4g}"), ("formula_bubble", "{:.4g}"),
                    ("parameter_x", "{}"), ("activation", "{}"), ("makespan", "{:.4g}"))


def _cell(fmt: str, value) -> str:
    if value is None:
        return "-"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


def text_table(header: list[str], rows: list[list[str]], prose_last: bool = False) -> str:
    """Right-aligned columns; with prose_last the last column is left as it is (it holds sentences)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells):
        if prose_last:
            return "  ".join(c.rjust(w) for c, w in zip(cells[:-1], widths[:-1], strict=True)) + "  " + cells[-1]
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))

    return "\n".join([line(header)] + [line(r) for r in rows])


def sweep_table(rows: list[dict]) -> str:
    """The sweep rows, one line each, units in the header."""
    header = [short for _, short, _ in SWEEP_COLUMNS]
    body = [[_cell(fmt, r.get(key)) for key, _, fmt in SWEEP_COLUMNS] for r in rows]
    return text_table(header, body)


def schedule_text(schedule: dict) -> str:
    t = {k: v / 1e3 for k, v in schedule["chunk_times_ns"].items()}
    head = (f"pipeline schedules at PP={schedule['pp']}, {schedule['microbatches']} micro-batches, chunk times (us) "
            f"F={t['F']:.1f} B={t['B']:.1f} W={t['W']:.1f} FB={t['FB']:.1f} "
            f"(from the {schedule['derived_from']['series']} row at {schedule['derived_from']['comm SMs']} comm SMs); "
            "bubble and makespan in ns")
    body = [[_cell(fmt, r.get(key)) for key, fmt in SCHEDULE_COLUMNS] for r in schedule["rows"]]
    return head + "\n" + text_table([k for k, _ in SCHEDULE_COLUMNS], body)


def render(doc: dict) -> str:
    """The whole report: label, sweep table, model note (sim) or measurement note (gpu), schedule table."""
    parts = [f"ptxmoe partition [{doc['backend']}]: {doc['label']}",
             f"target {doc['settings']['preset']} (ep={doc['settings']['ep']}), seed {doc['seed']}",
             sweep_table(doc["rows"])]
    about = doc.get("model") or doc.get("measurement") or {}
    if about.get("note"):
        parts.append(f"NOTE: {about['note']}")
    if about.get("constants"):
        body = [[name, f"{c['value']:g}", c["meaning"]] for name, c in about["constants"].items()]
        parts.append("interference model constants (model assumptions):\n" + text_table(
            ["constant", "value", "meaning"], body, prose_last=True))
    parts.append(schedule_text(doc["schedule"]))
    return "\n\n".join(parts)
