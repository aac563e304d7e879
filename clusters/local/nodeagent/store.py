"""State that survives an agent restart: one JSON record per Pod, plus small agent-wide tables.

Layout under `<state>/nodeagent/`: `pods/<uid>.json` (sandbox, processes, container states), `ipam.json`.
(Device allocations are kept by the device managers, `<state>/device-plugins/<node>/allocations.json`.) Writes are atomic (temp file + rename), so a killed agent never leaves half a record.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


class Store:
    def __init__(self, state: Path):
        self.root = state / "nodeagent"
        self.pods_dir = self.root / "pods"
        self.pods_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def save_pod(self, uid: str, record: dict) -> None:
        write_json(self.pods_dir / f"{uid}.json", record)

    def drop_pod(self, uid: str) -> None:
        (self.pods_dir / f"{uid}.json").unlink(missing_ok=True)

    def pod_records(self) -> dict[str, dict]:
        out = {}
        for f in self.pods_dir.glob("*.json"):
            rec = read_json(f)
            if isinstance(rec, dict):
                out[f.stem] = rec
        return out

    def table(self, name: str, default):
        with self._lock:
            return read_json(self.root / f"{name}.json", default)

    def save_table(self, name: str, data) -> None:
        with self._lock:
            write_json(self.root / f"{name}.json", data)
