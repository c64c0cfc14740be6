"""Placeholder; replaced by the rendering module."""
