# One image for every offlinebox process; the compose file runs each
# subcommand (fanout, convindex, history, expiry, api) as its own container.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/offlinebox ./cmd/offlinebox

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --no-create-home offlinebox
COPY --from=build /out/offlinebox /usr/local/bin/offlinebox
USER offlinebox
ENTRYPOINT ["/usr/local/bin/offlinebox"]
