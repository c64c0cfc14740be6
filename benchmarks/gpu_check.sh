#!/usr/bin/env bash
# One short GPU session: the CUDA backend against numpy, then the batched speed at large B
# and a short training run on the GPU. Prints everything the README's GPU figures need.
# Usage (from the repository root, venv active): bash benchmarks/gpu_check.sh
set -euo pipefail
export OMP_NUM_THREADS=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
python benchmarks/gpu_check.py --device cuda --games 256 --steps 400
python benchmarks/bench_batched.py --backends numpy --sizes 4096 65536 --repeats 3 --seconds 1
python benchmarks/bench_batched.py --backends torch-ops --device cuda \
    --sizes 4096 65536 262144 --repeats 3 --seconds 1
python train.py name=gpu_check device=cuda total_steps=500000 eval_every=1000 \
    eval_hands=100 final_eval_hands=100 progress=false tensorboard=false --force
tail -n 2 runs/gpu_check/log.jsonl
