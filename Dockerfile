# gpufleet serve: the HTTP service and dashboard (docs/service.md).
#   docker build -t gpufleet .
#   docker run -p 127.0.0.1:8642:8642 -v gpufleet-data:/data gpufleet
# The container binds 0.0.0.0 inside (hence --public); publish the port on the host's loopback, or put a TLS
# proxy in front. The first start prints the admin token in the logs (docker logs).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 GPUFLEET_DATA_DIR=/data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-compile '.[service]' \
    && useradd --system --uid 10001 --home-dir /data gpufleet \
    && mkdir -p /data && chown gpufleet /data
USER gpufleet
VOLUME ["/data"]
EXPOSE 8642
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8642/readyz').status != 200)"
ENTRYPOINT ["gpufleet", "serve", "--host", "0.0.0.0", "--public", "--port", "8642"]
