"""The empty_cache report: after del + empty_cache() PyTorch still reserves memory.

Three rounds of generate; after each the outputs are deleted, empty_cache() is
called and allocated/reserved are logged with their gap; then the model is
deleted, gc.collect() and empty_cache() run, and the figures are logged again.
With --hog, a CPU-bound neighbour (comm "hog") shares the main thread's CPU.
"""
import gc
import os
import sys
import time

import torch

from model import generate, small_qwen2


def log(tag):
    allocated = torch.cuda.memory_allocated()
    reserved = torch.cuda.memory_reserved()
    print(f"memory {tag} allocated={allocated} reserved={reserved} gap={reserved - allocated}",
          flush=True)


def start_hog(cpu):
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {cpu})
        with open("/proc/self/comm", "w") as comm:
            comm.write("hog")
        while True:
            pass
    return pid


def main():
    hog = None
    if "--hog" in sys.argv:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        hog = start_hog(cpu)
        print(f"hog pid={hog} cpu={cpu}", flush=True)
    model = small_qwen2()
    log("loaded")
    for r in range(3):
        out = generate(model)
        del out
        torch.cuda.empty_cache()
        log(f"round{r + 1}")
    del model
    gc.collect()
    torch.cuda.empty_cache()
    log("model-gone")
    if hog:
        os.kill(hog, 9)
        os.waitpid(hog, 0)


if __name__ == "__main__":
    main()
