# The vcsched scheduler image.
#
#     docker build -t vcsched:0.1.0 .
#
# builds what charts/vcsched runs by default (image.repository "vcsched", image.tag
# defaulting to the chart's appVersion, which is the package version in pyproject.toml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The package only: no test extras, no tests, no chart.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
COPY plugins ./plugins
COPY actions ./actions
RUN pip install . \
    && rm -rf /src \
    && useradd --system --uid 65532 --user-group --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin vcsched

WORKDIR /
USER 65532:65532
# /metrics and /healthz (--listen, default :8080)
EXPOSE 8080
ENTRYPOINT ["vcsched", "run"]
