"""Run as a script by another interpreter: which Python and torch build it has, without importing torch.

Standard library only; prints one JSON object.
"""

import importlib.util
import json
import os
import platform
import re

spec = importlib.util.find_spec("torch")
torch_dir = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
version = None
if torch_dir and os.path.isfile(os.path.join(torch_dir, "version.py")):
    # torch/version.py holds the exact build, e.g. '2.11.0+cu130'
    with open(os.path.join(torch_dir, "version.py")) as f:
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M)
    version = match.group(1) if match else None
print(json.dumps({"python": platform.python_version(), "torch_version": version, "torch_dir": torch_dir}))
