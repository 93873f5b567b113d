# ---- final stage: the reproducer of one report row (harness repro), ${side} side; nothing of the harness inside
FROM python AS repro
COPY --from=torch /opt/venv /opt/venv
${cudnn_layer}COPY repro.py /opt/repro/repro.py
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["/opt/venv/bin/python", "/opt/repro/repro.py", "--one", "--side", "${side}"]
