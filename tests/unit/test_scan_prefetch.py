"""`prefetched`: the scan's read-ahead keeps order, errors and its bound."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from adk_pairing.cli._direct import prefetched


async def _numbers(count: int, started: list[int], closed: list[bool]) -> AsyncIterator[int]:
    try:
        for n in range(count):
            started.append(n)
            await asyncio.sleep(0)
            yield n
    finally:
        closed.append(True)


async def test_items_come_in_order_and_the_source_is_closed() -> None:
    started: list[int] = []
    closed: list[bool] = []
    got = [n async for n in prefetched(_numbers(5, started, closed))]
    assert got == [0, 1, 2, 3, 4]
    assert closed == [True]


async def test_the_source_runs_at_most_two_items_ahead_of_the_caller() -> None:
    started: list[int] = []
    closed: list[bool] = []
    reader = prefetched(_numbers(100, started, closed))
    assert await anext(reader) == 0
    for _ in range(20):
        await asyncio.sleep(0)
    # Item 0 is with the caller, 1 waits in the queue, 2 is being fetched.
    assert started == [0, 1, 2]
    await reader.aclose()
    assert closed == [True]


async def test_an_error_of_the_source_reaches_the_caller_after_the_items_before_it() -> None:
    async def failing() -> AsyncIterator[int]:
        yield 1
        raise RuntimeError("the query failed")

    got: list[int] = []
    with pytest.raises(RuntimeError, match="the query failed"):
        async for n in prefetched(failing()):
            got.append(n)
    assert got == [1]


async def test_concurrency_one_fetches_nothing_ahead_and_two_fetches_one_page_ahead() -> None:
    from adk_pairing.cli._direct.base import read_ahead

    for concurrency, ahead in ((1, [0]), (2, [0, 1, 2]), (8, [0, 1, 2])):
        started: list[int] = []
        closed: list[bool] = []
        reader = read_ahead(_numbers(100, started, closed), concurrency)
        assert await anext(reader) == 0
        for _ in range(20):
            await asyncio.sleep(0)
        # With 1 the caller's page is the only one fetched; with more, one ahead at most.
        assert started == ahead, concurrency
        await reader.aclose()
        assert closed == [True]
