#!/usr/bin/env python3
"""Runs a command and fails if it opens anything under WATCH but outside ALLOW.

    unshare --pid --fork --mount-proc \
        watch-outside.py --allow DIR --watch DIR [--watch DIR ...] -- CMD [ARG ...]

Meant to be PID 1 of a fresh PID namespace: fanotify then reports the
command's processes (every descendant, whatever they fork, exec or trace)
by their pid and everything else on the machine as pid 0, which is
ignored. Sees successful opens of files and directories (`FAN_OPEN`,
`FAN_OPEN_EXEC`) on the filesystems holding the watched roots; a path
that does not exist is not an open, so callers put symlinks to whatever
lies beside the allowed tree where a stray relative path would look.

Exit status: the command's, or 3 when it opened something it must not
(listed on stderr).
"""
import argparse
import ctypes
import os
import select
import struct
import subprocess
import sys

FAN_CLOEXEC = 0x1
FAN_NONBLOCK = 0x2
FAN_UNLIMITED_QUEUE = 0x10
FAN_MARK_ADD = 0x1
FAN_MARK_FILESYSTEM = 0x100
FAN_OPEN = 0x20
FAN_OPEN_EXEC = 0x1000
FAN_Q_OVERFLOW = 0x4000
FAN_ONDIR = 0x40000000
AT_FDCWD = -100
EVENT = struct.Struct("IBBHQii")


def inside(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--allow", action="append", default=[])
    ap.add_argument("--watch", action="append", default=[])
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    allow = [os.path.realpath(p) for p in a.allow]
    watch = [os.path.realpath(p) for p in a.watch]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
    fd = libc.fanotify_init(FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE, os.O_RDONLY | os.O_LARGEFILE)
    if fd < 0:
        sys.exit(f"watch-outside: fanotify_init: {os.strerror(ctypes.get_errno())}")
    for root in watch:
        if libc.fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
                              FAN_OPEN | FAN_OPEN_EXEC | FAN_ONDIR, AT_FDCWD, root.encode()) < 0:
            sys.exit(f"watch-outside: fanotify_mark {root}: {os.strerror(ctypes.get_errno())}")

    child = subprocess.Popen(cmd)
    status = None
    found = {}
    overflow = False

    def drain():
        nonlocal overflow
        while True:
            try:
                buf = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            off = 0
            while off + EVENT.size <= len(buf):
                length, _ver, _res, _meta, mask, efd, pid = EVENT.unpack_from(buf, off)
                off += length
                if mask & FAN_Q_OVERFLOW:
                    overflow = True
                    continue
                try:
                    path = os.readlink(f"/proc/self/fd/{efd}")
                except OSError:
                    path = None
                os.close(efd)
                # pid 0: a process outside this PID namespace, not ours.
                if path is None or pid <= 1:
                    continue
                if any(inside(path, w) for w in watch) and not any(inside(path, p) for p in allow):
                    found.setdefault(path, cmdline(pid))

    # PID 1 reaps every orphan of the namespace; after the command ends,
    # processes it left behind get a few seconds to finish (then the kernel
    # kills them with us).
    import time
    deadline = None
    while True:
        select.select([fd], [], [], 0.1)
        drain()
        children = True
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children = False
                break
            if pid == 0:
                break
            if pid == child.pid:
                status = os.waitstatus_to_exitcode(st)
                deadline = time.monotonic() + 5
        if status is not None and (not children or time.monotonic() > deadline):
            break
    drain()

    if overflow:
        print("watch-outside: the fanotify queue overflowed; the check is incomplete", file=sys.stderr)
        sys.exit(3)
    if found:
        print(f"watch-outside: {len(found)} path(s) outside {', '.join(allow)} were opened:", file=sys.stderr)
        for path, who in sorted(found.items()):
            print(f"  {path}    (by: {who})", file=sys.stderr)
        sys.exit(3)
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
