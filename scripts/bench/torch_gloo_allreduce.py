#!/usr/bin/env python3
"""torch.distributed all_reduce over Gloo, timed the way `collie perf all_reduce --backend gloo
-c 0 --placement in` times it, for a side-by-side table (scripts/gpu_check.sh step 4).

NP local processes, one per rank, rendezvous over TCP on 127.0.0.1; float32 sum, in place; for each
size from -b to -e (times -f): -w warmup ops, a barrier, then -n timed ops, each one waited for.
A rank's time per op is its loop time / n; the line for a size is the mean over ranks (collie
perf's default `-a 1`, as nccl-tests). Prints "# torch <version> ..." then "<size_bytes> <us>" per
size on rank 0's stdout.

  usage: torch_gloo_allreduce.py [--np 2] [-b 8] [-e 16M] [-f 8] [-n 50] [-w 5]
  exit 0; 2 on bad arguments or when torch cannot be imported (one line on stderr)
"""
import argparse
import os
import socket
import sys
import time


def size_arg(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    unit = t[-1:] if t[-1:] in units else ""
    try:
        value = int(t[: len(t) - len(unit)]) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size such as 8, 64K, 16M, 1G")
    if value < 4:
        raise argparse.ArgumentTypeError(f"'{text}': at least one float32 (4 bytes)")
    return value


def sizes(args):
    s = args.minbytes
    while s <= args.maxbytes:
        yield s
        if args.stepfactor <= 1:
            break
        s *= args.stepfactor


def rank_main(rank, args, port):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.np)
    if rank == 0:
        print(f"# torch {torch.__version__} gloo all_reduce, {args.np} ranks, float32 sum in place, "
              f"{args.warmup_iters} warmup + {args.iters} timed ops per size, mean over ranks",
              flush=True)
    for size in sizes(args):
        x = torch.ones(size // 4, dtype=torch.float32)
        for _ in range(args.warmup_iters):
            dist.all_reduce(x)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(x)
        per_op_us = torch.tensor([(time.perf_counter() - start) / args.iters * 1e6],
                                 dtype=torch.float64)
        dist.all_reduce(per_op_us)
        if rank == 0:
            print(f"{size} {per_op_us.item() / args.np:.2f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("-b", "--minbytes", type=size_arg, default=8)
    p.add_argument("-e", "--maxbytes", type=size_arg, default=16 << 20)
    p.add_argument("-f", "--stepfactor", type=int, default=8)
    p.add_argument("-n", "--iters", type=int, default=50)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    args = p.parse_args()
    if args.np < 1 or args.iters < 1 or args.warmup_iters < 0 or args.minbytes > args.maxbytes:
        p.error("need --np >= 1, -n >= 1, -w >= 0 and -b <= -e")
    try:
        import torch.multiprocessing as mp
    except ImportError as e:
        print(f"torch_gloo_allreduce: torch cannot be imported here: {e}", file=sys.stderr)
        return 2
    with socket.socket() as s:  # a free port for the rendezvous (the ranks bind it at once)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(rank_main, args=(args, port), nprocs=args.np, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
