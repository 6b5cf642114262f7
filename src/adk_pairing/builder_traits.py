"""The builder probe's former home, kept importable: it lives in `adk_pairing.adk.builder`."""

from __future__ import annotations

from .adk.builder import NEWEST_BUILDER, BuilderTraits, builder_traits

__all__ = ["NEWEST_BUILDER", "BuilderTraits", "builder_traits"]
