"""Concerto's JAX side: real train-step HLO dumps, and XLA's own checks of HLO modules.

Modules (run with ``PYTHONPATH=python`` and the interpreter ``scripts/pyenv`` prints):

- :mod:`concerto_jax.dump`: dumps a GPT-style decoder train step under data, tensor,
  FSDP-style or mixed parallelism on 8 CPU devices, as XLA writes it right after SPMD
  partitioning and after all its optimisations.
- :mod:`concerto_jax.xla_check`: parses HLO text with XLA's parser (as bundled in jaxlib) and
  verifies the schedule of a module whose header says ``is_scheduled=true``.
- :mod:`concerto_jax.compare`: compiles two HLO modules with XLA's CPU client on 8 devices,
  runs both on the same random per-device inputs and compares every output bitwise.

Every module keeps ``jax`` imports inside functions, so that a caller can set ``XLA_FLAGS``
before jax starts (see :func:`concerto_jax.hlo_text.configure_xla`).
"""
