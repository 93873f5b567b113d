# ---- final stage: the cell image
FROM python AS cell
COPY --from=torch /opt/venv /opt/venv
${cudnn_layer}COPY harness/ /opt/harness/harness/
ENV PYTHONPATH=/opt/harness PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# what the image holds (its Python, torch, system libraries), read by the orchestrator without starting it
RUN /opt/venv/bin/python -m harness.suite facts > /opt/harness/image.json
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["/opt/venv/bin/python", "-m", "harness.suite"]
