"""Reusable pieces for integration tests: a scripted model, backends, scenario helpers."""
