"""Streams and CUDA graph capture for the launcher.

In: the `stream` a kernel is called with (None for torch's current stream, a
`torch.cuda.Stream` or a raw handle). Out: its raw `CUstream` handle (`_stream_handle`,
part of a call's key) and a torch stream object to allocate and copy on
(`_torch_stream`); `_refuse_during_capture` raises `LaunchError` where the current stream
is capturing a CUDA graph, for the work a launch cannot do inside a capture (allocating a
workspace buffer, making a padded copy: either would exist only in the graph). A launch
whose buffers exist already is captured as any other: the driver records the parameters.
"""

from __future__ import annotations

from typing import Any

from tawac.runtime.arguments import LaunchError


def _torch_stream(stream: Any):
    """A torch stream object for None (current), a torch stream, or a raw handle."""
    import torch

    if stream is None:
        return torch.cuda.current_stream()
    if isinstance(stream, torch.cuda.Stream):
        return stream
    if isinstance(stream, int):
        return torch.cuda.ExternalStream(stream)
    raise LaunchError(f"stream must be None, a torch.cuda.Stream or an int handle, got {stream!r}")


def _refuse_during_capture(why: str) -> None:
    """A LaunchError saying `why` when the current stream is capturing a CUDA graph: an
    allocation or copy made now would exist only in the graph."""
    import torch

    if torch.cuda.is_current_stream_capturing():
        raise LaunchError(why)


def _stream_handle(stream: Any, device: int) -> int:
    """The raw CUstream of None (torch's current stream), a torch stream or an int."""
    if stream is None:
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(device)
        return torch.cuda.current_stream(device).cuda_stream
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if handle is None:
        raise LaunchError(
            f"stream must be None, a torch.cuda.Stream or an int handle, got {stream!r}"
        )
    return handle
