"""Starts the supervisor in a container as the server's user: `python -I -S container_start.py UID GID ARGS…`.

`docker exec` runs this as root; it switches to the user and runs `supervisor.main(ARGS)`. Run as the user
from the start, the supervisor would be dumpable until it makes itself not (Python's start-up, some 20 ms),
and a command of the same user running meanwhile (a background job) could trace it and make names through
it, outside any filter. Here no command can trace it at any moment: it is root until the switch, the switch
makes it not dumpable, and it keeps CAP_SYS_PTRACE (as bubblewrap's supervisor does), which its tracer would
need too. The supervisor drops every capability for the command; HOME is the user's, as `--user` sets it.

Standard library and ctypes only, run as a file without `site`, like `supervise.py`.
"""

import ctypes
import os
import sys

_PR_SET_KEEPCAPS = 8
_CAPABILITY_VERSION_3 = 0x20080522
_CAP_SYS_PTRACE = 19
_CAPSET = {"x86_64": 126, "aarch64": 91}


def become(uid: int, gid: int) -> None:
    """Switch to `uid`/`gid` (and the user's groups), keeping CAP_SYS_PTRACE alone."""
    import pwd

    libc = ctypes.CDLL(None, use_errno=True)
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        home, groups = "/", [gid]
    else:
        home, groups = entry.pw_dir, os.getgrouplist(entry.pw_name, gid)
    if libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_KEEPCAPS)")
    os.setgroups(groups)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    kept = 1 << _CAP_SYS_PTRACE
    data = (ctypes.c_uint32 * 6)(kept, kept, 0, 0, 0, 0)  # effective, permitted, inheritable (low halves)
    if libc.syscall(_CAPSET[os.uname().machine], header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    libc.prctl(_PR_SET_KEEPCAPS, 0, 0, 0, 0)
    os.environ["HOME"] = home


if __name__ == "__main__":  # imported (a check that every module imports), it must not run
    try:
        become(int(sys.argv[1]), int(sys.argv[2]))
    except (IndexError, ValueError, KeyError, OSError) as exc:
        print(f"sandbox supervisor: cannot become the server's user ({exc}); the command was not run", file=sys.stderr)
        sys.exit(126)
    sys.path.insert(0, __file__.rpartition("/")[0])
    sys.exit(__import__("supervisor").main(sys.argv[3:]))
