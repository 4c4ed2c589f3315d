"""Streaming replies of the built-in endpoint, written on the cost model's schedule.

Every token event of every stream is due at the end of a step. With hundreds of streams,
the time spent *handing* events to sockets is what makes them late, so the common case
takes a short path: while a step runs, :meth:`EngineStream.prepare` formats each event as
one HTTP/1.1 chunk (the event's JSON pre-serialised around its text,
:meth:`Dialect.fast_tokens`) and hands it to the scheduler as a
:class:`~splitdesk.sim.scheduler.Prepared`; at the step's end the scheduler writes every
stream's chunk to its connection's asyncio transport back to back, stamping each as its
write returns, and only then calls :meth:`EngineStream.emit` to account for it — no task
switch, no per-event coroutine, no accounting between two streams' writes.

That short path needs uvicorn's httptools protocol (the ASGI ``send`` of which is a
method of an object holding ``transport`` and ``chunked_encoding``); the raw ``send`` is
stashed in the scope by :class:`RawSendMiddleware` before Starlette wraps it. Everything
else (a simulated round trip, another server, HTTP/1.0 without chunking) takes the
ordinary path: one task per stream awaiting its events and sending them through ASGI.
This is hand-written because it is what the simulator exists for: emitting tokens on
time. Headers, the first events, the end of the stream and errors still go through ASGI.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from splitdesk.sim import faults
from splitdesk.sim.connection import DirectChunks, disconnected, transport_of
from splitdesk.sim.emission_log import RequestRecord
from splitdesk.sim.faults import Fault
from splitdesk.sim.scheduler import LiveSequence, Prepared, TokenEvent
from splitdesk.sim.wire.base import Dialect, Reply

log = logging.getLogger(__name__)


def prefilled(reply: Reply, live: LiveSequence) -> None:
    """Copy what the engine knows once a sequence's first token is scheduled onto its
    ``reply``: tokens found in the prefix cache, tokens written to it (the cacheable prefix
    not found there: Anthropic's ``cache_creation_input_tokens``, reported only for a
    request that marked a breakpoint), and when it joined the batch."""
    seq = live.seq
    reply.cached_tokens = seq.cached_tokens
    reply.cache_created_tokens = max(0, live.cacheable - seq.cached_tokens) if seq.blocks else 0
    reply.admitted_ns = live.admitted_ns or None


class EngineStream:
    """ASGI response streaming one sequence's token events in a dialect's wire format.

    ``on_close`` runs however the response ends (finished, client gone, server stopping),
    and frees the sequence's engine slot. ``fault``: a stream fault to inject
    (:mod:`splitdesk.sim.faults`); such a stream always takes the ordinary path.
    """

    def __init__(
        self,
        dialect: Dialect,
        reply: Reply,
        tokens: list[str],
        finish: str,
        live: LiveSequence,
        record: RequestRecord,
        half_rtt: float,
        on_close: Callable[[], None],
        headers: dict[str, str],
        closing: asyncio.Event | None = None,
        fault: Fault | None = None,
    ) -> None:
        self.dialect = dialect
        self.fault = fault
        self.reply = reply
        self.tokens = tokens
        self.finish = finish
        self.live = live
        self.record = record
        self.half_rtt = half_rtt
        self.on_close = on_close
        self.closing = closing
        self.headers = MutableHeaders(headers)
        self.headers["content-type"] = dialect.stream_media_type + (
            "; charset=utf-8" if dialect.stream_media_type.startswith("text/") else ""
        )
        self._direct: DirectChunks | None = None
        self._done: asyncio.Future[bool] | None = None
        #: the next event's bytes, formatted while its step ran (:meth:`prepare`): the
        #: event, its text, the event's size, the chunk the scheduler writes
        self._ready: tuple[TokenEvent, str, int, Prepared] | None = None
        #: set when a fault ended the response itself (reset, or a clean close after an
        #: error or malformed event): nothing more is sent
        self._cut = False

    # -- one event -----------------------------------------------------------------------------
    def _take(self, ev: TokenEvent, text: str | None = None) -> str:
        """Account for ``ev`` on the reply; returns its text (``text`` when the caller
        already joined it)."""
        reply = self.reply
        start = reply.output_tokens
        reply.output_tokens += ev.tokens
        if reply.first_token_ns is None:
            prefilled(reply, self.live)
            reply.first_token_ns = ev.scheduled_ns
        reply.last_token_ns = ev.scheduled_ns
        if text is None:
            text = "".join(self.tokens[start : reply.output_tokens])
        reply.parts.append(text)
        return text

    def prepare(self, ev: TokenEvent) -> Prepared | None:
        """Format ``ev``'s chunk now, while its step runs (the scheduler's short path): the
        scheduler writes it at the step's end and :meth:`emit` then only accounts for it.
        Only for dialects whose events depend on their text alone
        (``Dialect.text_only_events``): the bytes are then those :meth:`emit` would build,
        whenever they are built. ``None``: :meth:`emit` formats and writes the event."""
        self._ready = None
        done, direct = self._done, self._direct
        if done is None or direct is None or done.done() or not self.dialect.text_only_events:
            return None
        start = self.reply.output_tokens
        text = "".join(self.tokens[start : start + ev.tokens])
        data = self.dialect.fast_tokens(self.reply, text, ev.tokens)
        prepared = Prepared(direct.cycle.transport, direct.frame(data))
        self._ready = (ev, text, len(data), prepared)
        return prepared

    def emit(self, ev: TokenEvent) -> None:
        """Account for ``ev`` (the scheduler's short path; called at the step's end): the
        chunk the scheduler wrote for it (:meth:`prepare`), else formatted and written now."""
        done = self._done
        direct = self._direct
        if done is None or direct is None or done.done():
            return
        ready, self._ready = self._ready, None
        if ready is not None and ready[0] is ev:  # the scheduler wrote it as the step ended
            _, text, size, prepared = ready
            sent_ns = prepared.sent_ns
            if not sent_ns:  # not written: the connection was closing
                done.set_result(False)
                return
            self._take(ev, text)
        else:  # not prepared: format and write it now
            text = self._take(ev)
            data = self.dialect.fast_tokens(self.reply, text, ev.tokens)
            size = len(data)
            if not direct.write_frame(direct.frame(data)):
                done.set_result(False)
                return
            sent_ns = time.perf_counter_ns()
        self.record.events.append([ev.scheduled_ns, sent_ns, ev.tokens])
        self.record.delivered(text, size)
        if ev.done:
            done.set_result(True)

    # -- the response ----------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        record = self.record

        async def counted(message: Message) -> None:
            await send(message)
            record.sent_bytes += len(message.get("body", b""))

        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.headers.raw})
            record.headers_ns = time.perf_counter_ns()
            for chunk in self.dialect.stream_start(self.reply):
                await counted({"type": "http.response.body", "body": chunk, "more_body": True})
            fault = self.fault
            if fault is not None:
                body = self._faulty(fault, scope, counted)
            else:
                direct = None if self.half_rtt else DirectChunks.for_scope(scope)
                body = self._short(direct) if direct is not None else self._ordinary(counted)
            finished = await self._until_disconnect(body, receive, self.closing)
            if self._cut:
                return  # the fault ended the connection its own way
            if not finished:
                if self.closing is not None and self.closing.is_set():  # end it properly
                    error = self.dialect.stream_error(self.reply, "the server is shutting down")
                    await counted({"type": "http.response.body", "body": error, "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            record.output_tokens = self.reply.output_tokens
            record.finish_reason = self.finish
            if fault is None or fault.name != "no-end":
                for chunk in self.dialect.stream_end(self.reply, self.finish):
                    await counted({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write
        finally:
            record.output_tokens = record.sent_tokens  # also what a leaver or a cut got
            self.live.sink = None
            self.live.prepare = None
            self._ready = None
            self.on_close()

    @staticmethod
    async def _until_disconnect(
        body: Coroutine[Any, Any, bool], receive: Receive, closing: asyncio.Event | None
    ) -> bool:
        """Run ``body``; ``False`` as soon as the client disconnects or the server stops."""
        task = asyncio.ensure_future(body)
        gone = asyncio.ensure_future(disconnected(receive))
        waits: set[asyncio.Future[Any]] = {task, gone}
        if closing is not None:
            waits.add(asyncio.ensure_future(closing.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in waits:
                t.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
        if not task.done() or task.cancelled() or task.exception() is not None:
            return False
        return bool(task.result())

    async def _short(self, direct: DirectChunks) -> bool:
        self._direct = direct
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._done = done
        while not self.live.queue.empty():  # events that came before the sink was set
            self.emit(self.live.queue.get_nowait())
        self.live.sink = self.emit
        self.live.prepare = self.prepare
        return await done

    async def _ordinary(self, send: Send) -> bool:
        done = False
        while not done:
            ev = await self.live.queue.get()
            text = self._take(ev)
            if self.half_rtt:  # the event travels half a round trip to the client
                wait = (ev.scheduled_ns - time.perf_counter_ns()) / 1e9 + self.half_rtt
                if wait > 0:
                    await asyncio.sleep(wait)
            data = self.dialect.fast_tokens(self.reply, text, ev.tokens)
            await send({"type": "http.response.body", "body": data, "more_body": True})
            self.record.events.append([ev.scheduled_ns, time.perf_counter_ns(), ev.tokens])
            self.record.delivered(text, 0)
            done = ev.done
        return True

    async def _faulty(self, fault: Fault, scope: Scope, send: Send) -> bool:
        """The ordinary path with ``fault`` injected (:data:`splitdesk.sim.faults.CATALOGUE`
        says what each does). ``True`` when every token event was sent."""
        name, record = fault.name, self.record
        if name == "stall-headers":  # a client leaving or a stopping server cancels the wait
            await faults.pause(fault.value)
        k = fault.int_value
        n = 0
        done = False
        while not done:
            if n == k and name in ("reset-mid", "malformed", "error-event"):
                await self._cut_stream(fault, scope, send)
                return False
            if n == 1 and name == "stall-mid":
                await faults.pause(fault.value)
            ev = await self.live.queue.get()
            text = self._take(ev)
            data = self.dialect.fast_tokens(self.reply, text, ev.tokens)
            if name == "huge" and n == 0:
                data = faults.pad_event(data, k)
            pieces = faults.cut_inside_characters(data) if name == "split-utf8" else [data]
            for i, piece in enumerate(pieces):
                if i:  # let each piece leave in its own segment
                    await asyncio.sleep(0.002)
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            record.events.append([ev.scheduled_ns, time.perf_counter_ns(), ev.tokens])
            record.delivered(text, 0)
            done = ev.done
            n += 1
        return True

    async def _cut_stream(self, fault: Fault, scope: Scope, send: Send) -> None:
        """End the stream as ``fault`` says: an RST once the client has every byte written
        so far, or a malformed or error event followed by a clean end of the body."""
        self._cut = True
        if fault.name == "reset-mid":
            transport = transport_of(scope)
            if transport is not None:
                await faults.wait_acknowledged(transport)
                faults.reset(transport)
                return
        if fault.name == "malformed":
            event = faults.malformed_event(self.dialect.stream_media_type)
        else:
            event = self.dialect.stream_error(
                self.reply, "The server had an error while processing your request (injected)."
            )
        await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
