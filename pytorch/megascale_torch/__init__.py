"""megascale as a torch.distributed backend.

    import megascale_torch                      # registers the backend "megascale"
    torch.distributed.init_process_group("megascale", ...)

CPU tensors; all_reduce (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR), broadcast, reduce, all_gather,
reduce_scatter, all_to_all (equal and unequal splits), send/recv and barrier, asynchronous with async_op=True.
"""
import torch.distributed as _dist

from ._C import ProcessGroupMegascale


def _create(store, rank, world_size, timeout):
    return ProcessGroupMegascale(store, rank, world_size, timeout)


if "MEGASCALE" not in _dist.Backend._plugins:
    _dist.Backend.register_backend("megascale", _create)

__all__ = ["ProcessGroupMegascale"]
