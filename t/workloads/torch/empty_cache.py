"""The empty_cache report: after del + empty_cache() PyTorch still reserves memory.

Three rounds of generate; after each the outputs are deleted, empty_cache() is
called and allocated/reserved are logged with their gap; then the model is
deleted, gc.collect() and empty_cache() run, and the figures are logged again.
(gpu-run.sh's neighbour phase runs it pinned beside a CPU hog of its own.)
"""
import gc

import torch

from model import generate, small_qwen2


def log(tag):
    allocated = torch.cuda.memory_allocated()
    reserved = torch.cuda.memory_reserved()
    print(f"memory {tag} allocated={allocated} reserved={reserved} gap={reserved - allocated}",
          flush=True)


def main():
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


if __name__ == "__main__":
    main()
