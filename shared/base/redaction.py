"""The one redaction step: every text that can reach a user passes through :func:`redact`.

A server may quote the request's credentials back (a 401 saying "Incorrect API key provided:
Bearer sk-..."), an exception may hold a URL, a proxy may echo a header. :func:`redact` removes,
wherever they appear in a text:

- the secrets it is given (the configured API key), and the base64 of each;
- ``Bearer <token>`` and ``Basic <base64 of user:password>`` credentials;
- the user-info of URLs, with or without a scheme (``scheme://user:password@host``,
  ``//user:password@host`` and ``user:password@host`` -> ``***@host``; a password holding
  ``/`` or ``@`` too);
- secret-named query parameters (``?api_key=``, ``key=``, ``token=``, ``access_token=``,
  ``password=``, ``secret=``, ``sig=``, ...);
- key-shaped tokens (``sk-...``, ``xai-...``), wherever they are (a URL path too), and the token
  after "API key provided:".

Used by the OpenAI-compatible backend (every failure reason), the runner (every ``Outcome``
error, so unmeasured reasons and per-row details), the CLI (its error line, the output's
details), the demo (everything the page gets back, through :func:`redact_all`) and the
configuration checks (a bad ``base_url`` is shown redacted). docs/BACKENDS.md states the rule.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"

_SECRET_PARAMETERS = ("api[_-]?key|apikey|key|token|access[_-]?token|auth|password|passwd|pwd|"
                      "secret|client[_-]?secret|sig|signature")
_PATTERNS = (
    # a Bearer credential (8+ characters: "bearer of" in prose is left alone)
    (re.compile(r"\b(Bearer)(\s+|%20)[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE), rf"\1\2{MASK}"),
    # user-info of a URL: scheme://user[:password]@ (up to the authority's last @)
    (re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#\s]+@"), rf"\1{MASK}@"),
    # user:password@ without a scheme, or with a password holding "/": at the start of a word
    # or after "//", up to the word's last @ ("http://" itself is not a user:password)
    (re.compile(r"(^|[\s'\"(<\[=,;]|//)[^\s/?#@'\"<>:=]+:(?!//)[^\s?#'\"<>]*@"), rf"\1{MASK}@"),
    # a secret-named query parameter
    (re.compile(rf"([?&;](?:{_SECRET_PARAMETERS})=)[^&#\s'\"<>]+", re.IGNORECASE), rf"\1{MASK}"),
    # what OpenAI-style errors say after the key ("api_key=..." in advice is left alone)
    (re.compile(r"(api[ _-]?key( provided)?\s*[:=]\s*)(?!\.\.\.)\S+", re.IGNORECASE),
     rf"\1{MASK}"),
    # key-shaped tokens (OpenAI, DeepSeek: sk-...; xAI: xai-...)
    (re.compile(r"\b(sk|xai)-[A-Za-z0-9_\-]{8,}"), MASK),
)
# a Basic credential: base64 of "user:password" (prose such as "Basic facts" is left alone)
_BASIC = re.compile(r"\b(Basic)(\s+|%20)([A-Za-z0-9+/]{4,}={0,2})", re.IGNORECASE)
_MIN_SECRET = 4  # shorter "secrets" (e.g. "x") would mask ordinary text


def _variants(secret: str) -> list[str]:
    raw = secret.encode("utf-8", "surrogatepass")
    encoded = base64.b64encode(raw).decode("ascii")
    return [secret, encoded, encoded.rstrip("=")]


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without credentials (see the module docstring); ``secrets`` are masked too."""
    text = str(text)
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET:
            for variant in _variants(secret):
                text = text.replace(variant, MASK)
    text = _BASIC.sub(_basic, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


# a name that holds a credential (``api_key``, ``aws_secret_access_key``, ``hf_token``); not
# ``key`` alone (compare's ``--key`` is a column) nor ``max_tokens``
_SECRET_NAME = re.compile(r"(?:^|_)(?:api_?key|apikey|token|access_key|password|passwd|secret)"
                          r"(?:_|$)", re.IGNORECASE)


def secret_values(options: Mapping[str, Any]) -> list[str]:
    """The credentials among ``options`` (a parsed command line's ``vars(args)``, keyword
    arguments): the text values of the secret-named ones, for :func:`redact`'s ``secrets``."""
    return [value for name, value in options.items()
            if isinstance(value, str) and value and _SECRET_NAME.search(name)]


def redact_all(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """``value`` with every string in it (mapping keys too, through lists, tuples and mappings)
    passed through :func:`redact`; other values unchanged."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {redact_all(k, secrets): redact_all(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_all(v, secrets) for v in value)
    return value


def mask_secret_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` (keyword arguments, a panel's judges among them) with every secret-named
    value replaced by :data:`MASK` at any depth, and every other string :func:`redact`-ed with
    those secrets: what a harness may record of them (inspect's log)."""
    secrets: list[str] = []
    stack: list[Any] = [options]
    while stack:
        current = stack.pop()
        if isinstance(current, Mapping):
            secrets += secret_values(current)
            stack.extend(current.values())
        elif isinstance(current, (list, tuple)):
            stack.extend(current)

    def masked(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: MASK if isinstance(k, str) and _SECRET_NAME.search(k) and v else
                    masked(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(masked(v) for v in value)
        return redact(value, secrets) if isinstance(value, str) else value

    return masked(options)


def _basic(match: re.Match[str]) -> str:
    token = match.group(3)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except ValueError:
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{MASK}" if b":" in decoded else match.group(0)


def has_userinfo(url: str) -> bool:
    """Whether ``url`` carries ``user[:password]@`` before its host."""
    from urllib.parse import urlsplit

    try:
        return "@" in urlsplit(url).netloc
    except ValueError:
        return "@" in url
