"""run.json schema versions and the upgrade of older documents to the current one (docs/run-json.md).

Version 3: `settings.device_profile` (the --device-profile the timing model used, or null), and the document is read
as typed records (harness.run_records), every field checked.

Version 2 (three implementations): the Numba path is `numba` (version 1 called it `cuda`), and each cell has one
verdict per pair of implementations (`"<kernel[variant]>/<preset>/<skew>/<impl>-vs-<baseline>"`, with `pair`,
`impl`, `baseline`, `headline`) instead of one PTX-over-Numba verdict keyed by the cell. Version 1 documents are
upgraded in memory when loaded, so old run folders still build dashboards and resume; a resumed one is saved as 2.
"""
from __future__ import annotations

SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)


def upgrade(doc: dict) -> dict:
    """`doc` upgraded in place to SCHEMA_VERSION (version 1 -> 2); a current document is returned unchanged.

    The caller has checked that doc["schema_version"] is in READABLE_VERSIONS.
    """
    if doc.get("schema_version") == 1:
        _v1_to_v2(doc)
    _layer_variant(doc)
    if doc.get("schema_version") == 2:
        _v2_to_v3(doc)
    return doc


def _v2_to_v3(doc: dict) -> None:
    """Version 3 records the device profile the timing model ran with (`settings.device_profile`); a version-2 run
    could only have had one through PTXMOE_DEVICE_PROFILE, which it did not record: read as none."""
    settings = doc.get("settings")
    if isinstance(settings, dict):
        settings.setdefault("device_profile", None)
    doc.setdefault("upgraded_from", 2)
    doc["schema_version"] = 3


# NOTE: the layer got its variants (bf16, fp8: kernels.md "The layer") within version 2; a layer row, verdict, range
# or missing line written before that has no variant and was the bf16 layer, so it is read as layer[bf16] (its key
# too): a resumed old run skips its done bf16 layer rows, and old and new runs compare cell by cell.
_OLD_LAYER, _NEW_LAYER = "layer/", "layer[bf16]/"


def _layer_key(key):
    return _NEW_LAYER + key[len(_OLD_LAYER):] if isinstance(key, str) and key.startswith(_OLD_LAYER) else key


def _layer_variant(doc: dict) -> None:
    for record in [*(doc.get("rows") or []), *(doc.get("verdicts") or [])]:
        if not isinstance(record, dict) or record.get("kernel") != "layer" or record.get("variant"):
            continue
        record["variant"] = "bf16"
        for field in ("key", "cell"):
            if field in record:
                record[field] = _layer_key(record[field])
        if isinstance(record.get("params"), dict):
            record["params"]["variant"] = "bf16"
    for ns_range in doc.get("nvtx_ranges") or []:
        if isinstance(ns_range, dict) and "key" in ns_range:  # the row it belongs to; its name is what was recorded
            ns_range["key"] = _layer_key(ns_range["key"])
    doc["missing"] = [_layer_key(line) for line in doc.get("missing") or []]


def _v1_to_v2(doc: dict) -> None:
    from harness.implementations import canonical_impl

    settings = doc.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("impls"), list):
        settings["impls"] = [canonical_impl(i) for i in settings["impls"]]
    for row in doc.get("rows") or []:
        if not isinstance(row, dict):
            continue
        row["impl"] = canonical_impl(row.get("impl"))
        row["key"] = _rekey(row.get("key"))
        for record in row.get("nsight") or []:
            if isinstance(record, dict):
                record["impl"] = canonical_impl(record.get("impl"))
    for ns_range in doc.get("nvtx_ranges") or []:
        if isinstance(ns_range, dict):
            ns_range["name"], ns_range["key"] = _rekey(ns_range.get("name")), _rekey(ns_range.get("key"))
    doc["missing"] = [_rekey_line(line) for line in doc.get("missing") or []]
    doc["verdicts"] = [_v1_verdict(v) for v in doc.get("verdicts") or [] if isinstance(v, dict)]
    doc["schema_version"] = 2
    doc["upgraded_from"] = 1


def _rekey(key):
    """"gate/cuda/tiny/balanced" -> "gate/numba/tiny/balanced"; anything else unchanged."""
    if not isinstance(key, str):
        return key
    parts = key.split("/")
    if len(parts) == 4 and parts[1] == "cuda":
        parts[1] = "numba"
    return "/".join(parts)


def _rekey_line(line):
    if not isinstance(line, str) or ": " not in line:
        return line
    key, rest = line.split(": ", 1)
    return f"{_rekey(key)}: {rest}"


def _v1_verdict(v: dict) -> dict:
    """A version 1 verdict (PTX over Numba, keyed by the cell) as the version 2 verdict of the pair ptx-vs-numba."""
    from harness.implementations import HEADLINE_PAIR, Pair

    pair = Pair("ptx", "numba")
    cell = v.get("key")
    out = {k: val for k, val in v.items() if k != "ptx_over"}
    out.update(key=f"{cell}/{pair.name}", cell=cell, pair=pair.name, impl=pair.impl, baseline=pair.baseline,
               headline=pair == HEADLINE_PAIR)
    if isinstance(out.get("reason"), str):
        out["reason"] = out["reason"].replace("cuda", "numba")
    return out
