"""Closed httpx responses freed at once, without the cyclic garbage collector.

httpx binds every response to its body stream in a reference cycle: ``Client.send`` sets
``response.stream = BoundAsyncStream(stream, response=response, ...)`` (``BoundSyncStream``
for the sync client) so that closing the stream can set ``response.elapsed``; see
``httpx/_client.py``, ``_send_single_request``. Through it, each request leaves about 35
objects (the response, its headers, request, URL and httpcore's streams, events and pool
request) that reference counting never frees. Only a full collection does, and with
thousands of requests per run these pile up for several runs before one comes: the heap
they spread over stays with the process (``benchmarks/soak.py``'s headless phase grew
53 → 58 MB over its first runs of 128 streams, +10.5 %), and the full collection, when it
comes, pauses whatever stream is being timed.

:func:`unbind` cuts the cycle once the response is closed, so the objects go as soon as
the runner drops the response. It touches one private attribute of httpx's bound stream
classes; where a future httpx has no such attribute it does nothing, and the cycle goes
back to the collector (``tests/core/measure/test_responses.py`` then fails and says so).
"""

from __future__ import annotations

import httpx


def unbind(response: httpx.Response) -> None:
    """Cut the cycle between the closed ``response`` and its bound body stream (module
    docstring). Call it after ``response.aclose()`` / ``close()`` (or after a non-streaming
    ``send`` returned, which closes the response); on an open response it does nothing, so
    ``response.elapsed`` is still set when it closes."""
    if not response.is_closed:
        return
    stream: object = response.stream
    if getattr(stream, "_response", None) is response:
        setattr(stream, "_response", None)  # noqa: B010 - httpx's private link back


async def aclose(response: httpx.Response) -> None:
    """Close ``response`` (``httpx.Response.aclose``) and :func:`unbind` it. Raises what
    ``aclose`` raises; the cycle is cut either way."""
    try:
        await response.aclose()
    finally:
        unbind(response)
