"""Frontends: framework-facing functions over the plans (torch now, JAX later)."""
