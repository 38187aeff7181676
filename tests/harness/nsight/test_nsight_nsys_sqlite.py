"""nsys SQLite exports: the real pipit saxpy export and synthetic ones, one per schema quirk."""
import gzip
import sqlite3

import pytest

from harness.nsight import NsightFormatError, read_nsight
from harness.nsight.nsys_sqlite import enclosing

SAXPY = "pipit_nsys2022.2_saxpy_mpi_cuda_A100_nvtx.sqlite.gz"  # in ../shared/fixtures/nsight


def test_saxpy_export_puts_all_five_kernels_in_saxpy_at_17_7_ms(shared, tmp_path):
    path = shared(SAXPY)
    table = read_nsight(path)
    durations = table.select(metric="duration")
    assert len(durations) == 5
    assert {r.nvtx_range for r in durations} == {"saxpy"}
    assert {r.kernel for r in durations} == {"saxpy(double *, double *, double *, double, int)"}
    # independent check: end - start straight from the database
    raw = tmp_path / "saxpy.sqlite"
    raw.write_bytes(gzip.decompress(path.read_bytes()))
    with sqlite3.connect(raw) as con:
        expected = [e - s for s, e in con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")]
    assert [r.value for r in sorted(durations, key=lambda r: r.launch)] == [float(d) for d in expected]
    for row in durations:
        assert row.unit == "ns"
        assert row.value == pytest.approx(17.7e6, rel=0.005)  # "about 17.7 ms each"
        assert row.nvtx_stack == (("", "saxpy"),)  # default domain; not inside any MPI range
    # the plain (un-gzipped) export reads the same
    assert read_nsight(raw).rows == table.rows


def test_saxpy_export_names_domains_and_reads_metadata(shared):
    path = shared(SAXPY)
    table = read_nsight(path)
    ranges = table.select(metric="range_duration")
    assert {(r.nvtx_domain, r.nvtx_range) for r in ranges} >= {("MPI", "MPI_Init"), ("MPI", "MPI_Send"), ("", "saxpy")}
    con = sqlite3.connect(":memory:")
    con.deserialize(gzip.decompress(path.read_bytes()))
    pushpop = con.execute("SELECT start, end FROM NVTX_EVENTS WHERE eventType = 59 ORDER BY start").fetchall()
    assert [r.value for r in ranges] == [float(e - s) for s, e in pushpop]
    assert table.meta["nsys_product_version"] == "2022.2.1.31"
    assert table.meta["gpus"][0]["name"] == "NVIDIA A100-SXM4-40GB"
    assert {r.value for r in table.select(metric="registers_per_thread")} == {26.0}


def test_innermost_range_on_the_launching_thread_wins(nsys_db):
    db = nsys_db(suffix="_V2")
    db.domain(1, "ptxmoe")
    db.range(100, 10_000, "run-7", domain_id=1)
    db.range(200, 5_000, "gate/cuda/tiny/balanced", domain_id=1, registered=True)  # textId -> StringIds
    db.range(5_100, 9_000, "gate/ptx/tiny/balanced", domain_id=1)
    db.range(150, 9_500, "other-thread", thread=2)  # encloses in time, but on another thread
    db.launch(300, 340, 400, 1_400, "gate_cuda", corr=11, duplicate=True)
    db.launch(5_200, 5_260, 5_300, 7_300, "gate_ptx", corr=12)
    db.launch(9_600, 9_650, 9_700, 9_800, "tail", corr=13)  # only in the run range
    db.launch(20_000, 20_050, 20_100, 20_200, "outside", corr=14)
    table = read_nsight(db.close())
    got = {r.kernel: (r.nvtx_domain, r.nvtx_range, r.nvtx_stack) for r in table.select(metric="duration")}
    assert got["gate_cuda"] == ("ptxmoe", "gate/cuda/tiny/balanced",
                                (("ptxmoe", "run-7"), ("ptxmoe", "gate/cuda/tiny/balanced")))
    assert got["gate_ptx"][1] == "gate/ptx/tiny/balanced"
    assert got["tail"] == ("ptxmoe", "run-7", (("ptxmoe", "run-7"),))
    assert got["outside"] == ("", "", ())
    assert [r.value for r in table.select(metric="duration")] == [1000.0, 2000.0, 100.0, 100.0]


def test_runtime_rows_deduplicated_and_processes_kept_apart(nsys_db):
    db = nsys_db()
    other_pid = 0x0009_9999_0000_0000
    db.range(0, 1_000, "mine")
    db.range(0, 1_000, "theirs", pid_base=other_pid)
    db.launch(10, 50, 60, 90, "k", corr=5, duplicate=True)
    db.launch(10, 50, 60, 95, "k", corr=5, pid_base=other_pid)  # same correlationId, other process
    table = read_nsight(db.close())
    rows = table.select(metric="duration")
    assert sorted((r.value, r.nvtx_range) for r in rows) == [(30.0, "mine"), (35.0, "theirs")]
    assert len(table.select(metric="start")) == 2  # duplicates did not multiply kernels


def test_open_ended_range_encloses_later_calls(nsys_db):
    db = nsys_db()
    db.range(100, None, "never-popped")
    db.launch(200, 210, 220, 300, "k", corr=1, grid=(4, 2, 1), block=(32, 4, 2), regs=64)
    table = read_nsight(db.close())
    assert table.select(metric="duration")[0].nvtx_range == "never-popped"
    assert table.select(metric="range_duration")[0].value is None
    assert table.select(metric="grid_size")[0].value == 8.0
    assert table.select(metric="block_size")[0].value == 256.0


def test_export_without_nvtx_or_kernel_tables(tmp_path):
    path = tmp_path / "bare.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        con.execute("CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT)")
    table = read_nsight(path)
    assert len(table) == 0 and "nothing was traced" in table.empty_reason


def test_kernel_table_without_nvtx_table(tmp_path):
    path = tmp_path / "no_nvtx.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        con.execute("INSERT INTO StringIds VALUES (3, 'kern')")
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL_V3 (start INT, end INT, demangledName INT)")
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL_V3 VALUES (10, 35, 3)")
    rows = read_nsight(path).rows
    assert [(r.kernel, r.metric, r.value, r.nvtx_range) for r in rows] == [
        ("kern", "duration", 25.0, ""), ("kern", "start", 10.0, ""), ("kern", "end", 35.0, "")]


def test_missing_kernel_name_column_is_an_error_naming_the_table(tmp_path):
    path = tmp_path / "odd.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT)")
    with pytest.raises(NsightFormatError) as info:
        read_nsight(path)
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in str(info.value) and "name column" in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("name,data", [("junk.sqlite", b"definitely not sqlite"),
                                       ("junk.sqlite.gz", gzip.compress(b"not sqlite either"))])
def test_not_a_database(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(NsightFormatError, match="SQLite"):
        read_nsight(path)


def test_gzipped_export_on_python_3_10_is_a_format_error_naming_the_version(tmp_path, monkeypatch):
    import harness.nsight.nsys_sqlite as nsys_sqlite

    raw = tmp_path / "run.sqlite"
    with sqlite3.connect(raw) as con:
        con.execute("CREATE TABLE StringIds (id INT, value TEXT)")
    con.close()
    path = tmp_path / "run.sqlite.gz"
    path.write_bytes(gzip.compress(raw.read_bytes()))
    monkeypatch.setattr(nsys_sqlite.sys, "version_info", (3, 10, 14, "final", 0))
    with pytest.raises(NsightFormatError, match="uncompressed") as info:
        read_nsight(path)
    assert str(path) in str(info.value) and "3.11" in str(info.value)


def test_sqlite_that_is_not_an_nsys_export(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE users (id INT)")
    with pytest.raises(NsightFormatError, match="an nsys export"):
        read_nsight(path)


def test_enclosing_sweep_matches_brute_force(rng):
    ranges = []
    for tid in (1, 2):
        for _ in range(40):
            start = int(rng.integers(0, 1000))
            end = start + int(rng.integers(0, 400)) if rng.random() > 0.1 else float("inf")
            ranges.append({"start": start, "end": end, "tid": tid})
    ranges.sort(key=lambda g: (g["start"], -g["end"]))
    by_tid = {t: [g for g in ranges if g["tid"] == t] for t in (1, 2)}
    spans = [(int(rng.integers(1, 3)), s, s + int(rng.integers(0, 50))) for s in rng.integers(0, 1400, size=200)]
    got = enclosing(by_tid, spans)
    for (tid, s, e), found in zip(spans, got, strict=True):
        want = [g for g in by_tid[tid] if g["start"] <= s and g["end"] >= e]
        assert list(found) == want


def test_domain_ids_are_per_process(nsys_db):
    db = nsys_db()
    other = 0x0007_7777_0000_0000
    db.domain(1, "ptxmoe")
    db.con.execute("INSERT INTO NVTX_EVENTS VALUES (0, NULL, 75, 'MPI', ?, NULL, 1)", (other + 1,))
    db.range(0, 100, "a/b/c/d", domain_id=1)
    db.range(0, 100, "MPI_Send", domain_id=1, pid_base=other)
    db.launch(10, 20, 30, 40, "k1", corr=1)
    db.launch(10, 20, 30, 50, "k2", corr=1, pid_base=other)
    got = {r.kernel: (r.nvtx_domain, r.nvtx_range) for r in read_nsight(db.close()).select(metric="duration")}
    assert got == {"k1": ("ptxmoe", "a/b/c/d"), "k2": ("MPI", "MPI_Send")}


def test_join_without_global_pid_column(tmp_path):
    path = tmp_path / "nopid.sqlite"
    tid = 0x0001_0000_0000_0005
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        con.execute("INSERT INTO StringIds VALUES (1, 'kern')")
        con.execute("CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, globalTid INT)")
        con.execute("INSERT INTO NVTX_EVENTS VALUES (0, 1000, 59, 'outer', ?)", (tid,))
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, globalTid INT, correlationId INT)")
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 20, ?, 9)", (tid,))
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, correlationId INT, shortName INT)")
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (30, 70, 9, 1)")
    rows = read_nsight(path).select(metric="duration")
    assert [(r.kernel, r.nvtx_range, r.value) for r in rows] == [("kern", "outer", 40.0)]


def test_kernel_without_times_is_an_error(nsys_db):
    db = nsys_db()
    db.launch(10, 20, 30, 40, "k", corr=1)
    db.con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = NULL")
    with pytest.raises(NsightFormatError, match="table CUPTI_ACTIVITY_KIND_KERNEL: expected numeric start and end"):
        read_nsight(db.close())


def test_highest_versioned_table_wins(nsys_db):
    db = nsys_db()
    db.launch(10, 20, 30, 40, "old", corr=1)
    db.con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL_V2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL")
    db.con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL_V2 SET end = 45")
    assert [r.value for r in read_nsight(db.close()).select(metric="duration")] == [15.0]
