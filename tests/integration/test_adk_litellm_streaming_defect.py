"""The ADK defect README's Compatibility section names: no session layer can mend it.

Through google-adk 2.12, ``LiteLlm`` streaming finalizes the tool-call response
inside its loop over one streamed chunk's pieces, so a chunk that carries
several tool calls *and* the finish reason yields a response holding only the
last call (2.10.0 models/lite_llm.py:3799-3810). 2.13.0 finalizes once after
that loop (lite_llm.py:4541-4546) and keeps them all. The lost calls never
reach an event, so the store, the view and the request agree on one call and
nothing is left unanswered for adk-pairing to see. docs/compatibility.md has
the details; this test keeps that claim true on every release CI runs.

The stream is scripted through a custom ``llm_client``, the way it is
reachable; the chunk is litellm's own ``ModelResponseStream``.
"""

from __future__ import annotations

import pytest
from google.genai import types

from tests.adk_features import ADK_VERSION

lite_llm = pytest.importorskip("google.adk.models.lite_llm", reason="needs litellm")
litellm = pytest.importorskip("litellm")

#: The first release whose LiteLlm keeps every call of such a chunk.
FIXED_IN = (2, 13)

ONE_CHUNK_TWO_CALLS = {
    "id": "chunk-1",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "openai/gpt-4o",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "delta": {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "tool_a", "arguments": "{}"},
                    },
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "tool_b", "arguments": "{}"},
                    },
                ],
            },
        }
    ],
}


class OneChunkClient(lite_llm.LiteLLMClient):
    """Streams exactly one chunk: two tool calls and the finish reason together."""

    async def acompletion(self, model, messages, tools, **kwargs):
        async def stream():
            yield litellm.ModelResponseStream(**ONE_CHUNK_TWO_CALLS)

        return stream()


def _release() -> tuple[int, int]:
    major, minor = ADK_VERSION.split(".")[:2]
    return int(major), int(minor)


async def test_litellm_streaming_keeps_every_call_of_one_chunk_only_from_2_13() -> None:
    from google.adk.models.llm_request import LlmRequest

    model = lite_llm.LiteLlm(model="openai/gpt-4o", llm_client=OneChunkClient())
    request = LlmRequest(contents=[types.Content(role="user", parts=[types.Part(text="go")])])

    final_calls = [
        [part.function_call.id for part in response.content.parts if part.function_call]
        async for response in model.generate_content_async(request, stream=True)
        if not response.partial and response.content
    ]

    if _release() >= FIXED_IN:
        assert final_calls == [["call_a", "call_b"]]
    else:
        assert final_calls == [["call_b"]], f"google-adk {ADK_VERSION}"
