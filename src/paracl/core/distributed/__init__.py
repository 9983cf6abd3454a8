"""Running stages beyond one process: executors (local process pool or Ray), resumable
shard caches, and the cross-process gather that multi-GPU contrastive training needs.

Modules: `executor` (the `ShardJob` protocol: set up once per worker, then process
tasks; run in this process, local processes or Ray actors), `shards` (ShardCache: the one
resume rule), `sharded` (a stage's shards run and resumed), `gather` (torch.distributed
all-gather).

Ray and torch.distributed are imported lazily, only by the code paths that use them.
"""

from paracl.core.distributed.executor import Done, Executor, ShardJob, make_executor
from paracl.core.distributed.shards import ShardCache

__all__ = ["Done", "Executor", "ShardCache", "ShardJob", "make_executor"]
