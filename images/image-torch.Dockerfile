# ---- final stage: ${base_image} with the torch it already holds (torch: image), run by ${image_python}.
# /tmp 1777: the tmpfs mounted there takes the mode of the image's folder (an imported root filesystem has none)
FROM ${base_image} AS cell
USER 0:0
${cudnn_layer}COPY harness/ /opt/harness/harness/
ENV PYTHONPATH=/opt/harness PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN set -eu; \
    ${image_python} -c "import torch" \
        || { echo "${image_python} in ${base_image} cannot import torch; set docker.image_python to the Python that has it" >&2; exit 1; }; \
    mkdir -p /tmp && chmod 1777 /tmp; \
    getent passwd 10001 >/dev/null || useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin harness; \
    ${image_python} -m harness.suite facts > /opt/harness/image.json
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["${image_python}", "-m", "harness.suite"]
