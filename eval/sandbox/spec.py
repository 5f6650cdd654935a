"""What one sandboxed child is started with: the host's layer set (`Layers`, probed by
host_probe.py) and the supervisor's spec for one child of a role (`child_spec`)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .env import ROLES, Role, _ready_caches
from .paths import hidden_paths, tmp_keep, view_masks

INIT = str(Path(__file__).with_name("supervisor.py"))
"""The supervisor every child starts under: `python -I -S INIT SPEC -- CMD...`."""


@dataclass(frozen=True)
class Layers:
    """What this host gives the sandbox: namespaces, uid, capability drop; and why not."""

    namespaces: frozenset[str] = frozenset()
    uid: int | None = None
    drop_caps: bool = False
    seccomp: bool = False
    missing: dict[str, str] = field(default_factory=dict)
    userns: bool = False
    """The namespaces come with a user namespace of the run's own, where the caller's uid is uid 0
    (`unshare --user --map-root-user`): how a user who is not root gets them."""

    def active(self) -> set[str]:
        """The optional layers in force (env and rlimits always are)."""
        return set(self.namespaces) | ({"uid"} if self.uid is not None else set()) | \
            ({"caps"} if self.drop_caps else set()) | ({"seccomp"} if self.seccomp else set())

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "namespaces": sorted(self.namespaces)})

    def identity(self, role: Role) -> tuple[int | None, bool]:
        """(the uid `role` runs as, whether it drops every capability) on this host: its uid where
        the uid layer works, else uid 0 without capabilities; the judge (no uid) keeps the caller's."""
        uid = role.uid if self.uid is not None else None
        return uid, self.drop_caps and role.uid is not None

    @staticmethod
    def from_json(text: str) -> Layers:
        d = json.loads(text)
        return Layers(frozenset(d["namespaces"]), d["uid"], d["drop_caps"], d["seccomp"], d["missing"],
                      bool(d.get("userns")))

    def unshare_prefix(self) -> list[str]:
        if not self.namespaces:
            return []
        flags = ["--user", "--map-root-user"] if self.userns else []
        flags += ["--fork", "--kill-child"]  # the namespace's PID 1 dies with `unshare`
        flags += ["--net"] if "net" in self.namespaces else []
        flags += ["--mount"] if "mount" in self.namespaces else []
        if "pid" in self.namespaces:
            flags += ["--pid", "--mount-proc"] if "mount" in self.namespaces else ["--pid"]
        return [shutil.which("unshare") or "unshare", *flags]


def child_spec(layers: Layers, scratch: str, status_fd: int, rlimits: dict, mount: bool,
          lifeline_fd: int | None = None, env: dict[str, str] | None = None,
          role: Role = ROLES["child"]) -> str:
    """The supervisor's spec (JSON) for one child of `role` under `layers`.

    A judge in a user namespace keeps /proc as its namespace mounted it: the kernel lets a
    namespace below it (its candidate's) mount a fresh /proc only while a whole one is in view,
    and read-only binds over /proc/sys would hide parts of it. Its knobs need no bind there: they
    check the global root uid, which a user namespace's uid 0 is not (the candidate's own /proc
    gets the binds as always)."""
    env = env if env is not None else dict(os.environ)
    uid, drop_caps = layers.identity(role)
    writable = _ready_caches(uid) if role.shared_caches else []
    return json.dumps({"scratch": scratch, "mount": mount, "hide": hidden_paths(),
                       "uid": uid, "masks": view_masks(env, role.minimal_view), "writable": writable,
                       "tmp_keep": tmp_keep(env, scratch, writable), "gid": uid,
                       "drop_caps": drop_caps,
                       "seccomp": layers.seccomp and role.seccomp,
                       "private_shm": mount and role.private_shm, "rlimits": rlimits,
                       "proc_read_only": not (layers.userns and role.uid is None),
                       "subreaper": "pid" not in layers.namespaces, "status_fd": status_fd,
                       "lifeline_fd": lifeline_fd})

