#!/bin/sh
# A CA and one TLS certificate per service, for the gRPC of docker/compose.yaml ([grpc] in notes.hive.toml):
#   make-certs.sh OUT NAME...
# writes OUT/NAME/{ca.pem,cert.pem,key.pem} for each NAME (the certificate holds DNS:NAME, the host the others
# dial), each directory what one container mounts; the CA's key stays in OUT/.ca, which no service mounts.
# Files already there are kept, so a restart of the compose file keeps the certificates the root handed out.
set -eu
out=$1
shift
umask 077
mkdir -p "$out/.ca"
if [ ! -f "$out/.ca/ca.pem" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=subhive compose CA" \
        -keyout "$out/.ca/ca.key" -out "$out/.ca/ca.pem" 2>/dev/null
fi
for name in "$@"; do
    dir="$out/$name"
    mkdir -p "$dir"
    if [ ! -f "$dir/cert.pem" ]; then
        openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$dir/key.pem" -out "$dir/cert.csr" 2>/dev/null
        printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1\n' "$name" > "$dir/san.cnf"
        openssl x509 -req -in "$dir/cert.csr" -CA "$out/.ca/ca.pem" -CAkey "$out/.ca/ca.key" -CAcreateserial \
            -days 825 -extfile "$dir/san.cnf" -out "$dir/cert.pem" 2>/dev/null
        rm -f "$dir/cert.csr" "$dir/san.cnf"
    fi
    cp "$out/.ca/ca.pem" "$dir/ca.pem"
done
