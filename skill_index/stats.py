"""Experience statistics: how each skill and variant fared per (kernel structure, device),
persisted as JSON.

Every finished attempt calls `record_outcome`. A *win* is a correct candidate faster than the
previous best (speedup > 1.0); the mean gain is the geometric mean of the speedups of correct
attempts. Timings from the CPU (Triton's interpreter) are never gains: a CPU attempt counts as a
try only, and CPU rows of older files are read the same way, so a CPU smoke run cannot change what
the planner picks on a GPU. The file is re-read under a lock before each update and replaced
atomically (write a temp file, then rename), so parallel runs and crashes never leave it
half-written. Files written before variants existed load unchanged (their rows have variant '').
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from ..state.vocab import Structure

try:  # POSIX advisory lock; elsewhere the atomic rename alone still prevents torn files
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


CPU = "cpu"
"""The device name of attempts timed on the CPU: tries only, never gains."""


class StatRecord(BaseModel):
    """Counts for one (skill, variant, structure, device)."""

    skill_id: str
    structure: Structure
    gpu: str = Field(description="GPU name, or 'cpu' (interpreter: tries only)")
    variant: str = Field(default="", description="The variant's parameters as canonical JSON ('{}': the "
                         "default); '' in rows written before variants were recorded")
    tries: int = 0
    wins: int = 0
    gains: int = Field(default=0, description="Correct attempts with a measured speedup")
    log_gain_sum: float = Field(default=0.0, description="Sum of ln(speedup) over those attempts")

    @property
    def timed(self) -> bool:
        """Were its timings measured on a GPU (so its wins and gains count)?"""
        return self.gpu != CPU

    @property
    def mean_gain(self) -> float | None:
        return math.exp(self.log_gain_sum / self.gains) if self.gains and self.timed else None


class StatsFile(BaseModel):
    version: int = 1
    records: list[StatRecord] = Field(default_factory=list)


@dataclass(frozen=True)
class Experience:
    """A skill's record summed over the structures (and GPU) a query cares about."""

    tries: int = 0
    wins: int = 0
    mean_gain: float | None = None
    scope: str = ""  # e.g. "row-reduction" or "all structures"
    devices: tuple[str, ...] = ()
    """Where the counted tries ran (GPU names; 'cpu' tries count no wins or gains)."""
    untimed: int = 0
    """Tries timed on the CPU: in `tries`, never wins or gains."""

    def describe(self) -> str:
        if not self.tries:
            return f"no history on {self.scope}"
        gain = f", mean gain {self.mean_gain:.2f}x" if self.mean_gain is not None else ""
        timed = self.tries - self.untimed
        cpu = f" (+{self.untimed} CPU tries, no timing)" if self.untimed else ""
        where = f" [from {', '.join(self.devices)}]" if self.devices else ""
        return f"{self.wins}/{timed} wins on {self.scope}{gain}{cpu}{where}"


class ExperienceStats:
    """The JSON-backed table. Reads are cached; `record_outcome` reloads, updates and rewrites."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: StatsFile | None = None

    def _load(self) -> StatsFile:
        try:
            return StatsFile.model_validate_json(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return StatsFile()
        except ValueError as exc:  # corrupt or foreign file: say which, never silently reset it
            raise ValueError(f"{self.path}: unreadable skill statistics ({str(exc).splitlines()[0]}); "
                             "move it away to start fresh") from None

    def records(self) -> list[StatRecord]:
        if self._data is None:
            self._data = self._load()
        return list(self._data.records)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fcntl is None:  # pragma: no cover
            yield
            return
        with open(self.path.with_suffix(self.path.suffix + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, data: StatsFile) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data.model_dump(mode="json"), f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def record_outcome(self, skill_id: str, structure: str, gpu: str, speedup: float | None,
                       correct: bool, variant: str = "") -> StatRecord:
        """Count one finished attempt of `skill_id` (and `variant`, canonical JSON); speedup is over
        the previous best (None: not timed). On the CPU (`gpu` 'cpu') it is a try only."""
        with self._locked():
            data = self._load()
            key = (skill_id, structure, gpu, variant)
            rec = next((r for r in data.records if (r.skill_id, r.structure, r.gpu, r.variant) == key), None)
            if rec is None:
                rec = StatRecord(skill_id=skill_id, structure=structure, gpu=gpu, variant=variant)
                data.records.append(rec)
            rec.tries += 1
            if rec.timed and correct and speedup is not None and speedup > 0:
                rec.gains += 1
                rec.log_gain_sum += math.log(speedup)
                if speedup > 1.0:
                    rec.wins += 1
            data.records.sort(key=lambda r: (r.skill_id, r.structure, r.gpu, r.variant))
            self._write(data)
            self._data = data
            return rec

    def experience(self, skill_id: str | None, structures: Iterable[str] = (), gpu: str | None = None,
                   variant: str | None = None) -> Experience:
        """Sum a skill's records (every skill's when None) over `structures` (all when empty) on
        `gpu` (all when None), for one `variant` (canonical JSON; all when None). CPU rows add
        tries, never wins or gains."""
        wanted = set(structures)
        rows = [r for r in self.records() if (skill_id is None or r.skill_id == skill_id)
                and (not wanted or r.structure in wanted) and (gpu is None or r.gpu in (gpu, CPU))
                and (variant is None or r.variant == variant)]
        scope = ", ".join(sorted(wanted)) if wanted else "all structures"
        if gpu is not None:
            scope += f" on {gpu}"
        timed = [r for r in rows if r.timed]
        gains = sum(r.gains for r in timed)
        mean = math.exp(sum(r.log_gain_sum for r in timed) / gains) if gains else None
        return Experience(tries=sum(r.tries for r in rows), wins=sum(r.wins for r in timed),
                          mean_gain=mean, scope=scope, devices=tuple(sorted({r.gpu for r in rows})),
                          untimed=sum(r.tries for r in rows if not r.timed))
