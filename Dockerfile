# xstreams as a container: a wheel built in one stage, installed alone in a slim runtime stage
# that runs as a non-root user. README "Run in a container" says how to build and run it;
# tests/test_image.py performs the runtime stage's install and start steps (CI has no engine).
#
#   docker build -t xstreams .                               # the service
#   docker build -t xstreams:pipeline --build-arg EXTRAS=pipeline .   # + Spark jobs and Java
#   docker run -p 8000:8000 -v xstreams-data:/data -e XSTREAMS_TOKEN=... xstreams

ARG PYTHON_VERSION=3.12

FROM python:${PYTHON_VERSION}-slim AS build
WORKDIR /src
RUN python -m pip install --no-cache-dir build==1.6.1
COPY pyproject.toml README.md ./
COPY app ./app
RUN python -m build --wheel --outdir /dist

FROM python:${PYTHON_VERSION}-slim
# Extras of the wheel to install, comma-separated: `pipeline` adds PySpark (xstreams archive |
# report) and a Java runtime for it.
ARG EXTRAS=""
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    XSTREAMS_HOST=0.0.0.0 \
    XSTREAMS_PORT=8000 \
    XSTREAMS_DATA_DIR=/data \
    XSTREAMS_LOG_FORMAT=json
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Debian's security updates land in the current versions: they are not pinned.
# hadolint ignore=DL3008
RUN if [[ ",${EXTRAS}," == *,pipeline,* ]]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends default-jre-headless \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /home/xstreams xstreams \
    && mkdir /data \
    && chown xstreams:xstreams /data
COPY --from=build /dist/ /tmp/dist/
# The wheel just built is the pin (its dependencies' bounds are in pyproject.toml).
# hadolint ignore=DL3013
RUN wheel=(/tmp/dist/xstreams-*.whl) \
    && python -m pip install --no-cache-dir "${wheel[0]}${EXTRAS:+[${EXTRAS}]}" \
    && rm -rf /tmp/dist
USER 10001:10001
WORKDIR /home/xstreams
# The journal, snapshots and SQLite database (unless XSTREAMS_DATABASE_URL names PostgreSQL).
VOLUME /data
EXPOSE 8000
# /readyz answers 200 once recovery is done (no credentials needed); the image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('XSTREAMS_PORT', '8000'), timeout=2)"]
# Serving on 0.0.0.0 needs credentials (protected mode): set XSTREAMS_TOKEN, create API keys
# (`docker run ... xstreams keys create ...`) or configure JWTs.
ENTRYPOINT ["xstreams"]
CMD ["serve"]
