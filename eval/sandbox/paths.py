"""Which paths the sandbox's mount layer hides and which it keeps: computed by the evaluator and
handed to the supervisor (supervisor.py, which imports nothing of ours) in its spec.

- hidden: credentials and the user's kernelskill state, empty inside the namespace.
- home: the user's home is an empty tmpfs but for the folders the child imports from or finds
  through its environment, bound back read-only.
- /tmp: a private tmpfs, but for those folders when they live under /tmp (a checkout or a venv
  there), bound back read-only. Never /tmp itself, never a folder that holds the evaluator's
  scratch folders, never another run's scratch folder.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path

# Paths under the user's home that hold credentials or our own state; hidden inside the mount
# namespace (the rest of the file system is read-only there).
_HIDDEN_HOME = (".netrc", ".ssh", ".aws", ".config", ".gnupg", ".docker", ".kube", ".git-credentials",
                ".pypirc", ".npmrc", ".azure", ".cache/kernelskill", ".bash_history", ".python_history")

# Host secrets that root may read by file mode alone: password hashes, SSH host keys.
_HIDDEN_SYSTEM = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/sudoers.d")

TMP = "/tmp"
# Every scratch folder the evaluator makes (api: -eval-, sandbox: -probe-, judge_link:
# -candidate-) is a temp folder with this prefix.
SCRATCH_PREFIX = "kernelskill-"


def hidden_paths() -> list[str]:
    """What the child must not read or write: credentials, the user's kernelskill state."""
    home = Path.home()
    paths = [home / p for p in _HIDDEN_HOME]
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        paths.append(Path(xdg) / "kernelskill")
    if netrc := os.environ.get("NETRC"):
        paths.append(Path(netrc))
    paths += [Path(p) for p in _HIDDEN_SYSTEM]
    return list(dict.fromkeys(str(p) for p in paths))


def import_paths() -> list[str]:
    """Folders the child imports from: the interpreter's, torch's, triton's and kernelskill's."""
    paths = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    for name in ("torch", "triton", "numpy", "kernelskill"):
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            paths.extend(spec.submodule_search_locations)
    return list(dict.fromkeys(paths))


def _used_paths(env: dict[str, str]) -> set[str]:
    """import_paths() and every absolute path in the child's environment (PYTHONPATH, PATH,
    LD_LIBRARY_PATH, CUDA_HOME ...), each as written and with links resolved."""
    paths = [*import_paths(), *(part for v in env.values() for part in v.split(os.pathsep))]
    return {q for p in paths if os.path.isabs(p) for q in (os.path.abspath(p), os.path.realpath(p))}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def home_mask(env: dict[str, str]) -> tuple[str | None, list[str]]:
    """(the user's home, what stays visible in it): the folders the child imports from or finds
    through its environment, links resolved. No mask (None) when the home is / or itself inside
    one of those folders."""
    home = os.path.realpath(Path.home())
    keep = _used_paths(env)
    inside = sorted(p for p in keep if _inside(p, home))
    if home == "/" or not os.path.isdir(home) or any(_inside(home, p) for p in keep):
        return None, []
    return home, inside


def tmp_keep(env: dict[str, str], scratch: str, writable: Iterable[str] = ()) -> list[str]:
    """The folders under /tmp the child imports from or finds through its environment, to bind
    back read-only on its private /tmp. Left out: /tmp itself; the folder holding the scratch
    folders and any folder above it (it would show every other run's); any path inside another
    run's scratch folder; the child's own scratch and the shared compile caches (bound back
    writable on their own)."""
    own = os.path.realpath(scratch)
    runs = os.path.dirname(own)
    roots = {TMP, os.path.realpath(TMP)}
    bound = [own, *writable, *(os.path.realpath(w) for w in writable)]
    out = []
    for path in sorted(_used_paths(env)):
        if path in roots or not any(_inside(path, r) for r in roots) or _inside(runs, path):
            continue
        if any(_inside(path, b) for b in bound):
            continue
        if any(_inside(path, base) and os.path.relpath(path, base).split("/")[0].startswith(SCRATCH_PREFIX)
               for base in (runs, *roots)):
            continue  # another run's scratch folder
        out.append(path)
    return out



# Top-level folders a candidate process sees as they are (read-only): the system's. Every other
# one (/home, /root, /work, /srv, /mnt, /data ...) is empty for it but for the folders it imports
# from or finds through its environment: the user's projects, problems and earlier runs'
# solutions (a kept reference is the reference's own source) are not there to be read.
SYSTEM_TOP = frozenset({"usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "etc", "opt",
                        "dev", "proc", "sys", "run", "tmp", "boot"})
# /var is not among them: it holds daemons' Unix sockets (/var/lib/..., /var/tmp), which a
# candidate's seccomp filter leaves to the mount layer, and nothing a forward reads.
# What a candidate process imports of our package: the evaluator (candidate code imports nothing
# of ours: eval/static/allow.py). The rest of it (the bundled problems, tests, runs/) is hidden.
PACKAGE_KEEP = ("__init__.py", "eval")


def view_masks(env: dict[str, str], minimal: bool) -> list[tuple[str, list[str]]]:
    """(folder, what stays visible in it) for the supervisor to mask: the user's home always
    (home_mask); with `minimal` (a candidate process) also every non-system top-level folder and
    our package's own folder, each but for what the child imports from or finds through env."""
    home, keep = home_mask(env)
    masks = [(home, keep)] if home else []
    if not minimal:
        return masks
    used = _used_paths(env)
    for name in sorted(os.listdir("/")):
        top = "/" + name
        if name in SYSTEM_TOP or os.path.islink(top) or not os.path.isdir(top) or top == home:
            continue
        masks.append((top, sorted(p for p in used if _inside(p, top))))
    spec = importlib.util.find_spec("kernelskill")
    for pkg in (spec.submodule_search_locations or []) if spec else []:
        pkg = os.path.realpath(pkg)
        inside = [p for p in used if _inside(p, pkg) and p != pkg]
        masks.append((pkg, sorted({*inside, *(os.path.join(pkg, k) for k in PACKAGE_KEEP)})))
    return masks
