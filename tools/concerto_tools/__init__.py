"""Concerto's measurement, census and corpus tools: scripts of the checkout, not of the wheel.

``pip install ./python`` ships what users call (``concerto``, ``concerto_torch``,
``concerto_jax``); these modules build on it and run with ``PYTHONPATH=python:tools`` (the
scripts under ``scripts/`` set it):

- :mod:`concerto_tools.compile_gpu`: the compiled GPU corpus (``scripts/xla-gpu-corpus``): the
  train steps of :mod:`concerto_jax.dump` and the MoE step of :mod:`concerto_tools.gpu_models`,
  compiled by XLA's CUDA compiler for 8 H100s deviceless (the target of
  :mod:`concerto_jax.h100`), with XLA's memory report and buffer assignment.
- :mod:`concerto_tools.aot_corpus`: :func:`concerto_jax.compile`'s path on every corpus module,
  the guide's table (``scripts/xla-gpu-roundtrip``).
- :mod:`concerto_tools.steer_corpus`: :func:`concerto_jax.steer.optimize` on one corpus step or
  all of them, the table of docs/src/xla-steering.md.
- :mod:`concerto_tools.grammar_census`: XLA's test modules through XLA's parser and concerto
  (``scripts/xla-grammar-census``).
- :mod:`concerto_tools.gpu_measure`: the GPU measurements of ``scripts/gpu-measure``;
  ``concerto fidelity`` puts them beside concerto's costs (docs/src/fidelity.md).

Their tests: ``tools/tests`` (the JAX CPU venv, ``scripts/pyenv``) and ``tools/tests_xla_gpu``
(``scripts/pyenv-xla-gpu``), both run by ``scripts/test``'s Python lane.
"""
