"""The audit hook's tables (eval/candidate/audit.py): which events it refuses, for whom, and where paths are.

Event names and argument positions are CPython 3.11's (the audit events table of its documentation);
the exec sites were measured with a logging hook over tests/eval and tests/authors on the CPU and read
off Triton's compiled path.
"""

from __future__ import annotations

import os

from ..static.source import _words

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
    sys._getframe object.__getattr__ object.__setattr__ object.__delattr__ code.__new__ function.__new__
    """))
# (file name ending, function) of the frames that may call exec / compile inside the guard: what the
# library runs for itself, measured with a logging hook over tests/eval and tests/authors (CPU) and
# read off Triton's compiled path. torch.compile's stack (dynamo, inductor, fx) is not listed: it
# cannot start inside the guard anyway (filelock, which it imports, adds an audit hook).
EXEC_SITES = frozenset([
    ("/dataclasses.py", "_create_fn"), ("/collections/__init__.py", "namedtuple"),
    ("/typing.py", "__init__"), ("/typing.py", "_evaluate"), ("/ast.py", "parse"),
    ("/triton/runtime/jit.py", "create_function_from_signature"),
    ("/triton/runtime/interpreter.py", "_compile_and_exec"),
])
# Events that name paths: "event:positions of paths:positions of directory descriptors" (a descriptor
# is -1 or None where none was given).
PATHS = {e: (tuple(map(int, p)), tuple(map(int, d))) for e, p, d in (w.split(":") for w in _words("""
    open:0: os.listdir:0: os.scandir:0: os.fwalk:0:4 os.remove:0:1 os.rename:01:23 os.replace:01:23
    os.rmdir:0:1 os.mkdir:0:2 os.symlink:1:2 os.link:01:23 os.truncate:0: os.chmod:0:2 os.chown:0:3
    os.utime:0:3 os.mkfifo:0:2 os.mknod:0:3 os.chflags:0: os.lchflags:0: os.getxattr:0: os.listxattr:0:
    os.removexattr:0: os.setxattr:0: shutil.rmtree:0:1 shutil.move:01: shutil.copyfile:01: shutil.copytree:01:
    """))}
_BY_CALLER_PREFIXES = ("ctypes.",)
# Events whose first argument(s) name a path that is written, with the argument positions.
WRITES = {"os.remove": (0,), "os.rename": (0, 1), "os.replace": (0, 1), "os.rmdir": (0,), "os.mkdir": (0,),
          "os.symlink": (1,), "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,),
          "os.utime": (0,), "shutil.rmtree": (0,), "shutil.move": (0, 1), "shutil.copyfile": (1,),
          "shutil.copytree": (1,)}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
