"""The `uses:` steps of action.yml as the hosted-runner simulation (ci/hosted_runner.py) emulates them, by name:

- actions/setup-python: a python3 of at least the asked version (major.minor) with venv, from the machine (/usr/bin,
  /usr/local/bin), put first on PATH as `python` and `python3`; a hosted runner would download one, so an older one
  is one line saying so.
- actions/setup-go: Go from the runner's tool cache (`RUNNER_TOOL_CACHE/go/<version>/x64`, as the hosted image
  keeps it), else fetched into it from the Go module proxy as the `golang.org/toolchain` module (the way the go
  command itself fetches a toolchain); never a Go that happens to be installed on the machine.
- actions/cache/restore and actions/cache/save: the paths copied from/to `<cache root>/actions-cache/<key>/`;
  restore matches the key exactly (cache-hit true) or the newest entry under a restore-keys prefix (cache-hit false);
  save of a key that exists is a warning, as on GitHub.
- actions/upload-artifact: the matching paths copied to `<cache root>/artifacts/<run id>/<name>/`, relative to their
  common parent, as upload-artifact lays them out.
"""
from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ci.composite import ScriptRunner, Step, StepIO  # noqa: E402

GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")  # the machine's, which any user may run


def lines(value: str) -> list[str]:
    return [ln.strip() for ln in value.splitlines() if ln.strip()]


class Emulator(ScriptRunner):
    """Runs the action's steps for the simulation: `run:` steps through ScriptRunner (as the runner's user),
    `uses:` steps by the handlers above. `chown(path, recursive=False)` gives the runner's user what a step made for
    it; `tools` is where setup-python's links go, `runner_tool_cache` the hosted image's tool cache
    (RUNNER_TOOL_CACHE)."""

    def __init__(self, *, state: Path, cache_root: Path, runner_tool_cache: Path, tools: Path, home: Path,
                 run_id: str, chown, popen: dict | None = None, log: Path | None = None):
        super().__init__(state, popen, prepare_file=chown, log=log)
        self.cache_root, self.runner_tool_cache, self.tools = cache_root, runner_tool_cache, tools
        self.home, self.run_id, self.chown = home, run_id, chown
        self.handlers = {"actions/setup-python": self.setup_python, "actions/setup-go": self.setup_go,
                         "actions/cache/restore": self.cache_restore, "actions/cache/save": self.cache_save,
                         "actions/upload-artifact": self.upload_artifact}

    def say(self, step: Step, text: str) -> None:
        line = f"[{step.uses}] {text}"
        print(line, flush=True)
        if self.log:
            with open(self.log, "a") as f:
                f.write(line + "\n")

    def uses_step(self, step: Step, with_: dict[str, str], env: dict[str, str]) -> tuple[bool, StepIO]:
        try:
            return True, self.handlers[step.uses](step, with_)
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            self.say(step, f"failed: {' '.join(str(e).split())}")
            return False, StepIO()

    # --- setup-python, setup-go ------------------------------------------------------------------------------------

    def setup_python(self, step: Step, with_: dict[str, str]) -> StepIO:
        want = tuple(int(x) for x in with_.get("python-version", "3").split(".")[:2])
        found = []
        for exe in PYTHONS:
            if not os.access(exe, os.X_OK):
                continue
            r = subprocess.run([exe, "-c", "import sys, venv, ensurepip; print('%d.%d.%d' % sys.version_info[:3])"],
                               capture_output=True, text=True)
            found.append(f"{exe} {r.stdout.strip() or '(no venv/ensurepip)'}")
            if r.returncode == 0 and tuple(int(x) for x in r.stdout.split(".")[:2]) >= want:
                bindir = self.tools / "python" / "bin"
                bindir.mkdir(parents=True, exist_ok=True)
                for name in ("python", "python3"):
                    (bindir / name).unlink(missing_ok=True)
                    (bindir / name).symlink_to(exe)
                self.say(step, f"python {r.stdout.strip()} ({exe}) first on PATH")
                return StepIO(outputs={"python-version": r.stdout.strip(), "python-path": str(bindir / "python")},
                              path=[str(bindir)])
        raise ValueError(f"no python3 >= {'.'.join(map(str, want))} with venv on this machine "
                         f"({'; '.join(found) or 'none'}); a hosted runner downloads one: install it (Debian: python3 "
                         "python3-venv) and retry")

    def setup_go(self, step: Step, with_: dict[str, str]) -> StepIO:
        spec = with_.get("go-version", "").strip()
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", spec):
            raise ValueError(f"go-version {spec!r}: the simulation takes MAJOR.MINOR[.PATCH]")
        root = self.runner_tool_cache / "go"
        have = [d.name for d in root.glob("*") if (d / "x64" / "bin" / "go").is_file() and _matches(d.name, spec)]
        if have:
            version = max(have, key=_version_key)
            self.say(step, f"go {version} from the runner's tool cache")
        else:
            version = self.fetch_go(step, spec, root)
        goroot = root / version / "x64"
        return StepIO(outputs={"go-version": version}, path=[str(goroot / "bin"), str(self.home / "go" / "bin")])

    def fetch_go(self, step: Step, spec: str, root: Path) -> str:
        proxy = next((p for p in os.environ.get("GOPROXY", "").split(",") if p.startswith("http")),
                     "https://proxy.golang.org").rstrip("/")
        with urllib.request.urlopen(f"{proxy}/golang.org/toolchain/@v/list", timeout=60) as r:
            listed = r.read().decode().split()
        suffix = f".linux-{GOARCH}"
        versions = [v.removeprefix("v0.0.1-go").removesuffix(suffix) for v in listed
                    if v.startswith("v0.0.1-go") and v.endswith(suffix)]
        versions = [v for v in versions if re.fullmatch(r"\d+\.\d+(\.\d+)?", v) and _matches(v, spec)]
        if not versions:
            raise ValueError(f"the Go module proxy ({proxy}) serves no go{spec} toolchain for linux-{GOARCH}")
        version = max(versions, key=_version_key)
        mod = f"v0.0.1-go{version}{suffix}"
        self.say(step, f"go {version}: fetching golang.org/toolchain@{mod} into the runner's tool cache")
        dest, tmp = root / version / "x64", root / version / "x64.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = tmp.with_suffix(".zip")
        urllib.request.urlretrieve(f"{proxy}/golang.org/toolchain/@v/{mod}.zip", archive)
        prefix = f"golang.org/toolchain@{mod}/"
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if info.filename.startswith(prefix) and not info.is_dir():
                    rel = info.filename[len(prefix):]
                    target = tmp / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
                    # a module zip keeps no modes: the toolchain's programs are bin/* and pkg/tool/*/* (as go sets)
                    executable = rel.startswith("bin/") or re.match(r"pkg/tool/[^/]+/[^/]+$", rel)
                    target.chmod(0o755 if executable else 0o644)
        archive.unlink()
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        (root / version / "x64.complete").touch()
        os.chmod(root, 0o755)
        return version

    # --- cache, artifacts -----------------------------------------------------------------------------------------

    def _paths(self, with_: dict[str, str]) -> list[Path]:
        return [Path(os.path.expanduser(p.replace("~", str(self.home), 1) if p.startswith("~") else p))
                for p in lines(with_.get("path", ""))]

    def cache_restore(self, step: Step, with_: dict[str, str]) -> StepIO:
        store, key = self.cache_root / "actions-cache", with_["key"]
        entry, hit = store / key, True
        if not (entry / "meta.json").is_file():
            hit = False
            prefixes = lines(with_.get("restore-keys", ""))
            candidates = [d for d in store.glob("*") if (d / "meta.json").is_file()
                          and any(d.name.startswith(p) for p in prefixes)]
            entry = max(candidates, key=lambda d: (d / "meta.json").stat().st_mtime) if candidates else None
        if entry is None:
            self.say(step, f"cache not found for key {key}")
            return StepIO(outputs={"cache-hit": "false", "cache-primary-key": key})
        saved = json.loads((entry / "meta.json").read_text())["paths"]
        for path in self._paths(with_):
            if str(path) not in saved:
                continue
            src = entry / str(saved.index(str(path)))
            path.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cp", "-a", f"{src}/.", str(path)], check=True)
            self.chown(path, recursive=True)
        self.say(step, f"restored {entry.name} ({'exact key' if hit else 'restore-keys match'})")
        return StepIO(outputs={"cache-hit": "true" if hit else "false", "cache-primary-key": key,
                               "cache-matched-key": entry.name})

    def cache_save(self, step: Step, with_: dict[str, str]) -> StepIO:
        store, key = self.cache_root / "actions-cache", with_["key"]
        entry = store / key
        if (entry / "meta.json").is_file():
            self.say(step, f"warning: cache entry {key} exists already; not saved (as GitHub: keys are immutable)")
            return StepIO()
        tmp = store / f".{key}.{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        paths = [p for p in self._paths(with_) if p.exists()]
        for i, path in enumerate(paths):
            (tmp / str(i)).mkdir(parents=True)
            subprocess.run(["cp", "-a", f"{path}/.", str(tmp / str(i))], check=True)
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "meta.json").write_text(json.dumps({"paths": [str(p) for p in paths], "saved": time.time()}))
        tmp.rename(entry)
        size = subprocess.run(["du", "-sh", str(entry)], capture_output=True, text=True).stdout.split()[:1]
        self.say(step, f"saved {key} ({size[0] if size else '?'})")
        return StepIO()

    def upload_artifact(self, step: Step, with_: dict[str, str]) -> StepIO:
        matches = sorted({Path(m) for pattern in lines(with_.get("path", "")) for m in glob.glob(pattern)})
        dest = self.cache_root / "artifacts" / self.run_id / with_.get("name", "artifact")
        if not matches:
            self.say(step, f"warning: no files found for {with_.get('path', '').strip()}; nothing uploaded")
            return StepIO()
        base = Path(os.path.commonpath([m.parent for m in matches]))
        for m in matches:
            target = dest / m.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if m.is_dir() else shutil.copy2)(m, target)
        self.say(step, f"uploaded {len(matches)} path(s) to {dest}")
        return StepIO(outputs={"artifact-path": str(dest)})


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _matches(version: str, spec: str) -> bool:
    """Whether `version` (1.26.8) is what `spec` (1.26, or 1.26.8) asks for."""
    return version == spec or version.startswith(spec + ".")
