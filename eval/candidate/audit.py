"""Run-time audit hook (PEP 578) behind the static allowlist, active only while candidate code runs.

`install()` adds one hook to the process (a hook cannot be removed, so it is cheap while off: one
flag read). The worker enters `guard(...)` around the candidate's import, construction and forwards
(`Guard.wrap(model)` enters it on every call), never around the reference or the baselines. Inside:
- always blocked: shell commands and exec (os.system, os.exec*, os.spawn*), network (socket connect,
  bind, sendto, name lookups, http/ftp/smtp), gc.get_objects/get_referrers/get_referents, frames of
  other threads, sys.settrace/setprofile, sys.addaudithook, rlimit changes, input/breakpoint;
- blocked when the CALLER is candidate code (torch, triton and the evaluator legitimately compile with
  ptxas and a C compiler, read `fn.__code__` and import lazily). Candidate code is any frame outside
  the standard library, the site-packages folders and this package: the candidate's file, and also
  code it had a library generate from text ("<string>"). For OS effects (BY_CALLER: processes, fork,
  kill, ctypes, environment and cwd changes, threads, marshal/pickle loads, imports outside
  static.allow.ALLOWED_ROOTS) the caller is the first frame outside the standard library: subprocess
  or pathlib acting for the candidate is the candidate. For introspection (BY_CODE: sys._getframe,
  audited attribute reads such as tb_frame or __code__, code and function construction) it is the
  innermost frame: namedtuple and typing read their caller's frame, harmlessly;
- code from text: `exec` and `compile` only at the sites where the library builds code for itself
  (EXEC_SITES: dataclasses' and namedtuple's methods, typing's forward references, ast.parse,
  Triton's argument binder and interpreter, which kernel_pin.py verifies), by library code while a
  module it belongs to is imported (the import was judged), or of a code object compiled under the
  candidate's own file name (its module, compiled before the guard). So `exec` handed to a library as
  a callback (a tree-map, a hook) runs nothing;
- by path, whoever the caller: writes (open for writing, os.remove/rename/mkdir/chmod..., shutil) only
  under the scratch folder, the temporary folder (Triton's compiler writes there) minus the worker's own
  files, and Triton's and Inductor's caches (there by library code only: a kernel the candidate put
  there would run unchecked); reads of the problem file, the problem suite and the user's home / XDG
  folders (secrets, the skill library and its statistics), except the Python installation and caches;
- paths the policy cannot resolve: from the candidate, relative paths and directory descriptors
  (`os.open(name, dir_fd=fd)`, os.fwalk: the "open" event does not carry dir_fd); from anyone, path
  objects of types other than str, bytes and pathlib's (the hook would run their `__fspath__`).
A blocked event raises `Violation` (a BaseException, so a candidate's `except Exception` cannot swallow
it, and the guard re-raises it on exit even if something did): the worker's rejection, check 'audit'
(or 'kernel_changed', raised through `flag` by kernel_pin.py). The integrity check a guard runs as it
ends (`after`) runs inside it: it reads objects the candidate may have replaced. The hook's state
lives in closures; reaching it takes the reflective access the static checks reject and the hook
blocks (frames, gc). What stays open: a Python 3.11 type attribute write is not an audit event
(integrity.py catches the patches that matter), nor is reading `__globals__` or `__closure__`.
"""

from __future__ import annotations

import getpass
import os
import pathlib
import sys
import sysconfig
import tempfile
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..static.allow import ALLOWED_ROOTS
from .audit_events import (
    _BY_CALLER_PREFIXES,
    _WRITE_FLAGS,
    ALWAYS,
    BY_CALLER,
    BY_CODE,
    EXEC_SITES,
    PATHS,
    WRITES,
)


class Violation(BaseException):  # noqa: N818 (a verdict, not an error of the evaluator)
    """Candidate code did something the evaluator forbids; `check` is 'audit', 'integrity' or
    'kernel_changed'. Final, and holding plain strings only: the candidate process formats it
    outside the guard, so neither a subclass nor a message object of the candidate's may run there."""

    def __init__(self, check: str, message: str):
        message = message if type(message) is str else "audit: a violation with an unprintable message"
        super().__init__(message)
        self._fields = (check if type(check) is str else "audit", message)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("Violation is final")

    @property
    def check(self) -> str:
        fields = self.__dict__.get("_fields")
        return fields[0] if type(fields) is tuple and type(fields[0]) is str else "audit"

    def __str__(self) -> str:
        fields = self.__dict__.get("_fields")
        return fields[1] if type(fields) is tuple and type(fields[1]) is str else "audit: a violation"


def _roots(*paths: str | os.PathLike | None) -> tuple[str, ...]:
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any((path + os.sep).startswith(r) for r in roots)


def _triton_home() -> str:
    return os.path.join(os.environ.get("TRITON_HOME") or os.path.expanduser("~"), ".triton")


def _caches() -> tuple[str | None, ...]:
    """Triton's home (cache, dumps) and Inductor's cache, where torch.compile puts it by default."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no user name: Inductor's folder is then its own business
        user = None
    inductor = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or (
        os.path.join(tempfile.gettempdir(), f"torchinductor_{user}") if user else None)
    return (_triton_home(), os.environ.get("TRITON_CACHE_DIR"), inductor)


class _Policy:
    """Where a guarded run may write and read; fixed when the guard is made."""

    def __init__(self, scratch: Path, worker_dir: Path | None, problem_file: str | None):
        self.scratch = _roots(scratch)
        self.worker_dir = os.path.realpath(worker_dir) if worker_dir else None
        self.caches = _roots(*_caches())
        self.own = self.scratch + self.caches  # writable even inside a private folder
        self.writable = self.own + _roots(tempfile.gettempdir())
        home = os.path.expanduser("~")
        xdg = [os.environ.get(k) for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")]
        self.private = _roots(home, *xdg, Path(__file__).resolve().parents[2] / "problems")
        self.readable = self.own + _roots(sys.prefix, sys.base_prefix, sys.exec_prefix,
                                          *(p for p in sys.path if "-packages" in p))
        problem = os.path.realpath(problem_file) if problem_file and os.path.isfile(problem_file) else None
        self.problem = problem

    def write_refused(self, path: str) -> bool:
        if path == os.devnull:  # Triton's compiler sends ptxas's output there (seen on an H200)
            return False
        if self.worker_dir and os.path.dirname(path) == self.worker_dir and not _under(path, self.own):
            return True  # the worker's request, progress and result files: never the candidate's
        return not _under(path, self.writable) or (_under(path, self.private) and not _under(path, self.own))

    def read_refused(self, path: str) -> bool:
        return path == self.problem or (_under(path, self.private) and not _under(path, self.readable))


_STDLIB = _roots(sysconfig.get_paths()["stdlib"])
# Where trusted code lives: the standard library, the installed packages, this package. A frame from
# anywhere else (the candidate's file, "<string>", a path the candidate made up) is the candidate's.
_TRUSTED_DIRS = (sysconfig.get_paths()["stdlib"], os.path.dirname(os.path.abspath(__file__)),
                 *(p for p in sys.path if "-packages" in p and os.path.isabs(p)))
_TRUSTED = _roots(*_TRUSTED_DIRS) + tuple(os.path.normpath(p) + os.sep for p in _TRUSTED_DIRS)  # as found too
_PATH_TYPES = (pathlib.PurePosixPath, pathlib.PosixPath, pathlib.PureWindowsPath)
_ODD = object()  # a path argument of the candidate's own type: the hook will not run its __fspath__


def _is_library(filename: str) -> bool:
    return filename.startswith("<frozen ") or (_under(filename, _STDLIB) and "-packages" not in filename)


def _is_trusted(filename: str) -> bool:
    return filename.startswith("<frozen ") or (os.path.isabs(filename) and _under(filename, _TRUSTED))


def _make() -> tuple[Callable[..., Any], ...]:
    """The hook and the guard's enter / leave / flag / guarded, sharing one closure (no module
    global to flip)."""
    state: dict[str, Any] = {"depth": 0, "policy": None, "candidate": None, "violation": None}
    local = threading.local()  # the hook's own frame walk raises events: no re-entry

    def untrusted(filename: str) -> bool:
        return filename == state["candidate"] or not _is_trusted(filename)

    def caller_is_candidate(importing: bool = False, innermost: bool = False) -> bool:
        """Is the innermost non-stdlib frame (`innermost`: the innermost frame) candidate code? An
        event raised by the import machinery (reading a .pyc, exec of a module body) belongs to an
        import whose 'import' event was judged."""
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<frozen importlib") and not importing:
                return False
            if name != __file__ and (innermost or not _is_library(name)):
                return untrusted(name)
            frame = frame.f_back
        return False

    def exec_allowed(event: str, args: tuple) -> bool:
        code = args[0] if args else None
        if event == "exec" and type(code) is types.CodeType and code.co_filename == state["candidate"]:
            return True  # the candidate's own module, compiled from the checked source before the guard
        frame = sys._getframe(3)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        if frame is None:
            return False
        name, func = frame.f_code.co_filename, frame.f_code.co_name
        if _is_trusted(name) and any(name.endswith(f) and func == fn for f, fn in EXEC_SITES):
            return True
        # An import judged as such, with only library code since: a module body, or code its library
        # runs as it loads (mpmath execs its arithmetic when sympy, which torch loads lazily, imports it).
        while frame is not None and _is_trusted(frame.f_code.co_filename):
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                return True
            frame = frame.f_back
        return False

    def refuse(event: str, why: str) -> None:
        flag("audit", f"audit: the candidate {why} ({event})")

    def flag(check: str, message: str) -> None:
        """Record a violation (a guard that ends rejects even if something caught it) and raise it."""
        if state["depth"] and state["violation"] is None:
            state["violation"] = (check, message)
        raise Violation(check, message)

    def path_of(arg: object) -> object:
        """The real path an event names (a relative one against the working folder); None for a
        file descriptor; _ODD for an object of the candidate's own type, whose __fspath__ the hook
        will not run."""
        t = type(arg)
        if t is int:
            return None
        if t is str or t is bytes:
            return os.path.realpath(os.fsdecode(arg))
        return os.path.realpath(str(arg)) if t in _PATH_TYPES else _ODD

    def relative(arg: object) -> bool:
        t = type(arg)
        return (t is str or t is bytes) and not os.path.isabs(os.fsdecode(arg))

    def hook(event: str, args: tuple) -> None:
        if not state["depth"] or getattr(local, "busy", False):
            return
        local.busy = True
        try:  # sys.audit takes a str subclass too: its methods would run here, unaudited
            decide(event, args) if type(event) is str else refuse("sys.audit", "raised an event of its own")
        finally:
            local.busy = False

    def check_paths(event: str, args: tuple) -> None:
        """What the policy below cannot resolve: a path object of the candidate's type; from the
        candidate (a library it calls included), a directory descriptor or a relative path (which a
        descriptor may anchor: the "open" event does not carry dir_fd), or a descriptor listed."""
        paths, dir_fds = PATHS[event]
        named = [args[i] for i in paths if len(args) > i]
        if any(path_of(a) is _ODD for a in named):
            refuse(event, "named a path by an object of its own type")
        fd_based = any(len(args) > i and args[i] is not None and not (type(args[i]) is int and args[i] == -1)
                       for i in dir_fds) or (event != "open" and any(type(a) is int for a in named))
        rel = [os.fsdecode(a) for a in named if relative(a)]
        if (fd_based or rel or any(a is None for a in named)) and caller_is_candidate():
            refuse(event, f"named {rel[0] if rel else 'a file'} relative to a folder the hook cannot see "
                          "(a relative path, a directory descriptor)")

    def check_write(event: str, path: str, what: str) -> None:
        policy: _Policy = state["policy"]
        if policy.write_refused(path):
            refuse(event, what.format(path) + ", outside its scratch folder")
        if _under(path, policy.caches) and caller_is_candidate():  # Triton's to write, never the candidate's
            refuse(event, what.format(path) + " in a compile cache, where a kernel would run unchecked")

    def decide(event: str, args: tuple) -> None:
        policy: _Policy = state["policy"]
        if event in PATHS:
            check_paths(event, args)
        if event in ALWAYS or event.startswith("os.exec") or event.startswith("os.spawn"):
            refuse(event, "tried a forbidden operation")
        elif event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            p = path_of(path)
            writes = (type(mode) is str and any(c in mode for c in "wax+")) or (
                mode is None and type(flags) is int and flags & _WRITE_FLAGS)
            if type(p) is str and writes:
                check_write(event, p, "opened {} for writing")
            if type(p) is str and not writes and policy.read_refused(p):
                refuse(event, f"read {p}, a file the candidate must not see")
        elif event in WRITES:
            for i in WRITES[event]:
                if len(args) > i and type(p := path_of(args[i])) is str:
                    check_write(event, p, "changed {}")
        elif event == "import":
            name = args[0] if args and type(args[0]) is str else ""
            if name.split(".")[0] not in ALLOWED_ROOTS and caller_is_candidate(importing=True):
                refuse(event, f"imported {name or 'a module'}, outside the allowed modules")
        elif event in ("exec", "compile"):
            if not exec_allowed(event, args):
                refuse(event, "ran code made from text (exec, eval, compile), or had a library run it")
        elif (event in BY_CALLER or event.startswith(_BY_CALLER_PREFIXES)) and caller_is_candidate():
            refuse(event, "reached the OS")
        elif event in BY_CODE and caller_is_candidate(innermost=True):
            refuse(event, "reached the interpreter's internals")

    def enter(policy: _Policy, candidate_file: str) -> None:
        state["policy"], state["candidate"] = policy, candidate_file
        state["depth"] += 1

    def leave() -> tuple[str, str] | None:
        """Back out of one guarded stretch; the violation seen in it (even one something caught)."""
        state["depth"] -= 1
        seen, state["violation"] = state["violation"], None
        return seen

    def guarded() -> bool:
        return state["depth"] > 0

    return hook, enter, leave, flag, guarded


_hook, _enter, _leave, flag, guarded = _make()
_installed: list[bool] = []


def install() -> None:
    """Add the hook once per process (idempotent); it does nothing until a guard is entered."""
    if not _installed:
        sys.addaudithook(_hook)
        _installed.append(True)


class Guard:
    """The guard of one evaluation: `with g:` around candidate code; `g.wrap(model)` for forwards.
    Entering is a few assignments (the policy's paths are resolved once, here): forwards are timed."""

    def __init__(self, scratch: Path, candidate_file: str, worker_dir: Path | None = None,
                 problem_file: str | None = None, after: Callable[[], None] | None = None):
        install()
        self.policy = _Policy(scratch, worker_dir, problem_file)
        self.candidate_file = candidate_file
        self.after = after  # a quick integrity check, run as each guarded stretch ends

    def __enter__(self) -> Guard:
        _enter(self.policy, self.candidate_file)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.after is not None:  # inside the guard: it reads what the candidate may have replaced
                self.after()
        finally:
            seen = _leave()
            if seen is not None:  # raised even where candidate or library code caught the first one
                raise Violation(*seen)  # noqa: B012 (the violation outranks any exception)

    def wrap(self, obj: Any) -> Any:
        return _Guarded(obj, self)


def error_line(e: BaseException, g: Guard) -> str:
    """`Type: message` of an exception candidate code raised, in one line: formatted inside the guard
    (its __str__, even its class's __name__, may be the candidate's code), handed out as plain text."""
    text: object = "an exception that could not be printed"
    with g:
        try:
            text = f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"
        except Violation:
            raise
        except BaseException:  # noqa: BLE001, S110 (a message that cannot be made is no verdict)
            pass
    return text if type(text) is str else "an exception that could not be printed"


def guard(scratch: Path, candidate_file: str, **kw: Any) -> Guard:
    """A context manager under which candidate code runs audited (see Guard)."""
    return Guard(scratch, candidate_file, **kw)


class _Guarded:
    """A candidate model whose calls (and method calls: parameters() may be overridden) run guarded."""

    def __init__(self, obj: Any, guard: Guard):
        self._obj, self._g = obj, guard

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _enter(self._g.policy, self._g.candidate_file)  # Guard.__enter__/__exit__ inlined: timed path
        try:
            try:
                return self._obj(*args, **kwargs)
            finally:
                if self._g.after is not None:
                    self._g.after()
        finally:
            seen = _leave()
            if seen is not None:
                raise Violation(*seen)  # noqa: B012 (the violation outranks any exception)

    def __getattr__(self, name: str) -> Any:
        with self._g:  # the candidate's own __getattr__ or property may answer
            value = getattr(self._obj, name)
            wrapped = callable(value)
        return _Guarded(value, self._g) if wrapped else value
