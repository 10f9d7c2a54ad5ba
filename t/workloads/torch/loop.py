"""Timed loops for the overhead figures: launch-bound (the small model's
generate, ~50k launches a second) or compute-bound (large matrix products,
few launches). Prints "loop=KIND seconds=S" for the timed part only.

With "chunks" after KIND, runs for ROUNDS seconds instead and prints one line
"chunk START_NS END_NS" (wall clock) per chunk of work, so that tracers
attached and detached from outside are compared inside one warm process."""
import sys
import time

import torch


def launch_bound():
    from model import generate, small_qwen2
    model = small_qwen2()
    generate(model)

    def step():
        generate(model, 16, 32)
        torch.cuda.empty_cache()
    return step


def compute_bound():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = a @ a

    def step():
        b = a @ a
        b = b @ a
    return step


def timed(step, rounds):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(rounds):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def chunks(step, seconds, per_chunk):
    torch.cuda.synchronize()
    print("ready", flush=True)
    end = time.time_ns() + int(seconds * 1e9)
    while time.time_ns() < end:
        start = time.time_ns()
        for _ in range(per_chunk):
            step()
        torch.cuda.synchronize()
        print(f"chunk {start} {time.time_ns()}", flush=True)


def main():
    kind = sys.argv[1]
    step = (launch_bound if kind == "launch" else compute_bound)()
    if len(sys.argv) > 2 and sys.argv[2] == "chunks":
        chunks(step, float(sys.argv[3]), 1 if kind == "launch" else 30)
        return
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    print(f"loop={kind} rounds={rounds} seconds={timed(step, rounds):.4f}", flush=True)


if __name__ == "__main__":
    main()
