"""Which sandbox layers this host allows, each tried for real on a trivial child under the
supervisor: namespaces through util-linux `unshare` (inside a user namespace of the run's own
for a caller who is not root), another uid or a capability drop, the seccomp filter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .env import BASELINE_UID, NOBODY, Role
from .paths import import_paths
from .spec import INIT, Layers, child_spec


def _runs(cmd: list[str], **kw: object) -> str:
    """'' when `cmd` exits 0 within 10 s, else the reason (its last stderr line)."""
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=10, stdin=subprocess.DEVNULL, **kw)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    if p.returncode == 0:
        return ""
    lines = (p.stderr or p.stdout or b"").decode(errors="replace").strip().splitlines()
    return lines[-1][:200] if lines else f"exit code {p.returncode}"


def _probe_init(prefix: list[str], uid: int | None, caps: bool, mount: bool, code: str,
                seccomp: bool = False) -> str:
    """Run the supervisor once with one layer on, on a trivial child: '' when it works."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kernelskill-probe-") as tmp:
        if uid is not None:
            os.chown(tmp, uid, uid)
        r, w = os.pipe()
        try:
            # Unprivileged, as `uid` (that uid) or `caps` (uid 0 without capabilities) allow.
            role = Role("probe", uid if uid is not None else NOBODY, False, seccomp, False)
            spec = child_spec(Layers(uid=uid, drop_caps=caps, seccomp=seccomp), tmp, w, {}, mount, role=role)
            return _runs([*prefix, sys.executable, "-I", "-S", INIT, spec, "--", sys.executable, "-I",
                          "-S", "-c", code], cwd=tmp, pass_fds=(w,))
        finally:
            for fd in (r, w):
                os.close(fd)


def probe_layers(userns: bool) -> Layers:
    """The layers this host allows, tried for real; `userns`: the namespaces inside a user
    namespace of the run's own (the unprivileged way; root may ask for it too, which tests do)."""
    missing: dict[str, str] = {}
    namespaces: set[str] = set()
    exe = shutil.which("unshare")
    if exe is None:
        missing.update(dict.fromkeys(("net", "pid", "mount"), "util-linux `unshare` not on PATH"))
    elif "--kill-child" not in _runs_out([exe, "--help"]):
        old = "`unshare` lacks --kill-child (util-linux < 2.32)"
        missing.update(dict.fromkeys(("net", "pid", "mount"), old))
    else:
        user = ["--user", "--map-root-user"] if userns else []
        tries = {"net": ["--net"], "pid": ["--pid", "--fork", "--kill-child"], "mount": ["--mount"]}
        for name, flags in tries.items():
            flags = [*user, *flags]
            why = _runs([exe, *flags, "true"])
            if why:
                missing[name] = f"unshare {' '.join(flags)}: {why}"
            else:
                namespaces.add(name)
    # The combination a child gets, tried as a whole (a fresh /proc can be refused where /proc
    # has masked entries; a read-only remount where a mount is locked): drop layers until it runs.
    for layer in ("pid", "mount", "net"):
        prefix = Layers(namespaces=frozenset(namespaces), userns=userns).unshare_prefix()
        if not namespaces or not (why := _probe_init(prefix, None, False, "mount" in namespaces, "pass")):
            break
        if layer in namespaces:
            namespaces.discard(layer)
            missing[layer] = f"the supervisor failed under {' '.join(prefix[1:])}: {why}"
    uid, caps = None, False
    userns = userns and bool(namespaces)
    if userns:  # uid 0 there, with every capability of the namespace: dropped, as for root
        missing["uid"] = "not root: the child runs as the current user (uid 0 of its user namespace)"
        prefix = Layers(namespaces=frozenset(namespaces), userns=True).unshare_prefix()
        if why := _probe_init(prefix, None, True, False, "pass"):
            missing["caps"] = f"capability drop in the user namespace failed: {why}"
        else:
            caps = True
    elif os.geteuid() != 0:
        missing["uid"] = missing["caps"] = "not root: the child runs as the current user already"
    else:
        check = f"import os; paths = {import_paths()!r}; [os.listdir(p) for p in paths if os.path.isdir(p)]"
        if why := _probe_init([], NOBODY, False, False, check) or \
                _probe_init([], BASELINE_UID, False, False, check):
            missing["uid"] = f"uids {NOBODY}/{BASELINE_UID} cannot use the interpreter or the packages: {why}"
            if why := _probe_init([], None, True, False, "pass"):
                missing["caps"] = f"capability drop failed: {why}"
            else:
                caps = True
        else:
            uid = NOBODY
            missing["caps"] = f"not needed: uid {NOBODY} holds none"
    if why := _seccomp_why():
        missing["seccomp"] = why
    return Layers(frozenset(namespaces), uid, caps, not why, missing, userns)


_SOCKET_REFUSED = ("import socket, sys\ntry:\n    socket.socket(socket.AF_INET)\nexcept PermissionError:\n"
                   "    sys.exit(0)\nsys.exit('a new network socket was still allowed')")


def _seccomp_why() -> str:
    """'' when the filter installs and refuses a new socket in a trivial child, else why not."""
    from .seccomp import supported
    return supported() or _probe_init([], None, False, False, _SOCKET_REFUSED, seccomp=True)


def _runs_out(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=10, text=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
