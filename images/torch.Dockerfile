# ---- stage torch (build only): torch ${torch} into /opt/venv, and its companions where the package source has
# them, as the local backend's environments hold them: torchvision (the ResNet-50 rows) and nvidia-ml-py (NVML:
# clocks, power, the throttle guard). torch is named again beside each, so that no companion's pin can move it.
# A companion the source lacks is left out, and the cell says so in its warnings (a ResNet-50 row is then
# 'unsupported'); any other failure (the network, the disk) fails the build, as it does a local environment
FROM python AS torch
${build_inputs}RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${pip_source} "torch==${torch}"
RUN for companion in torchvision nvidia-ml-py; do \
        if ! out=$$(/opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${pip_source} "torch==${torch}" "$$companion" 2>&1); then \
            echo "$$out"; \
            echo "$$out" | grep -qE "No matching distribution|ResolutionImpossible" || exit 1; \
            echo "$$companion is not in the package source for torch ${torch}: this cell runs without it"; \
        fi; \
    done
