"""Typed errors. Messages say what, expected, got."""

from __future__ import annotations


class BaracudaError(Exception):
    """Base of every error baracuda raises on purpose."""


class InvalidProblem(BaracudaError, ValueError):
    """The descriptor or args describe a malformed problem (bad axis, negative extent, ...)."""


class ArgumentTypeError(InvalidProblem, TypeError):
    """An argument of the wrong type (a Python number where the signature takes only a Tensor,
    a tensor where it takes an int, ids of a non-integer dtype, ...). It is both: a TypeError,
    as torch (and jax) raise for the same call, so `except TypeError` written against torch
    keeps working, and an InvalidProblem, so `except BaracudaError` catches every error
    baracuda raises on purpose."""


class Unsupported(BaracudaError, NotImplementedError):
    """A well-formed problem that no candidate (or the requested one) can run."""


class BufferTooSmall(BaracudaError, ValueError):
    """A tensor holds fewer elements than the problem needs."""

    def __init__(self, message: str, needed: int, got: int):
        super().__init__(f"{message} (needed {needed}, got {got})")
        self.needed = needed
        self.got = got


class MisalignedOperand(BaracudaError, ValueError):
    """A pointer or stride does not meet the kernel's alignment."""

    def __init__(self, message: str, needed: int = 0, got: int = 0):
        super().__init__(message)
        self.needed = needed
        self.got = got


class WorkspaceTooSmall(BaracudaError, ValueError):
    """`run` got less scratch than `workspace_size()` asked for."""

    def __init__(self, message: str, needed: int, got: int):
        super().__init__(f"{message}: workspace needs {needed} bytes, got {got}")
        self.needed = needed
        self.got = got


class BackendError(BaracudaError, RuntimeError):
    """A library or compiler underneath failed."""
