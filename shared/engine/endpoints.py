"""A judge's endpoint: a ``base_url`` checked (:func:`check_base_url`) and the form the call
cache keys on (:func:`endpoint_of`)."""

from __future__ import annotations

from urllib.parse import urlparse, urlsplit

from ..base.redaction import has_userinfo, redact

#: The example every message about a bad or missing ``base_url`` gives.
BASE_URL_EXAMPLE = "'http://127.0.0.1:8000/v1'"


def check_base_url(url: str) -> None:
    """Refuse a ``base_url`` that is not ``http(s)://host[:port][/path]``: a bad scheme, no host,
    a port that is not a number in 1-65535, or credentials (``user:password@``). Credentials in
    the URL are never sent (httpx would send them as Basic auth instead of the API key); the
    error shows the URL with them masked."""
    shown = redact(url)
    example = f"(e.g. {BASE_URL_EXAMPLE})"
    try:
        parsed = urlsplit(url)
    except ValueError as error:
        raise ValueError(f"base_url={shown!r} is not a valid URL ({redact(str(error))}) "
                         f"{example}") from None
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"base_url={shown!r} is not an http(s) URL {example}")
    if has_userinfo(url):
        raise ValueError(
            f"base_url={shown!r} holds credentials (a user name or password before the host); "
            "they are not sent. Remove them and pass the key with api_key=... (--api-key) or the "
            "provider's environment variable"
        )
    if not parsed.hostname or any(c.isspace() for c in url):
        raise ValueError(f"base_url={shown!r} has no valid host {example}")
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"base_url={shown!r}: the port must be a number from 1 to 65535 "
                         f"{example}")


def endpoint_of(url: str | None) -> str:
    """The URL without credentials or fragment, normalised (lower-case scheme and host, no
    default port, no trailing slash), its query kept (a query such as Azure's ``api-version``
    selects what answers): what the call cache keys on."""
    if not url:
        return ""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    host = (parsed.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parsed.port
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host = f"{host}:{port}"
    query = f"?{parsed.query}" if parsed.query else ""
    return f"{scheme}://{host}{parsed.path.rstrip('/')}{query}"
