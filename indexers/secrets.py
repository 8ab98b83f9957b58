"""Credentials stay out of the index. What the index holds goes into an agent's context, and
from there to the model's provider: a `.env` beside the code, a deploy key, or `~/.ssh` when the
server is started in a home folder would otherwise be answers ("database connection" brought
`DATABASE_URL=postgres://admin:...`).

Two rules, both by shape, neither a secret scanner (a token written into source code is indexed
like the code around it):
- Files whose name says they hold credentials are never read: environment files (`.env`,
  `.env.production`, `prod.env`; not the templates a project commits, `.env.example`), private
  keys and key stores, and the credential files of common tools.
- A private key block inside any other file (a test's inline key, a config that embeds one) keeps
  its BEGIN and END lines and loses its body, line for line, so chunks keep their line numbers.

Nothing overrides them: a user who wants such a file in an answer reads it.
"""

from __future__ import annotations

import re

# Tools' credential files, by name.
CREDENTIAL_NAMES = frozenset({
    ".netrc", "_netrc", ".pgpass", ".git-credentials", ".htpasswd", ".pypirc", ".npmrc",
    "credentials", "credentials.json", "secrets.json", "secrets.yml", "secrets.yaml",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
})
# Private keys, key stores, password databases, Terraform state (it stores every secret it set).
CREDENTIAL_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".ppk", ".tfstate",
                       ".tfstate.backup")
# Credential files known by their folder (a root opened on a home folder).
CREDENTIAL_PATHS = (".aws/credentials", ".kube/config", ".docker/config.json", ".config/gh/hosts.yml")
_ENV_TEMPLATE = re.compile(r"example|sample|template|dist|defaults?|schema", re.IGNORECASE)

_KEY_BLOCK = re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)(.*?)"
                        r"(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)
REMOVED = "(private key not indexed)"


def holds_credentials(rel: str) -> bool:
    """Whether the workspace file at `rel` is by its name a file of credentials."""
    name = rel.rsplit("/", 1)[-1].lower()
    if name in CREDENTIAL_NAMES or name.endswith(CREDENTIAL_SUFFIXES):
        return True
    if name == ".env" or name.startswith(".env.") or name.endswith(".env"):
        return not _ENV_TEMPLATE.search(name)
    return ("/" + rel).endswith(tuple("/" + p for p in CREDENTIAL_PATHS))


def without_private_keys(text: str) -> str:
    """`text` with each private key block's body blanked, its lines kept (the first says why)."""
    if "PRIVATE KEY" not in text:
        return text
    return _KEY_BLOCK.sub(lambda m: m.group(1) + _blank(m.group(2)) + m.group(3), text)


def _blank(body: str) -> str:
    lines = body.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    out = ["" for _ in lines]
    if first is not None:
        out[first] = REMOVED
    return "\n".join(out)
