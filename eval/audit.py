"""Run-time audit hook (PEP 578) behind the static allowlist, active only while candidate code runs.

`install()` adds one hook to the process (a hook cannot be removed, so it is cheap while off: one
flag read). The worker enters `guard(...)` around the candidate's import, construction and forwards
(`Guard.wrap(model)` enters it on every call), never around the reference or the baselines. Inside:
- always blocked: shell commands and exec (os.system, os.exec*, os.spawn*), network (socket connect,
  bind, sendto, name lookups, http/ftp/smtp), gc.get_objects/get_referrers/get_referents, frames of
  other threads, sys.settrace/setprofile, sys.addaudithook, rlimit changes, input/breakpoint;
- blocked when the CALLER is candidate code, because torch, triton and the evaluator legitimately
  compile with ptxas and a C compiler, read `fn.__code__`, exec generated binders and import lazily.
  For OS effects (BY_CALLER: processes, fork, kill, ctypes, environment and cwd changes, threads,
  marshal/pickle loads, imports of modules outside static_allow.ALLOWED_ROOTS) the caller is the first
  frame, innermost outwards, outside the standard library: subprocess or pathlib acting for the
  candidate is the candidate. For introspection (BY_CODE: exec/compile, sys._getframe, audited
  attribute reads such as tb_frame, gi_frame, __code__, code and function construction) it is the
  innermost frame itself: dataclasses exec their __init__, namedtuple and typing read their caller's
  frame, on a candidate's behalf and harmlessly;
- by path, whoever the caller: writes (open for writing, os.remove/rename/mkdir/chmod..., shutil) only
  under the scratch folder, the temporary folder (Triton's compiler writes there) minus the worker's own
  files, and Triton's and Inductor's caches; reads of the problem file, the problem suite and the user's
  home / XDG folders (secrets, the skill library and its statistics), except the Python installation
  and those caches.
A blocked event raises `Violation` (a BaseException, so a candidate's `except Exception` cannot swallow
it, and the guard re-raises it on exit even if something did): the worker's rejection, check 'audit'.
The hook's state lives in closures; reaching it takes the reflective access the static checks reject
and the hook blocks (frames, gc). What stays open: a Python 3.11 type attribute write is not an audit
event (integrity.py catches the patches that matter), nor is reading `__globals__` or `__closure__`.
"""

from __future__ import annotations

import getpass
import os
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .static_allow import ALLOWED_ROOTS
from .static_source import _words


class Violation(BaseException):  # noqa: N818 (a verdict, not an error of the evaluator)
    """Candidate code did something the evaluator forbids; `check` is 'audit' or 'integrity'."""

    def __init__(self, check: str, message: str):
        super().__init__(message)
        self.check = check


ALWAYS = frozenset(_words("""
    os.system os.exec os.spawn os.forkpty pty.spawn socket.connect socket.bind socket.sendto socket.sendmsg
    socket.getaddrinfo socket.gethostbyname socket.gethostbyname_ex socket.gethostbyaddr socket.getnameinfo
    http.client.connect urllib.Request ftplib.connect smtplib.connect webbrowser.open builtins.input
    builtins.breakpoint sys.addaudithook sys.settrace sys.setprofile sys._current_frames
    sys._current_exceptions gc.get_objects gc.get_referrers gc.get_referents resource.setrlimit
    resource.prlimit
    """))
BY_CALLER = frozenset(_words("""
    subprocess.Popen os.posix_spawn os.posix_spawnp os.fork os.kill os.killpg signal.pthread_kill os.putenv
    os.unsetenv os.chdir socket.__new__ marshal.loads marshal.load pickle.find_class mmap.__new__
    sys.excepthook sys.unraisablehook _thread.start_new_thread os.register_at_fork
    """))
BY_CODE = frozenset(_words("""
    exec compile sys._getframe object.__getattr__ object.__setattr__ object.__delattr__ code.__new__
    function.__new__
    """))
_BY_CALLER_PREFIXES = ("ctypes.",)
# Events whose first argument(s) name a path that is written, with the argument positions.
WRITES = {"os.remove": (0,), "os.rename": (0, 1), "os.replace": (0, 1), "os.rmdir": (0,), "os.mkdir": (0,),
          "os.symlink": (1,), "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,),
          "os.utime": (0,), "shutil.rmtree": (0,), "shutil.move": (0, 1), "shutil.copyfile": (1,),
          "shutil.copytree": (1,)}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


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
        self.own = self.scratch + _roots(*_caches())  # writable even inside a private folder
        self.writable = self.own + _roots(tempfile.gettempdir())
        home = os.path.expanduser("~")
        xdg = [os.environ.get(k) for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")]
        self.private = _roots(home, *xdg, Path(__file__).resolve().parents[1] / "problems")
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


def _is_library(filename: str) -> bool:
    return filename.startswith("<frozen ") or (_under(filename, _STDLIB) and "-packages" not in filename)


def _make() -> tuple[Callable[[str, tuple], None], Callable[..., None], Callable[[], str | None]]:
    """The hook and the guard's enter / leave, sharing one closure (no module global to flip)."""
    state: dict[str, Any] = {"depth": 0, "policy": None, "candidate": None, "violation": None}
    local = threading.local()  # the hook's own frame walk raises events: no re-entry

    def caller_is_candidate(importing: bool = False, innermost: bool = False) -> bool:
        """Is the innermost non-stdlib frame (`innermost`: the innermost frame) the candidate's? An
        event raised by the import machinery (reading a .pyc, exec of a module body) belongs to an
        import whose 'import' event was judged."""
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<frozen importlib") and not importing:
                return False
            if name != __file__ and (innermost or not _is_library(name)):
                return name == state["candidate"]
            frame = frame.f_back
        return False

    def refuse(event: str, why: str) -> None:
        message = f"audit: the candidate {why} ({event})"
        if state["violation"] is None:
            state["violation"] = message
        raise Violation("audit", message)

    def path_of(arg: object) -> str | None:
        if isinstance(arg, (str, bytes, os.PathLike)):
            p = os.fsdecode(arg)
            return os.path.realpath(p)
        return None  # a file descriptor: opened before, judged then

    def hook(event: str, args: tuple) -> None:
        if not state["depth"] or getattr(local, "busy", False):
            return
        local.busy = True
        try:
            decide(event, args)
        finally:
            local.busy = False

    def decide(event: str, args: tuple) -> None:
        policy: _Policy = state["policy"]
        if event in ALWAYS or event.startswith("os.exec") or event.startswith("os.spawn"):
            refuse(event, "tried a forbidden operation")
        elif event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            p = path_of(path)
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS)
            if p and writes and policy.write_refused(p):
                refuse(event, f"opened {p} for writing, outside its scratch folder")
            if p and not writes and policy.read_refused(p):
                refuse(event, f"read {p}, a file the candidate must not see")
        elif event in WRITES:
            for i in WRITES[event]:
                if len(args) > i and (p := path_of(args[i])) and policy.write_refused(p):
                    refuse(event, f"changed {p}, outside its scratch folder")
        elif event == "import":
            if args[0].split(".")[0] not in ALLOWED_ROOTS and caller_is_candidate(importing=True):
                refuse(event, f"imported {args[0]}, outside the allowed modules")
        elif (event in BY_CALLER or event.startswith(_BY_CALLER_PREFIXES)) and caller_is_candidate():
            refuse(event, "reached the OS")
        elif event in BY_CODE and caller_is_candidate(innermost=True):
            refuse(event, "reached the interpreter's internals")

    def enter(policy: _Policy, candidate_file: str) -> None:
        state["policy"], state["candidate"] = policy, candidate_file
        state["depth"] += 1

    def leave() -> str | None:
        """Back out of one guarded stretch; the violation seen in it (even one something caught)."""
        state["depth"] -= 1
        seen, state["violation"] = state["violation"], None
        return seen

    return hook, enter, leave


_hook, _enter, _leave = _make()
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
        seen = _leave()
        if seen is not None:  # raised even where candidate or library code caught the first one
            raise Violation("audit", seen)
        if self.after is not None:
            self.after()

    def wrap(self, obj: Any) -> Any:
        return _Guarded(obj, self)


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
            return self._obj(*args, **kwargs)
        finally:
            seen = _leave()
            if seen is not None:
                raise Violation("audit", seen)  # noqa: B012 (the violation outranks any exception)
            if self._g.after is not None:
                self._g.after()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._obj, name)
        return _Guarded(value, self._g) if callable(value) else value
