"""Change data capture: stream ids (and, with the CDC issue, generations, log rows and the
description tables)."""
