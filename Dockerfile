# The image the Helm chart (helm/docqa) runs: `docqa serve`, `docqa db upgrade`, `docqa index`.
#   docker build -t docqa:0.1.0 .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HOME=/tmp

WORKDIR /app

# torch first, CPU-only: an unpinned torch from PyPI pulls a multi-GB CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

# The project from the source tree. Installed in place (-e) because the gRPC stubs are generated
# from proto/ next to the service package (service/api/grpc/stubs.py); they are generated here, at
# build time, so the container can run with a read-only root filesystem.
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY graphql ./graphql
COPY config ./config
COPY acl ./acl
COPY indexer ./indexer
COPY service ./service
# [aws]: botocore, for SigV4 signing to Amazon OpenSearch Service (index.opensearch.aws); --build-arg EXTRAS= drops it.
ARG EXTRAS=aws
RUN pip install -e ".${EXTRAS:+[$EXTRAS]}" \
 && python -c "from service.api.grpc import stubs; stubs.load()" \
 && useradd --uid 10001 --user-group --no-create-home docqa \
 && mkdir -p /var/lib/docqa && chown docqa:docqa /var/lib/docqa

USER 10001:10001
ENV DOCQA_DATA_DIR=/var/lib/docqa
EXPOSE 50051 8080
ENTRYPOINT ["docqa"]
CMD ["serve"]
