"""Timed loops for the overhead figures: launch-bound (the small model's
generate, ~50k launches a second) or compute-bound (large matrix products,
few launches). Prints "loop=KIND seconds=S" for the timed part only."""
import sys
import time

import torch


def launch_bound(rounds):
    from model import generate, small_qwen2
    model = small_qwen2()
    generate(model)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(rounds):
        generate(model, 16, 32)
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def compute_bound(rounds):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = a @ a
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(rounds):
        b = a @ a
        b = b @ a
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    kind = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    seconds = (launch_bound if kind == "launch" else compute_bound)(rounds)
    print(f"loop={kind} rounds={rounds} seconds={seconds:.4f}", flush=True)


if __name__ == "__main__":
    main()
