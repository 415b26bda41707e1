"""braid_ref: the independent numpy reference of the braid test suite.

`ops` implements each braid op from its description in
dialects/braid/IR/BraidOps.td, `rng` the deterministic shardable
initialization the runtime implements identically (its docstring is the
spec), `models` the forward pass (loss) of each model family.

Nothing here is derived from the C++ kernels; they are checked against it.
"""

from . import ops, rng  # noqa: F401  (models imports braid, loaded on demand)

__all__ = ["ops", "rng", "models"]
