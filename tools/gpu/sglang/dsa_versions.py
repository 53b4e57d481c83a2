"""The DSA path's packages as the servers' environment finds them, and one import of every module the path
loads (run with the servers' PYTHONPATH by tools/gpu/sglang/stage.sh dsa-two; exit 1 when one fails).
Needs no GPU for the imports; TileLang and DeepGEMM compile their kernels only when a server first runs them."""

from __future__ import annotations

import importlib
import importlib.metadata as md
import sys

PACKAGES = ("sglang", "sglang-kernel", "tilelang", "sgl-deep-gemm", "sgl-flash-mla", "flashinfer-python",
            "apache-tvm-ffi", "z3-solver", "transformers", "torch", "triton")  # fmt: skip
MODULES = ("tilelang", "deep_gemm", "sgl_kernel", "sgl_kernel.flash_mla", "flashinfer",
           "sglang.srt.layers.attention.dsa_backend", "sglang.kernels.ops.attention.dsa.tilelang_kernel")  # fmt: skip


def main() -> int:
    import torch

    print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)
    for name in PACKAGES:
        try:
            print(name, md.version(name))
        except md.PackageNotFoundError:
            print(name, "not installed")
    failed = 0
    for module in MODULES:
        try:
            importlib.import_module(module)
            print("import ok", module)
        except BaseException as exc:  # a kernel library's import can raise anything
            print("import FAILED", module, repr(exc)[:500])
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
