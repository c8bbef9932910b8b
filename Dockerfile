# syntax=docker/dockerfile:1
# Multi-stage build: a static tpproxy binary on a distroless base, run as
# a non-root user.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/tpproxy ./cmd/tpproxy

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tpproxy /usr/local/bin/tpproxy
COPY configs/tpproxy.yaml /etc/tpproxy/tpproxy.yaml
USER nonroot:nonroot
EXPOSE 6033 6032 6080
ENTRYPOINT ["/usr/local/bin/tpproxy"]
CMD ["serve", "--config", "/etc/tpproxy/tpproxy.yaml"]
