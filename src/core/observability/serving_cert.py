"""The serving certificate of the daemon's secure port.

kube-scheduler serves HTTPS on 10259 with the certificate it is given
(``--tls-cert-file``/``--tls-private-key-file``), or one it signs itself and
keeps in ``--cert-dir``.  :func:`self_signed` does the latter with the
``cryptography`` library: an ECDSA P-256 key and a certificate valid for a
year for ``localhost``, 127.0.0.1 and the host's name.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: How long a self-signed serving certificate is valid.
VALIDITY = datetime.timedelta(days=365)


def self_signed(directory: str | Path, name: str = "kubesched") -> tuple[Path, Path]:
    """``(certificate, private key)`` PEM files in ``directory`` (created; the
    key readable by the owner only), reused when both exist.  Raises OSError."""
    directory = Path(directory)
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    if cert_path.is_file() and key_path.is_file():
        return cert_path, key_path
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    host = socket.gethostname()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{name}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.DNSName(host), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path.touch(mode=0o600, exist_ok=True)
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path
