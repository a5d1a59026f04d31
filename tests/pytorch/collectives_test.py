#!/usr/bin/python3
"""The "megascale" torch.distributed backend against Gloo's answers: in each of N processes a Gloo group and a
megascale group run the same collectives on the same inputs (sizes 0, 1, odd and large; in-place and out-of-place;
every op and dtype), and the results must match. Also: unsupported input fails with a clear error.

Usage: collectives_test.py N      (PYTHONPATH must reach build/python; skips without torch)"""
import datetime
import sys

try:
    import torch
    import torch.distributed as dist
    from spawn_ranks import run_ranks
except ImportError as e:
    print(f"SKIPPED: torch is not importable ({e}) [missing: python3-torch]")
    sys.exit(77)

SIZES = [0, 1, 7, 1000, 65537]
REDUCIBLE = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
             torch.int64]


def inputs(rank, n, dtype, salt=0):
    """Small integers, so sums, products, min and max are exact in every dtype."""
    base = (torch.arange(n, dtype=torch.int64) * 7 + rank * 3 + salt) % 5 + 1
    return base.to(dtype)


def same(a, b, what):
    if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
        raise AssertionError(f"{what}: megascale {a.flatten()[:8].tolist()} vs gloo {b.flatten()[:8].tolist()}")


def check_all_reduce(rank, world, ms, gloo):
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    for dtype in REDUCIBLE:
        for op in ops:
            if op == dist.ReduceOp.PRODUCT and dtype in (torch.int8, torch.uint8, torch.float16, torch.bfloat16):
                continue  # products of up to 5^4 overflow these
            for n in SIZES:
                if dtype in (torch.float16, torch.bfloat16) and n > 1000:
                    continue  # gloo has no half/bfloat16 sums beyond small sizes on every build
                a, b = inputs(rank, n, dtype), inputs(rank, n, dtype)
                ok_gloo = True
                try:
                    dist.all_reduce(b, op=op, group=gloo)
                except RuntimeError:
                    ok_gloo = False  # gloo lacks this dtype: compute the answer in float64 instead
                    parts = [inputs(r, n, torch.float64) for r in range(world)]
                    ref = {dist.ReduceOp.SUM: sum, dist.ReduceOp.PRODUCT: lambda p: torch.stack(p).prod(0),
                           dist.ReduceOp.MIN: lambda p: torch.stack(p).min(0).values,
                           dist.ReduceOp.MAX: lambda p: torch.stack(p).max(0).values}[op]
                    b = ref(parts).to(dtype) if n else torch.empty(0, dtype=dtype)
                dist.all_reduce(a, op=op, group=ms)
                same(a, b, f"all_reduce {op} {dtype} n={n} (gloo: {ok_gloo})")
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        for dtype in (torch.int32, torch.int64, torch.uint8, torch.bool):  # gloo has no bool: reference here
            mine = lambda r: ((inputs(r, 33, torch.int64) * (r + 5)) % (2 if dtype == torch.bool else 256)).to(dtype)
            a = mine(rank)
            b = mine(0)
            for r in range(1, world):
                b = {dist.ReduceOp.BAND: torch.bitwise_and, dist.ReduceOp.BOR: torch.bitwise_or,
                     dist.ReduceOp.BXOR: torch.bitwise_xor}[op](b, mine(r))
            dist.all_reduce(a, op=op, group=ms)
            same(a, b, f"all_reduce {op} {dtype}")
    a, b = inputs(rank, 1001, torch.float32), inputs(rank, 1001, torch.float32)
    dist.all_reduce(a, op=dist.ReduceOp.AVG, group=ms) if hasattr(dist.ReduceOp, "AVG") else None
    expected = sum(inputs(r, 1001, torch.float64) for r in range(world)) / world
    if hasattr(dist.ReduceOp, "AVG") and not torch.allclose(a.double(), expected):
        raise AssertionError("all_reduce AVG")


def check_movement(rank, world, ms, gloo):
    """Data movement takes any dtype as bytes; Gloo takes fewer (no bool, int16, complex), so its answer is used
    where it has one and the exact answer (the root's or each rank's input) everywhere."""
    for n in SIZES:
        for dtype in (torch.float32, torch.int64, torch.float16, torch.bool, torch.int16, torch.complex64):
            gloo_has = dtype in (torch.float32, torch.int64, torch.float16) and n > 0  # empty: gloo dies (SIGFPE)
            mine = lambda r: inputs(r, n, torch.int64).to(dtype)
            for root in range(world):
                a = mine(rank)
                dist.broadcast(a, root, group=ms)
                same(a, mine(root), f"broadcast {dtype} n={n} root={root}")
                if gloo_has:
                    b = mine(rank)
                    dist.broadcast(b, root, group=gloo)
                    same(a, b, f"broadcast {dtype} n={n} root={root} vs gloo")
            outs_m = [torch.empty_like(mine(rank)) for _ in range(world)]
            dist.all_gather(outs_m, mine(rank), group=ms)
            outs_g = [torch.empty_like(mine(rank)) for _ in range(world)]
            if gloo_has:
                dist.all_gather(outs_g, mine(rank), group=gloo)
            for r in range(world):
                same(outs_m[r], outs_g[r] if gloo_has else mine(r), f"all_gather {dtype} n={n} block {r}")
        flat = torch.empty(world * n, dtype=torch.float32)
        dist._all_gather_base(flat, inputs(rank, n, torch.float32), group=ms)
        same(flat, torch.cat([inputs(r, n, torch.float32) for r in range(world)]), f"_all_gather_base n={n}")
        # in place, as NCCL means it: the input is this rank's block of the output
        flat = torch.zeros(world * n, dtype=torch.float32)
        flat[rank * n:(rank + 1) * n] = inputs(rank, n, torch.float32)
        dist._all_gather_base(flat, flat[rank * n:(rank + 1) * n], group=ms)
        same(flat, torch.cat([inputs(r, n, torch.float32) for r in range(world)]), f"in-place _all_gather_base n={n}")


def check_reductions_to_one(rank, world, ms, gloo):
    for n in SIZES:
        for root in range(world):
            a, b = inputs(rank, n, torch.float32), inputs(rank, n, torch.float32)
            dist.reduce(a, root, op=dist.ReduceOp.MAX, group=ms)
            dist.reduce(b, root, op=dist.ReduceOp.MAX, group=gloo)
            if rank == root:
                same(a, b, f"reduce n={n} root={root}")
        chunks = [inputs(rank, n, torch.int32, salt=j) for j in range(world)]
        out = torch.empty(n, dtype=torch.int32)
        dist.reduce_scatter(out, chunks, group=ms)
        expected = sum(inputs(r, n, torch.int64, salt=rank) for r in range(world)).to(torch.int32)
        same(out, expected, f"reduce_scatter n={n}")
        base_out = torch.empty(n, dtype=torch.float64)
        dist._reduce_scatter_base(base_out, torch.cat([c.double() for c in chunks]), group=ms)
        same(base_out, expected.double(), f"_reduce_scatter_base n={n}")
        whole = torch.cat([c.double() for c in chunks])  # in place: the output is this rank's block of the input
        dist._reduce_scatter_base(whole[rank * n:(rank + 1) * n], whole, group=ms)
        same(whole[rank * n:(rank + 1) * n], expected.double(), f"in-place _reduce_scatter_base n={n}")


def check_all_to_all(rank, world, ms, gloo):
    for rows in (0, 1, 5):
        x = inputs(rank, world * rows * 3, torch.float32).reshape(world * rows, 3)
        a, b = torch.empty_like(x), torch.empty_like(x)
        dist.all_to_all_single(a, x, group=ms)
        dist.all_to_all_single(b, x, group=gloo)
        same(a, b, f"all_to_all equal rows={rows}")
    # unequal: rank r sends (r + j) % 3 rows to rank j (0 rows too)
    send = [(rank + j) % 3 for j in range(world)]
    recv = [(j + rank) % 3 for j in range(world)]
    x = inputs(rank, sum(send) * 2, torch.int64).reshape(sum(send), 2)
    a, b = torch.empty(sum(recv), 2, dtype=torch.int64), torch.empty(sum(recv), 2, dtype=torch.int64)
    dist.all_to_all_single(a, x, recv, send, group=ms)
    dist.all_to_all_single(b, x, recv, send, group=gloo)
    same(a, b, "all_to_all unequal")


def check_p2p_and_async(rank, world, ms):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    for n in (0, 3, 100001):
        out = inputs(rank, n, torch.float64)
        got = torch.empty(n, dtype=torch.float64)
        reqs = [dist.isend(out, nxt, group=ms), dist.irecv(got, prv, group=ms)]
        for r in reqs:
            r.wait()
        same(got, inputs(prv, n, torch.float64), f"send/recv n={n}")
    works = [dist.all_reduce(torch.full((10,), float(i + rank)), group=ms, async_op=True) for i in range(5)]
    for w in works:
        w.wait()
        if not w.is_completed():
            raise AssertionError("a waited Work is not completed")
    t = torch.full((4,), float(rank))
    fut = dist.all_reduce(t, group=ms, async_op=True).get_future()
    value = fut.wait()[0]
    if not torch.equal(value, torch.full((4,), float(sum(range(world))))):
        raise AssertionError(f"future value {value}")
    dist.barrier(group=ms)


def check_errors(rank, world, ms):
    bad = [(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16), group=ms), "dtype"),
           (lambda: dist.all_reduce(torch.ones(8)[::2], group=ms), "contiguous"),
           (lambda: dist.all_reduce(torch.ones(4, dtype=torch.float32), op=dist.ReduceOp.BAND, group=ms), "BAND")]
    for call, fragment in bad:
        try:
            call()
        except RuntimeError as e:
            if "megascale" not in str(e) or fragment not in str(e):
                raise AssertionError(f"unclear error for {fragment}: {e}")
        else:
            raise AssertionError(f"accepted a bad call ({fragment})")


def worker(rank, world, port):
    import megascale_torch  # noqa: F401  registers "megascale"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    ms = dist.new_group(backend="megascale")
    gloo = dist.new_group(backend="gloo")
    for check in (check_all_reduce, check_movement, check_reductions_to_one, check_all_to_all):
        check(rank, world, ms, gloo)
    check_p2p_and_async(rank, world, ms)
    check_errors(rank, world, ms)
    dist.barrier()
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1])
    if not run_ranks(worker, world):
        return 1
    print(f"PASSED: {world} processes, every collective matches gloo")
    return 0


if __name__ == "__main__":
    sys.exit(main())
