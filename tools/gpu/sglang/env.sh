# The device machine's environment for the SGLang run (sourced by stage.sh and run.sh): the image's python3
# first on PATH, CUDA's compiler for the kernels tvm-ffi and Triton compile at run time, nothing fetched.
# SGLang itself is NOT put on PYTHONPATH here: only its servers get it (configs/sglang-gpu.yaml server.env).
export PYTHONUNBUFFERED=1
export PATH=/opt/torch/.venv/bin:$PATH
if [ -z "${CUDA_HOME:-}" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then export CUDA_HOME=/usr/local/cuda
  elif command -v nvcc >/dev/null; then CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")"); export CUDA_HOME; fi
fi
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
export TVM_FFI_CACHE_DIR=/tmp/sgl/tvmffi_cache TRITON_CACHE_DIR=/tmp/sgl/triton_cache
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export SGLANG_ENABLE_JIT_DEEPGEMM=0 TOKENIZERS_PARALLELISM=false
# multi-GPU safety settings of the device's KINDS.md (harmless on one GPU)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
