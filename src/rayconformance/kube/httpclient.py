"""HTTP to the apiserver through httpx, set up as a kubernetes ApiClient's Configuration says: its host, TLS (CA,
client certificate, verification, SNI name), proxy and connect retries. The bearer token is the kubernetes client's
own, asked for each request (`Configuration.auth_settings()`), so a kubeconfig's exec or auth-provider plugin
refreshes it as it does for every other call. One httpx.Client per Configuration, kept until `close` or until the
Configuration is gone.

    status, text = request(api.configuration, "GET", "/api/v1/namespaces/ns/services/svc:80/proxy/", timeout=10)

An HTTP error status is an answer like any other (its status and body); only a transport failure (refused,
reset, timed out) raises, as an `httpx.TransportError`.
"""
from __future__ import annotations

import json
import ssl
import threading
import weakref

import httpx
from kubernetes.client.rest import should_bypass_proxies

# urllib3's own default, what the kubernetes client's requests get when the Configuration sets no `retries`
DEFAULT_RETRIES = 3

_clients: dict[int, httpx.Client] = {}  # by id() of the Configuration, dropped when it is collected
# reentrant: the garbage collector may run a collected Configuration's finalizer (`_drop`) in a thread that holds it
_lock = threading.RLock()


def request(configuration, method: str, path: str, body: dict | None = None, timeout: float = 10,
            headers: dict[str, str] | None = None) -> tuple[int, str]:
    """`method` `path` (below the Configuration's host) with a JSON `body`; (status, text) of the answer."""
    sent = dict(headers or {})
    for auth in configuration.auth_settings().values():  # the kubernetes client's own token, refreshed if due
        if auth.get("in") == "header" and auth.get("value"):
            sent[auth["key"]] = auth["value"]
    sni = getattr(configuration, "tls_server_name", None)
    r = client(configuration).request(method, path, headers=sent, timeout=httpx.Timeout(timeout),
                                      content=None if body is None else json.dumps(body).encode(),
                                      extensions={"sni_hostname": sni} if sni else None)
    return r.status_code, r.content.decode(errors="replace")


def client(configuration) -> httpx.Client:
    """The httpx.Client for `configuration`, made on first use."""
    key = id(configuration)
    with _lock:
        c = _clients.get(key)
        if c is None:
            c = _clients[key] = _new_client(configuration)
            weakref.finalize(configuration, _drop, key)
    return c


def close(configuration) -> None:
    """Close the client of `configuration` (if one was made); a later request makes a new one."""
    _drop(id(configuration))


def _drop(key: int) -> None:
    with _lock:
        c = _clients.pop(key, None)
    if c is not None:
        c.close()


def _new_client(configuration) -> httpx.Client:
    host = configuration.host
    proxy = getattr(configuration, "proxy", None)
    if proxy and not should_bypass_proxies(host, no_proxy=getattr(configuration, "no_proxy", None) or ""):
        proxy = httpx.Proxy(proxy, headers=getattr(configuration, "proxy_headers", None) or None,
                            ssl_context=getattr(configuration, "proxy_ssl_context", None))
    else:
        proxy = None
    transport = httpx.HTTPTransport(verify=_ssl_context(configuration), proxy=proxy, trust_env=False,
                                    retries=_retries(getattr(configuration, "retries", None)))
    # trust_env=False: the Configuration already says which proxy (the kubernetes client reads the environment's)
    return httpx.Client(base_url=host, transport=transport, trust_env=False, follow_redirects=True)


def _ssl_context(configuration) -> ssl.SSLContext:
    if configuration.verify_ssl:
        data = getattr(configuration, "ca_cert_data", None)
        ctx = ssl.create_default_context(cafile=configuration.ssl_ca_cert,
                                         cadata=data.decode() if isinstance(data, bytes) else data)
        if getattr(configuration, "assert_hostname", None) is False:
            ctx.check_hostname = False
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    if configuration.cert_file:
        ctx.load_cert_chain(configuration.cert_file, configuration.key_file)
    return ctx


def _retries(retries) -> int:
    """Connect retries from the Configuration's `retries` (a count, a urllib3 Retry, or None for the default)."""
    if retries is None:
        return DEFAULT_RETRIES
    if isinstance(retries, int):
        return retries
    total = getattr(retries, "total", None)
    return total if isinstance(total, int) else 0
