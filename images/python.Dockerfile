# ---- stage python: ${base_image} with Python ${python} in /opt/venv, and the user the suite runs as.
# /tmp 1777: the tmpfs mounted there takes the mode of the image's folder (an imported root filesystem has none)
FROM ${base_image} AS python
RUN set -eu; \
    if ! command -v python${python} >/dev/null 2>&1 || ! python${python} -c "import ensurepip" >/dev/null 2>&1; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python${python} python${python}-venv; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    python${python} -m venv /opt/venv; \
    mkdir -p /tmp && chmod 1777 /tmp; \
    getent passwd 10001 >/dev/null || useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin harness
