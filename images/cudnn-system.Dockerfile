# ---- stage cudnn (build only): NVIDIA's apt cuDNN libcudnn9-cuda-${cuda_major}=${cudnn_version}-1, collected in /opt/cudnn/lib
FROM python AS cudnn
${build_inputs}RUN set -eu; \
    apt-get ${apt_options}update; \
    DEBIAN_FRONTEND=noninteractive apt-get ${apt_options}install -y --no-install-recommends --allow-change-held-packages --allow-downgrades "libcudnn9-cuda-${cuda_major}=${cudnn_version}-1"; \
    mkdir -p /opt/cudnn/lib; \
    cp -a $$(dpkg -L "libcudnn9-cuda-${cuda_major}" | grep -E '/libcudnn[^/]*[.]so') /opt/cudnn/lib/
