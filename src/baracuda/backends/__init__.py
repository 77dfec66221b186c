"""Backends: plumbing only (launch helpers, shared Triton functions, library handles); no op math."""
