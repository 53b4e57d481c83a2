"""The ``unshare`` sandbox's inside: builds the filesystem view, drops privileges, runs the program.

util-linux ``unshare`` creates the namespaces (user, mount, network, pid, ipc, uts) and starts this file
as pid 1 of the new pid namespace: ``python -I -S stage.py SPEC_JSON``.  It imports nothing outside the
standard library (it runs before any view exists) and does what ``bwrap`` does for the ``bwrap`` sandbox:

1. opens every path to show (``O_PATH``) while the host's tree is still visible;
2. mounts an empty tmpfs as the new root, binds each path read-only at its own place (keeping the
   flags the host mount locks, as a user namespace requires), adds ``/proc`` of the new pid namespace,
   a minimal ``/dev`` (null, zero, full, random, urandom, shm) and the private ``/tmp``;
3. forbids nested user namespaces (``user.max_user_namespaces = 0`` of this namespace), then makes
   ``/proc/sys``, ``/proc/sysrq-trigger``, ``/proc/irq``, ``/proc/bus``, ``/proc/pressure`` read-only;
4. ``pivot_root`` into it and detaches the old root, so no host path is reachable any more;
5. forks the program: the child sets the rlimits, empties the capability bounding set, sets
   ``no_new_privs`` and ``execve``s with the given environment; this process stays pid 1 and reaps —
   when the program exits it exits with the program's status (128 + signal for a signal, like ``bwrap``),
   and the kernel kills whatever else is left in the namespace.

Any failure before the program starts exits with status 125 and one ``evalpipe-sandbox:`` line on stderr.
"""

import ctypes
import fcntl
import json
import os
import platform
import resource
import socket
import struct
import sys
from typing import Any

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
#: ``pivot_root`` has no libc wrapper: its syscall number per architecture.
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
SETUP_FAILED = 125
DEV_NODES = ("null", "zero", "full", "random", "urandom")
#: statvfs flag → mount flag that a bind's remount must keep (the kernel locks them in a user namespace).
LOCKED = (
    (os.ST_RDONLY, MS_RDONLY),
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)

# the interpreter's own symbols include libc's (``find_library`` would fork ``ldconfig`` here)
_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def _bind_readonly(fd: int, target: str) -> None:
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND)
    st = os.statvfs(target)
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    for stat_flag, mount_flag in LOCKED:
        if st.f_flag & stat_flag:
            flags |= mount_flag
    _mount(None, target, None, flags)


def _prepare(path: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass


def build_root(spec: dict[str, Any]) -> None:  # the JSON spec from the parent
    sources = [(b["path"], b["is_dir"], os.open(b["path"], os.O_PATH)) for b in spec["binds"]]
    devs = [
        (name, os.open(f"/dev/{name}", os.O_PATH)) for name in DEV_NODES if os.path.exists(f"/dev/{name}")
    ]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = spec["staging_dir"]
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    # the private tmp first: a shown path below it (a venv under /tmp) is bound on top, read-only
    os.makedirs(root + spec["tmp"], exist_ok=True)
    _mount("tmpfs", root + spec["tmp"], "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={spec['tmp_bytes']}")
    for path, is_dir, fd in sources:
        target = root + path
        _prepare(target, is_dir)
        _bind_readonly(fd, target)
        os.close(fd)
    for link, link_target in spec["links"]:
        os.symlink(link_target, root + link)
    os.makedirs(root + "/proc")
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + "/dev")
    _mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name, fd in devs:
        _prepare(f"{root}/dev/{name}", False)
        _mount(f"/proc/self/fd/{fd}", f"{root}/dev/{name}", None, MS_BIND)
        os.close(fd)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{root}/dev/{name}")
    os.makedirs(root + "/dev/shm")
    _mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={spec['tmp_bytes']}")
    # pivot_root(".", "."): the old root ends up on top of the new one and is detached at once
    # no nested user namespaces (as bwrap --disable-userns): this namespace's own limit, which the
    # program cannot raise again once its capabilities are gone
    with open(root + "/proc/sys/user/max_user_namespaces", "w") as limit:
        limit.write("0")
    for entry in spec["proc_readonly"]:  # host kernel settings: see run.PROC_READONLY
        path = f"{root}/proc/{entry}"
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    syscall = SYS_PIVOT_ROOT.get(platform.machine())
    if syscall is None:
        raise SetupError(f"pivot_root: unknown syscall number on {platform.machine()}")
    _check(_libc.syscall(syscall, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _mount(None, "/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC)


def loopback_up() -> None:
    """Bring up ``lo`` of the new network namespace (as bwrap does): a private loopback, nothing else."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def drop_privileges() -> None:
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # EINVAL past the last capability this kernel knows
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def run_program(spec: dict[str, Any]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            for name, value in spec["rlimits"].items():
                resource.setrlimit(getattr(resource, name), tuple(value))
            drop_privileges()
            os.chdir(spec["cwd"])
            os.execve(spec["argv"][0], spec["argv"], spec["env"])
        except BaseException as exc:
            os.write(2, f"evalpipe-sandbox: cannot start the program: {exc}\n".encode())
        os._exit(SETUP_FAILED)
    while True:  # pid 1: reap every orphan until the program itself ends
        try:
            done, status = os.wait()
        except ChildProcessError:
            return SETUP_FAILED
        if done == pid:
            if os.WIFSIGNALED(status):
                return 128 + os.WTERMSIG(status)
            return os.WEXITSTATUS(status)


def main() -> int:
    spec = json.loads(sys.argv[1])
    try:
        loopback_up()
        build_root(spec)
    except (SetupError, OSError) as exc:
        os.write(2, f"evalpipe-sandbox: {exc}\n".encode())
        return SETUP_FAILED
    return run_program(spec)


if __name__ == "__main__":
    sys.exit(main())
