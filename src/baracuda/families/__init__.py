"""One package per op family; each registers its plans on import (see core.registry.discover)."""
