# ---- stage torch (build only): torch ${torch} into /opt/venv
FROM python AS torch
${build_inputs}RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${pip_source} "torch==${torch}"
