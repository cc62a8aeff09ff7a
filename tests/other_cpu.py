"""Print the environment that makes PyTorch and MKL compute as another CPU would.

    env $(python tests/other_cpu.py) python -m pytest notebooks --nbval ...

Stored notebook outputs must hold on every CPU, not only the one that stored them. This picks a
kernel path other than this machine's native one: ATen's AVX2 kernels and MKL's AVX2 code on an
AVX-512 machine; ATen's scalar kernels and MKL's AVX code on any other (``make test
KERNEL=other`` and CI use it).
"""

import torch

native = torch.backends.cpu.get_cpu_capability()  # "AVX512", "AVX2", "DEFAULT", ...
if native == "AVX512":
    print("ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2")
else:
    print("ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=AVX")
