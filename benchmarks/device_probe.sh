#!/usr/bin/env bash
# One lent-GPU session (the `device` tool runs it in the repository root; results go to $OUT):
# record the device and its matmul / copy rates, then run the training and inference probes.
# The probes need gpufleet's own pure-Python dependencies (pydantic and its helpers); where the GPU machine
# cannot reach PyPI they travel as wheels in .whl/ and are installed into /tmp/site first.
set -u
OUT=${OUT:-probe_out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=src:benchmarks:${PYTHONPATH:-} PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv \
  >"$OUT/device.txt" 2>&1
python3 - >>"$OUT/device.txt" 2>&1 <<'PY'
import torch
print("torch", torch.__version__, torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0))
n = 8192
a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
x = torch.empty(2**30, device="cuda", dtype=torch.uint8)
y = torch.empty_like(x)
for what, fn, work in (("bf16 matmul 8192^3 TFLOP/s", lambda: a @ b, 2 * n**3 / 1e12),
                       ("device copy 1 GiB TB/s (read+write)", lambda: y.copy_(x), 2 * 2**30 / 1e12)):
    for _ in range(3):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(20):
        fn()
    e.record()
    torch.cuda.synchronize()
    print(what, round(work * 20 / (s.elapsed_time(e) / 1000), 1))
PY
cat "$OUT/device.txt"
timeout "${TRAIN_TIMEOUT_S:-220}" python3 benchmarks/gpu_probe_train.py ${TRAIN_POINTS:+--points "$TRAIN_POINTS"} --out "$OUT/train_cases.csv" 2>&1 | tee "$OUT/train.log"
timeout "${INFER_TIMEOUT_S:-190}" python3 benchmarks/gpu_probe.py --models "${INFER_MODELS:-llama-3.2-1b,llama-3.1-8b,phi-4,qwen3-32b}" \
  --batches "${INFER_BATCHES:-1,16,64}" --input-lens 512,2048 --output-len 32 --repeats "${REPEATS:-3}" --out "$OUT/infer_cases.csv" 2>&1 | tee "$OUT/infer.log"
ls -la "$OUT"
