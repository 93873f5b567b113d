"""Run as a script by another interpreter: which Python and torch build it has, without importing torch.

Standard library only; prints one JSON object: the Python version, torch's version and folder, the CUDA
version torch was built for (None: a CPU build) and the version of the cuDNN wheel beside torch, if any.
"""

import glob
import importlib.util
import json
import os
import platform
import re

spec = importlib.util.find_spec("torch")
torch_dir = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
found = {}
if torch_dir and os.path.isfile(os.path.join(torch_dir, "version.py")):
    # torch/version.py holds the exact build, e.g. __version__ = '2.11.0+cu130' and cuda = '13.0'
    with open(os.path.join(torch_dir, "version.py")) as f:
        text = f.read()
    for name in ("__version__", "cuda"):
        match = re.search(r"^" + name + r"\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
        found[name] = match.group(1) if match else None
cudnn_wheel = None
if torch_dir:
    infos = glob.glob(os.path.join(os.path.dirname(torch_dir), "nvidia_cudnn_cu*-*.dist-info"))
    if len(infos) == 1:
        cudnn_wheel = os.path.basename(infos[0]).split("-")[1].removesuffix(".dist-info")
print(
    json.dumps(
        {
            "python": platform.python_version(),
            "torch_version": found.get("__version__"),
            "torch_cuda": found.get("cuda"),
            "torch_dir": torch_dir,
            "cudnn_wheel": cudnn_wheel,
        }
    )
)
