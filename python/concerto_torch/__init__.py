"""Concerto's PyTorch side: a training step traced from torch.fx into Concerto's graph JSON,
and Concerto's plan applied back to the FX graph (directly or as an Inductor pass).

Modules (run with ``PYTHONPATH=python`` and the interpreter ``scripts/pyenv-torch`` prints):

- :mod:`concerto_torch.examples`: a GPT-style block's training step (Adam) under data, tensor
  (Megatron) and FSDP-style parallelism, as pure functions with functional collectives.
- :mod:`concerto_torch.trace`: the fake process group of N ranks and ``make_fx`` under
  ``FakeTensorMode``.
- :mod:`concerto_torch.export`: an FX graph to Concerto's native graph JSON (and the CLI
  ``python -m concerto_torch.export EXAMPLE --ranks 8 -o graph.json``).
- :mod:`concerto_torch.reorder`: Concerto's plan back onto the FX graph (and the CLI
  ``python -m concerto_torch.reorder EXAMPLE --ranks 8 --plan plan.json``).
- :mod:`concerto_torch.inductor`: the same as an Inductor ``post_grad_custom_post_pass``.
"""
