"""The example of docs/src/jax-compile.md: a 1-layer GPT train step compiled with concerto's
schedule for 8 H100s on a CPU host, saved, and (here, without the GPUs) not loadable.

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    PYTHONPATH=python $py docs/examples/jax_compile.py [OUT.cjx]
"""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import concerto_jax  # noqa: E402
from concerto_jax import dump  # noqa: E402
from concerto_jax.steer import h100_devices  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "step.cjx"
# A 1-layer GPT train step, 8-way tensor parallel, bf16 (any jax.jit step with sharded args).
a = dump.parse_args(["--parallel", "tp", "--out", "/tmp", "--layers", "1", "--d-model", "256",
                     "--heads", "8", "--seq", "128", "--batch", "8", "--vocab", "1024",
                     "--dtype", "bfloat16"])  # fmt: skip
data, model = dump.check_sizes(a)
jitted, args = dump.jit_step(a, dump.make_mesh(a, data, model, h100_devices()), data, donate=True)

step = concerto_jax.compile(jitted, *args)  # work limit 20,000: the same plan on every host
print(step.kept, step.xla_ns, step.concerto_ns, step.xla_peak_bytes, step.concerto_peak_bytes)
concerto_jax.save(out, step)
try:
    concerto_jax.load(out)
except concerto_jax.aot.DevicesMissing as e:
    print(f"load: {e}")
