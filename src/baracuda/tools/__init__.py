"""Command implementations behind `baracuda ops | check | bench | demo` and the AOT check."""
