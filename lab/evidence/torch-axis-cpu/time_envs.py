"""Time harness.environments.venvs.ensure for the two torch builds of lab/evidence/torch-axis-cpu, as the local
backend asks for them (LocalBackend._environment: Python 3.11 from the harness's own interpreter, default
index). Run with $HARNESS_CACHE and $UV_CACHE_DIR set."""
import sys, time
from harness.backends.local import cache, venvs
from harness.backends import packages

root = cache.default_root()
total = time.monotonic()
for torch in ("2.12.0", "2.13.0"):
    spec = venvs.EnvironmentSpec(torch, "3.11", packages.PackageSource(), sys.executable)
    t0 = time.monotonic()
    env = venvs.ensure(root, spec, lambda line: print("   ", line, flush=True))
    print(f"torch {torch}: {'created' if env.created else 'reused'} in {time.monotonic() - t0:.1f} s, "
          f"{len(env.lock)} distributions, lock {env.lock_sha256}, {env.path}", flush=True)
print(f"{time.monotonic() - total:.1f} s total for both", flush=True)
