# ---- stage cudnn (build only): the cuDNN wheel nvidia-cudnn-cu${cuda_major}==${cudnn_version} over the pinned one
FROM torch AS cudnn
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps ${pip_source} "nvidia-cudnn-cu${cuda_major}==${cudnn_version}"
