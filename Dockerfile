# The ark image: the `ark` binary, run as `ark server` by the Deployment `ark install` applies.
#   docker build -t ghcr.io/ark-backup/ark:$(cargo pkgid -p ark | cut -d'#' -f2) .
# Static (musl) so that the final stage needs no C library; distroless for CA certificates, a
# non-root user (65532, as the Deployment runs it) and nothing else.
FROM rust:1-alpine AS build
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p ark --bin ark \
 && cp target/release/ark /ark

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /ark /ark
USER 65532:65532
ENTRYPOINT ["/ark"]
