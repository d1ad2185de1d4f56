"""Concerto's JAX side: concerto's schedule as the executable a ``jax.jit`` step runs
(:func:`compile`, :func:`save`, :func:`load`), real train-step HLO dumps, and XLA's own checks
of HLO modules.

- :mod:`concerto_jax.aot`: ``concerto_jax.compile(jitted, *args)`` compiles the step with
  concerto's plan (deviceless on a CPU host, against a topology), ``save`` writes it with the
  versions and topology, ``load`` gives a ``jax.stages.Compiled`` on the GPU hosts;
  :mod:`concerto_jax.executable` reads serialized executables from their bytes.

Modules (run with ``PYTHONPATH=python`` and the interpreter ``scripts/pyenv`` prints):

- :mod:`concerto_jax.dump`: dumps a GPT-style decoder train step under data, tensor,
  FSDP-style or mixed parallelism on 8 CPU devices, as XLA writes it right after SPMD
  partitioning and after all its optimisations.
- :mod:`concerto_jax.xla_check`: parses HLO text with XLA's parser (as bundled in jaxlib) and
  verifies the schedule of a module whose header says ``is_scheduled=true``.
- :mod:`concerto_jax.compare`: compiles two HLO modules with XLA's CPU client on 8 devices,
  runs both on the same random per-device inputs and compares every output bitwise.

- :mod:`concerto_jax.h100`: the H100 target (its ``GpuTargetConfigProto`` and the 8-GPU
  topology) that deviceless compiles use.
- :mod:`concerto_jax.pjrt_gpu`: compiles a scheduled module with XLA's GPU backend through the
  CUDA plugin's PJRT C API, keeping its schedule, and checks the thunk order.
- :mod:`concerto_jax.steer`: concerto's costs and plan as PGLE profiles for XLA's own
  scheduler; :func:`optimize` (``concerto_jax.optimize``) compiles, optimises, steers and
  recompiles a ``jax.jit`` step.

The compiled GPU corpus, the grammar census and the GPU measurements are tools of the
checkout, not of this package: ``tools/concerto_tools`` (``PYTHONPATH=python:tools``).

Every module keeps ``jax`` imports inside functions, so that a caller can set ``XLA_FLAGS``
before jax starts (see :func:`concerto_jax.hlo_text.configure_xla`).
"""

from concerto_jax.steer import optimize  # noqa: E402,F401  (imports no jax when loaded)

__all__ = ["compile", "load", "optimize", "save"]


def __getattr__(name: str):
    """``compile``, ``load``, ``save`` and ``aot`` from :mod:`concerto_jax.aot`, imported on first
    use, so that ``python -m concerto_jax.aot`` runs the module once."""
    if name in ("compile", "load", "save", "aot"):
        import importlib  # noqa: PLC0415

        aot = importlib.import_module("concerto_jax.aot")
        return aot if name == "aot" else getattr(aot, name)
    raise AttributeError(f"module 'concerto_jax' has no attribute {name!r}")
