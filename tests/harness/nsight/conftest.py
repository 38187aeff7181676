"""Fixtures for the Nsight reader tests: paths of the real and own fixture files, and an nsys SQLite builder."""
import sqlite3
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
OWN = REPO / "tests" / "fixtures" / "nsight"
SHARED = REPO / ".." / "shared" / "fixtures" / "nsight"


@pytest.fixture
def own():
    """Path of one of the project's own fixture files."""
    return lambda name: OWN / name


@pytest.fixture
def shared():
    """Path of a real third-party fixture in ../shared/fixtures/nsight by file name (skip when it is absent)."""
    def get(name: str) -> Path:
        path = SHARED / name
        if not path.is_file():
            pytest.skip(f"shared fixture {path} not present (CI keeps shared/ beside the clone, as ../shared)")
        return path
    return get


class NsysDb:
    """Builds a small nsys-like SQLite export: tables named as in real exports, columns as given."""

    TID_BASE = 0x0001_2345_6700_0000  # globalPid part; the thread id is added below

    def __init__(self, path: Path, suffix: str = "", meta_table: str = "META_DATA_EXPORT"):
        self.path, self.suffix = path, suffix
        self.con = sqlite3.connect(path)
        self.strings: dict[str, int] = {}
        self.con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        self.con.execute(f"CREATE TABLE {meta_table} (name TEXT, value TEXT)")
        self.con.execute(f"INSERT INTO {meta_table} VALUES ('EXPORT_PRODUCT_VERSION', '2025.1.1.65')")
        self.con.execute(f"CREATE TABLE NVTX_EVENTS{suffix} (start INT, end INT, eventType INT, text TEXT, "
                         "globalTid INT, textId INT, domainId INT)")
        self.con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME{suffix} (start INT, end INT, globalTid INT, "
                         "correlationId INT, nameId INT)")
        self.con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL{suffix} (start INT, end INT, correlationId INT, "
                         "globalPid INT, shortName INT, gridX INT, gridY INT, gridZ INT, blockX INT, blockY INT, "
                         "blockZ INT, registersPerThread INT)")

    def tid(self, thread: int, pid_base: int | None = None) -> int:
        return (self.TID_BASE if pid_base is None else pid_base) + thread

    def sid(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = len(self.strings) + 1
            self.con.execute("INSERT INTO StringIds VALUES (?, ?)", (self.strings[text], text))
        return self.strings[text]

    def domain(self, domain_id: int, name: str, thread: int = 1):
        self.con.execute(f"INSERT INTO NVTX_EVENTS{self.suffix} VALUES (0, NULL, 75, ?, ?, NULL, ?)",
                         (name, self.tid(thread), domain_id))

    def range(self, start, end, name, thread=1, domain_id=0, registered=False, pid_base=None):
        text, text_id = (None, self.sid(name)) if registered else (name, None)
        self.con.execute(f"INSERT INTO NVTX_EVENTS{self.suffix} VALUES (?, ?, 59, ?, ?, ?, ?)",
                         (start, end, text, self.tid(thread, pid_base), text_id, domain_id))

    def launch(self, call_start, call_end, k_start, k_end, name, corr, thread=1, duplicate=False, pid_base=None,
               grid=(1, 1, 1), block=(128, 1, 1), regs=32):
        tid = self.tid(thread, pid_base)
        self.con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME{self.suffix} VALUES (?, ?, ?, ?, ?)",
                         (call_start, call_end, tid, corr, self.sid("cudaLaunchKernel")))
        if duplicate:  # some versions write a second, nested row per correlationId
            self.con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME{self.suffix} VALUES (?, ?, ?, ?, ?)",
                             (call_start + 1, call_end - 1, tid, corr, self.sid("cudaLaunchKernel_v7000")))
        pid = tid & 0xFFFFFFFFFF000000
        self.con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL{self.suffix} VALUES "
                         "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (k_start, k_end, corr, pid, self.sid(name), *grid, *block, regs))

    def close(self) -> Path:
        self.con.commit()
        self.con.close()
        return self.path


@pytest.fixture
def nsys_db(tmp_path):
    """A factory of NsysDb builders writing into tmp_path."""
    count = iter(range(1000))
    return lambda **kw: NsysDb(tmp_path / f"export{next(count)}.sqlite", **kw)
