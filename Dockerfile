# One image with the four binaries: server (the course), lab (the service the
# lessons measure), load (the generator) and proxy (an admission policy in
# front of any HTTP service). Static, no cgo (the module has no C), non-root.
# FROM scratch has no CA certificates: the server and the proxy carry the
# public roots in their binaries (golang.org/x/crypto/x509roots/fallback, used
# when the system has none), so the server's HTTPS calls to LTI platforms and
# the proxy's to an https:// UPSTREAM verify; SSL_CERT_FILE or SSL_CERT_DIR,
# mounted in, would replace them.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/server ./cmd/server \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/lab ./cmd/lab \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/load ./cmd/load \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/proxy ./cmd/proxy \
 && mkdir -p /out/data

FROM scratch
COPY --from=build /out/server /out/lab /out/load /out/proxy /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# The server listens on every interface of its container (its default,
# 127.0.0.1, would be unreachable through a published port); compose
# publishes the port on the host's 127.0.0.1 only. The lab and the proxy
# read ADDR too: compose gives them their own --addr.
ENV DATA=/data ADDR=:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/server"]
