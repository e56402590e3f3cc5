"""How refusals reach the caller: a :class:`ServiceError` as its gRPC status (with ``retry-after``
trailing metadata for back-pressure), and undecodable request bytes as INVALID_ARGUMENT on every RPC."""
from __future__ import annotations

import inspect
from typing import Callable

import grpc

from keyholder.errors import ServiceError


def retry_metadata(error: ServiceError) -> tuple[tuple[str, str], ...]:
    """The ``retry-after`` trailing metadata (whole seconds) of a back-pressure refusal, else none."""
    return () if error.retry_after is None else (("retry-after", str(max(1, round(error.retry_after)))),)


async def refuse(context, error: ServiceError):
    """End the call with ``error``'s status and one-line message (and ``retry-after`` if it has one)."""
    await context.abort(getattr(grpc.StatusCode, error.code), error.message, trailing_metadata=retry_metadata(error))


class UndecodableRequest(ServiceError):
    """Request bytes that are not the call's protobuf message."""

    def __init__(self, method: str) -> None:
        super().__init__("INVALID_ARGUMENT", f"the request to {method.rsplit('/', 1)[-1] or method} is not a "
                                             "decodable protobuf message of its type")


class DecodeGuard(grpc.aio.ServerInterceptor):
    """Undecodable request bytes become INVALID_ARGUMENT on every RPC of the server (gRPC itself answers
    UNKNOWN "Unexpected <class DecodeError>"): each handler's deserializer hands the servicer a marker
    instead of raising, and the handler refuses the marker before the servicer sees it.  A method's
    guarded handler is built once (its first call) and reused."""

    def __init__(self) -> None:
        self._guarded: dict[str, tuple[object, object]] = {}     # method -> (gRPC's handler, guarded)

    async def intercept_service(self, continuation, details):
        handler = await continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        known = self._guarded.get(details.method)
        if known is not None and known[0] is handler:
            return known[1]
        guarded = _guarded_handler(handler, details.method)
        self._guarded[details.method] = (handler, guarded)
        return guarded


def _guarded_handler(handler, method: str):
    """``handler`` with a deserializer that never raises and a behaviour that refuses what it could
    not decode (a fresh :class:`UndecodableRequest` per call)."""
    marker = object()
    decode = handler.request_deserializer

    def deserializer(raw: bytes):
        try:
            return decode(raw)
        except Exception:             # noqa: BLE001 - DecodeError, or a field the message type refuses
            return marker
    kind = ("stream" if handler.request_streaming else "unary") + "_" + \
           ("stream" if handler.response_streaming else "unary")
    behavior = getattr(handler, kind)
    if handler.request_streaming:
        async def checked(requests):
            async for request in requests:
                if request is marker:
                    raise UndecodableRequest(method)
                yield request
        guarded = _guard(behavior, lambda request: checked(request))
    else:
        def first(request):
            if request is marker:
                raise UndecodableRequest(method)
            return request
        guarded = _guard(behavior, first)
    if guarded is None:
        return handler
    return handler._replace(request_deserializer=deserializer, **{kind: guarded})


def _guard(behavior, check: Callable):
    """``behavior`` with its request passed through ``check`` (which raises :class:`UndecodableRequest`);
    the refusal becomes the call's status.  Async generators stay async generators."""
    if inspect.isasyncgenfunction(behavior):
        async def stream(request, context):
            try:
                async for item in behavior(check(request), context):
                    yield item
            except UndecodableRequest as error:
                await refuse(context, error)
        return stream
    if inspect.iscoroutinefunction(behavior):
        async def unary(request, context):
            try:
                return await behavior(check(request), context)
            except UndecodableRequest as error:
                await refuse(context, error)
        return unary
    return None
