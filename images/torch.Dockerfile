# ---- stage torch (build only): torch ${torch} into /opt/venv, and nvidia-ml-py for NVML (clocks, power,
# the throttle guard) where the package source has it; a cell without it says so in its warnings
FROM python AS torch
${build_inputs}RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${pip_source} "torch==${torch}"
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${pip_source} nvidia-ml-py \
    || echo "nvidia-ml-py is not in the package source: this cell runs without NVML"
